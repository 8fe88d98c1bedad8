/**
 * Workspace checkpoints as git objects in a bare repository outside the
 * workspace (docs/rewind.md). One store per workspace, under the worker's
 * checkpoint root (`AGENT_JOBS_CHECKPOINT_DIR`, default `<data>/checkpoints`,
 * hidden from every session). Each checkpoint is a commit of the whole
 * workspace (untracked and git-ignored files included, symlinks as links,
 * the executable bit) written through a private index the worker writes: the
 * workspace's own `.git` directories are never read nor written (but a nested
 * repository's HEAD), identical files are stored once. A checkpoint measures the
 * workspace first and is skipped past its caps (bytes, entries); the worker then
 * reads exactly the paths measured, each file at most its measured size, and git
 * stores them without opening a workspace file (snapshot.ts). A restore's
 * `read-tree -u` writes the workspace, confined (confine.ts). No Temporal here.
 */
import { execFile } from 'node:child_process';
import type { Dir } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { lstat, mkdir, opendir, realpath, rm, stat, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { DEFAULT_CHECKPOINT_MAX_BYTES, type NotRestored, type RestoredChange } from '../contract/checkpoint';
import { runConfined } from './confine';
import { gitRefusesFolder, gitRefusesPath } from './git-path';
import { writeIndex, writeSnapshot, type MeasuredEntry, type Snapshot } from './snapshot';

const run = promisify(execFile);

/**
 * Longest one confined git, chown or rmdir of a restore may take, ms: 10 minutes (a restore of
 * gigabytes takes well under that). Past it the command is killed (confine.ts); what
 * it reads is the session's to replace, and a FIFO would otherwise hold a root process forever.
 */
export const CONFINED_STORE_TIMEOUT_MS = 10 * 60_000;

/** What a checkpoint leaves out and how large a workspace it takes. */
export interface CheckpointOptions {
  /**
   * Names (any path segment equal to it: `node_modules`) or workspace-relative paths
   * (`build/out`) left out of the checkpoint and untouched by a restore. No glob characters.
   * @default []
   */
  exclude?: string[];
  /** Largest workspace recorded, in bytes of regular files (excludes left out); a larger one is skipped with a reason. */
  maxBytes: number;
  /**
   * Most entries recorded: files, symlinks and folders (excludes and `.git` left out); a workspace with more is skipped with a
   * reason, whatever its bytes.
   * @default {@link DEFAULT_CHECKPOINT_MAX_ENTRIES}
   */
  maxEntries?: number;
  /**
   * ms since the epoch: the stat of a file whose ctime or mtime is at or after it is not trusted (the file is read,
   * and its stat not kept for the next checkpoint), since a job may have written it through a shared mapping, which
   * changes no time after its first write (adversary round 26); the start of the earliest live session that may write
   * the workspace. Trusted on ext4, xfs and btrfs only (store.ts `MAPPED_WRITE_TIMES`): elsewhere no stat is.
   * @default 0 (no stat trusted: every file read)
   */
  trustStatBefore?: number;
}

/**
 * Default cap on the entries (files, symlinks and folders) a checkpoint records: 100,000. What a
 * checkpoint costs is root's git (outside the session's limits), and that grows with the entries it
 * lstats and indexes, not only with bytes: 200,000 empty files (0 bytes, far under the 1 GiB cap)
 * cost 37 s and then 87 s of `git add -A` at load average 33 (adversary round 24; 20 s and 22 s at
 * load 9 here). Measured on this machine, 2026-12-07 (docs/rewind.md, "Caps"): this project's clone
 * without `node_modules` is 639 entries, its `node_modules` 33,420, pyenv's repository 1,494 files;
 * the Linux kernel's tree (about 90,000 files in recent releases, not measured here) passes too.
 * The attack's 200,200 does not, and a checkpoint just under the cap (99,000 empty files) took 2.7 s,
 * then 2.0 s, at load average 5.4.
 */
export const DEFAULT_CHECKPOINT_MAX_ENTRIES = 100_000;

/** Entries a measure reads from the kernel at once and files it lstats at once (libuv's threadpool does both off the event loop). */
const MEASURE_BATCH = 64;

/** One checkpoint taken: the commit id, the store it is in, the workspace it records. */
export interface Checkpoint {
  id: string;
  store: string;
  workspace: string;
  /** Bytes of regular files recorded. */
  bytes: number;
  files: number;
  /** Paths left out because git refuses to write them on checkout (git-path.ts), when there are any: how many, and the first {@link LEFT_OUT_LISTED} (UTF-8). */
  leftOut?: LeftOut;
}

/** Paths of the workspace a checkpoint left out because git refuses them: how many, and the first {@link LEFT_OUT_LISTED}, as UTF-8 (a byte that is none is U+FFFD). */
export interface LeftOut {
  count: number;
  paths: string[];
}

/** Most paths left out that a checkpoint's answer names (the rest are counted). */
export const LEFT_OUT_LISTED = 20;

/**
 * Most bytes of left-out paths a checkpoint's commit message names (one argument of `commit-tree`: Linux takes at most
 * 128 KiB), so that a restore to it knows them; past it a restore keeps, and names, what it cannot tell.
 */
const LEFT_OUT_RECORDED_BYTES = 64 * 1024;

/** A change between two checkpoints: `A`dded, `M`odified (content or mode), `D`eleted, `T`ype changed (file ↔ symlink). */
export type FileChange = RestoredChange;

/** The store of `workspace` under `root`: `<root>/<name>-<16 hex of sha256(real path)>.git`. */
export async function storeFor(root: string, workspace: string): Promise<string> {
  const real = await realpath(workspace);
  const name =
    path
      .basename(real)
      .replace(/[^A-Za-z0-9._-]/g, '_')
      .slice(0, 40) || 'root';
  return path.join(root, `${name}-${createHash('sha256').update(real).digest('hex').slice(0, 16)}.git`);
}

/**
 * git with a clean environment: no system or global config (a filter or hook configured there
 * must not run on the agent's files), every directory safe (the workspace belongs to the session
 * user, the store to the worker), no auto gc (checkpoints are referenced, but a gc mid-write would race).
 */
async function git(
  store: string,
  args: string[],
  opts: { workTree?: string; index?: string; maxBuffer?: number; writable?: boolean; input?: Buffer; encoding?: 'utf8' | 'latin1' } = {},
): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    ...storeEnv(store),
    GIT_AUTHOR_NAME: 'agent-jobs',
    GIT_AUTHOR_EMAIL: 'agent-jobs@localhost',
    GIT_COMMITTER_NAME: 'agent-jobs',
    GIT_COMMITTER_EMAIL: 'agent-jobs@localhost',
    ...(opts.workTree ? { GIT_WORK_TREE: opts.workTree } : {}),
    ...(opts.index ? { GIT_INDEX_FILE: opts.index } : {}),
  };
  const argv = ['git', '-c', 'safe.directory=*', '-c', 'gc.auto=0', '-c', 'core.autocrlf=false', ...args];
  // Reading or writing the workspace as root while its jobs swap files for symlinks: confined (confine.ts).
  if (opts.workTree)
    return runConfined({
      argv,
      env,
      workspace: opts.workTree,
      writable: opts.writable ?? false,
      store,
      maxBuffer: opts.maxBuffer ?? 256 * 1024 * 1024,
      timeoutMs: CONFINED_STORE_TIMEOUT_MS,
      ...(opts.input ? { input: opts.input } : {}),
      ...(opts.encoding ? { encoding: opts.encoding } : {}),
    });
  const { stdout } = await run(argv[0]!, argv.slice(1), {
    env,
    cwd: opts.workTree ?? store,
    maxBuffer: opts.maxBuffer ?? 256 * 1024 * 1024,
    encoding: opts.encoding ?? 'utf8',
  });
  return stdout;
}

