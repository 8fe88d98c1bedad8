/**
 * The index audit's reading of what git ignores (git-index-audit.ts, part (4); adversary round 25): a session can put
 * code the person runs where their own ignore rules keep it out of `git status` (a `__pycache__/*.pyc` whose header
 * claims the source's mtime and size, so Python runs it instead of the reviewed `app.py`; `node_modules/.bin/jest`;
 * a `.pth` file in `.venv`). {@link walkIgnored} reads the ignored files and folders git lists, in a worker thread
 * within an entry cap and a time budget, and finds every entry whose ctime is after the session's start (a ctime
 * cannot be set back without the clock, which no process of the session can set). It removes, there and then, each
 * such Python bytecode cache ({@link GitIgnoredWalk.removed}): Python rebuilds it from the source the person reviews.
 * Folders are opened without following a symlink and checked to be the folder walked (as git-walk.ts does), and each
 * entry is stat'ed and removed through that descriptor, so a folder swapped for a symlink meanwhile leads nowhere.
 */
import { OPEN_FOLDER_SOURCE, runWalkThread } from './walk-thread';

/** The bounds of one walk of the ignored files. */
export interface IgnoredWalkLimits {
  /** Entries stat'ed at most (files, links and folders of every root together). */
  readonly maxEntries: number;
  /** Wall-clock budget, ms: the walk stops itself then (and is terminated 2 s later if it has not answered). */
  readonly timeMs: number;
  /** Paths kept at most, of fresh and of removed entries each (past it they are only counted per root). */
  readonly maxKept: number;
  /** The thread's old-generation heap, MB. */
  readonly heapMb: number;
}

/**
 * After each command and edit. Measured (a node_modules of 22,000 entries, 1,000 packages; medians of 11, load average
 * 8 to 10 on 2 cores shared with other work): 135 to 259 ms, of which 30 to 55 ms start the thread; so 100,000
 * entries take about a second. Past them the rest is named as not fully checked (once) and read at close.
 */
export const IGNORED_WALK_LIMITS: IgnoredWalkLimits = { maxEntries: 100_000, timeMs: 3_000, maxKept: 10_000, heapMb: 256 };

/** At close: 1,000,000 entries or 8 s, within the 30 s close budget beside git-walk.ts's walk (at most 15 s). */
export const IGNORED_WALK_LIMITS_AT_CLOSE: IgnoredWalkLimits = { ...IGNORED_WALK_LIMITS, maxEntries: 1_000_000, timeMs: 8_000 };

/** One entry the walk found made or changed since the start: its path's bytes relative to the workspace. */
export interface FreshEntry {
  readonly raw: Uint8Array;
  /** Index in the walk's roots of the root it lies in. */
  readonly root: number;
  /** ctime, ms. */
  readonly ctime: number;
  /**
   * `file`: anything but a folder; `dir`: a folder whose own ctime is fresh while none of its entries is (an entry
   * removed or renamed away, the folder itself renamed or its mode changed); `kept`: a bytecode file that could not be
   * removed (then `why` says why).
   */
  readonly kind: 'file' | 'dir' | 'kept';
  readonly why?: string;
}

/** What one walk found. */
export interface GitIgnoredWalk {
  /** Entries made or changed since the start (at most `maxKept`), in the order walked. */
  readonly fresh: FreshEntry[];
  /** Bytecode files removed (path bytes; at most `maxKept`) with the root each lies in. */
  readonly removed: { raw: Uint8Array; root: number }[];
  /** Per root: fresh entries and removed files past `maxKept` (counted, not kept). */
  readonly more: { fresh: number; removed: number }[];
  /** Folders (path bytes) whose last change was the walk's own removal: their ctime then, ms. */
  readonly touched: { raw: Uint8Array; ctime: number }[];
  /** Index of the first root not read whole (every root from it on), or -1 when all were. */
  readonly stoppedAt: number;
  /** Why the walk stopped (entry cap, time, memory, a folder it could not read), or undefined when it read everything. */
  readonly unfinished: string | undefined;
}

/**
 * Walks each of `roots` (paths' bytes relative to `workspace`, absolute and symlinks resolved; a folder is read whole,
 * anything else stat'ed) in a worker thread within `limits`, finding what changed since `since` (wall-clock ms) and
 * removing fresh Python bytecode ({@link BYTECODE_RULE}); never into the folder `skip` (path bytes relative to
 * `workspace`: the root git dir, which git writes). Never rejects: a walk that fails says so in `unfinished`.
 */
