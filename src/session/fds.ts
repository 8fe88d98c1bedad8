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
 * close-on-exec, or inherited) but the `$2` descriptors from {@link PASSED_FD_BASE} on, which the
 * spawn passed on purpose ({@link launchStdio}), opens `$1` as fd 3 when it is not empty (bwrap's
 * `--seccomp 3`, or the seccomp launcher's program), then execs the rest of its arguments in place
 * (same pid). With a launcher (its `$3` first arguments: seccomp-launch.ts), the launcher gets an
 * empty environment (`exec -c`) and, after its own arguments, the number of environment entries and
 * the entries `NAME=value` that a plain `exec` would have passed (every exported variable, `SHLVL`
 * one lower as `exec` lowers it; sorted by name, not in the environment's order; an entry whose name bash cannot hold as a
 * variable is dropped),
 * then the program. It runs as the worker's user, outside the sandbox, so it reads no file: `--norc`
 * (bash sources ~/.bashrc when its stdin is a socket, as libuv's pipes are, and $HOME is the
 * session's), `--noprofile`, and `-p` (no BASH_ENV, no functions or SHELLOPTS imported from the
 * environment). `{d}<&-` closes the descriptor numbered `$d`; the directory descriptor the glob read
 * is gone by then, and closing it again is harmless. A fd 3 that cannot be opened ends it (126).
 */
const CLOSER_SCRIPT =
  'f=$1; k=$2; l=$3; shift 3; for d in /proc/self/fd/*; do d=${d##*/}; ((d > 2 && (d < 4 || d >= 4 + k))) && exec {d}<&-; done; ' +
  '[[ -z $f ]] || exec 3<"$f" || exit 126; ((l == 0)) && exec "$@"; ' +
  'e=(); for n in $(compgen -e); do if [[ $n == SHLVL ]]; then e+=("SHLVL=$((SHLVL - 1))"); else e+=("$n=${!n}"); fi; done; ' +
  'exec -c "${@:1:l}" "${#e[@]}" "${e[@]}" "${@:l+1}"';

/** The first descriptor number a launch's passed descriptors get in its program (3 is the seccomp program's). */
export const PASSED_FD_BASE = 4;

/** A descriptor the worker holds and a launch passes to its program (a directory the session pinned: pins.ts); -1 once closed. */
export interface PassedFd {
  readonly fd: number;
}

/** What to spawn: `file` with `args`, and the descriptors it must get as fds {@link PASSED_FD_BASE}, 5, … ({@link launchStdio}). */
export interface Launch {
  file: string;
  args: string[];
  pass?: readonly PassedFd[];
}

/**
 * `{file, args}` that start `argv` with stdin, stdout and stderr only (fds 0-2), plus fd 3 open
 * for reading on `fd3File` when given, plus `pass` as fds 4, 5, … (spawn with {@link launchStdio}):
 * every other descriptor the spawning process had without close-on-exec is closed before `argv[0]` is exec'd.
 * The environment reaches `argv` as given, but for `SHLVL` (bash's exec sets it; the session's bash sets its own anyway).
 * @param launcher a program run first, with an empty environment, that gets the environment as
 *   arguments and then execs `argv` (seccomp-launch.ts `launcherArgv`; see {@link CLOSER_SCRIPT}) @default none
 * @throws Error for an empty argv
 */
export function closingLaunch(
  argv: readonly string[],
  fd3File?: string,
  pass: readonly PassedFd[] = [],
  launcher: readonly string[] = [],
): Launch {
  if (argv.length === 0) throw new Error('closingLaunch: empty argv');
  return {
    file: CLOSER_SHELL,
    args: [
      '--noprofile',
      '--norc',
      '-p',
      '-c',
      CLOSER_SCRIPT,
      'agent-jobs-launch',
      fd3File ?? '',
      String(pass.length),
      String(launcher.length),
      ...launcher,
      ...argv,
    ],
    ...(pass.length > 0 ? { pass } : {}),
  };
}

/**
 * The spawn's `stdio` for `launch`: `base` (fds 0-2), fd 3 left closed, then the descriptors of
 * `launch.pass`, read now (at the spawn, which dups them synchronously).
 * @throws Error when one was closed meanwhile (its session closed): no other file that took its number is passed
 */
export function launchStdio<T>(launch: Launch, base: readonly T[]): (T | 'ignore' | number)[] {
  const pass = launch.pass ?? [];
  if (pass.length === 0) return [...base];
  if (pass.some((p) => p.fd < 0)) throw new Error('a directory the launch binds by descriptor was closed (its session is closing)');
  return [...base, 'ignore', ...pass.map((p) => p.fd)];
}
