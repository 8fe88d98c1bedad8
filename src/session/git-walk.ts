/**
 * The git audit's reading of the workspace (git-audit.ts), off the worker's event loop: a worker
 * thread running {@link GIT_WALK_SOURCE} reads every folder in batches (`opendir`, so the entry cap
 * holds inside one huge folder), within a time budget ({@link GitWalkLimits.timeMs}, then it is
 * terminated) and a heap bound (`resourceLimits`: a walk that runs out of memory ends that thread,
 * not the worker). A walk that does not finish says why ({@link GitWalk.unfinished}); the audit
 * reports that as a finding, never as a clean workspace. Measured before (round 14): a synchronous
 * walk of one folder of a million entries froze the worker's event loop 3.3 s after a command.
 */
import { Worker } from 'node:worker_threads';

/** What git could take for a git dir below the workspace's root (see {@link GIT_WALK_SOURCE}). */
export interface FoundGitDir {
  /** Path relative to the workspace (`/`-separated). */
  readonly rel: string;
  /** Its inode when walked (lstat). */
  readonly ino: number;
  /**
   * `dotgit`: an entry named `.git` (directory, file or symlink); `bare`: a directory holding `HEAD`, `objects` and
   * `refs`; `split`: a directory holding `HEAD` and `commondir` (git finds its objects and refs in the directory that
   * `commondir` names) but not both `objects` and `refs`.
   */
  readonly kind: 'dotgit' | 'bare' | 'split';
}

/** What one walk read (names as in the folders; each list sorted by name, as `readdirSync` gives them). */
export interface GitWalk {
  /** Every git dir below the root (not into one of kind `dotgit` or `bare`), at most {@link GitWalkLimits.maxFound}. */
  readonly found: FoundGitDir[];
  /** Names in `<git>/modules` and `<git>/worktrees` (none when missing or a symlink). */
  readonly modules: string[];
  readonly worktrees: string[];
  /** Loose refs under `<git>/refs/replace` (relative to it) and packed ones in `<git>/packed-refs` (`packed:refs/replace/…`). */
  readonly replaceRefs: string[];
  /** Why the walk did not read everything (entry cap, too many found, time, memory, a crash), or undefined when it did. */
  readonly unfinished: string | undefined;
}

/** The bounds of one walk. */
export interface GitWalkLimits {
  /** Entries read at most (every folder's entries, the workspace's and the git dir's lists together). @default 2,000,000 */
  readonly maxEntries: number;
  /** Git dirs found at most (each costs a move on the worker's thread). @default 10,000 */
  readonly maxFound: number;
  /**
   * Wall-clock budget, ms, after which the thread is terminated. @default 15,000: well inside the 30 s that
   * `openSession`, a command's slack past its timeout and `closeSession` each have (config.ts).
   */
  readonly timeMs: number;
  /** The thread's old-generation heap, MB. @default 256 */
  readonly heapMb: number;
  /** Bytes of `packed-refs` scanned at most (a repository of a million refs is about 100 MB). @default 256 MiB */
  readonly maxPackedRefsBytes: number;
}

/**
 * Defaults: 2,000,000 entries take about 1 s on this machine (0.5 s per million in one folder, warm,
 * at a load of 5); the heap holds the folders still to read and what was found, not whole folders.
 */
export const GIT_WALK_LIMITS: GitWalkLimits = {
  maxEntries: 2_000_000,
  maxFound: 10_000,
  timeMs: 15_000,
  heapMb: 256,
  maxPackedRefsBytes: 256 << 20,
};

/**
 * Walks `workspace` (absolute, symlinks resolved) and lists the git dir `git` (`<workspace>/.git`)
 * in a worker thread, within `limits`. Never rejects: a walk that fails says so in `unfinished`.
 */