export function walkIgnored(
  workspace: string,
  roots: readonly Uint8Array[],
  since: number,
  limits: IgnoredWalkLimits = IGNORED_WALK_LIMITS,
  skip?: Uint8Array,
): Promise<GitIgnoredWalk> {
  const workerData = { workspace, roots: [...roots], since, deadline: Date.now() + limits.timeMs, skip: skip ?? null, ...limits };
  const empty = { fresh: [], removed: [], more: roots.map(() => ({ fresh: 0, removed: 0 })), touched: [], stoppedAt: 0 };
  const failed = (why: string): GitIgnoredWalk => ({ ...empty, unfinished: why });
  // The thread stops itself at its deadline; it is terminated 2 s later if it has not answered by then.
  return runWalkThread(IGNORED_WALK_SOURCE, workerData, { heapMb: limits.heapMb, timeoutMs: limits.timeMs + 2000 }, failed);
}

/**
 * Which fresh entries are removed as Python bytecode: a regular file (not a symlink) whose name ends in `.pyc` or `.pyo`
 * and whose first four bytes are a Python magic number (two bytes, then CR LF), in a folder named `__pycache__`
 * (Python 3 reads it only for the source beside that folder, and writes it again from that source), or beside its
 * source (`app.pyc` next to `app.py`: Python 2 trusts it by the same mtime check). One without its source (a sourceless
 * module, which Python runs as it is) is kept and named, as is a symlink of such a name or a file without the magic
 * (what the session renamed there). Python's hash-based caches (PEP 552, unchecked ones included) are removed alike:
 * the rule reads no flag.
 */
export const BYTECODE_RULE = 'a .pyc or .pyo file with a Python magic number, in __pycache__ or beside its .py';

/**
 * The walk, as plain JavaScript for a worker thread (`eval`; the same text runs from `src/` under ts-jest and from
 * `dist/`). Depth first, each folder read through a descriptor opened with `O_NOFOLLOW` and checked by its
 * `/proc/self/fd` path; every entry lstat'ed through that descriptor. Posts one {@link GitIgnoredWalk}.
 */