/** The stores being created by this worker: two checkpoints of a new workspace at once (a sub-agent's) create it once. */
const creating = new Map<string, Promise<void>>();

/** Creates the bare store when missing: contents stored as they are (no eol or filter attributes of the workspace apply). */
function ensureStore(store: string): Promise<void> {
  let pending = creating.get(store);
  if (!pending) {
    pending = createStore(store).finally(() => creating.delete(store));
    creating.set(store, pending);
  }
  return pending;
}

/** {@link ensureStore}'s work. */
async function createStore(store: string): Promise<void> {
  try {
    await stat(path.join(store, 'HEAD'));
    return;
  } catch {
    // not there yet
  }
  await mkdir(path.dirname(store), { recursive: true, mode: 0o700 });
  await run('git', ['init', '--bare', '-q', store], {
    env: { PATH: process.env.PATH, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
  });
  await mkdir(path.join(store, 'info'), { recursive: true });
  // $GIT_DIR/info/attributes overrides every .gitattributes of the workspace.
  await writeFile(path.join(store, 'info', 'attributes'), '* -text -filter -ident -working-tree-encoding\n');
}

/** Whether a workspace-relative path is left out by `exclude`: a name is any path segment equal to it, a path itself and what is under it. */
function excluded(rel: string, exclude: readonly string[]): boolean {
  const parts = rel.split('/');
  return exclude.some((e) => {
    const clean = e.replace(/\/+$/, '');
    return clean.includes('/') ? rel === clean || rel.startsWith(`${clean}/`) : parts.includes(clean);
  });
}

/**
 * What {@link measure} found: bytes and count of regular files, entries (files, symlinks, folders),
 * which cap was passed if one was, and the paths git is to record (files, symlinks, nested
 * repositories), workspace-relative, each byte of the name one `latin1` character, sorted as git's
 * index is (bytewise).
 */
interface Measured {
  bytes: number;
  files: number;
  entries: number;
  over?: 'bytes' | 'entries';
  paths: string[];
  /** Each path's kind and, for a regular file, its size: the most a checkpoint reads of it (snapshot.ts). */
  info: Map<string, MeasuredEntry>;
  /** Paths git refuses to write on checkout (git-path.ts), left out: files and symlinks, and folders (with a trailing `/`) left out whole; counted as entries. */
  refused: string[];
}

/** `name` as {@link measure} spells paths: each byte of its UTF-8 one `latin1` character. */
function asBytes(name: string): string {
  return Buffer.from(name, 'utf8').toString('latin1');
}

/**
 * Whether a `.git` below the workspace's top makes its folder a repository git records as a gitlink
 * (its `git add -A` rule, roughly): a file (`gitdir: ...`) or a folder holding `HEAD`. Anything else
 * leaves the folder a plain one, walked.
 */
async function repositoryMark(dotGit: Buffer): Promise<boolean> {
  try {
    const st = await lstat(dotGit);
    if (st.isFile()) return true;
    if (!st.isDirectory()) return false;
    await lstat(Buffer.concat([dotGit, Buffer.from('/HEAD')]));
    return true;
  } catch {
    return false;
  }
}

/**
 * Bytes, files and entries a checkpoint would record, and their paths; stops as soon as a cap is
 * passed (so a workspace of millions of entries, or a folder a job keeps filling while it is read,
 * costs at most the cap). Folders are read as a stream ({@link MEASURE_BATCH} entries at a time,
 * never whole) and files lstat'd in batches, so the worker's event loop is never held for more
 * than a batch. A folder or file gone while it is read is not counted. A folder holding a
 * {@link repositoryMark} (below the top) is a nested repository: one entry, recorded by git as a
 * gitlink, not walked.
 * Names are read as bytes (a name that is not UTF-8 stays the file's).
 */
async function measure(workspace: string, exclude: readonly string[], caps: { bytes: number; entries: number }): Promise<Measured> {
  const m: Measured = { bytes: 0, files: 0, entries: 0, paths: [], info: new Map(), refused: [] };
  const excludes = exclude.map(asBytes);
  const top = Buffer.from(`${workspace.replace(/\/+$/, '')}/`, 'utf8');
  const abs = (rel: string): Buffer => Buffer.concat([top, Buffer.from(rel, 'latin1')]);
  const over = (): boolean => {
    if (m.entries > caps.entries) m.over = 'entries';
    else if (m.bytes > caps.bytes) m.over = 'bytes';
    return m.over !== undefined;
  };
  const walk = async (rel: string): Promise<void> => {
    let handle: Dir;
    try {
      handle = await opendir(rel ? abs(rel) : top, { bufferSize: MEASURE_BATCH, encoding: 'latin1' });
    } catch (err) {
      // Gone or swapped for a file since its parent was read: not recorded (the workspace itself must be there).
      if (rel && ['ENOENT', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return;
      throw err;
    }
    const here = { bytes: 0, files: 0, entries: 0 };
    const listed: string[] = [];
    const subdirs: string[] = [];
    let batch: string[] = [];
    let nested = false;
    const refusedFrom = m.refused.length;
    const sizes = async (): Promise<void> => {
      const got = await Promise.all(
        batch.map((r) =>
          lstat(abs(r)).then(
            (st) => st.size,
            () => 0,
          ),
        ),
      );
      got.forEach((size, i) => {
        here.bytes += size;
        m.bytes += size;
        m.info.set(batch[i]!, { kind: 'file', size });
      });
      batch = [];
    };
    // Leaving the loop early (a cap passed) closes the folder.
    for await (const entry of handle) {
      if (entry.name === '.git') {
        if (rel !== '') nested = await repositoryMark(abs(`${rel}/.git`));
        continue;
      }
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      if (excluded(r, excludes)) continue;
      // A name git refuses on checkout is left out (a checkpoint holding it could never be restored), and named.
      if (refusedEntry(r, entry)) m.refused.push(entry.isDirectory() ? `${r}/` : r);
      else if (entry.isDirectory()) subdirs.push(r);
      else if (entry.isFile()) {
        here.files++;
        m.files++;
        listed.push(r);
        batch.push(r);
      } else if (entry.isSymbolicLink()) {
        listed.push(r);
        m.info.set(r, { kind: 'link', size: 0 });
      } else continue;
      here.entries++;
      m.entries++;
      if (batch.length >= MEASURE_BATCH) await sizes();
      if (over()) return;
    }
    await sizes();
    if (nested) {
      // git records a nested repository as its HEAD commit (a gitlink), nothing of its files.
      m.refused.length = refusedFrom;
      m.bytes -= here.bytes;
      m.files -= here.files;
      m.entries -= here.entries;
      m.paths.push(rel);
      m.info.set(rel, { kind: 'repo', size: 0 });
      over();
      return;
    }
    // No spread: a folder may list up to the cap.
    for (const r of listed) m.paths.push(r);
    for (const d of subdirs) {
      if (over()) return;
      await walk(d);
    }
  };
  await walk('');
  over();
  m.paths = await sortedBytewise(m.paths);
  return m;
}

/** Whether git refuses the folder entry `entry` at `rel` on checkout: a folder whose every path would be refused, a file or symlink refused by name. */
function refusedEntry(rel: string, entry: { isDirectory(): boolean; isFile(): boolean; isSymbolicLink(): boolean }): boolean {
  if (entry.isDirectory()) return gitRefusesFolder(rel);
  if (entry.isSymbolicLink()) return gitRefusesPath(rel, 'link');
  return entry.isFile() && gitRefusesPath(rel, 'file');
}

/** Yields to the event loop (its timers and I/O run before the rest). */
const yieldLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Items per step of the work on a checkpoint's paths done on the worker's event loop (a few ms each). */
const LOOP_STEP = 4096;

/**
 * `items` sorted as git's index is (bytewise: the UTF-16 order of latin1 strings), without holding
 * the event loop: runs of {@link LOOP_STEP} sorted at once, then merged pairwise, yielding between
 * steps (100,000 names in a hash-ordered folder took 360 ms in one `sort()`).
 */
async function sortedBytewise(items: string[]): Promise<string[]> {
  let runs: string[][] = [];
  for (let i = 0; i < items.length; i += LOOP_STEP) {
    runs.push(items.slice(i, i + LOOP_STEP).sort());
    await yieldLoop();
  }
  while (runs.length > 1) {
    const next: string[][] = [];
    for (let i = 0; i < runs.length; i += 2) {
      const [a, b] = [runs[i]!, runs[i + 1]];
      next.push(b ? merged(a, b) : a);
      await yieldLoop();
    }
    runs = next;
  }
  return runs[0] ?? [];
}

/** Two sorted lists as one. */
function merged(a: readonly string[], b: readonly string[]): string[] {
  const out: string[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) out.push(a[i]! <= b[j]! ? a[i++]! : b[j++]!);
  while (i < a.length) out.push(a[i++]!);
  while (j < b.length) out.push(b[j++]!);
  return out;
}

/** A private index file in the store, removed after `fn`. */
async function withIndex<T>(store: string, fn: (index: string) => Promise<T>): Promise<T> {
  const index = path.join(store, `index-${randomBytes(8).toString('hex')}`);
  try {
    return await fn(index);
  } finally {
    await rm(index, { force: true });
  }
}

/**
 * git's environment for the store: no system or global config, `HOME` the store, no optional locks. {@link git} adds
 * the author, the committer, the work tree and the index to it; the fast-import that snapshot.ts runs takes it as is.
 */
function storeEnv(store: string): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    GIT_DIR: store,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    HOME: store,
    GIT_OPTIONAL_LOCKS: '0',
  };
}

/** Why a checkpoint was not taken: the cap `over` passed. */
function overReason(over: 'bytes' | 'entries', maxBytes: number, maxEntries: number): string {
  return over === 'entries'
    ? `the workspace holds more than ${maxEntries} files and folders (the checkpoint's cap on entries); no checkpoint was taken`
    : `the workspace holds more than ${maxBytes} bytes (the checkpoint cap); no checkpoint was taken`;
}

/** The store's persistent index: the stat data of the last checkpoint, which spare reading again the files unchanged since. */
const cacheIndex = (store: string): string => path.join(store, 'checkpoint-index');

/**
 * Writes what `size` measured into `store` through `index` (snapshot.ts), `cache` the index whose stat data are trusted
 * (none when undefined) for files whose times are before `trustStatBefore` (ms since the epoch).
 */
async function snapshotOf(
  store: string,
  workspace: string,
  size: Measured,
  index: string,
  cache: string | undefined,
  trust: { statBefore: number; keepReadStat?: boolean },
): Promise<Snapshot> {
  // A file system that may not change a file's times when a job writes it through a shared mapping: no stat is trusted.
  const trusted = (await timesMarkMappedWrites(workspace)) ? BigInt(Math.max(0, Math.floor(trust.statBefore))) * 1_000_000n : 0n;
  const files = { index, cache, trustStatBefore: trusted, keepReadStat: trust.keepReadStat ?? false };
  return writeSnapshot(store, workspace, size.paths, size.info, files, storeEnv(store), (args, i) => git(store, args, { index: i }));
}

/**
 * File systems (statfs magic numbers) whose first write through a shared mapping sets the file's ctime (their
 * `page_mkwrite` calls `file_update_time`): ext4 (tested: adversary round 26's `mmap-rewrite.py`), xfs, btrfs. tmpfs
 * changes no time at all for such a write (tested), and others are not known: there, no stat is trusted.
 */
const MAPPED_WRITE_TIMES = new Set([0xef53, 0x58465342, 0x9123683e]);

/** Whether `workspace` is on a file system whose times show a write through a shared mapping ({@link MAPPED_WRITE_TIMES}). */
async function timesMarkMappedWrites(workspace: string): Promise<boolean> {
  try {
    return MAPPED_WRITE_TIMES.has((await statfs(workspace)).type);
  } catch {
    return false;
  }
}

/** A left-out path as the answers show it: UTF-8 (a byte that is none is U+FFFD), a folder without its trailing `/`. */
const shownPath = (p: string): string => Buffer.from(p.replace(/\/$/, ''), 'latin1').toString('utf8');

/** What {@link LeftOut} says of `refused`, or undefined when nothing was left out. */
function leftOutOf(refused: readonly string[]): LeftOut | undefined {
  return refused.length === 0 ? undefined : { count: refused.length, paths: refused.slice(0, LEFT_OUT_LISTED).map(shownPath) };
}

/**
 * Records `workspace` as it is now: what the measure counted, read by the worker itself, each
 * file at most its measured size (snapshot.ts), so a job growing a file meanwhile adds nothing.
 * Paths git refuses on checkout are left out and named ({@link Checkpoint.leftOut}).
 * @param message the commit message (which run and turn, for someone reading the store)
 * @returns the checkpoint, or `{skipped}` saying why none was taken (over `maxBytes` or `maxEntries`)
 * @throws Error when git fails (the caller reports it; the command still runs)
 */
export async function takeCheckpoint(
  root: string,
  workspace: string,
  options: CheckpointOptions,
  message: string,
): Promise<Checkpoint | { skipped: string }> {
  const exclude = options.exclude ?? [];
  const maxEntries = options.maxEntries ?? DEFAULT_CHECKPOINT_MAX_ENTRIES;
  const size = await measure(workspace, exclude, { bytes: options.maxBytes, entries: maxEntries });
  if (size.over) return { skipped: overReason(size.over, options.maxBytes, maxEntries) };
  const store = await storeFor(root, workspace);
  await ensureStore(store);
  const snap = await snapshotOf(store, workspace, size, cacheIndex(store), cacheIndex(store), { statBefore: options.trustStatBefore ?? 0 });
  // The caps it was taken under, as trailers: a restore to it records the workspace under the same ones.
  const trailers = `${CAP_TRAILER_BYTES}: ${options.maxBytes}\n${CAP_TRAILER_ENTRIES}: ${maxEntries}${leftOutTrailers(size.refused)}`;
  const id = (await git(store, ['commit-tree', snap.tree, '-m', message, '-m', trailers])).trim();
  // A ref keeps the commit from any later gc of the store.
  await git(store, ['update-ref', `refs/checkpoints/${id}`, id]);
  const leftOut = leftOutOf(size.refused);
  return { id, store, workspace: await realpath(workspace), bytes: snap.bytes, files: snap.files, ...(leftOut ? { leftOut } : {}) };
}

/** The trailers of a checkpoint's commit message that give the caps it was taken under (bytes, entries). */
const CAP_TRAILER_BYTES = 'Agent-Jobs-Max-Bytes';
const CAP_TRAILER_ENTRIES = 'Agent-Jobs-Max-Entries';
/** The trailers that give how many paths git refuses were left out, and each (a JSON string, ASCII only), up to {@link LEFT_OUT_RECORDED_BYTES}. */
const LEFT_OUT_TRAILER_COUNT = 'Agent-Jobs-Left-Out-Count';
const LEFT_OUT_TRAILER = 'Agent-Jobs-Left-Out';

/** The left-out trailers of `refused` (latin1 paths), each starting with a line break; '' when none. */
function leftOutTrailers(refused: readonly string[]): string {
  if (refused.length === 0) return '';
  let out = `\n${LEFT_OUT_TRAILER_COUNT}: ${refused.length}`;
  for (const p of refused) {
    const line = `\n${LEFT_OUT_TRAILER}: ${JSON.stringify(p).replace(/[\u007f-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)}`;
    if (out.length + line.length > LEFT_OUT_RECORDED_BYTES) break;
    out += line;
  }
  return out;
}

/** What a checkpoint's commit message says: the caps it was taken under, and the paths it left out (`complete` when it names them all). */
interface CheckpointTrailers {
  caps: RestoreCaps;
  leftOut: { paths: Set<string>; complete: boolean };
}

/** The trailers of checkpoint `id`; no caps for one taken before they were recorded, and no left-out paths for one before those were. */
async function trailersOf(store: string, id: string): Promise<CheckpointTrailers> {
  const body = await git(store, ['show', '-s', '--format=%B', id]);
  const num = (name: string): number | undefined => {
    const m = new RegExp(`^${name}: (\\d+)$`, 'm').exec(body);
    return m ? Number(m[1]) : undefined;
  };
  const maxBytes = num(CAP_TRAILER_BYTES);
  const maxEntries = num(CAP_TRAILER_ENTRIES);
  const paths = new Set<string>();
  for (const m of body.matchAll(new RegExp(`^${LEFT_OUT_TRAILER}: (".*")$`, 'gm'))) paths.add(JSON.parse(m[1]!) as string);
  return {
    caps: { ...(maxBytes !== undefined ? { maxBytes } : {}), ...(maxEntries !== undefined ? { maxEntries } : {}) },
    leftOut: { paths, complete: paths.size === (num(LEFT_OUT_TRAILER_COUNT) ?? 0) },
  };
}

/** Caps of the record a restore takes first (its "before"): those of a checkpoint; and which stat it may trust. */
export interface RestoreCaps {
  /** @default {@link DEFAULT_CHECKPOINT_MAX_BYTES} (1 GiB) */
  maxBytes?: number;
  /** @default {@link DEFAULT_CHECKPOINT_MAX_ENTRIES} */
  maxEntries?: number;
  /**
   * ms since the epoch: a file whose ctime or mtime is at or after it is read by the restore's record whatever the
   * stat cache says (a session that may have written it through a shared mapping started then); the start of the
   * earliest live session that may write the workspace. @default 0 (every file read)
   */
  trustStatBefore?: number;
}

/** A path git refuses to write that a restore left as it is, or did not write, and why (UTF-8, as {@link LeftOut}). */
export interface LeftByRestore {
  path: string;
  why: string;
}

/** What {@link restoreCheckpoint} did. */
export interface Restored {
  /** The checkpoint of the workspace as it was before the restore. */
  before: string;
  /** What the restore changed (paths git refuses that it removed among them, as `D`). */
  changes: FileChange[];
  /** Paths git refuses that the restore left as they are or could not write: none when empty. */
  left: LeftByRestore[];
  /** What a restore leaves as it is whatever the checkpoint holds: `.git`, nested repositories, excluded paths. */
  notRestored: NotRestored;
}

/**
 * Restores `workspace` exactly to checkpoint `id` of `store`: files created since are removed,
 * changed ones and deleted ones written back (content, executable bit, symlinks); excluded paths
 * and `.git` directories are left alone. Restored files get the owner of the workspace directory
 * (the session user), as if the agent had written them. First records the workspace as it is
 * (so a rewind can itself be undone), as a checkpoint does: bounded by `caps`, else by the caps checkpoint `id` was
 * taken under (the run's `maxBytes`, recorded in its commit message), else the defaults. That record takes a file from
 * the stat cache only when its times are before `caps.trustStatBefore`: the others are read, and their index entry is
 * what was read (`read-tree` rewrites them when the checkpoint's differ). Paths git refuses on checkout (git-path.ts) never make it fail: one in the workspace that the
 * checkpoint did not leave out too is removed (and listed as deleted); the rest, and any the checkpoint holds (one
 * taken before they were left out), are left and named in `left`.
 * @returns the record of the workspace before, what the restore changed and what it left
 * @throws Error when `id` is not in the store, when the workspace is over `caps` (nothing restored:
 *   its state could not be recorded first), or git fails
 */
export async function restoreCheckpoint(
  store: string,
  workspace: string,
  id: string,
  exclude: readonly string[] = [],
  caps: RestoreCaps = {},
): Promise<Restored> {
  await mkdir(workspace, { recursive: true });
  await ensureStore(store);
  const full = (await git(store, ['rev-parse', '--verify', `${id}^{tree}`])).trim();
  const owner = await stat(workspace);
  // The caps given, else those the checkpoint was taken under (the run's), else the defaults.
  const taken = await trailersOf(store, id);
  const maxBytes = caps.maxBytes ?? taken.caps.maxBytes ?? DEFAULT_CHECKPOINT_MAX_BYTES;
  const maxEntries = caps.maxEntries ?? taken.caps.maxEntries ?? DEFAULT_CHECKPOINT_MAX_ENTRIES;
  const size = await measure(workspace, exclude, { bytes: maxBytes, entries: maxEntries });
  if (size.over)
    throw new Error(
      `${overReason(size.over, maxBytes, maxEntries).replace(/; no checkpoint was taken$/, '')}: it cannot be recorded before the restore, so nothing was restored`,
    );
  return withIndex(store, async (index) => {
    // Its index is private: a file read now keeps its fresh stat, so read-tree rewrites only what differs (the content
    // it read is the index's), not every file a session changed.
    const snap = await snapshotOf(store, workspace, size, index, cacheIndex(store), {
      statBefore: caps.trustStatBefore ?? 0,
      keepReadStat: true,
    });
    const current = snap.tree;
    const trailers = leftOutTrailers(size.refused).replace(/^\n/, '');
    const before = (
      await git(store, ['commit-tree', current, '-m', `before restoring ${id}`, ...(trailers ? ['-m', trailers] : [])])
    ).trim();
    await git(store, ['update-ref', `refs/checkpoints/${before}`, before]);
    // What of the checkpoint git would refuse to write (one taken before such paths were left out): not written.
    const { tree: target, refused: unwritable } = await writableTree(store, full, index);
    const left: LeftByRestore[] = unwritable.map((p) => ({
      path: shownPath(p),
      why: 'in the checkpoint, but git refuses to write it: not restored',
    }));
    const removed = await removeRefused(workspace, size.refused, taken.leftOut, unwritable, left);
    const nestedNow = [...size.info].filter(([, e]) => e.kind === 'repo').map(([p]) => Buffer.from(p, 'latin1').toString('utf8'));
    const nested = [...new Set([...nestedNow, ...(await nestedRepositories(store, target))])].sort();
    // A nested repository is recorded as its commit, and read-tree neither checks one out nor removes it: not a change.
    const isNested = new Set(nested);
    const changes = [
      ...removed.map((p): FileChange => ({ status: 'D', path: shownPath(p) })),
      ...parseNameStatus(await git(store, ['diff-tree', '-r', '-z', '--no-renames', '--name-status', current, target])).filter(
        (c) => !isNested.has(c.path),
      ),
    ];
    // The index matches the workspace now (the worker wrote its stat data): a one-tree reset with -u removes what the target
    // lacks and writes the rest; it reads no file (its content is trusted by stat), and rewrites those whose stat was not kept.
    await git(store, ['read-tree', '--reset', '-u', target], { workTree: workspace, index, writable: true });
    await chownRestored(workspace, changes, snap.smudged, owner.uid, owner.gid);
    await removeEmptyDirs(workspace, changes);
    return { before, changes, left, notRestored: { nested, git: await hasTopGit(workspace), excluded: [...exclude] } };
  });
}

/**
 * The nested repositories checkpoint (or tree) `id` records: its gitlinks (mode 160000), whose
 * files it does not hold. Workspace-relative paths, sorted.
 */
export async function nestedRepositories(store: string, id: string): Promise<string[]> {
  const out = await git(store, ['ls-tree', '-r', '-z', id]);
  return out
    .split('\0')
    .filter((line) => line.startsWith('160000 '))
    .map((line) => line.slice(line.indexOf('\t') + 1))
    .sort();
}

/** Whether `workspace` holds a `.git` at its top (a folder or a file: a repository or a worktree). */
async function hasTopGit(workspace: string): Promise<boolean> {
  try {
    await lstat(path.join(workspace, '.git'));
    return true;
  } catch {
    return false;
  }
}

/**
 * The bytes of `file` (workspace-relative) in checkpoint `id` of `store` (a checkpoint or a rewind's
 * record of the workspace before it), as stored: a symlink's target text.
 * @throws Error saying so when the checkpoint holds no such file (a folder, a nested repository, or absent), or holds a
 *   symlink there (its target named)
 */
export async function fileAt(store: string, id: string, file: string): Promise<Buffer> {
  const rel = path.posix.normalize(file);
  if (rel.startsWith('/') || rel === '.' || rel.split('/').includes('..')) throw new Error(`${file} is not a path inside the workspace`);
  // Literal paths: a name such as `:/notes.txt` is pathspec magic to ls-tree, while cat-file below reads it as it is.
  const entryOf = async (p: string): Promise<string[]> =>
    (await git(store, ['--literal-pathspecs', 'ls-tree', '-z', id, '--', p])).split('\0')[0]?.split(/[ \t]/) ?? [];
  const typeOf = async (p: string): Promise<string | undefined> => (await entryOf(p))[1];
  const [mode, type] = await entryOf(rel);
  if (type !== 'blob') {
    let kind = type === 'tree' ? ' (a folder)' : type === 'commit' ? ' (a nested repository: its files are not stored)' : '';
    // A path under a nested repository: named as such (its files were never stored, not absent).
    for (let dir = path.posix.dirname(rel); !kind && dir !== '.'; dir = path.posix.dirname(dir))
      if ((await typeOf(dir)) === 'commit') kind = ` (it is in the nested repository ${dir}, whose files are not stored)`;
    throw new Error(`${id.slice(0, 12)} holds no file ${rel}${kind}`);
  }
  const { stdout } = await run('git', ['cat-file', 'blob', `${id}:${rel}`], {
    env: storeEnv(store),
    cwd: store,
    maxBuffer: 1024 * 1024 * 1024 + 1,
    encoding: 'buffer',
  });
  // A symlink's blob is its target's text: never given out as a file's bytes, which `> PATH` would write as a file.
  if (mode === '120000')
    throw new Error(
      `${id.slice(0, 12)} holds ${rel} as a symlink to ${JSON.stringify(stdout.toString('utf8'))}, not a file (make it again with ln -s)`,
    );
  return stdout;
}

/**
 * `tree` without the entries git refuses to write (git-path.ts), and those entries (latin1 paths); `tree` itself when
 * it has none. Written through `index` (overwritten later by the caller's own use of it).
 */
async function writableTree(store: string, tree: string, index: string): Promise<{ tree: string; refused: string[] }> {
  const listing = await git(store, ['ls-tree', '-r', '-z', '--full-tree', tree], { encoding: 'latin1' });
  const entries: { path: string; mode: number; oid: Buffer }[] = [];
  const refused: string[] = [];
  for (const line of listing.split('\0')) {
    const m = /^(\d+) \w+ ([0-9a-f]{40})\t(.+)$/s.exec(line);
    if (!m) continue;
    const mode = parseInt(m[1]!, 8);
    if (gitRefusesPath(m[3]!, mode === 0o120000 ? 'link' : 'file')) refused.push(m[3]!);
    else entries.push({ path: m[3]!, mode, oid: Buffer.from(m[2]!, 'hex') });
  }
  if (refused.length === 0) return { tree, refused };
  await writeIndex(index, entries);
  return { tree: (await git(store, ['write-tree'], { index })).trim(), refused };
}

/**
 * Removes, confined, each path git refuses (`refused`, latin1, a folder with a trailing `/`) that checkpoint's
 * `leftOut` does not name and no entry of `unwritable` lies in, and checks it is gone. What is kept, or could not be
 * removed, is added to `left`.
 * @returns the paths removed
 */
async function removeRefused(
  workspace: string,
  refused: readonly string[],
  leftOut: CheckpointTrailers['leftOut'],
  unwritable: readonly string[],
  left: LeftByRestore[],
): Promise<string[]> {
  const remove: string[] = [];
  for (const p of refused) {
    const inCheckpoint = unwritable.some((u) => u === p || (p.endsWith('/') && u.startsWith(p)));
    if (leftOut.paths.has(p) || inCheckpoint)
      left.push({ path: shownPath(p), why: 'git refuses to write it; it was left out of the checkpoint too: kept as it is' });
    else if (!leftOut.complete)
      left.push({ path: shownPath(p), why: 'git refuses to write it; the checkpoint may have left it out too: kept as it is' });
    else remove.push(p);
  }
  // What the checkpoint left out and the workspace no longer holds: the restore cannot bring it back.
  const here = new Set(refused);
  for (const p of leftOut.paths)
    if (!here.has(p)) left.push({ path: shownPath(p), why: 'left out of the checkpoint (git refuses to write it): not restored' });
  await inWorkspace(workspace, ['rm', '-rf', '--'], remove.map(shownPath));
  const top = Buffer.from(`${workspace.replace(/\/+$/, '')}/`, 'utf8');
  const gone: string[] = [];
  for (const p of remove) {
    const still = await lstat(Buffer.concat([top, Buffer.from(p.replace(/\/$/, ''), 'latin1')])).then(
      () => true,
      () => false,
    );
    if (still) left.push({ path: shownPath(p), why: 'git refuses to write it, and it could not be removed' });
    else gone.push(p);
  }
  return gone;
}

/**
 * Gives the restored files, and the directories git created on the way to them, to the workspace's
 * owner: `chown -h` (a symlink itself, never its target), confined like git (confine.ts), since a
 * job may swap a directory on the way for a symlink. `rewritten`: paths git rewrote though unchanged
 * (their stat was not kept). Files gone meanwhile are no error.
 */
async function chownRestored(
  workspace: string,
  changes: FileChange[],
  rewritten: readonly string[],
  uid: number,
  gid: number,
): Promise<void> {
  const paths = new Set<string>(rewritten);
  for (const c of changes) {
    if (c.status === 'D') continue;
    paths.add(c.path);
    for (let dir = path.dirname(c.path); dir !== '.'; dir = path.dirname(dir)) paths.add(dir);
  }
  await inWorkspace(workspace, ['chown', '-h', '-f', `${uid}:${gid}`, '--'], [...paths]);
}

/** Removes the directories a restore emptied (git leaves them): the parents of deleted files, when now empty (confined, as {@link chownRestored}). */
async function removeEmptyDirs(workspace: string, changes: FileChange[]): Promise<void> {
  const dirs = new Set<string>();
  for (const c of changes) if (c.status === 'D') for (let d = path.dirname(c.path); d !== '.'; d = path.dirname(d)) dirs.add(d);
  // Deepest first, one rmdir per batch: rmdir fails on a non-empty directory and goes on with the next.
  await inWorkspace(
    workspace,
    ['rmdir', '--ignore-fail-on-non-empty', '--'],
    [...dirs].sort((a, b) => b.length - a.length),
  );
}

/** Runs `argv` with workspace-relative `paths` appended, 500 at a time, in the workspace (confined); errors are ignored (files gone, a directory not empty). */
async function inWorkspace(workspace: string, argv: string[], paths: string[]): Promise<void> {
  for (let i = 0; i < paths.length; i += 500) {
    await runConfined({
      argv: [...argv, ...paths.slice(i, i + 500).map((p) => `./${p}`)],
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
      workspace,
      writable: true,
      maxBuffer: 1024 * 1024,
      timeoutMs: CONFINED_STORE_TIMEOUT_MS,
    }).catch(() => undefined);
  }
}

/** Parses `diff-tree -z --name-status`. */
function parseNameStatus(out: string): FileChange[] {
  const parts = out.split('\0').filter((p) => p !== '');
  const changes: FileChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) changes.push({ status: parts[i]!.charAt(0) as FileChange['status'], path: parts[i + 1]! });
  return changes;
}