export function walkGit(workspace: string, git: string, limits: GitWalkLimits = GIT_WALK_LIMITS): Promise<GitWalk> {
  return new Promise((resolve) => {
    const empty = { found: [], modules: [], worktrees: [], replaceRefs: [] };
    let done = false;
    const finish = (w: GitWalk): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(w);
      void worker.terminate();
    };
    const worker = new Worker(GIT_WALK_SOURCE, {
      eval: true,
      workerData: {
        workspace,
        git,
        maxEntries: limits.maxEntries,
        maxFound: limits.maxFound,
        maxPackedRefsBytes: limits.maxPackedRefsBytes,
      },
      resourceLimits: { maxOldGenerationSizeMb: limits.heapMb, maxYoungGenerationSizeMb: Math.min(32, limits.heapMb) },
      stdout: true,
      stderr: true,
      env: {},
    });
    const timer = setTimeout(() => finish({ ...empty, unfinished: `it took more than ${limits.timeMs / 1000} s` }), limits.timeMs);
    worker.on('message', (m: GitWalk) => finish({ ...m, unfinished: m.unfinished ?? undefined }));
    worker.on('error', (err: Error & { code?: string }) =>
      finish({
        ...empty,
        unfinished:
          err.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `it needed more than ${limits.heapMb} MB of memory` : `it failed: ${err.message}`,
      }),
    );
    worker.on('exit', (code) => finish({ ...empty, unfinished: `it ended without an answer (exit ${code})` }));
  });
}

/**
 * The walk, as plain JavaScript for a worker thread (`eval`): the same text runs from `src/` under
 * ts-jest and from `dist/`. A folder is opened without following a symlink at its last component,
 * and skipped unless the kernel's path of the opened descriptor is the one walked (a parent swapped
 * for a symlink meanwhile leads elsewhere); it is then read through that descriptor, in batches.
 *
 * A directory is a git dir when git's `is_git_directory` (setup.c) could say so, read as a superset:
 * an entry `HEAD` (git: a symlink into `refs/`, a `ref: refs/…` or an object id), and either an
 * entry `commondir` (git then looks for `objects` and `refs` in the directory it names, wherever
 * that is) or entries `objects` and `refs` (git's test is `access(X_OK)`, which a symlink to a
 * directory passes). Git's discovery asks that of every directory from the cwd up, after its `.git`.
 * Posts one {@link GitWalk} (with `unfinished` null when it read everything).
 */
