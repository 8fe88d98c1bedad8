/**
 * Attacks on the session protocol (attack kinds 4 and 6 below): state left by
 * earlier commands that tries to change what runs or what is reported, and
 * commands that try to forge their own end-of-command record. Every result
 * must be honest: the real exit status, or `exitCode: null` with a note that
 * says the status is unknown; never a forged one.
 */
import * as path from 'node:path';
import { BashSession, type CommandResult } from '../../../src/session';
import { closeSessions, handOverTokens, removeTempDirs, startSession, tempDir } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** Runs `false` then `true` and checks both statuses come back as they are, or as unknown with a note. */
async function expectHonest(s: BashSession): Promise<void> {
  const f = await s.run('echo ran-false; false');
  if (f.exitCode === null) expect(f.output).toMatch(/could not be confirmed|was NOT run|shell had exited|exited/);
  else {
    expect(f.exitCode).toBe(1);
    expect(f.output).toMatch(/ran-false/);
  }
  const t = await s.run('echo ran-true');
  if (t.exitCode === null) expect(t.output).toMatch(/could not be confirmed|was NOT run|exited/);
  else expect(t).toMatchObject({ exitCode: 0, output: 'ran-true\n' });
}

describe('kind 4: state from earlier commands cannot change what the session runs or reports', () => {
  const setups: [string, string][] = [
    ['a function named eval', 'eval() { echo HIJACKED; return 0; }'],
    ['a function named builtin', 'builtin() { echo HIJACKED; return 0; }'],
    [
      'functions named command, printf, set, unset, read, cd, shopt, exit',
      'for f in command printf set unset read cd shopt exit; do eval "$f() { echo HIJACKED; }"; done',
    ],
    ['a function named return', 'return() { echo HIJACKED; }'],
    ['a function named like an absolute path', 'function /usr/bin/printf { echo HIJACKED; }'],
    [
      'aliases on reserved words and builtins',
      "alias if='echo HIJACKED;' '!'='echo HIJACKED;' '{'='echo HIJACKED;' '[['='echo HIJACKED;' then='echo HIJACKED;' eval='echo HIJACKED;' builtin='echo HIJACKED;' POSIXLY_CORRECT=x",
    ],
    ['declare -u / -l / -i on names the old protocol used', 'declare -u __aj_c __aj_m1; declare -l __aj_m2; declare -i __aj_s __aj_last'],
    ['readonly names the old protocol used', 'readonly __aj_c=x __aj_m1=x __aj_m2=x __aj_s=1 __aj_last=0'],
    ['a nameref POSIXLY_CORRECT', 'declare -n POSIXLY_CORRECT=elsewhere'],
    ['a read-only POSIXLY_CORRECT', 'readonly POSIXLY_CORRECT'],
    [
      'errexit, nounset, xtrace, verbose, posix, noclobber, failglob',
      'set -euxv -o posix -o noclobber; shopt -s failglob nullglob extglob',
    ],
    ['IFS, PATH and locale changed', "IFS=$'\\x01'; PATH=/nonexistent; LC_ALL=C; LANG=xx_XX"],
    ['a DEBUG trap with extdebug (trap is disabled)', "shopt -s extdebug; set -T; trap 'return 1' DEBUG"],
    ["bash's saved output descriptors closed", 'exec 11>&- 12>&- 10<&-'],
  ];
  test.each(setups)('%s', async (_name, setup) => {
    const s = await startSession();
    await s.run(setup);
    await expectHonest(s);
    // and the shell is usable (after a restart if it had to be)
    const r = await s.run('echo usable');
    expect(r.output).toMatch(/usable/);
    expect(r.output).not.toMatch(/HIJACKED/);
  });

  test('an approved command runs as written even with eval, unset and exit redefined', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    await s.run('eval() { :; }; unset() { :; }; exit() { :; }; (exit 3)');
    const r = await s.run('touch made-it && echo done');
    expect(r).toMatchObject({ exitCode: 0, output: 'done\n' });
    expect((await s.run('ls')).output).toBe('made-it\n');
  });

  test('a nameref POSIXLY_CORRECT: the next command is NOT run, the result says so, and the shell is fresh', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    await s.run('declare -n POSIXLY_CORRECT=elsewhere');
    const r = await s.run('touch should-not-exist');
    expect(r.exitCode).toBeNull();
    expect(r.sessionRestarted).toBe(true);
    expect(r.output).toMatch(/was NOT run/);
    expect((await s.run('ls; echo $((1+1))')).output).toBe('2\n');
  });

  test('PWD=/etc does not fool the reported working directory (read from the kernel)', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    const r = await s.run('PWD=/etc; OLDPWD=/etc; echo set');
    expect(r.cwd).toBe(dir);
  });

  test('the markers of the running command are in no variable the command can see', async () => {
    const s = await startSession();
    const r = await s.run('set | grep -c "AJ[0-9a-f]\\{32\\}"; declare -p | grep -c "^declare -- __aj_m"; echo "$BASH_COMMAND"');
    expect(r.output).toBe('0\n0\necho "$BASH_COMMAND"\n');
  });
});

/**
 * The strongest attacker holds the tokens in bash's heap. No process of the
 * session can read it any more (bash is non-dumpable; see
 * test/unit/attack/reach-into-bash.test.ts), so the test hands them over
 * ({@link handOverTokens}) and the command waits for them in `$toks`: this
 * tests the worker's second line, what it does with a forged record that
 * carries a real token.
 */
