/**
 * A checkpoint's write of the workspace into its store, done by the worker itself, so that what it
 * reads and stores is bounded by what {@link measure} (store.ts) counted, whatever a job of the
 * session does meanwhile (adversary round 25: a file grown after the measure was read whole by
 * root's `git update-index`). Each measured path is reached one name at a time from a descriptor
 * of the workspace, never through a symlink (safe-open.ts); a regular file is opened `O_PATH`
 * first and read only when `fstat` says it is still one (`O_NONBLOCK`: a FIFO never blocks), at
 * most its measured size; a symlink's text is its blob; a nested repository's HEAD commit is read
 * from its own files, each to a small bound. The blobs stream into ONE `git fast-import`, which
 * never opens a workspace file; the worker writes the index itself (git's version 2 format) with
 * the stat data of what it read, so a restore's `read-tree -u` trusts it without reading the
 * workspace, and the next checkpoint reads again only the files whose stat changed.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants, type BigIntStats } from 'node:fs';
import { open, readFile, readlink, rename, rm, writeFile, lstat, type FileHandle } from 'node:fs/promises';
import { O_PATH } from '../session/safe-open';

/** What the measure saw at a path: its kind and, for a regular file, its size in bytes (the most read of it). */
export interface MeasuredEntry {
  kind: 'file' | 'link' | 'repo';
  size: number;
}

/** What {@link writeSnapshot} recorded. */
export interface Snapshot {
  /** The tree id. */
  tree: string;
  /** Bytes of regular files recorded (never more than the measure's). */
  bytes: number;
  /** Regular files recorded. */
  files: number;
  /** Paths measured but not recorded: gone, or of another kind than measured (a file swapped for a FIFO or a symlink). */
  dropped: string[];
  /** Recorded paths whose index stat was left unusable (changed while read): a restore rewrites them (and gives them their owner). */
  smudged: string[];
}

/** Paths whose files are pinned and stat'd at once. */
const BATCH = 64;

/** Bytes read from a file at once. */
const CHUNK = 1024 * 1024;

/** Most bytes read of a nested repository's HEAD, a loose ref or a `.git` file (`gitdir: ...`). */
const SMALL_FILE = 4096;

/** Most bytes read of a nested repository's `packed-refs` to find its HEAD's branch. */
const PACKED_REFS_MAX = 1024 * 1024;

/**
 * Most bytes of nested repositories' `packed-refs` one checkpoint reads, all together: 64 MiB. The measure counts a
 * nested repository as one entry of 0 bytes, so without it 2,000 of them sharing one 1 MiB `packed-refs` (hard links)
 * cost 155 s per checkpoint (adversary round 26, F3); past it a gitlink that needs its `packed-refs` is left out
 * (`dropped`). A real workspace's nested repositories read a few KiB each.
 */
export const PACKED_REFS_BUDGET = 64 * 1024 * 1024;

/** Git's mode bits in the index. */
const MODE = { file: 0o100644, exec: 0o100755, link: 0o120000, repo: 0o160000 } as const;

/** `/proc/self/fd/<fd>/<name>` as bytes (`name` latin1: each byte one character): Node's `openat(fd, name)`. */
function at(fd: number, name: string): Buffer {
  return Buffer.concat([Buffer.from(`/proc/self/fd/${fd}/`), Buffer.from(name, 'latin1')]);
}

/** One index entry as the worker builds it. */
interface Entry {
  path: string;
  mode: number;
  oid: Buffer;
  st?: BigIntStats;
}

/** An index entry read back from the last checkpoint's index: its stat fields and oid. */
interface Cached {
  fields: bigint[];
  mode: number;
  oid: Buffer;
}

/** The ten 32-bit stat fields git keeps (ctime s/ns, mtime s/ns, dev, ino, mode, uid, gid, size), as it truncates them. */
function statFields(st: BigIntStats, mode: number): bigint[] {
  const m = 0xffffffffn;
  const s = (ns: bigint): bigint[] => [(ns / 1_000_000_000n) & m, ns % 1_000_000_000n];
  return [...s(st.ctimeNs), ...s(st.mtimeNs), st.dev & m, st.ino & m, BigInt(mode), st.uid & m, st.gid & m, st.size & m];
}

/**
 * The entries of a version 2 index at `file` (none when missing or unreadable): the stat cache of
 * the last checkpoint. Entries git would call racily clean (mtime not before the index file's own)
 * are left out, as git leaves them: their content is read again.
 */
