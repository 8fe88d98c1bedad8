/**
 * What the git audit's two walks (git-walk.ts `walkGit`, ignored-walk.ts `walkIgnored`) share: running a walk's
 * JavaScript in a worker thread within a heap bound and a deadline ({@link runWalkThread}), and the folder open their
 * threads' sources both use ({@link OPEN_FOLDER_SOURCE}). A walk's source runs `eval`'d, so it can `require` only
 * Node's own modules: what it shares with another walk is text put into both sources here.
 */
import { Worker } from 'node:worker_threads';

/** The bounds {@link runWalkThread} holds a thread to. */
export interface WalkThreadBounds {
  /** The thread's old-generation heap, MB (its young generation gets at most 32 MB of it). */
  readonly heapMb: number;
  /** Wall clock, ms, after which the walk is answered as unfinished and its thread terminated. */
  readonly timeoutMs: number;
}

/**
 * Runs `source` (plain JavaScript, `eval`) in a worker thread given `workerData`, with no environment and its stdout
 * and stderr not passed on, and resolves with the first message it posts (`unfinished: null` read as undefined), or
 * else with `failed(why)`: past `bounds.timeoutMs` ("it took more than N s", N in seconds), out of its heap ("it needed
 * more than N MB of memory"), an error ("it failed: …") or an exit without a message. The thread is terminated once
 * answered. Never rejects.
 */
export function runWalkThread<T extends { readonly unfinished: string | undefined }>(
  source: string,
  workerData: unknown,
  bounds: WalkThreadBounds,
  failed: (why: string) => T,
): Promise<T> {
  return new Promise((resolve) => {
    let done = false;
    const finish = (w: T): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(w);
      void worker.terminate();
    };
    const worker = new Worker(source, {
      eval: true,
      workerData,
      resourceLimits: { maxOldGenerationSizeMb: bounds.heapMb, maxYoungGenerationSizeMb: Math.min(32, bounds.heapMb) },
      stdout: true,
      stderr: true,
      env: {},
    });
    const timer = setTimeout(() => finish(failed(`it took more than ${bounds.timeoutMs / 1000} s`)), bounds.timeoutMs);
    worker.on('message', (m: T & { unfinished: string | null | undefined }) => finish({ ...m, unfinished: m.unfinished ?? undefined }));
    worker.on('error', (err: Error & { code?: string }) =>
      finish(
        failed(err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `it needed more than ${bounds.heapMb} MB of memory` : `it failed: ${err.message}`),
      ),
    );
    worker.on('exit', (code) => finish(failed(`it ended without an answer (exit ${code})`)));
  });
}

/**
 * JavaScript for a walk's thread (it needs `fs` and `C = fs.constants` defined before it): `openFolder(abs,
 * unreadable)` opens the folder `abs` (a Buffer, absolute) without following a symlink at its last component and checks
 * that the kernel's path of the descriptor (`/proc/self/fd`) is `abs`, since a folder above it swapped for a symlink
 * meanwhile leads elsewhere. It returns the descriptor, or undefined after calling `unreadable(why)` (why a string),
 * except when the folder is gone, no folder or a symlink (ENOENT, ENOTDIR, ELOOP: nothing there to read).
 */
export const OPEN_FOLDER_SOURCE = String.raw`
function openFolder(abs, unreadable) {
  let fd;
  try {
    fd = fs.openSync(abs, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
    if (!fs.readlinkSync('/proc/self/fd/' + fd, { encoding: 'buffer' }).equals(abs)) {
      fs.closeSync(fd);
      unreadable('a folder above it was moved or swapped for a symlink while it was read');
      return undefined;
    }
    return fd;
  } catch (e) {
    if (fd !== undefined) fs.closeSync(fd);
    if (e.code !== 'ENOENT' && e.code !== 'ENOTDIR' && e.code !== 'ELOOP') unreadable(e.code || e.message);
    return undefined;
  }
}
`;
