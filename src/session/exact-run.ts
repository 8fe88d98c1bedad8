/**
 * The steps of `BashSession.runExact` around the program itself (exact.ts):
 * refusing what must not run (a program off the trusted PATH, a working
 * directory that moved or a path that leaves the workspace, a FIFO), and the
 * launch: the session's limits, its sandbox and identity (or the caller's
 * launcher), and its pids cgroup.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { outsideWhy, resolveTrustedProgram, type ExactLauncher, type ViewCheck } from './exact';
import { limitedArgv, type ResolvedLimits } from './limits';
import type { Launch } from './fds';
import { sandboxedSpawnArgs, type SandboxOptions } from './sandbox';

/**
 * Thrown by {@link BashSession.runExact} when it refuses to run: the
 * program is not on the trusted PATH, or a path leaves the workspace (a
 * symlink, or the shell's working directory is outside it). Nothing ran; the
 * caller asks a human instead.
 */
export class ExactRefusedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'ExactRefusedError';
  }
}

/** What an exact run is checked against and launched with. */
export interface ExactPlace {
  /** The shell's working directory as the kernel reports it now. */
  cwd: string;
  /** The working directory the command was judged in. */
  judgedIn: string;
  /** The directory the paths must stay inside (`BashSession.exactRoot`). */
  root: string;
  /** How the program's sandbox shows a path (none: the caller's launcher, or no sandbox). */
  view: ViewCheck | undefined;
}

/**
 * The trusted program of `argv[0]`, once the working directory and every one of `paths` are
 * known to stay inside the workspace.
 * @returns the program's absolute path
 * @throws ExactRefusedError (nothing ran) when the program is not in /usr/bin or /bin, the shell moved
 *   since the command was judged, or the working directory or a path is outside the workspace or is a
 *   FIFO, socket or device
 */
export function checkExactRun(argv: readonly string[], paths: readonly string[], at: ExactPlace): string {
  const file = resolveTrustedProgram(argv[0]!);
  if (!file) throw new ExactRefusedError(`${argv[0]} is not a program in ${'/usr/bin or /bin'}`);
  // Paths were judged against a cwd (by default the one this session last reported); a background job may have moved it since.
  if (at.judgedIn !== at.cwd)
    throw new ExactRefusedError(`the shell's working directory moved (${at.judgedIn} -> ${at.cwd}) since the command was judged`);
  const cwdWhy = outsideWhy(at.cwd, at.root, at.view);
  if (cwdWhy)
    throw new ExactRefusedError(`the working directory ${at.cwd} is outside the workspace ${at.root}: ${cwdWhy}${viewNote(cwdWhy)}`);
  for (const p of paths) {
    const abs = path.resolve(at.cwd, p);
    const why = outsideWhy(abs, at.root, at.view);
    if (why)
      throw new ExactRefusedError(`${p} resolves outside the workspace ${at.root} (through a symlink or ..): ${why}${viewNote(why)}`);
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(abs);
    } catch {
      /* missing: the program says so */
    }
    // A FIFO, socket or device would block or stream forever.
    if (st && !st.isFile() && !st.isDirectory())
      throw new ExactRefusedError(`${p} is not a regular file or directory (a FIFO, socket or device)`);
  }
  return file;
}

/**
 * What a person approving the command must know when a refusal speaks of "the sandbox": that sandbox is the
 * one of commands run without asking, which shows the workspace and little else. An approved command runs in
 * the session's own sandbox, which reads most of the machine (read-only; the product's data, other
 * workspaces and the owner's home hidden), so it may well read what the exact run's sandbox hid (docs/security.md, the sandbox rows).
 */
export const EXACT_VIEW_NOTE =
  " (that is the sandbox of commands run without asking; if you approve, the command runs in the session's sandbox, which reads most of the machine, read-only)";

function viewNote(why: string): string {
  return / in the sandbox|the sandbox (hides|gives)|cannot search/.test(why) ? EXACT_VIEW_NOTE : '';
}

/**
 * How to spawn the program `file` with `argv`'s arguments in `cwd`: under the shell's own limits
 * (ulimit values, OOM score) and in its cgroups (`cgroups`: the `cgroup.procs` files of its pids
 * cgroup and of its socket-memory cgroup, guard.ts `joinFiles`), so an auto-approved program is as
 * bounded as any command and a runaway is this command's failure; in the same sandbox and identity
 * as the shell (a fresh bwrap, the session user), unless `launcher` wraps it itself.
 * @throws ExactRefusedError when the limits cannot be applied to it
 */
export function exactLaunch(
  file: string,
  argv: readonly string[],
  cwd: string,
  how: { limits: ResolvedLimits; sandbox: SandboxOptions; launcher: ExactLauncher | undefined; cgroups: readonly string[] },
): Launch {
  let limited: string[];
  try {
    limited = limitedArgv(how.limits, [file, ...argv.slice(1)]);
  } catch (err) {
    throw new ExactRefusedError((err as Error).message);
  }
  const launch: Launch = how.launcher ? how.launcher(limited[0]!, limited.slice(1), cwd) : sandboxedSpawnArgs(how.sandbox, limited, cwd);
  if (how.cgroups.length === 0) return launch;
  // Joins before anything is exec'd (so before any fork), as the worker's user, then becomes the launch.
  return {
    file: '/bin/sh',
    args: [
      '-c',
      'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ >"$1" || exit 126; shift; n=$((n - 1)); done; exec "$@"',
      'agent-jobs-exact',
      String(how.cgroups.length),
      ...how.cgroups,
      launch.file,
      ...launch.args,
    ],
    // sh keeps the passed descriptors open across its exec.
    ...(launch.pass ? { pass: launch.pass } : {}),
  };
}