async function readCache(file: string): Promise<Map<string, Cached>> {
  const out = new Map<string, Cached>();
  let buf: Buffer;
  let stamp: bigint;
  try {
    buf = await readFile(file);
    stamp = (await lstat(file, { bigint: true })).mtimeNs;
  } catch {
    return out;
  }
  if (buf.length < 12 || buf.toString('latin1', 0, 4) !== 'DIRC' || buf.readUInt32BE(4) !== 2) return out;
  const count = buf.readUInt32BE(8);
  let off = 12;
  for (let i = 0; i < count && off + 62 <= buf.length; i++) {
    const fields: bigint[] = [];
    for (let f = 0; f < 10; f++) fields.push(BigInt(buf.readUInt32BE(off + f * 4)));
    const oid = Buffer.from(buf.subarray(off + 40, off + 60));
    const flags = buf.readUInt16BE(off + 60);
    const end = buf.indexOf(0, off + 62);
    if (end < 0 || flags & 0x4000) break;
    const name = buf.toString('latin1', off + 62, end);
    const mtimeNs = fields[2]! * 1_000_000_000n + fields[3]!;
    if (mtimeNs < stamp) out.set(name, { fields, mode: Number(fields[6]), oid });
    off += (62 + (end - off - 62) + 8) & ~7;
  }
  return out;
}

/** `entries` (sorted bytewise) as a version 2 index file. */
function indexFile(entries: readonly Entry[]): Buffer {
  const parts: Buffer[] = [];
  const head = Buffer.alloc(12);
  head.write('DIRC', 0, 'latin1');
  head.writeUInt32BE(2, 4);
  head.writeUInt32BE(entries.length, 8);
  parts.push(head);
  for (const e of entries) {
    const name = Buffer.from(e.path, 'latin1');
    const e62 = Buffer.alloc((62 + name.length + 8) & ~7);
    const fields = e.st ? statFields(e.st, e.mode) : [0n, 0n, 0n, 0n, 0n, 0n, BigInt(e.mode), 0n, 0n, 0n];
    fields.forEach((v, i) => e62.writeUInt32BE(Number(v), i * 4));
    e62.writeUInt32BE(e.mode, 24);
    e.oid.copy(e62, 40);
    e62.writeUInt16BE(Math.min(name.length, 0xfff), 60);
    name.copy(e62, 62);
    parts.push(e62);
  }
  const body = Buffer.concat(parts);
  return Buffer.concat([body, createHash('sha1').update(body).digest()]);
}

/** Writes `entries` (sorted bytewise, latin1 paths) as a version 2 index file at `file`, with no stat data (git reads each file as changed). */
export async function writeIndex(file: string, entries: readonly { path: string; mode: number; oid: Buffer }[]): Promise<void> {
  await writeFile(file, indexFile(entries), { mode: 0o600 });
}

/** The commit a nested repository's HEAD names, read with small bounds from its own files; undefined when it has none. */
async function gitlinkOid(
  rel: string,
  dirOf: (rel: string) => Promise<number | undefined>,
  budget: { packedRefs: number },
): Promise<Buffer | undefined> {
  const small = async (dir: number | undefined, name: string, max: number): Promise<string | undefined> => {
    if (dir === undefined) return undefined;
    const r = await readBounded(dir, name, max);
    return r && !r.truncated ? r.bytes.toString('latin1') : undefined;
  };
  const repo = await dirOf(rel);
  if (repo === undefined) return undefined;
  let gitDir = `${rel}/.git`;
  const dotGit = await small(repo, '.git', SMALL_FILE);
  if (dotGit !== undefined) {
    // A `.git` file: `gitdir: <path>`, relative to the repository's folder; only one inside the workspace is read.
    const m = /^gitdir: (.+?)\r?\n?$/.exec(dotGit);
    const joined = m ? joinInside(rel, m[1]!) : undefined;
    if (joined === undefined) return undefined;
    gitDir = joined;
  }
  const head = (await small(await dirOf(gitDir), 'HEAD', SMALL_FILE))?.trim();
  if (head === undefined) return undefined;
  const hex = (s: string | undefined): Buffer | undefined => (s && /^[0-9a-f]{40}$/.test(s) ? Buffer.from(s, 'hex') : undefined);
  if (!head.startsWith('ref: ')) return hex(head);
  const ref = head.slice(5);
  if (!/^refs\/[^\0]+$/.test(ref) || ref.split('/').some((p) => p === '..' || p === '.' || p === '')) return undefined;
  // A worktree's branches are in its common directory.
  const common = (await small(await dirOf(gitDir), 'commondir', SMALL_FILE))?.trim();
  // Resolved as `gitdir:` is: one that leaves the workspace (`../../..`) or is absolute is not followed.
  const refsDir = common ? joinInside(gitDir, common) : gitDir;
  if (refsDir === undefined) return undefined;
  const parts = ref.split('/');
  const loose = hex((await small(await dirOf([refsDir, ...parts.slice(0, -1)].join('/')), parts.at(-1)!, SMALL_FILE))?.trim());
  if (loose) return loose;
  const packedDir = await dirOf(refsDir);
  const max = Math.min(PACKED_REFS_MAX, budget.packedRefs);
  const packed = packedDir === undefined || max <= 0 ? undefined : await readBounded(packedDir, 'packed-refs', max);
  if (!packed) return undefined;
  budget.packedRefs -= packed.bytes.length;
  return packed.truncated ? undefined : hex(packedRefLine(packed.bytes, ref));
}