export const GIT_WALK_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('worker_threads');
const fs = require('fs');
const path = require('path');
const { workspace, git, maxEntries, maxFound, maxPackedRefsBytes } = workerData;
const C = fs.constants;
class Stop extends Error {}
// A folder's size (bytes, as the file system reports it) above which it is read in batches: 64 KiB is a few thousand entries.
const BATCHED_ABOVE_BYTES = 65536;
let seen = 0;
let unfinished = null;
const found = [];
function stop(why) { unfinished = why; throw new Stop(why); }
// Calls fn(dirent) for each entry of the directory abs, read through a descriptor opened without following a symlink
// at abs itself and checked to be abs; false when it cannot be read.
function each(abs, fn) {
  let fd;
  try {
    fd = fs.openSync(abs, C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW);
    if (fs.readlinkSync('/proc/self/fd/' + fd) !== abs) return false;
  } catch (e) {
    if (fd !== undefined) fs.closeSync(fd);
    return false;
  }
  const at = '/proc/self/fd/' + fd;
  let dir, small;
  try {
    // A small folder in one read (twice as fast); a large one in batches, so that the cap holds inside it. A file
    // system that says less than it holds is read whole: the heap bound holds then.
    const size = fs.fstatSync(fd).size;
    small = size <= BATCHED_ABOVE_BYTES ? fs.readdirSync(at, { withFileTypes: true }) : undefined;
    if (!small) dir = fs.opendirSync(at, { bufferSize: 256 });
  } catch (e) {
    fs.closeSync(fd);
    return false;
  }
  try {
    for (let i = 0; ; i++) {
      let e;
      if (small) e = i < small.length ? small[i] : null;
      else try { e = dir.readSync(); } catch (x) { break; }
      if (e === null) break;
      if (++seen > maxEntries) stop('it read more than ' + maxEntries + ' entries');
      fn(e);
    }
  } finally {
    if (dir) try { dir.closeSync(); } catch (e) {}
    fs.closeSync(fd);
  }
  return true;
}
function add(rel, kind) {
  let ino;
  try { ino = fs.lstatSync(path.join(workspace, rel)).ino; } catch (e) { return; }
  if (found.length >= maxFound) stop('it found more than ' + maxFound + ' git dirs');
  found.push({ rel, ino, kind });
}
function walk() {
  const stack = [''];
  while (stack.length > 0) {
    const rel = stack.pop();
    let head = false, objects = false, refs = false, commondir = false;
    const subdirs = [];
    each(rel === '' ? workspace : workspace + '/' + rel, (e) => {
      const child = rel === '' ? e.name : rel + '/' + e.name;
      if (e.name === '.git') { if (rel !== '') add(child, 'dotgit'); return; }
      if (e.name === 'HEAD') head = true;
      else if (e.name === 'objects') objects = true;
      else if (e.name === 'refs') refs = true;
      else if (e.name === 'commondir') commondir = true;
      if (e.isDirectory()) subdirs.push(child);
    });
    if (rel !== '' && head && objects && refs) { add(rel, 'bare'); continue; }
    if (rel !== '' && head && commondir) add(rel, 'split');
    for (const s of subdirs) stack.push(s);
  }
}
function names(abs) { const out = []; each(abs, (e) => out.push(e.name)); return out; }
function replaceRefs() {
  const out = [];
  const walkRefs = (rel) => each(rel === '' ? git + '/refs/replace' : git + '/refs/replace/' + rel, (e) => {
    const r = rel === '' ? e.name : rel + '/' + e.name;
    if (e.isDirectory()) walkRefs(r); else out.push(r);
  });
  walkRefs('');
  // packed-refs in chunks: a replace ref may lie past the first megabyte of a large repository's.
  let fd;
  try {
    fd = fs.openSync(git + '/packed-refs', C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
    if (!fs.fstatSync(fd).isFile()) return out;
    const buf = Buffer.alloc(1 << 20);
    let rest = '', at = 0, overlong = false;
    for (;;) {
      const n = at < maxPackedRefsBytes ? fs.readSync(fd, buf, 0, Math.min(buf.length, maxPackedRefsBytes - at), at) : 0;
      at += n;
      const lines = (rest + buf.subarray(0, n).toString('latin1')).split('\n');
      rest = n === 0 ? '' : lines.pop();
      // A line longer than any ref's is no ref: dropped, not kept growing (a file of zeros has no newline).
      if (overlong && lines.length > 0) { lines.shift(); overlong = false; }
      if (rest.length > 8192) { rest = ''; overlong = true; }
      for (const line of lines) {
        const m = /^[0-9a-f]+ (refs\/replace\/.+)$/.exec(line);
        if (m) {
          if (out.length >= maxFound) stop('it found more than ' + maxFound + ' replace refs');
          out.push('packed:' + Buffer.from(m[1], 'latin1').toString('utf8'));
        }
      }
      if (n === 0) break;
    }
    if (at >= maxPackedRefsBytes) stop('packed-refs is larger than ' + maxPackedRefsBytes + ' bytes');
  } catch (e) {
    if (e instanceof Stop) throw e;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  return out;
}
let modules = [], worktrees = [], replace = [];
try {
  modules = names(git + '/modules');
  worktrees = names(git + '/worktrees');
  replace = replaceRefs();
  walk();
} catch (e) {
  if (!(e instanceof Stop)) unfinished = 'it failed: ' + e.message;
}
// Sorted here, off the event loop, as readdirSync (libuv's scandir) gave them before: the result names the first few.
const byName = (a, b) => (a < b ? -1 : a > b ? 1 : 0);
found.sort((a, b) => byName(a.rel, b.rel));
modules.sort(byName);
worktrees.sort(byName);
replace.sort(byName);
parentPort.postMessage({ found, modules, worktrees, replaceRefs: replace, unfinished });
`;