/**
 * The tree of the workspace as it is now (objects written to the store, no commit): to compare the
 * last checkpoint with. Bounded as a checkpoint is, by `caps`; every file is read (no stat trusted).
 * @throws Error when the workspace is over `caps`
 */
export async function currentTree(
  store: string,
  workspace: string,
  exclude: readonly string[] = [],
  caps: RestoreCaps = {},
): Promise<string> {
  await ensureStore(store);
  const maxBytes = caps.maxBytes ?? DEFAULT_CHECKPOINT_MAX_BYTES;
  const maxEntries = caps.maxEntries ?? DEFAULT_CHECKPOINT_MAX_ENTRIES;
  const size = await measure(workspace, exclude, { bytes: maxBytes, entries: maxEntries });
  if (size.over) throw new Error(overReason(size.over, maxBytes, maxEntries).replace(/; no checkpoint was taken$/, ''));
  // Every file read: the stat cache may hold a file a job rewrote through a shared mapping, which changes no time.
  return withIndex(store, async (index) => (await snapshotOf(store, workspace, size, index, undefined, { statBefore: 0 })).tree);
}

/** What changed from checkpoint (or tree) `a` to `b`. */
export async function changesBetween(store: string, a: string, b: string): Promise<FileChange[]> {
  return parseNameStatus(await git(store, ['diff-tree', '-r', '-z', '--no-renames', '--name-status', a, b]));
}