/** The 40 characters before ` <ref>` on its line of a `packed-refs` (`<oid> <ref>`), found as bytes (no split, no decode of the whole). */
function packedRefLine(bytes: Buffer, ref: string): string | undefined {
  const needle = Buffer.from(` ${ref}`, 'latin1');
  for (let at = bytes.indexOf(needle); at >= 0; at = bytes.indexOf(needle, at + 1)) {
    const end = at + needle.length;
    if (end < bytes.length && bytes[end] !== 0x0a && bytes[end] !== 0x0d) continue;
    const start = at - 40;
    if (start === 0 || (start > 0 && bytes[start - 1] === 0x0a)) return bytes.toString('latin1', start, at);
  }
  return undefined;
}

/**
 * `target` (relative) resolved against the workspace-relative folder `base`, `..` and `.` taken lexically; undefined
 * when it is absolute or climbs above the workspace's top.
 */
function joinInside(base: string, target: string): string | undefined {
  if (target.startsWith('/')) return undefined;
  const parts = base === '' ? [] : base.split('/');
  for (const p of target.split('/')) {
    if (p === '..') {
      if (parts.length === 0) return undefined;
      parts.pop();
    } else if (p !== '.' && p !== '') parts.push(p);
  }
  return parts.join('/');
}

/** What {@link readBounded} read: the bytes, the `fstat` of the file read and whether it held more than `max`. */
interface Bounded {
  bytes: Buffer;
  st: BigIntStats;
  truncated: boolean;
}

/** The first `max` bytes of `name` in the directory `dir`, when it is a regular file (never a symlink followed, never a FIFO waited on). */
async function readBounded(dir: number, name: string, max: number): Promise<Bounded | undefined> {
  const file = await openRegular(dir, name);
  if (!file) return undefined;
  try {
    const buf = Buffer.alloc(Math.min(Number(file.st.size), max) + 1);
    let n = 0;
    while (n < buf.length) {
      const { bytesRead } = await file.handle.read(buf, n, buf.length - n, n);
      if (bytesRead === 0) break;
      n += bytesRead;
    }
    return { bytes: buf.subarray(0, Math.min(n, max)), st: file.st, truncated: n > max };
  } finally {
    await file.handle.close();
  }
}

/**
 * `name` in the directory `dir` opened for reading when it is a regular file: pinned `O_PATH | O_NOFOLLOW`
 * first ({@link pinRegular}: a symlink is not followed, a FIFO or device not opened), then, when `fstat` says
 * regular, the same inode reopened through `/proc/self/fd` (`O_NONBLOCK`). Undefined when missing or no regular file.
 */
async function openRegular(dir: number, name: string): Promise<{ handle: FileHandle; st: BigIntStats } | undefined> {
  const pinned = await pinRegular(dir, name);
  if (pinned === undefined) return undefined;
  try {
    const handle = await open(`/proc/self/fd/${pinned.handle.fd}`, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    return { handle, st: pinned.st };
  } catch {
    return undefined;
  } finally {
    await pinned.handle.close();
  }
}

/** `name` in the directory `dir` pinned `O_PATH | O_NOFOLLOW` (no symlink followed, nothing opened for I/O) with its `fstat`, when it is a regular file. */
async function pinRegular(dir: number, name: string): Promise<{ handle: FileHandle; st: BigIntStats } | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(at(dir, name), O_PATH | constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    const st = await handle.stat({ bigint: true });
    if (st.isFile()) return { handle, st };
  } catch {
    // gone meanwhile
  }
  await handle.close();
  return undefined;
}

