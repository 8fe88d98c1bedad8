/** What the CLI checks of a `--workdir` (`start`, `fork`) before a run starts. */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { leavesRoot, namesRoot } from '../shared/paths';
import { CliError } from './errors';

/** Kernel file systems: nothing there can be a workspace (a directory cannot be made under them). */
const KERNEL_FS = ['/proc', '/sys', '/dev'];

/**
 * What the CLI can tell of a `--workdir` before a run starts: a path under /proc, /sys or /dev
 * (no workspace can be made there), a relative path that leaves the worker's workspace root (`..`), and an absolute
 * path that on this machine is a file, or has a file on the way. A relative path is under that root, unknown here; a
 * missing absolute path is fine (the worker creates it). The worker checks again: a run whose
 * session cannot open there ends `failed` saying why (docs/cli.md).
 * @throws CliError saying what is wrong with the path
 */
export async function checkWorkdir(dir: string): Promise<void> {
  const bad = (why: string): CliError =>
    new CliError(`--workdir ${dir} cannot be a working directory: ${why}`, 'give a directory, or a path where one can be made');
  if (dir.trim() === '') throw bad('it is empty');
  if (!path.isAbsolute(dir)) {
    if (leavesRoot(dir)) throw bad("a relative path is under the worker's workspace root, and this one leaves it (..)");
    if (namesRoot(dir))
      throw bad(
        "a relative path is under the worker's workspace root, not the current directory, and this one is that root itself (every run's folder): to run in the repository you are in, pass its absolute path: --workdir /abs/path",
      );
    return;
  }
  const resolved = path.resolve(dir);
  if (KERNEL_FS.some((k) => resolved === k || resolved.startsWith(`${k}/`)))
    throw bad(`it is under /${resolved.split('/')[1]}, a kernel file system`);
  // The nearest part of the path that exists must be a directory.
  for (let at = resolved; ; at = path.dirname(at)) {
    const st = await stat(at).catch(() => null);
    if (st !== null) {
      if (!st.isDirectory()) throw bad(at === resolved ? 'it is a file, not a directory' : `${at} is a file, not a directory`);
      return;
    }
    if (at === path.dirname(at)) return;
  }
}

/**
 * The warning `start --workdir` prints when the worker runs without the sandbox (`AGENT_JOBS_SANDBOX=none` in this
 * environment, as a worker started from it has) and the directory holds a git repository: what the session can still
 * plant there without namespaces (docs/security.md, the mode-`none` row). Undefined otherwise (a relative path is the
 * worker's, unknown here). The CLI cannot see the worker's own mode (it falls to `none` by itself when bwrap is
 * missing there), so the warning says whose environment it read; `status` shows the mode a session had.
 */
export async function noSandboxGitWarning(dir: string, env: NodeJS.ProcessEnv = process.env): Promise<string | undefined> {
  if (env.AGENT_JOBS_SANDBOX?.trim() !== 'none' || !path.isAbsolute(dir)) return undefined;
  if ((await stat(path.join(dir, '.git')).catch(() => null)) === null) return undefined;
  return (
    `warning: AGENT_JOBS_SANDBOX=none in this CLI's environment (the worker's own mode is what counts; \`status\` shows it): ${dir} is a git repository, and without the sandbox its .git stays writable to the session (git in it must commit): ` +
    "its config, hooks/ and info/ are taken off the session's ACL entries and held, but something it renames into their place " +
    'is taken back only at the next check (each command, each edit, and every 250 ms): your git run on it meanwhile runs what the session put there. ' +
    'Do not run git in it while the run is open, or use the sandbox (bwrap)\n'
  );
}