/**
 * The warning line put before the diff of a file git would call binary (a NUL in its first 8,000
 * bytes, git's own guess): its bytes are shown all the same, since bash runs a script whose NUL is
 * past its first line (adversary round 10).
 */
export const BINARY_FILE_WARNING =
  'warning: git calls the next file binary (a NUL byte in its first 8,000 bytes); every line of it is shown as text, bytes escaped';

/** Splits a `git diff` into its files' parts, each starting at its `diff --git` header (no content line can: they are prefixed). */
function diffParts(diff: string): string[] {
  return diff.split(/^(?=diff --git )/m).filter((p) => p !== '');
}

/**
 * The unified diff from checkpoint (or tree) `a` to `b`, every changed file's lines shown:
 * `git diff --text`, so a file git would call binary is shown line by line too (its bytes as
 * they are: a display escapes them, `diffText`), with {@link BINARY_FILE_WARNING} on the line
 * before its `diff --git` header. Bounded by the checkpoint's `maxBytes` (the files themselves)
 * and git's 256 MiB output buffer. Throws when git fails.
 */
export async function diffBetween(store: string, a: string, b: string): Promise<string> {
  const base = ['diff', '--no-color', '--no-ext-diff', '--no-textconv', '--no-renames'];
  const [summary, text] = await Promise.all([git(store, [...base, a, b]), git(store, [...base, '--text', a, b])]);
  // Which files git calls binary: its own "Binary files ... differ" in the diff without --text. Both list the same files in the same order.
  const binary = diffParts(summary).map((part) => /^Binary files .* differ$/m.test(part));
  if (!binary.includes(true)) return text;
  const parts = diffParts(text);
  if (parts.length !== binary.length) return `${BINARY_FILE_WARNING.replace('the next file', 'a file below')}\n${text}`;
  return parts.map((part, i) => (binary[i] ? `${BINARY_FILE_WARNING}\n${part}` : part)).join('');
}

/**
 * Copies checkpoint `id` of `store` into `target` (a fork's workspace; created when missing,
 * must hold nothing the checkpoint would overwrite): the checkpoint is restored there.
 */
export async function copyCheckpoint(store: string, id: string, target: string, exclude: readonly string[] = []): Promise<void> {
  await restoreCheckpoint(store, target, id, exclude);
}