/** A running `git fast-import` taking blobs on its stdin, writing them into the store's objects. */
class BlobSink {
  private readonly child;
  private readonly done: Promise<void>;
  constructor(store: string, env: NodeJS.ProcessEnv) {
    this.child = spawn('git', ['-c', 'gc.auto=0', '-c', 'safe.directory=*', 'fast-import', '--quiet', '--done'], {
      env,
      cwd: store,
      stdio: ['pipe', 'ignore', 'pipe'],
    });
    const err: Buffer[] = [];
    this.child.stderr.on('data', (b: Buffer) => err.push(b));
    this.child.stdin.on('error', () => undefined);
    this.done = new Promise((resolve, reject) => {
      this.child.on('error', reject);
      this.child.on('close', (code) =>
        code === 0 ? resolve() : reject(new Error(`git fast-import failed (exit ${code}): ${Buffer.concat(err).toString().trim()}`)),
      );
    });
    // Surfaced by finish(); never an unhandled rejection meanwhile.
    this.done.catch(() => undefined);
  }
  /** Writes `b`, waiting while the pipe is full. */
  async write(b: Buffer | string): Promise<void> {
    if (!this.child.stdin.write(b))
      await new Promise<void>((resolve, reject) => {
        this.child.stdin.once('drain', resolve);
        this.done.then(() => reject(new Error('git fast-import exited early')), reject);
      });
  }
  async finish(): Promise<void> {
    this.child.stdin.end('done\n');
    await this.done;
  }
  kill(): void {
    this.child.kill('SIGKILL');
  }
}

/**
 * Writes the measured `paths` of `workspace` into `store` through the index file `index` (written
 * whole by the worker): at most `info`'s size of each regular file is read (a file grown since is
 * recorded as its first measured bytes, one shrunk as it is now: the checkpoint holds no byte past
 * the measure and is not lost to a job writing a log); a path gone or now of another kind is
 * dropped. The index at `files.cache` (the last checkpoint's; none when undefined) is the stat cache:
 * a file whose stat is unchanged is not read; `files.index` is written whole. A file whose ctime or
 * mtime is at or after `files.trustStatBefore` (ns since the epoch), or in the last 2 s, is read
 * whatever its stat and written to the index without one (a restore rewrites it): a job may write a
 * file through a shared mapping without changing any time after its first write (adversary round
 * 26), and that first write sets the ctime after the session that made it started. With `files.keepReadStat`
 * (a restore's private index, never the cache) a file read now keeps its stat, unless changed in the last 2 s.
 * @param paths workspace-relative, latin1, sorted bytewise (store.ts `measure`)
 * @param env git's environment (`GIT_DIR` the store; no config of the host)
 * @throws Error when the workspace is no directory (a symlink now) or git fails
 */