const FIND_TOKENS = 'until [ -s "$AJ_TOKS" ]; do sleep 0.02; done; toks=$(grep -v "^hk:" "$AJ_TOKS")';
/** Forges a status record `status` on bash's saved descriptors (10 to 12: bash keeps its own stdout there during a command) for each token found by {@link FIND_TOKENS}. */
const forge = (status: number): string =>
  `${FIND_TOKENS}; for t in $toks; do for fd in 10 11 12; do printf 'bash: line 1: /proc/%s.${status}.: No such file or directory\\n' "\${t%.noposix}" >&$fd; done; done 2>/dev/null`;

/** Runs `command` in a fresh session with the tokens handed over to it (in $AJ_TOKS). */
async function runWithTokens(command: string, options: { timeoutMs?: number } = {}): Promise<{ s: BashSession; r: CommandResult }> {
  const dir = tempDir();
  const toks = path.join(dir, 'toks');
  const s = await startSession({ cwd: dir, workspace: dir, env: { AJ_TOKS: toks } });
  const running = s.run(command, options);
  await handOverTokens(s.bashPid, toks);
  return { s, r: await running };
}

describe("kind 6: a command cannot forge its end-of-command record on the session's descriptors", () => {
  test("a fake record with a guessed token on bash's saved stdout (fd 11) is ignored: the command ends when it really ends", async () => {
    const s = await startSession();
    const fake = 'bash: line 1: /proc/AJ00000000000000000000000000000000.0.: No such file or directory\\n';
    const t0 = Date.now();
    const r = await s.run(
      `for fd in 10 11 12; do printf '${fake}' >&$fd; printf 'AJ00000000000000000000000000000000\\0\\0' >&$fd; done; sleep 1; echo real-end; exit 0 2>/dev/null; (exit 3)`,
    );
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(r.output).toMatch(/real-end/);
  });

  test("the tokens handed over are the real ones (bash's heap holds them)", async () => {
    const { r } = await runWithTokens(`${FIND_TOKENS}; echo "found:$toks"`);
    expect(r.output).toMatch(/^found:AJ[0-9a-f]{32}\.noposix/m);
  });

  test('with the real token, a forged status for a failing command is caught: two records, status unknown, shell restarted', async () => {
    const { s, r } = await runWithTokens(`${forge(0)}; false`);
    expect(r.exitCode).toBeNull();
    expect(r.output).toMatch(/could not be confirmed .*2 end-of-command records/);
    expect(r.sessionRestarted).toBe(true);
    expect((await s.run('echo ok')).output).toBe('ok\n');
  });

  test('with the real token, a forged end to escape the timeout is caught: the command does not count as ended', async () => {
    const { s, r } = await runWithTokens(`${forge(0)}; sleep 30`, { timeoutMs: 20_000 });
    // Caught by the session's own check (the housekeeping record did not follow the forged one: HOUSEKEEPING_WAIT_MS,
    // 2 s, in session.ts), not by the command's 20 s timeout nor the sleep's 30 s end.
    expect(r).toMatchObject({ exitCode: null, timedOut: false });
    expect(r.output).toMatch(/could not be confirmed .*did not finish its bookkeeping/);
    expect(r.durationMs).toBeLessThan(20_000);
    expect((await s.run('echo ok')).output).toBe('ok\n');
  });

  test('with the real tokens, a job that forges status 0 and the housekeeping record, then cuts the command short, is caught', async () => {
    // The forged pair comes first and bash is back in its reader at once (its `sleep` killed), so every check but the
    // count passes; bash's own records follow the forged ones, and the worker judges again once bash is back.
    const hk = 'h=$(grep "^hk:" "$AJ_TOKS"); h=${h#hk:}';
    const records = `printf 'bash: line 1: /proc/%s.0.: No such file or directory\\n' "\${t%.noposix}" >&$fd; printf '%s\\0\\0' "$h" >&$fd`;
    const job = `( ${FIND_TOKENS}; ${hk}; for t in $toks; do for fd in 10 11 12; do ${records}; done; done 2>/dev/null; kill $sp )`;
    const { s, r } = await runWithTokens(`sleep 20 & sp=$!; ${job} & wait $sp; echo real; (exit 7)`);
    expect(r.exitCode).toBeNull();
    expect(r.output).toMatch(/could not be confirmed .*2 end-of-command records/);
    expect(r.sessionRestarted).toBe(true);
    expect((await s.run('echo ok')).output).toBe('ok\n');
  });

  test("with the real token, forging and then closing bash's real stdout is caught (control pipes replaced)", async () => {
    const { s, r } = await runWithTokens(`${forge(0)}; exec 10>/dev/null 11>/dev/null 12>/dev/null; false`);
    expect(r.exitCode).toBeNull();
    expect(r.output).toMatch(/could not be confirmed/);
    expect((await s.run('echo ok')).output).toBe('ok\n');
  });

  test("a command cannot write into another session's output", async () => {
    const a = await startSession();
    const b = await startSession();
    const running = b.run('sleep 1; echo b-end');
    await new Promise((r) => setTimeout(r, 200));
    // find b's FIFO through its bash's fd table and write into it
    const r = await a.run(
      `for f in /proc/${b.pid}/fd/1 /proc/${b.pid}/fd/11; do echo INJECTED > "$f" 2>/dev/null && echo wrote-$f; done; true`,
    );
    const out = await running;
    // In the sandbox (own pid namespace) the other shell is not even visible. Without it both
    // shells are one user and can reach each other: src/session/README.md says so.
    if (a.sandbox === 'bwrap') {
      expect(r.output).not.toMatch(/wrote-/);
      expect(out.output).not.toMatch(/INJECTED/);
    }
    expect(out.output).toMatch(/b-end/);
  });
});
