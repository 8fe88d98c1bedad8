/**
 * docs/cli.md documents every command and every flag the CLI has: its table row for a command
 * names each of that command's long flags (read from the program's own definitions, so a flag
 * added without its documentation fails here). `--json` and `--help` are said once for all.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildProgram } from '../../../src/cli/program';

const DOC = readFileSync(path.resolve(__dirname, '../../../docs/cli.md'), 'utf8');
/** The table rows of docs/cli.md: first cell (the command and its flags) and the whole line. */
const rows = DOC.split('\n')
  .filter((l) => l.startsWith('| `'))
  .map((line) => ({ head: line.split(' | ')[0]!, line }));

/** The rows that document command `name`: their first cell names it as a command (`name …` or `/ `name …`). */
function rowsOf(name: string): string[] {
  const at = new RegExp(`(^\\| |/ )\`${name.replace(/-/g, '\\-')}(?=[ \`])`);
  return rows.filter((r) => at.test(r.head)).map((r) => r.line);
}

describe('docs/cli.md names every command and flag', () => {
  const program = buildProgram();

  test.each(program.commands.map((c) => [c.name(), c] as const))('%s: a row, and each of its flags in it', (name, command) => {
    const documented = rowsOf(name).join('\n');
    expect([name, documented === '' ? 'no row' : 'row']).toEqual([name, 'row']);
    const flags = command.options.map((o) => o.long).filter((f): f is string => f !== undefined && f !== '--json' && f !== '--help');
    const missing = flags.filter((f) => !new RegExp(`${f.replace(/-/g, '\\-')}(?![\\w-])`).test(documented));
    expect([name, missing]).toEqual([name, []]);
  });

  test('--version: the program has it, as package.json says, and the page names it', () => {
    const pkg = JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { version: string };
    expect(program.version()).toBe(pkg.version);
    expect(DOC).toMatch(/`[^`\n]*--version`/);
  });
});