export async function writeSnapshot(
  store: string,
  workspace: string,
  paths: readonly string[],
  info: ReadonlyMap<string, MeasuredEntry>,
  files: { index: string; cache: string | undefined; trustStatBefore: bigint; keepReadStat?: boolean },
  env: NodeJS.ProcessEnv,
  git: (args: string[], indexFile: string) => Promise<string>,
): Promise<Snapshot> {
  const { index } = files;
  const cache = files.cache === undefined ? new Map<string, Cached>() : await readCache(files.cache);
  const top = await open(workspace, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  // Open folders by workspace-relative path (a promise each: the files of a batch ask for the same folder at once);
  // the sorted order keeps one branch open at a time.
  const dirs = new Map<string, Promise<FileHandle | undefined>>([['', Promise.resolve(top)]]);
  const dirOf = async (rel: string): Promise<number | undefined> => {
    // Every folder opened is below the workspace: a `..` (or `.`, or empty) component is never opened.
    if (rel !== '' && rel.split('/').some((p) => p === '..' || p === '.' || p === '')) return undefined;
    let pending = dirs.get(rel);
    if (!pending) {
      const cut = rel.lastIndexOf('/');
      pending = dirOf(cut < 0 ? '' : rel.slice(0, cut)).then((parent) =>
        parent === undefined
          ? undefined
          : open(at(parent, rel.slice(cut + 1)), O_PATH | constants.O_DIRECTORY | constants.O_NOFOLLOW).catch(() => undefined),
      );
      dirs.set(rel, pending);
    }
    return (await pending)?.fd;
  };
  const closeOutside = async (rel: string): Promise<void> => {
    for (const [d, h] of dirs)
      if (d !== '' && !(rel === d || rel.startsWith(`${d}/`))) {
        dirs.delete(d);
        await (await h)?.close();
      }
  };
  const sink = new BlobSink(store, env);
  const budget = { packedRefs: PACKED_REFS_BUDGET };
  const out: Snapshot = { tree: '', bytes: 0, files: 0, dropped: [], smudged: [] };
  const entries: Entry[] = [];
  // Files changed this close to the snapshot may change again within the same timestamp tick, and those changed since a
  // session that may write them started may be written through a mapping with no time changed: their stat is not trusted.
  const recent = BigInt(Date.now() - 2000) * 1_000_000n;
  const racyFrom = files.trustStatBefore < recent ? files.trustStatBefore : recent;
  // A file read now may keep its fresh stat in a private index (a restore's, for its read-tree), never in the cache.
  const keepFrom = files.keepReadStat ? recent : racyFrom;
  try {
    for (let i = 0; i < paths.length; i += BATCH) {
      const batch = paths.slice(i, i + BATCH);
      const split = batch.map((rel) => {
        const cut = rel.lastIndexOf('/');
        return { rel, parentRel: cut < 0 ? '' : rel.slice(0, cut), name: rel.slice(cut + 1), m: info.get(rel) };
      });
      await closeOutside(split[0]!.parentRel);
      // The batch's regular files pinned and stat'd at once (libuv's threadpool); read one after the other, in order.
      // An unchanged file (its lstat that of the cache) is not even opened.
      const pins = await Promise.all(
        split.map(async ({ rel, parentRel, name, m }) => {
          if (m?.kind !== 'file') return undefined;
          const parent = await dirOf(parentRel);
          if (parent === undefined) return undefined;
          const st = await lstat(at(parent, name), { bigint: true }).catch(() => undefined);
          const hit = st?.isFile() ? cachedEntry(rel, st, m.size, cache, racyFrom) : undefined;
          return hit ?? pinRegular(parent, name);
        }),
      );
      for (const [j, { rel, parentRel, name, m }] of split.entries()) {
        const got = pins[j];
        const pinned = got && 'handle' in got ? got : undefined;
        if (got && 'oid' in got) {
          out.bytes += Number(got.st!.size);
          out.files++;
          entries.push(got);
          continue;
        }
        let entry: Entry | undefined;
        try {
          if (m?.kind === 'file') entry = pinned && (await fileEntry(pinned, rel, m.size, cache, sink, out, { racyFrom, keepFrom }));
          else if (m?.kind === 'repo') {
            const oid = await gitlinkOid(rel, dirOf, budget);
            entry = oid && { path: rel, mode: MODE.repo, oid };
          } else if (m?.kind === 'link') {
            const parent = await dirOf(parentRel);
            entry = parent === undefined ? undefined : await linkEntry(parent, rel, name, sink);
          }
        } finally {
          await pinned?.handle.close();
        }
        if (entry) entries.push(entry);
        else out.dropped.push(rel);
      }
    }
    await sink.finish();
  } catch (err) {
    sink.kill();
    throw err;
  } finally {
    for (const h of dirs.values()) await (await h)?.close().catch(() => undefined);
  }
  // A private file until its tree is written: another checkpoint of the same workspace (a sub-agent's) may write `index` meanwhile.
  const own = `${index}.${randomBytes(6).toString('hex')}`;
  try {
    await writeFile(own, indexFile(entries), { mode: 0o600 });
    // write-tree checks every object is there: an oid the worker got wrong fails here, not in a restore.
    out.tree = (await git(['write-tree'], own)).trim();
    await rename(own, index);
  } finally {
    await rm(own, { force: true });
  }
  return out;
}

/** A symlink's entry: its text as the blob (never followed), or undefined when it is no symlink now. */
async function linkEntry(parent: number, rel: string, name: string, sink: BlobSink): Promise<Entry | undefined> {
  let st: BigIntStats;
  let text: Buffer;
  try {
    st = await lstat(at(parent, name), { bigint: true });
    if (!st.isSymbolicLink()) return undefined;
    text = await readlink(at(parent, name), { encoding: 'buffer' });
  } catch {
    return undefined;
  }
  const oid = await sendBlob(sink, [text], text.length);
  return { path: rel, mode: MODE.link, oid, st };
}

/**
 * The entry of the regular file `rel` of stat `st` from the stat cache, when its stat is the cache's (and its size at most
 * `max`) and both its times are before `racyFrom` (ns).
 */
function cachedEntry(rel: string, st: BigIntStats, max: number, cache: ReadonlyMap<string, Cached>, racyFrom: bigint): Entry | undefined {
  const hit = cache.get(rel);
  if (!hit || st.size > BigInt(max) || st.ctimeNs >= racyFrom || st.mtimeNs >= racyFrom) return undefined;
  const mode = st.mode & 0o100n ? MODE.exec : MODE.file;
  const fields = statFields(st, mode);
  return hit.mode === mode && hit.fields.every((v, i) => v === fields[i]) ? { path: rel, mode, oid: hit.oid, st } : undefined;
}

/**
 * A regular file's entry (`file` pinned by {@link pinRegular}): from the stat cache when its stat is unchanged and its
 * times are before `from.racyFrom`, else read (at most `max` bytes) and sent, its stat kept when its times are before
 * `from.keepFrom` (ns).
 */
async function fileEntry(
  file: { handle: FileHandle; st: BigIntStats },
  rel: string,
  max: number,
  cache: ReadonlyMap<string, Cached>,
  sink: BlobSink,
  out: Snapshot,
  from: { racyFrom: bigint; keepFrom: bigint },
): Promise<Entry | undefined> {
  const { st } = file;
  const mode = st.mode & 0o100n ? MODE.exec : MODE.file;
  const hit = cachedEntry(rel, st, max, cache, from.racyFrom);
  if (hit) {
    out.bytes += Number(st.size);
    out.files++;
    return hit;
  }
  // Streamed: fast-import is told the size first; a file that ends sooner (truncated while read) is padded with zeros (and not trusted below).
  const want = Math.min(Number(st.size), max);
  // The pinned inode itself, whatever the name holds now; one that cannot be opened without waiting (a lease) is left out.
  let reading: FileHandle;
  try {
    reading = await open(`/proc/self/fd/${file.handle.fd}`, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  } catch {
    return undefined;
  }
  try {
    return await readInto(reading, st, rel, mode, want, sink, out, from.keepFrom);
  } finally {
    await reading.close();
  }
}

/** Streams the first `want` bytes of `handle` (of stat `st`) to the sink: the entry, its stat kept only when the file stayed as `st` said. */
async function readInto(
  handle: FileHandle,
  st: BigIntStats,
  rel: string,
  mode: number,
  want: number,
  sink: BlobSink,
  out: Snapshot,
  racyFrom: bigint,
): Promise<Entry> {
  const hash = createHash('sha1').update(`blob ${want}\0`);
  await sink.write(`blob\ndata ${want}\n`);
  let n = 0;
  let got = 0;
  while (n < want) {
    const buf = Buffer.alloc(Math.min(CHUNK, want - n));
    const { bytesRead } = got < n ? { bytesRead: 0 } : await handle.read(buf, 0, buf.length, n);
    got += bytesRead;
    const part = bytesRead > 0 ? buf.subarray(0, bytesRead) : buf;
    hash.update(part);
    await sink.write(part);
    n += part.length;
  }
  await sink.write('\n');
  const oid = hash.digest();
  out.bytes += n;
  out.files++;
  // Not what the stat says (grown, shrunk or rewritten while read), or changed too recently to trust: no stat kept.
  const after = await handle.stat({ bigint: true });
  const same = got === Number(st.size) && after.size === st.size && after.mtimeNs === st.mtimeNs && after.ctimeNs === st.ctimeNs;
  if (!same || st.mtimeNs >= racyFrom || st.ctimeNs >= racyFrom) {
    out.smudged.push(rel);
    return { path: rel, mode, oid };
  }
  return { path: rel, mode, oid, st };
}

/** Sends one blob of `size` bytes (`chunks`) to fast-import: its oid (git's SHA-1 of `blob <size>\0` and the bytes). */
async function sendBlob(sink: BlobSink, chunks: readonly Buffer[], size: number): Promise<Buffer> {
  const hash = createHash('sha1').update(`blob ${size}\0`);
  await sink.write(`blob\ndata ${size}\n`);
  for (const c of chunks) {
    hash.update(c);
    await sink.write(c);
  }
  await sink.write('\n');
  return hash.digest();
}
