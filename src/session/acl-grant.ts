/**
 * Recursive ACL grant of a workspace, walked by descriptor (session.ts `grantWorkspace`).
 *
 * `setfacl -R -P` walks by path: `-P` holds only for the entry it lstat()ed, so a job of another
 * session on the same workspace (a sub-agent's, a second run on one `--workdir`) that swaps a
 * directory for a symlink between that lstat and the walk below it gets root's setfacl to grant
 * the session user files outside the workspace. Here every entry is opened relative to its
 * parent's descriptor (`/proc/self/fd/<dir>/<name>`, `O_NOFOLLOW`): a directory is walked through
 * the descriptor it was opened as, a symlink is never opened, and setfacl is handed the
 * descriptor's own magic link (`/proc/<worker pid>/fd/<n>`), which names the inode that was
 * opened, whatever the path holds by then. A file with more than one hard link is left as it is:
 * its other name may be outside the workspace. Linux only (`/proc`, `O_PATH`), as the ACL grant is.
 * Asynchronous: setfacl runs as a child the event loop does not wait on, and the walk yields every
 * {@link BATCH} entries, so a big tree (a node_modules of 30k files) never stalls the worker's other
 * runs (their workflow tasks, queries, heartbeats) for the seconds the grant takes.
 */
import { execFile } from 'node:child_process';
import { closeSync, constants, fstatSync, openSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import { MINIMAL_ENV } from './identity';
import { openEntryAt } from './safe-open';

/** Entries granted per setfacl run; their descriptors are open until it ends (Node raises the descriptor limit to the hard one). */
const BATCH = 256;

const execFileAsync = promisify(execFile);

/** Lets the event loop run what waits (timers, heartbeats, other runs' tasks) before the walk goes on. */
const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The ACL specs of a grant (setfacl `-m` syntax): `dirs` for directories (with default entries), `files` for everything else.
 * A file whose mode has no execute bit gets `files` with every `X` dropped and the mask set to `rw-` ({@link plainSpec}).
 */
export interface GrantSpec {
  dirs: string;
  files: string;
}

/**
 * The spec of a file whose mode has no execute bit: `X` dropped and the mask `rw-`. Why: a file
 * created in a granted folder inherits its default entry (`u:<uid>:rwx`, masked to `rw-` by the
 * mode), and setfacl's `X` counts that entry's `x`, then recomputes the mask from every entry of
 * the group class (`group::r-x` included): the file came out `-rw-rwxr--+`, executable by its group
 * (a rewind's restored files, a person's new ones). `rw-` is the mask setfacl would compute, less `x`.
 */
function plainSpec(files: string): string {
  return `${files.replace(/X/g, '')},m::rw`;
}

/** Runs `setfacl -m spec` on the inodes `fds` hold, as a child the event loop does not wait on; nothing when `fds` is empty. */
async function setfacl(spec: string, fds: number[], timeoutMs: number): Promise<void> {
  if (fds.length === 0) return;
  // No -P: setfacl follows the magic link, to the inode the descriptor holds.
  await execFileAsync('setfacl', ['-m', spec, '--', ...fds.map((fd) => `/proc/${process.pid}/fd/${fd}`)], {
    env: MINIMAL_ENV,
    timeout: timeoutMs,
    encoding: 'buffer',
  });
}

/**
 * Applies `spec` to `top` and everything under it, never through a symlink.
 * @param top an absolute directory path (the workspace, symlinks resolved), opened with `O_NOFOLLOW`;
 *   or a descriptor of the directory the caller opened (pins.ts; `O_PATH` will do), left open
 * @param timeoutMs longest one setfacl run may take, ms
 * @param signal when it aborts, the walk stops at its next batch and rejects with its reason (every descriptor it opened closed)
 * @throws Error from setfacl (its `stderr` attached, `code` `ENOENT` when it is not installed), or
 *   when `top` is no directory or a symlink, or `signal`'s reason once it aborted
 */
export async function grantTree(top: string | number, spec: GrantSpec, timeoutMs: number, signal?: AbortSignal): Promise<void> {
  type Kind = 'dir' | 'file' | 'plain';
  const pending: { fd: number; kind: Kind }[] = [];
  const specOf: Record<Kind, string> = { dir: spec.dirs, file: spec.files, plain: plainSpec(spec.files) };
  const apply = (fds: number[], kind: Kind): Promise<void> => setfacl(specOf[kind], fds, timeoutMs);
  const flush = async (): Promise<void> => {
    const batch = pending.splice(0);
    try {
      signal?.throwIfAborted();
      for (const kind of ['dir', 'file', 'plain'] as const)
        await apply(
          batch.filter((e) => e.kind === kind).map((e) => e.fd),
          kind,
        );
    } finally {
      for (const e of batch) closeSync(e.fd);
    }
  };
  let seen = 0;
  const walk = async (dirFd: number): Promise<void> => {
    for (const name of readdirSync(`/proc/self/fd/${dirFd}`)) {
      // Entries that need no grant (symlinks, hard links) cost a walk too: yield as a batch does.
      if (++seen % BATCH === 0) {
        await yieldToLoop();
        signal?.throwIfAborted();
      }
      const at = `/proc/self/fd/${dirFd}/${name}`;
      let fd: number;
      try {
        fd = openEntryAt(dirFd, name);
      } catch {
        continue; // gone meanwhile
      }
      const st = fstatSync(fd);
      if (st.isSymbolicLink()) {
        closeSync(fd);
        continue;
      }
      // A hard link's other name may be outside (a root-only file linked in where fs.protected_hardlinks is 0): no grant.
      if (!st.isDirectory() && st.nlink > 1) {
        closeSync(fd);
        continue;
      }
      if (!st.isDirectory()) {
        pending.push({ fd, kind: (st.mode & 0o111) === 0 ? 'plain' : 'file' });
        if (pending.length >= BATCH) await flush();
        continue;
      }
      closeSync(fd);
      let sub: number;
      try {
        // O_NOFOLLOW | O_DIRECTORY: what is opened is a directory in this one, whatever was swapped in meanwhile.
        sub = openSync(at, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
      } catch {
        continue;
      }
      try {
        await walk(sub);
      } catch (err) {
        closeSync(sub);
        throw err;
      }
      pending.push({ fd: sub, kind: 'dir' });
      if (pending.length >= BATCH) await flush();
    }
  };
  const root = typeof top === 'number' ? top : openSync(top, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    await walk(root);
    await flush();
    await apply([root], 'dir');
  } finally {
    for (const e of pending.splice(0)) closeSync(e.fd);
    if (typeof top !== 'number') closeSync(root);
  }
}
