/**
 * Commands with syntax errors return an error at once and do not break the
 * session; heredocs and long commands arrive byte for byte.
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
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
  // A hang is bash waiting for the rest of the command, until the timeout: the proof there is none is bash's own
  // status 2 (its records, not the timeout's kill, ended the command) in under half the timeout.
  const TIMEOUT_MS = 20_000;
  test.each(cases)('%s', async (_name, command, message) => {
    const s = await startSession({ timeoutMs: TIMEOUT_MS });
    await s.run('marker=kept');
    const [r, ms] = await timed(() => s.run(command));
    expect(r).toMatchObject({ exitCode: 2, timedOut: false, sessionRestarted: false });
    expect(r.output).toMatch(message);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
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
    const command = `cat > big.txt <<'END_OF_FILE'\n${lines.join('\n')}\nEND_OF_FILE\nwc -l < big.txt`;
    // The baseline, measured here so a busy machine slows it alike: the same script run by a plain bash from a
    // file (too long for an argument), plus the session's own cost of a command (`true`). Quickly is at most 10 times
    // that, and never held to less than 2 s (a quiet machine does it all in about 0.1 s).
    fs.writeFileSync(path.join(dir, 'baseline.sh'), command);
    const [, bashMs] = await timed(() => promisify(execFile)('bash', ['baseline.sh'], { cwd: dir }));
    const [, trueMs] = await timed(() => s.run('true'));
    fs.rmSync(path.join(dir, 'big.txt'));
    const [r, ms] = await timed(() => s.run(command));
    expect(r).toMatchObject({ output: '4000\n', exitCode: 0, timedOut: false });
    expect(fs.readFileSync(path.join(dir, 'big.txt'), 'utf8')).toBe(lines.join('\n') + '\n');
    expect(ms).toBeLessThan(Math.max(2000, 10 * (bashMs + trueMs)));
  });

  test('control characters and escapes in the command are passed literally', async () => {
    const s = await startSession();
    const r = await s.run("printf '%s|' 'a\\tb' \"c\\nd\" $'e\\x41f' 'tab\there'");
    expect(r.output).toBe('a\\tb|c\\nd|eAf|tab\there|');
  });
});
