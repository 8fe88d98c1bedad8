/** Hints print a command that works where the person is: `npx agent-jobs …` under npx, `agent-jobs …` otherwise. */
import { asTyped, cliCommand } from '../../../src/cli/invocation';

describe('how a hint writes the CLI', () => {
  test('npx and npm run (npm_command exec, run-script) get npx agent-jobs; npm link and a bare node get agent-jobs', () => {
    expect(cliCommand({ npm_command: 'exec' })).toBe('npx agent-jobs');
    expect(cliCommand({ npm_command: 'run-script' })).toBe('npx agent-jobs');
    expect(cliCommand({})).toBe('agent-jobs');
  });

  test('asTyped rewrites every quoted command, and only those', () => {
    const npx = { npm_command: 'exec' };
    expect(asTyped('see `agent-jobs status r1`; or `agent-jobs pending`', npx)).toBe(
      'see `npx agent-jobs status r1`; or `npx agent-jobs pending`',
    );
    expect(asTyped('list runs with `agent-jobs`', npx)).toBe('list runs with `npx agent-jobs`');
    // The product's name in prose, a task queue or a user name stays as it is.
    expect(asTyped('the agent-jobs task queue; agent-jobs: failed; `agent-jobs-worker`', npx)).toBe(
      'the agent-jobs task queue; agent-jobs: failed; `agent-jobs-worker`',
    );
    expect(asTyped('see `agent-jobs status r1`', {})).toBe('see `agent-jobs status r1`');
  });
});
