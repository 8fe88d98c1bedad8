/**
 * The git audit's reading of the workspace (git-audit.ts), off the worker's event loop: a worker
 * thread running {@link GIT_WALK_SOURCE} reads every folder in batches (`opendir`, so the entry cap
 * holds inside one huge folder), within a time budget ({@link GitWalkLimits.timeMs}, then it is
 * terminated) and a heap bound (`resourceLimits`: a walk that runs out of memory ends that thread,
 * not the worker). A walk that does not finish says why ({@link GitWalk.unfinished}); the audit
 * reports that as a finding, never as a clean workspace. Measured before (round 14): a synchronous
 * walk of one folder of a million entries froze the worker's event loop 3.3 s after a command.
 */
import { OPEN_FOLDER_SOURCE, runWalkThread } from './walk-thread';

/**
 * A file name's bytes as a string that keeps every byte: valid UTF-8 decoded as usual, each byte of
 * what is not (a lone continuation byte, an overlong form, a surrogate's encoding, `0xff`) as the lone
 * surrogate U+DC00 + byte, which no valid UTF-8 decodes to (Python's "surrogateescape"). So two
 * different names never give one string, and {@link nameBytes} gives the bytes back (round 15: a
 * folder named `0xff` read as a string became U+FFFD, a path that names no file, and the walk skipped
 * its subtree). The worker thread's copy is in {@link GIT_WALK_SOURCE}.
 */
