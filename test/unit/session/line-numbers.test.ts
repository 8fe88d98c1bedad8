/**
 * The shell's error messages number lines from the command's own first
 * line, as in a script, however many commands the session ran before.
 */
import { renumberShellErrors } from '../../../src/session/result';
import { closeSessions, startSession } from './helpers';

afterEach(closeSessions);

describe('line numbers in bash errors count from the command', () => {
  test('a command not found is on line 1, in a new session and after many commands', async () => {
    const s = await startSession();
    expect((await s.run('nosuchcmd')).output).toBe('bash: line 1: nosuchcmd: command not found\n');
    expect((await s.run('nosuchcmd')).output).toBe('bash: line 1: nosuchcmd: command not found\n');
    for (let i = 0; i < 30; i++) await s.run(i % 2 ? 'true' : 'echo a\necho b\n');
    const r = await s.run('echo one\nnosuchcmd');
    expect(r.exitCode).toBe(127);
    expect(r.output).toBe('one\nbash: line 2: nosuchcmd: command not found\n');
  });

  test('syntax errors and runtime errors in one multi-line command', async () => {
    const s = await startSession();
    await s.run('true\ntrue\ntrue');
    expect((await s.run('echo x\nnosuch_a\n(nosuch_b)\necho $(nosuch_c)')).output).toBe(
      'x\nbash: line 2: nosuch_a: command not found\nbash: line 3: nosuch_b: command not found\nbash: line 4: nosuch_c: command not found\n\n',
    );
    expect((await s.run('echo one\necho two\necho "three')).output).toMatch(
      /^bash: line 3: unexpected EOF while looking for matching `"'$/m,
    );
  });

  test("an unclosed heredoc: exit 0, a warning that names the command's lines, the rest as the body", async () => {
    const s = await startSession();
    await s.run('true');
    const r = await s.run('cat <<EOF\nhello');
    expect(r.exitCode).toBe(0);
    expect(r.output).toBe("bash: line 2: warning: here-document at line 1 delimited by end-of-file (wanted `EOF')\nhello\n");
  });

  test('a long command (sent through a file) is numbered the same way', async () => {
    const s = await startSession();
    await s.run('true');
    const r = await s.run(`: ${'x'.repeat(4000)}\nnosuch_long`);
    expect(r.output).toBe('bash: line 2: nosuch_long: command not found\n');
  });

  test('a child bash keeps its own numbering', async () => {
    const s = await startSession();
    const r = await s.run("bash -c $'true\\ntrue\\nnosuch_child'");
    expect(r.output).toBe('bash: line 3: nosuch_child: command not found\n');
  });
});

describe('renumberShellErrors', () => {
  test("renumbers the shell's own messages inside the command, keeps the rest", () => {
    const text = [
      'bash: line 41: x: command not found',
      'bash: eval: line 43: syntax error: unexpected end of file',
      'bash: line 45: y: command not found',
      'bash: line 7: z: command not found',
      'main: line 40: f: command not found',
      'output that says bash: line 41: in the middle',
    ].join('\n');
    expect(renumberShellErrors(text, 40, 3).split('\n')).toEqual([
      'bash: line 2: x: command not found',
      'bash: line 4: syntax error: unexpected end of file',
      'bash: line 45: y: command not found',
      'bash: line 7: z: command not found',
      'main: line 40: f: command not found',
      'output that says bash: line 41: in the middle',
    ]);
    expect(renumberShellErrors('bash: line 41: x', 0, 3)).toBe('bash: line 41: x');
    expect(renumberShellErrors('/usr/bin/bash: line 41: x', 40, 3)).toBe('/usr/bin/bash: line 2: x');
  });
});
