/**
 * Commands with syntax errors return an error at once and do not break the
 * session; heredocs and long commands arrive byte for byte.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir, timed } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('syntax errors return an error, not a hang, and the next command works', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['unbalanced double quote', 'echo "unbalanced', /bash: line 1: unexpected EOF while looking for matching `"'/],
    ['unbalanced single quote', "echo 'abc", /unexpected EOF while looking for matching `''/],
    ['unclosed $(', 'echo $(date', /unexpected EOF while looking for matching `\)'/],
    ['unclosed backtick', 'echo `date', /unexpected EOF/],
    ['bad for loop', 'for i in 1 2; echo $i; done', /bash: line 1: syntax error near unexpected token `echo'/],
    ['unclosed if', 'if true; then echo x', /syntax error: unexpected end of file/],
    ['stray fi', 'fi', /syntax error near unexpected token `fi'/],
    ['unclosed brace', '{ echo x', /syntax error: unexpected end of file/],
  ];
  test.each(cases)('%s', async (_name, command, message) => {
    const s = await startSession();
    await s.run('marker=kept');
    const [r, ms] = await timed(() => s.run(command));
    expect(r.exitCode).toBe(2);
    expect(r.output).toMatch(message);
    expect(r.sessionRestarted).toBe(false);
    expect(ms).toBeLessThan(1000);
    expect((await s.run('echo "next works, $marker"')).output).toBe('next works, kept\n');
  });

  test('an error on line 3 of a multi-line command is reported as line 3', async () => {
    const s = await startSession();
    for (let i = 0; i < 5; i++) await s.run('true');
    const r = await s.run('echo one\necho two\necho "three');
    expect(r.output).toMatch(/^bash: line 3: unexpected EOF/m);
  });

  test('an unclosed heredoc returns (bash warns and uses the rest as the body)', async () => {
    const s = await startSession();
    const r = await s.run('cat <<EOF\nhello\nno terminator');
    expect(r.output).toMatch(/here-document at line \d+ delimited by end-of-file \(wanted `EOF'\)/);
    expect(r.output).toMatch(/hello\nno terminator\n/);
    expect((await s.run('echo next')).output).toBe('next\n');
  });
});

describe('heredocs and long commands arrive exactly', () => {
  test('a heredoc that writes a file writes exactly its lines', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    const body = [
      'line one',
      '  indented $NOT_EXPANDED `not run` $(not run)',
      'quotes \' " \\ backslash',
      'tab\there',
      'unicode: héllo ✓ 日本',
      '',
      'last',
    ];
    const r = await s.run(`cat > out.txt <<'EOF'\n${body.join('\n')}\nEOF`);
    expect(r.exitCode).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'out.txt'), 'utf8')).toBe(body.join('\n') + '\n');
  });

  test('an expanding heredoc expands variables and command substitutions', async () => {
    const s = await startSession();
    const r = await s.run('name=world\ncat <<EOF\nhello $name $(echo sub)\nEOF');
    expect(r.output).toBe('hello world sub\n');
  });

  test('a 200 KB command (a file written by heredoc) arrives byte for byte, quickly', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    const lines = Array.from({ length: 4000 }, (_, i) => `${i}: ${'abc\'"\\$`'.repeat(5)} ünïcode`);
    const [r, ms] = await timed(() => s.run(`cat > big.txt <<'END_OF_FILE'\n${lines.join('\n')}\nEND_OF_FILE\nwc -l < big.txt`));
    expect(r.output).toBe('4000\n');
    expect(fs.readFileSync(path.join(dir, 'big.txt'), 'utf8')).toBe(lines.join('\n') + '\n');
    expect(ms).toBeLessThan(2000);
  });

  test('control characters and escapes in the command are passed literally', async () => {
    const s = await startSession();
    const r = await s.run("printf '%s|' 'a\\tb' \"c\\nd\" $'e\\x41f' 'tab\there'");
    expect(r.output).toBe('a\\tb|c\\nd|eAf|tab\there|');
  });
});
