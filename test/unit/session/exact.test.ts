/**
 * BashSession.runExact: what an auto-approved command runs (attack kind 4,
 * session state that redirects a program, and C18). Earlier, human-approved commands set traps for a later `cat`;
 * the program that runs must still be /usr/bin/cat with the approved argv.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { EXACT_VIEW_NOTE, ExactRefusedError } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

function workspace(): string {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'notes.txt'), 'the real content\n');
  return dir;
}

describe('kind 4: session state cannot redirect an auto-approved program', () => {
  const traps: [string, string][] = [
    ['a function named cat', 'cat() { echo HIJACKED; touch pwned; }'],
    ['an alias', "alias cat='echo HIJACKED; touch pwned; :'"],
    [
      'a PATH entry in the workspace',
      'mkdir -p bin && printf "#!/bin/sh\\necho HIJACKED; touch pwned\\n" > bin/cat && chmod +x bin/cat && export PATH="$PWD/bin:$PATH"',
    ],
    [
      'a hashed path',
      'mkdir -p bin && printf "#!/bin/sh\\necho HIJACKED; touch pwned\\n" > bin/cat && chmod +x bin/cat && hash -p "$PWD/bin/cat" cat',
    ],
    ['exported LD_PRELOAD and BASH_ENV', 'export LD_PRELOAD=/nonexistent/evil.so BASH_ENV=/nonexistent/x ENV=/nonexistent/x'],
    ['disabled builtins and a DEBUG trap attempt', "trap 'echo HIJACKED' DEBUG; shopt -s extdebug"],
    ['a function named like the absolute path', 'function /usr/bin/cat { echo HIJACKED; }'],
  ];
  test.each(traps)('%s', async (_name, setup) => {
    const dir = workspace();
    const s = await startSession({ cwd: dir });
    await s.run(setup);
    const r = await s.runExact(['cat', 'notes.txt'], { paths: ['notes.txt'] });
    expect(r).toMatchObject({ exitCode: 0, output: 'the real content\n' });
    expect(fs.existsSync(path.join(dir, 'pwned'))).toBe(false);
    // while in the shell the trap still works (it is the shell's state, approved by a human)
    if (setup.startsWith('cat()')) expect((await s.run('cat notes.txt')).output).toBe('HIJACKED\n');
  });

  test('runs in the directory the shell is really in, even with PWD forged', async () => {
    const dir = workspace();
    fs.mkdirSync(path.join(dir, 'sub'));
    fs.writeFileSync(path.join(dir, 'sub', 'notes.txt'), 'in sub\n');
    const s = await startSession({ cwd: dir });
    await s.run('cd sub; PWD=' + dir);
    expect((await s.runExact(['cat', 'notes.txt'], { paths: ['notes.txt'] })).output).toBe('in sub\n');
  });

  test("the exit status and output are the program's, with output processed like run()", async () => {
    const dir = workspace();
    const s = await startSession({ cwd: dir });
    const r = await s.runExact(['cat', 'missing.txt'], { paths: ['missing.txt'] });
    expect(r.exitCode).toBe(1);
    expect(r.output).toMatch(/cat: missing.txt: No such file or directory/);
    expect(r.sessionRestarted).toBe(false);
  });
});

describe('C18: paths and programs the policy could not see', () => {
  test('a symlink inside the workspace pointing outside is refused; nothing runs', async () => {
    const dir = workspace();
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside\n');
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(dir, 'link.txt'));
    fs.symlinkSync(outside, path.join(dir, 'linkdir'));
    const s = await startSession({ cwd: dir });
    await expect(s.runExact(['cat', 'link.txt'], { paths: ['link.txt'] })).rejects.toBeInstanceOf(ExactRefusedError);
    // The reason names where the link leads (with the sandbox, /tmp's private view covers the target, not the link).
    await expect(s.runExact(['cat', 'link.txt'], { paths: ['link.txt'] })).rejects.toThrow(
      s.sandbox === 'bwrap' && outside.startsWith('/tmp/')
        ? `link.txt resolves outside the workspace ${fs.realpathSync(dir)} (through a symlink or ..): ${dir}/link.txt is not the same in the sandbox (it leads to ${fs.realpathSync(outside)}/secret.txt, and the sandbox gives bash a private /tmp)`
        : 'link.txt resolves outside the workspace',
    );
    // A person reading that reason must not take "the sandbox hides" as "approving it is harmless".
    if (s.sandbox === 'bwrap') await expect(s.runExact(['cat', 'link.txt'], { paths: ['link.txt'] })).rejects.toThrow(EXACT_VIEW_NOTE);
    await expect(s.runExact(['cat', 'linkdir/secret.txt'], { paths: ['linkdir/secret.txt'] })).rejects.toThrow(/outside the workspace/);
    await expect(s.runExact(['ls'], { paths: ['linkdir/../..'] })).rejects.toThrow(/outside the workspace/);
  });

  test('a shell that cd-ed out of the workspace gets no auto-approved program', async () => {
    const dir = workspace();
    const s = await startSession({ cwd: dir });
    await s.run('cd /');
    await expect(s.runExact(['ls'], { paths: ['.'] })).rejects.toThrow(/working directory \/ is outside the workspace/);
  });

  test('programs not on the trusted PATH are refused: ./ls, /tmp/ls, a name only in the workspace', async () => {
    const dir = workspace();
    const s = await startSession({ cwd: dir });
    for (const p of ['./ls', '/tmp/ls', 'no-such-program-xyz']) {
      await expect(s.runExact([p])).rejects.toBeInstanceOf(ExactRefusedError);
    }
  });

  test('a timeout kills the program', async () => {
    const dir = workspace();
    const s = await startSession({ cwd: dir });
    const r = await s.runExact(['sleep', '30'], { timeoutMs: 300 });
    expect(r).toMatchObject({ timedOut: true, exitCode: null });
    // The timeout's kill ended it, not the program's own 30 s (how soon after 300 ms is a figure for a quiet machine).
    expect(r.durationMs).toBeLessThan(30_000);
  });
});