const IGNORED_WALK_SOURCE = String.raw`
'use strict';
const { parentPort, workerData } = require('worker_threads');
const fs = require('fs');
const { workspace, since, deadline, maxEntries, maxKept } = workerData;
// The root git dir's path in the workspace (bytes), never read: git writes it, and git-audit.ts audits it.
const skip = workerData.skip === null ? null : Buffer.from(workerData.skip);
const roots = workerData.roots.map((r) => Buffer.from(r));
const C = fs.constants;
class Stop extends Error {}
const SLASH = Buffer.from('/');
const join = (a, b) => Buffer.concat([a, SLASH, b]);
const ws = Buffer.from(workspace, 'utf8');
const fresh = [], removed = [], touched = [];
const more = roots.map(() => ({ fresh: 0, removed: 0 }));
let seen = 0, unfinished = null, current = 0;
function stop(why) { unfinished = why; throw new Stop(why); }
function count() {
  if (++seen > maxEntries) stop('it read more than ' + maxEntries + ' entries');
  if ((seen & 255) === 0 && Date.now() > deadline) stop('it took more than ' + workerData.timeMs / 1000 + ' s');
}
function unreadable(rel, why) {
  if (unfinished === null) unfinished = 'it could not read ' + JSON.stringify(rel.toString('utf8')) + ' (' + why + ')';
}
function addFresh(raw, ctime, kind, why) {
  if (fresh.length < maxKept) fresh.push({ raw, root: current, ctime, kind, why });
  else more[current].fresh++;
}
${OPEN_FOLDER_SOURCE}
// Opens the folder rel (bytes) without following a symlink at its last component, and checks that it is that folder.
function openDir(rel) {
  return openFolder(rel.length === 0 ? ws : join(ws, rel), (why) => unreadable(rel, why));
}
// The entry name (bytes) of the folder open as fd, as a path through that descriptor: a string when name is ASCII (faster).
function at(fd, name) {
  const s = name.toString('latin1');
  return /[^\x00-\x7f]/.test(s) ? Buffer.concat([Buffer.from('/proc/self/fd/' + fd + '/'), name]) : '/proc/self/fd/' + fd + '/' + s;
}
// Whether name is a Python bytecode file's; when beside its source, whether that source (stem.py) is there.
function bytecode(fd, name, inCache) {
  const s = name.toString('latin1');
  if (!/\.py[co]$/.test(s)) return false;
  if (inCache) return true;
  const st = fs.lstatSync(at(fd, name.subarray(0, name.length - 1)), { throwIfNoEntry: false });
  return st !== undefined && st.isFile();
}
// Removes the fresh bytecode file name of the folder fd (rel: its path) when it is one; else why it is kept.
function removeBytecode(fd, name, st) {
  let f;
  try {
    f = fs.openSync(at(fd, name), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
    const fst = fs.fstatSync(f);
    if (!fst.isFile() || fst.ino !== st.ino) return 'it changed while it was read';
    const head = Buffer.alloc(4);
    if (fs.readSync(f, head, 0, 4, 0) !== 4 || head[2] !== 0x0d || head[3] !== 0x0a) return 'no Python magic number';
    fs.unlinkSync(at(fd, name));
    return null;
  } catch (e) {
    return 'it could not be removed (' + (e.code || e.message) + ')';
  } finally {
    if (f !== undefined) fs.closeSync(f);
  }
}
// Stat's the entry name of the folder fd (rel: its path): a fresh one is bytecode removed or kept as fresh.
function entry(fd, rel, name, inCache, folders) {
  count();
  let st;
  try { st = fs.lstatSync(at(fd, name), { throwIfNoEntry: false }); } catch (e) { return false; }
  if (st === undefined) return false;
  const raw = st.isDirectory() || st.ctimeMs >= since ? (rel.length === 0 ? Buffer.from(name) : join(rel, name)) : undefined;
  if (st.isDirectory() && skip !== null && raw.equals(skip)) return false;
  if (st.isDirectory()) folders.push(raw);
  if (st.ctimeMs < since) return false;
  if (st.isDirectory()) return true;
  if (st.isFile() && bytecode(fd, name, inCache)) {
    const why = removeBytecode(fd, name, st);
    if (why === null) {
      if (removed.length < maxKept) removed.push({ raw, root: current }); else more[current].removed++;
      return 'removed';
    }
    addFresh(raw, st.ctimeMs, 'kept', why);
    return true;
  }
  addFresh(raw, st.ctimeMs, 'file');
  return true;
}
// Reads the folder rel (bytes) and each folder below it.
function walk(rel) {
  const stack = [rel];
  while (stack.length > 0) {
    const dir = stack.pop();
    const fd = openDir(dir);
    if (fd === undefined) continue;
    try {
      const dst = fs.fstatSync(fd);
      const own = dst.ctimeMs;
      const inCache = dir.toString('latin1').split('/').pop() === '__pycache__';
      const folders = [];
      let anyFresh = false, anyRemoved = false;
      const each = (name) => {
        const r = entry(fd, dir, name, inCache, folders);
        if (r === 'removed') anyRemoved = true; else if (r) anyFresh = true;
      };
      // A small folder in one read; a large one in batches, so that the entry cap holds inside it (as git-walk.ts).
      if (dst.size <= 65536) for (const name of fs.readdirSync('/proc/self/fd/' + fd, { encoding: 'buffer' })) each(name);
      else {
        const d = fs.opendirSync('/proc/self/fd/' + fd, { bufferSize: 256, encoding: 'buffer' });
        try { for (let e = d.readSync(); e !== null; e = d.readSync()) each(e.name); } finally { d.closeSync(); }
      }
      if (anyRemoved) touched.push({ raw: dir, ctime: fs.fstatSync(fd).ctimeMs });
      else if (own >= since && !anyFresh && dir.length > 0) addFresh(dir, own, 'dir');
      for (let i = folders.length - 1; i >= 0; i--) stack.push(folders[i]);
    } finally { fs.closeSync(fd); }
  }
}
// A root that is no folder: stat'ed through its parent folder.
function single(rel) {
  const cut = rel.lastIndexOf(0x2f);
  const parent = cut < 0 ? Buffer.alloc(0) : rel.subarray(0, cut);
  const fd = openDir(parent);
  if (fd === undefined) return;
  try {
    const inCache = parent.toString('latin1').split('/').pop() === '__pycache__';
    const folders = [];
    const r = entry(fd, parent, rel.subarray(cut + 1), inCache, folders);
    if (r === 'removed') touched.push({ raw: parent, ctime: fs.fstatSync(fd).ctimeMs });
    if (folders.length > 0) walk(folders[0]);
  } finally { fs.closeSync(fd); }
}
try {
  for (current = 0; current < roots.length; current++) single(roots[current]);
  current = -1;
} catch (e) {
  if (!(e instanceof Stop)) unfinished = 'it failed: ' + e.message;
}
parentPort.postMessage({ fresh, removed, more, touched, stoppedAt: current, unfinished });
`;
