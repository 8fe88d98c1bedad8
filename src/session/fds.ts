/**
 * Descriptors a sandboxed process starts with: only the ones its launch passes on purpose.
 *
 * Why: a worker may inherit descriptors without close-on-exec (a log its supervisor opened, a
 * pipe of a CI runner). Node's startup marks fds 0..15 close-on-exec and stops at the first gap,
 * so fd 20 and up survive; libuv's spawn, setpriv and bwrap close nothing. Without this, bash and
 * every job of the session could read or write whatever those descriptors name, as the worker
 * opened them (a root-only file). Every launch into the sandbox (the shell, exact runs, the edit
 * helper) goes through sandbox.ts `launchArgs`, which wraps its program with {@link closingLaunch}.
 * Attack test: test/unit/attack/inherited-fds.test.ts.
 */

/** The shell that closes the descriptors: bash, since dash cannot name a descriptor above 9. */
export const CLOSER_SHELL = '/bin/bash';

/**
 * Closes every descriptor above 2 that survived the exec (so one the spawner opened without
 * close-on-exec, or inherited), opens `$1` as fd 3 when it is not empty (bwrap's `--seccomp 3`),
 * then execs the rest of its arguments in place (same pid). It runs as the worker's user, outside the
 * sandbox, so it reads no file: `--norc` (bash sources ~/.bashrc when its stdin is a socket, as
 * libuv's pipes are, and $HOME is the session's), `--noprofile`, and `-p` (no BASH_ENV, no
 * functions or SHELLOPTS imported from the environment). `{d}<&-` closes the descriptor numbered `$d`; the
 * directory descriptor the glob read is gone by then, and closing it again is harmless.
 */
const CLOSER_SCRIPT =
  'f=$1; shift; for d in /proc/self/fd/*; do d=${d##*/}; ((d > 2)) && exec {d}<&-; done; [[ -z $f ]] || exec 3<"$f"; exec "$@"';

/**
 * `{file, args}` that start `argv` with stdin, stdout and stderr only (fds 0-2), plus fd 3 open
 * for reading on `fd3File` when given: every other descriptor the spawning process had without
 * close-on-exec is closed before `argv[0]` is exec'd. The environment reaches `argv` as given,
 * but for `SHLVL` (bash's exec sets it; the session's bash sets its own anyway).
 * @throws Error for an empty argv
 */
export function closingLaunch(argv: readonly string[], fd3File?: string): { file: string; args: string[] } {
  if (argv.length === 0) throw new Error('closingLaunch: empty argv');
  return { file: CLOSER_SHELL, args: ['--noprofile', '--norc', '-p', '-c', CLOSER_SCRIPT, 'agent-jobs-launch', fd3File ?? '', ...argv] };
}
