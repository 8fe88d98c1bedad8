/** What the CLI checks of a `--workdir` (`start`, `fork`) before a run starts. */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { leavesRoot } from '../shared/paths';
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
