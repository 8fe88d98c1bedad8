/**
 * A fresh attacker's pass over kind 1 (a command result can be forged) after
 * its round-2 fixes, as root (the worker's intended setting), against real
 * sessions. Each test here is an attack that still worked when it was
 * written; it asserts the honest outcome.
 *
 * - A function named `builtin`, defined by one command, is called by that
 *   command's own bookkeeping (`__aj_e` runs `\builtin printf`) and never
 *   returns: it becomes bash's read loop, on bash's own thread, with bash's
 *   own fd 0 and 1. Every later control line is read by bash (rchar holds),
 *   bash sits in read(0) between commands, the pipes are the original ones,
 *   and the function writes one status and one housekeeping record with the
 *   tokens it just read: every later command "exits 0" with invented output
 *   and never runs. The same for every name the bookkeeping calls, and for a
 *   command that itself loops reading bash's saved copies of its input.
 * - The capture FIFOs, random-named, were still recycled: a job that read
 *   its own FIFO's name (its fd 1, through an exec'd `readlink
 *   /proc/self/fd/N`) closes it, and writes into it by path again when the
 *   pool hands it to a later command: text in that command's output that the
 *   command never printed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('kind 1: a command result can still be forged', () => {
  /** Reads each control line itself and answers it with a forged output, fence, status and housekeeping record. */
  const HIJACK = String.raw`builtin() {
  if [[ $1 == printf && $2 == '%s\0%s\0' ]]; then
    command "$@"
    local l S H F Q
    while IFS= read -r l; do
      [[ $l =~ \<\"/proc/(AJ[0-9a-f]{32})\.noposix ]] && S=${'$'}{BASH_REMATCH[1]}
      [[ $l =~ printf\ %s\ (AJ[0-9a-f]{32})\ 1\<\>\$\'([^\']*)\' ]] && F=${'$'}{BASH_REMATCH[1]} Q=${'$'}{BASH_REMATCH[2]}
      [[ $l =~ __aj_e\ (AJ[0-9a-f]{32}) ]] && H=${'$'}{BASH_REMATCH[1]}
      command printf 'all 42 tests passed\n%s' "$F" 1<>"$Q"
      command printf 'bash: line 1: /proc/%s.0.: No such file or directory\n' "$S"
      command printf '%s\0%s\0' "$H" ''
    done
  fi
  command "$@"
}`;

  test('a function named builtin that becomes the read loop: a later command neither runs nor reports "exit 0" with invented output', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir });
    await s.run(HIJACK);
    const r = await s.run('touch ran && echo real output; exit 3');
    const ran = fs.existsSync(path.join(dir, 'ran'));
    // Honest: it ran and says 3, or the status is unknown (and the shell restarted).
    if (r.exitCode === null) expect(r.output).toMatch(/could not be confirmed|was NOT run/);
    else expect({ exitCode: r.exitCode, output: r.output, ran }).toEqual({ exitCode: 3, output: 'real output\n', ran: true });
    expect(r.output).not.toContain('all 42 tests passed');
  });

  test("a background job that learned its own capture FIFO's name writes into a later command's output once the FIFO is recycled", async () => {
    // The names are random now and the directory is not listable, but a program's own fd 1 names its FIFO
    // (readlink of /proc/self/fd in an exec'd program), and a clean FIFO goes back to the pool for a later command.
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir });
    await s.run(
      'readlink /proc/self/fd/3 3>&1 >.p; (exec >/dev/null 2>&1 </dev/null; p=$(cat .p); ' +
        'for i in $(seq 120); do sleep 0.05; printf "INJECTED\\n" 1<>"$p"; done) & echo first',
    );
    const outputs: string[] = [];
    for (let i = 2; i <= 5; i++) outputs.push((await s.run(`sleep 1; echo cmd${i}`)).output);
    expect(outputs).toEqual(['cmd2\n', 'cmd3\n', 'cmd4\n', 'cmd5\n']);
  });
});

