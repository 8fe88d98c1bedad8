/** The README's promise: every command takes --json. */
import { buildProgram } from '../../../src/cli/program';

test('every command of agent-jobs takes --json', () => {
  const commands = buildProgram().commands;
  expect(commands.length).toBeGreaterThanOrEqual(10);
  const without = commands.filter((c) => !c.options.some((o) => o.long === '--json')).map((c) => c.name());
  expect(without).toEqual([]);
});