export function decodeName(b: Buffer): string {
  const s = b.toString('utf8');
  if (!s.includes('\uFFFD') || Buffer.from(s, 'utf8').equals(b)) return s;
  let out = '';
  for (let i = 0; i < b.length;) {
    const lead = b[i]!;
    const n = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    let ch: string | undefined;
    if (n > 0 && i + n <= b.length)
      try {
        ch = UTF8.decode(b.subarray(i, i + n));
      } catch {
        ch = undefined;
      }
    if (ch !== undefined) {
      out += ch;
      i += n;
    } else {
      out += String.fromCharCode(0xdc00 + lead);
      i += 1;
    }
  }
  return out;
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

/** A lone surrogate U+DC80-U+DCFF: a byte that {@link decodeName} kept. */
const KEPT_BYTE = /[\uDC80-\uDCFF]/u;

/**
 * The path `p` (a string from {@link decodeName}'s names, joined) as `fs` takes it: `p` itself when
 * every name was UTF-8, else its bytes (a Buffer; Node's fs takes a Buffer for any path).
 */
export function nameBytes(p: string): string | Buffer {
  if (!KEPT_BYTE.test(p)) return p;
  const parts: Buffer[] = [];
  for (const ch of p) {
    const c = ch.codePointAt(0)!;
    parts.push(c >= 0xdc80 && c <= 0xdcff ? Buffer.of(c - 0xdc00) : Buffer.from(ch, 'utf8'));
  }
  return Buffer.concat(parts);
}

/** `p` for a person to read: each byte {@link decodeName} kept shown as `\xNN`. */
export function showName(p: string): string {
  return KEPT_BYTE.test(p) ? p.replace(/[\uDC80-\uDCFF]/gu, (c) => `\\x${(c.charCodeAt(0) - 0xdc00).toString(16)}`) : p;
}

/** What git could take for a git dir below the workspace's root (see {@link GIT_WALK_SOURCE}). */
export interface FoundGitDir {
  /** Path relative to the workspace (`/`-separated), its names as {@link decodeName} gives them (bytes kept). */
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

/** What one walk read (names as in the folders, read as bytes and given by {@link decodeName}; each list sorted by name). */
export interface GitWalk {
  /** Every git dir below the root (not into one of kind `dotgit` or `bare`), at most {@link GitWalkLimits.maxFound}. */
  readonly found: FoundGitDir[];
  /** Names in `<git>/modules` and `<git>/worktrees` (none when missing or a symlink). */
  readonly modules: string[];
  readonly worktrees: string[];
  /**
   * Loose refs under `<git>/refs/replace` (relative to it) and packed ones in `<git>/packed-refs` (`packed:refs/replace/…`).
   * A `packed-refs` that is there but cannot be read (a symlink, no regular file, EWOULDBLOCK, …) sets {@link unfinished}.
   */
  readonly replaceRefs: string[];
  /**
   * Every entry that is no folder whose name is one of the walk's `names`, and every entry (a folder too) named one of
   * its `stems` or a stem followed by `.` and anything (relative paths, not into a git dir), at most
   * {@link GitWalkLimits.maxFound}.
   */
  readonly named: string[];
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
 * in a worker thread, within `limits`; lists too each entry, no folder, whose name is in `names` (git-guard.ts
 * `GuardedGit.anywhere`), and each entry, a folder too, named one of `stems` or a stem, `.` and anything (git-guard.ts
 * `GuardedGit.anywhereStems`: `fmt`, `fmt.js`). Never rejects: a walk that fails says so in `unfinished`.
 */
export function walkGit(
  workspace: string,
  git: string,
  limits: GitWalkLimits = GIT_WALK_LIMITS,
  names: readonly string[] = [],
  stems: readonly string[] = [],
): Promise<GitWalk> {
  const workerData = {
    workspace,
    git,
    names: [...names],
    stems: [...stems],
    maxEntries: limits.maxEntries,
    maxFound: limits.maxFound,
    maxPackedRefsBytes: limits.maxPackedRefsBytes,
  };
  const empty = { found: [], modules: [], worktrees: [], replaceRefs: [], named: [] };
  const failed = (why: string): GitWalk => ({ ...empty, unfinished: why });
  return runWalkThread(GIT_WALK_SOURCE, workerData, { heapMb: limits.heapMb, timeoutMs: limits.timeMs }, failed);
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
const { workspace, git, names: wanted, stems, maxEntries, maxFound, maxPackedRefsBytes } = workerData;
const wantedNames = new Set(wanted);
const wantedStems = new Set(stems);
// Whether name is a stem, or a stem followed by '.' and anything ('fmt.js', 'fmt.test.js' for the stem 'fmt').
function stemmed(name) {
  if (wantedStems.size === 0) return false;
  if (wantedStems.has(name)) return true;
  for (let i = name.indexOf('.', 1); i > 0; i = name.indexOf('.', i + 1)) if (wantedStems.has(name.slice(0, i))) return true;
  return false;
}
const named = [];
const C = fs.constants;
class Stop extends Error {}
// A folder's size (bytes, as the file system reports it) above which it is read in batches: 64 KiB is a few thousand entries.
const BATCHED_ABOVE_BYTES = 65536;
let seen = 0;
let unfinished = null;
const found = [];
function stop(why) { unfinished = why; throw new Stop(why); }
// Names are bytes: a name that is not UTF-8 read as a string names no file. decodeName is git-walk.ts's, as JavaScript.
const utf8 = new TextDecoder('utf-8', { fatal: true });
function decodeName(b) {
  const s = b.toString('utf8');
  if (!s.includes('\uFFFD') || Buffer.from(s, 'utf8').equals(b)) return s;
  let out = '';
  for (let i = 0; i < b.length; ) {
    const lead = b[i];
    const n = lead < 0x80 ? 1 : lead >= 0xc2 && lead <= 0xdf ? 2 : lead >= 0xe0 && lead <= 0xef ? 3 : lead >= 0xf0 && lead <= 0xf4 ? 4 : 0;
    let ch;
    if (n > 0 && i + n <= b.length) try { ch = utf8.decode(b.subarray(i, i + n)); } catch (e) { ch = undefined; }
    if (ch !== undefined) { out += ch; i += n; } else { out += String.fromCharCode(0xdc00 + lead); i += 1; }
  }
  return out;
}
const SLASH = Buffer.from('/');
const join = (dir, name) => Buffer.concat([dir, SLASH, name]);
// The workspace itself is valid as given (absolute, symlinks resolved): a path of the worker's, a string.
const wsBytes = Buffer.from(workspace, 'utf8');
const gitBytes = Buffer.from(git, 'utf8');
// A folder the walk could not read (other than one gone or no folder any more): the walk did not read everything.
function unreadable(abs, why) {
  if (unfinished === null) unfinished = 'it could not read ' + JSON.stringify(decodeName(abs)) + ' (' + why + ')';
}
${OPEN_FOLDER_SOURCE}
// Calls fn(dirent) (name a Buffer) for each entry of the directory abs (a Buffer), read through a descriptor opened
// without following a symlink at abs itself and checked to be abs; false when it cannot be read (reported unless gone).
function each(abs, fn) {
  // Not reported when gone, no folder or a symlink (whose target git does not reach by this name): nothing to check.
  const fd = openFolder(abs, (why) => unreadable(abs, why));
  if (fd === undefined) return false;
  const at = '/proc/self/fd/' + fd;
  let dir, small;
  try {
    // A small folder in one read (twice as fast); a large one in batches, so that the cap holds inside it. A file
    // system that says less than it holds is read whole: the heap bound holds then.
    const size = fs.fstatSync(fd).size;
    small = size <= BATCHED_ABOVE_BYTES ? fs.readdirSync(at, { withFileTypes: true, encoding: 'buffer' }) : undefined;
    if (!small) dir = fs.opendirSync(at, { bufferSize: 256, encoding: 'buffer' });
  } catch (e) {
    fs.closeSync(fd);
    unreadable(abs, e.code || e.message);
    return false;
  }
  try {
    for (let i = 0; ; i++) {
      let e;
      if (small) e = i < small.length ? small[i] : null;
      else try { e = dir.readSync(); } catch (x) { unreadable(abs, x.code || x.message); break; }
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
function add(rel, raw, kind) {
  let ino;
  try { ino = fs.lstatSync(join(wsBytes, raw)).ino; } catch (e) { return; }
  if (found.length >= maxFound) stop('it found more than ' + maxFound + ' git dirs');
  found.push({ rel, ino, kind });
}
function walk() {
  // Each folder still to read: its path relative to the workspace as git-walk.ts's names (rel) and as bytes (raw).
  const stack = [{ rel: '', raw: null }];
  while (stack.length > 0) {
    const { rel, raw } = stack.pop();
    let head = false, objects = false, refs = false, commondir = false;
    const subdirs = [];
    each(raw === null ? wsBytes : join(wsBytes, raw), (e) => {
      const name = decodeName(e.name);
      const child = { rel: rel === '' ? name : rel + '/' + name, raw: raw === null ? e.name : join(raw, e.name) };
      if (name === '.git') { if (rel !== '') add(child.rel, child.raw, 'dotgit'); return; }
      if ((wantedNames.has(name) && !e.isDirectory()) || stemmed(name)) {
        if (named.length >= maxFound) stop('it found more than ' + maxFound + ' entries of a name the audit looks for');
        named.push(child.rel);
      }
      if (name === 'HEAD') head = true;
      else if (name === 'objects') objects = true;
      else if (name === 'refs') refs = true;
      else if (name === 'commondir') commondir = true;
      if (e.isDirectory()) subdirs.push(child);
    });
    if (rel !== '' && head && objects && refs) { add(rel, raw, 'bare'); continue; }
    if (rel !== '' && head && commondir) add(rel, raw, 'split');
    for (const s of subdirs) stack.push(s);
  }
}
function names(abs) { const out = []; each(abs, (e) => out.push(decodeName(e.name))); return out; }
function replaceRefs() {
  const out = [];
  const walkRefs = (rel, raw) => each(join(gitBytes, raw), (e) => {
    const r = rel === '' ? decodeName(e.name) : rel + '/' + decodeName(e.name);
    if (e.isDirectory()) walkRefs(r, join(raw, e.name)); else out.push(r);
  });
  walkRefs('', Buffer.from('refs/replace'));
  // packed-refs in chunks: a replace ref may lie past the first megabyte of a large repository's.
  let fd;
  try {
    fd = fs.openSync(git + '/packed-refs', C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
    if (!fs.fstatSync(fd).isFile()) { unreadable(Buffer.from(git + '/packed-refs'), 'no regular file'); return out; }
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
        const m = /^[0-9a-fA-F]+[ \t]+(refs\/replace\/.+)$/.exec(line); // git reads hex of either case, and a tab
        if (m) {
          if (out.length >= maxFound) stop('it found more than ' + maxFound + ' replace refs');
          out.push('packed:' + decodeName(Buffer.from(m[1], 'latin1')));
        }
      }
      if (n === 0) break;
    }
    if (at >= maxPackedRefsBytes) stop('packed-refs is larger than ' + maxPackedRefsBytes + ' bytes');
  } catch (e) {
    if (e instanceof Stop) throw e;
    // Missing is no packed refs. Anything else (a symlink, which git follows; EWOULDBLOCK under a lease; EACCES) is a
    // file git may read whole while the walk read nothing of it: not checked, never "none" (adversary round 23).
    if (e.code !== 'ENOENT' && e.code !== 'ENOTDIR')
      unreadable(Buffer.from(git + '/packed-refs'), e.code === 'ELOOP' ? 'a symlink, which git follows' : e.code || e.message);
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
  return out;
}
let modules = [], worktrees = [], replace = [];
try {
  modules = names(Buffer.from(git + '/modules'));
  worktrees = names(Buffer.from(git + '/worktrees'));
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
named.sort(byName);
parentPort.postMessage({ found, modules, worktrees, replaceRefs: replace, named, unfinished });
`;