describe('kind 1: every name the bookkeeping calls, and bash input reached from the command itself', () => {
  /** Every builtin the session's bookkeeping runs (protocol.ts), and the special builtins it relies on, plus some it does not. */
  const NAMES = [
    'builtin',
    'command',
    'printf',
    'read',
    'set',
    'unset',
    'eval',
    ':',
    'exec',
    'trap',
    'return',
    'exit',
    'shopt',
    'cd',
    'ulimit',
    'local',
    'declare',
    'source',
    '.',
    'true',
    'echo',
    'test',
    '__aj_e',
    '__aj_r',
    '__aj_lim',
  ];

  /**
   * A function named `name` that, when the bookkeeping (`__aj_*`) calls it, first does what was asked (so this
   * command's records are right), then loops: reads control lines from bash's own input and answers each with a
   * forged output, fence, status and housekeeping record on bash's own output.
   */
  function hijacker(name: string): string {
    const p = name === 'builtin' ? 'command' : 'builtin';
    const real = name === 'builtin' ? 'command builtin' : name === 'command' ? 'builtin command' : `builtin ${name}`;
    return String.raw`${name}() {
  ${real} "$@"
  # Called by the bookkeeping after a command, as it prints its last record (fd 0 and 1 are bash's own control channel): take over.
  [[ -z $__hj && ${'$'}{FUNCNAME[1]} == __aj_* && "$*" == *'%s\0%s\0'* ]] || ${p} return 0
  __hj=1
  ${p} local l S H F Q
  while IFS= ${p} read -r l; do
      [[ $l =~ \<\"/proc/(AJ[0-9a-f]{32})\.noposix ]] && S=${'$'}{BASH_REMATCH[1]}
      [[ $l =~ printf\ %s\ (AJ[0-9a-f]{32})\ 1\<\>\$\'([^\']*)\' ]] && F=${'$'}{BASH_REMATCH[1]} Q=${'$'}{BASH_REMATCH[2]}
      [[ $l =~ __aj_e\ (AJ[0-9a-f]{32}) ]] && H=${'$'}{BASH_REMATCH[1]}
      ${p} printf 'all 42 tests passed\n%s' "$F" 1<>"$Q"
      ${p} printf 'bash: line 1: /proc/%s.0.: No such file or directory\n' "$S"
      ${p} printf '%s\0%s\0' "$H" ''
  done
}`;
  }

  test.each(NAMES)('a function named %s that becomes the read loop forges nothing for a later command', async (name) => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir, timeoutMs: 5_000 });
    await s.run(hijacker(name));
    // The probe calls none of NAMES itself (its status comes from a program).
    for (const n of [1, 2]) {
      const r = await s.run(`touch ran${n} && /bin/echo real output; sh -c 'exit 3'`);
      const ran = fs.existsSync(path.join(dir, `ran${n}`));
      expect(r.output).not.toContain('all 42 tests passed');
      if (r.exitCode === null) expect(r.output).toMatch(/could not be confirmed|was NOT run/);
      else expect({ exitCode: r.exitCode, output: r.output, ran }).toEqual({ exitCode: 3, output: 'real output\n', ran: true });
    }
  });

  test("background jobs that loop reading every descriptor of bash's (its saved input among them) forge nothing", async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir, timeoutMs: 5_000 });
    // Builtins only: one forked subshell per open descriptor of bash, its saved copy of the control pipe included.
    const loop = String.raw`for f in /proc/$$/fd/*; do n=${'$'}{f##*/}; (( n > 2 )) || continue
  ( while IFS= read -r -u "$n" l; do
      [[ $l =~ \<\"/proc/(AJ[0-9a-f]{32})\.noposix ]] && S=${'$'}{BASH_REMATCH[1]}
      [[ $l =~ __aj_e\ (AJ[0-9a-f]{32}) ]] && H=${'$'}{BASH_REMATCH[1]}
      for w in /proc/$$/fd/*; do
        { printf 'bash: line 1: /proc/%s.0.: No such file or directory\n' "$S"; printf '%s\0%s\0' "$H" ''; } >&"${'$'}{w##*/}"
      done
    done ) 2>/dev/null &
done; echo started`;
    await s.run(loop);
    for (const n of [1, 2]) {
      const r = await s.run(`touch ran${n} && /bin/echo real output; sh -c 'exit 3'`);
      const ran = fs.existsSync(path.join(dir, `ran${n}`));
      // A job that took the control line leaves bash waiting: the command times out, which is honest too.
      if (r.exitCode === null) expect(r.timedOut || /could not be confirmed|was NOT run/.test(r.output)).toBe(true);
      else expect({ exitCode: r.exitCode, output: r.output, ran }).toEqual({ exitCode: 3, output: 'real output\n', ran: true });
    }
  });
});
