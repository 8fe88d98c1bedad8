/**
 * Opening what a session may have written without being led elsewhere or made to wait: a directory
 * one name at a time from a descriptor, never through a symlink ({@link openDirAt}), and a file
 * only when it is a regular one, opened without blocking and read to a bound ({@link readRegular}).
 * Shared by the git guard (git-guard.ts), the git audit (git-audit.ts), the sub-agent's pinned git
 * directories (pins.ts) and the worker's own git in a new worktree (worktree-git.ts). Linux only
 * (`O_PATH`, `/proc/self/fd`).
 */
import * as fs from 'node:fs';
import { nameBytes } from './git-walk';

/** `O_RDONLY | O_DIRECTORY | O_NOFOLLOW`: a directory's descriptor, never through a symlink at the last component. */
export const DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

/** Linux `O_PATH` (not in Node's constants): a descriptor naming an inode, opened for no I/O (no FIFO blocks). */
export const O_PATH = 0o10000000;

/** `O_PATH | O_DIRECTORY | O_NOFOLLOW`: {@link DIR_FLAGS} for a descriptor that is only bound or walked from, never read. */
export const PATH_DIR_FLAGS = O_PATH | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

/**
 * A descriptor of the directory `name` (one name, no `/`) in the directory `dir` (a descriptor),
 * not following a symlink: `/proc/self/fd/<dir>/<name>`, which the kernel resolves from the
 * directory the descriptor holds (a magic link, not a path walked again), is Node's
 * `openat(dir, name)`. `flags` default to {@link DIR_FLAGS} (pass {@link PATH_DIR_FLAGS} for an
 * `O_PATH` one). A name holding bytes that are no UTF-8 (git-walk.ts `decodeName`) is opened by
 * those bytes.
 * @throws Error (ENOENT, ELOOP, ENOTDIR, …) when `name` is missing, a symlink or no directory
 */
export function openDirAt(dir: number, name: string, flags: number = DIR_FLAGS): number {
  return fs.openSync(nameBytes(`/proc/self/fd/${dir}/${name}`), flags);
}

/**
 * Opens `name` (one component) in the directory `dirFd` whatever it is, `O_PATH`, never through a symlink:
 * a symlink there gives a descriptor of the link itself (`fstat` says so), a FIFO does not block.
 * @throws Error (ENOENT) when it is missing
 */
export function openEntryAt(dirFd: number, name: string): number {
  return fs.openSync(nameBytes(`/proc/self/fd/${dirFd}/${name}`), O_PATH | fs.constants.O_NOFOLLOW);
}

/** What {@link readRegular} read: at most `max` bytes, the `fstat` of the descriptor read through, and whether there was more. */
export interface RegularRead {
  readonly bytes: Buffer;
  /** Of the file read (size, owner, mode), whatever the name holds meanwhile. */
  readonly st: fs.Stats;
  /** The file held more than `max` bytes (it may have grown since the `fstat`). */
  readonly truncated: boolean;
}

/**
 * The first `max` bytes of the regular file `file` (absolute), opened without blocking
 * (`O_NONBLOCK`: a FIFO a session left at that name would otherwise wait for a writer for ever,
 * freezing the worker's thread; adversary round 16), through a symlink only when `follow`
 * (otherwise `O_NOFOLLOW`: a symlink at the last component fails with ELOOP). A name holding bytes
 * that are no UTF-8 is opened by those bytes.
 * @throws Error when `file` is missing (code ENOENT), unreadable, a symlink and not `follow`, or no regular file
 */
export function readRegular(file: string, max: number, follow: boolean): RegularRead {
  const c = fs.constants;
  const fd = fs.openSync(nameBytes(file), c.O_RDONLY | c.O_NONBLOCK | (follow ? 0 : c.O_NOFOLLOW));
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) throw new Error(`${file} is no regular file`);
    // One byte more than `max`, to tell a file of more than `max` bytes.
    const buf = Buffer.alloc(Math.min(st.size, max) + 1);
    let n = 0;
    while (n < buf.length) {
      const got = fs.readSync(fd, buf, n, buf.length - n, n);
      if (got === 0) break;
      n += got;
    }
    return { bytes: buf.subarray(0, Math.min(n, max)), st, truncated: n > max };
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * {@link readRegular}, or undefined when `file` is not there (ENOENT, or ENOTDIR: a folder on the way is
 * no folder). Every other failure throws: a file that is there but cannot be read (EWOULDBLOCK under a
 * lease, EACCES, ELOOP for a symlink, a FIFO) is not "no file", since git may read it all the same
 * (adversary round 23: a lease on `packed-refs` hid a replace ref from the git audit).
 * @throws Error as {@link readRegular}, but not for a missing file
 */
export function readRegularIfThere(file: string, max: number, follow: boolean): RegularRead | undefined {
  try {
    return readRegular(file, max, follow);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ENOTDIR') return undefined;
    throw err;
  }
}

/**
 * {@link readRegular}, or undefined where that throws (missing, unreadable, a symlink and not `follow`, no regular file):
 * only for a caller to whom every one of those means the same (a file it rewrites whole or not at all); one that takes
 * undefined for "no file" wants {@link readRegularIfThere}.
 */
export function tryReadRegular(file: string, max: number, follow: boolean): RegularRead | undefined {
  try {
    return readRegular(file, max, follow);
  } catch {
    return undefined;
  }
}
