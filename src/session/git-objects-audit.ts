/**
 * The audit of a repository's object store, at the session's close (part of the git audit, git-audit.ts). The
 * `objects/` folder of the workspace's repository, and of each nested repository the git guard holds, is the session's
 * to write (a commit needs it), and git never hashes an object it reads: a loose object file renamed over by other
 * bytes (adversary round 28), a new pack whose index gives an object of HEAD other bytes (round 29: packs are looked up
 * before loose objects), a new `objects/info/alternates` naming a folder holding such a pack, a forged
 * `multi-pack-index` (it maps an id to an offset in a pack) or commit-graph (git takes a commit's tree and parents from
 * it) make the person's `git show`, `checkout` and `reset --hard` on the host give other bytes than those the
 * repository's history names, while `git status` prints nothing. So at close, with no process of the session left:
 *
 * - every loose object file whose change time is at or after the session's start (less {@link SINCE_MARGIN_MS}: a
 *   rename, a hard link, a write and a `touch` all set it, and no process can set it back) is inflated and hashed,
 *   and moved to the quarantine when its content's id is not its name; what git would read at an object's name that
 *   is no regular file (a symlink, a FIFO) is moved too;
 * - every pack whose `.idx` or `.pack` is new or changed since start (device, inode, change time) is checked by
 *   `git index-pack --verify`, which computes each object's id from the pack's bytes and compares the index it would
 *   write with the one there; one that fails goes to the quarantine (its `.pack` only when the session made it);
 * - a new or changed `objects/info/alternates` or `http-alternates` (other folders to read objects from),
 *   `multi-pack-index*`, and a pack's `.rev` or `.bitmap` (caches git trusts without checking; git works without
 *   each, more slowly) are moved; so is a symlink the session put for `objects`, `objects/pack`, `objects/info` or a
 *   loose-object folder;
 * - a new or changed commit-graph is checked by `git commit-graph verify` (the commits' trees and parents), moved
 *   when it fails (git writes one at each `git gc`).
 *
 * Bounds: the object audits of one close together take {@link OBJECTS_AUDIT_MS} (each git they run is stopped at that
 * time), so that close stays within closeSession's 30 s start-to-close (config.ts) whatever the session wrote
 * (adversary round 32: 8,000 copies of a tiny pack took 45 s to verify, a forged loose object readable all along). The
 * cheap checks go first: loose objects (half the time at most), then packs, then the commit-graph. What the time,
 * {@link MAX_HASHED_BYTES} of loose objects or {@link MAX_VERIFIED_PACK_BYTES} of packs leaves unverified is moved,
 * never left: the session made it or changed it, so it is not the person's (a new pack, a changed index, a loose file
 * written since start; `git index-pack --verify` or `git hash-object` on the moved file tells whether to put it back).
 * Only past {@link MAX_LOOSE_FILES} loose files looked at, or moves that could not be made, does a finding say what was
 * NOT checked. Attack tests: adversary-round28.test.ts, adversary-round29.test.ts, git-objects.test.ts,
 * objects-budget.test.ts.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import type { GitFinding } from './git-finding';
import { MINIMAL_ENV } from './identity';
import { tryReadRegular } from './safe-open';
import { auditGit, NO_REPO_CODE } from './worktree-git';

/** What one repository's `objects/` held at session start ({@link recordObjects}). */
export interface ObjectsBaseline {
  /** The git dir (absolute). */
  readonly gitDir: string;
  /** Nanoseconds since the epoch: a file whose change time is at or after this is taken for the session's. */
  readonly since: bigint;
  /** Identity of `objects`, and of each entry of `pack/`, `info/` and `info/commit-graphs/` (relative to `objects/`), at start ({@link keyOf}). */
  readonly keys: ReadonlyMap<string, string>;
  /** Whether the repository's ids are SHA-256 (`extensions.objectFormat`), else SHA-1. */
  readonly sha256: boolean;
}

/** How long before the session's start a change still counts as the session's, ms (the kernel's coarse clock lags). */
export const SINCE_MARGIN_MS = 2_000;

/** Loose object bytes (inflated) hashed per audit at most. */
const MAX_HASHED_BYTES = 1 << 30;

/** Pack bytes `git index-pack --verify` reads per audit at most (50 MB took 0.6 s at a load average of 4.8). */
const MAX_VERIFIED_PACK_BYTES = 4 * (1 << 30);

/** Loose object files looked at (one `lstat` each) per audit at most. */
const MAX_LOOSE_FILES = 1_000_000;

/**
 * The time the object audits of one close may take together, ms. Close's worst case: the kill grace (1 s), the git
 * walk's 15 s (git-walk.ts), these 8 s, and one git call's {@link LATE_MS} past them: 26 s of closeSession's 30 s. 1,000
 * new loose objects took 156 ms to hash at a load average of 16 on 2 cores; a tiny pack's verify about 6 ms at 5.4.
 */
export const OBJECTS_AUDIT_MS = 8_000;

/** Least time a git call of the audit is given, ms, even when the audit's time is (nearly) spent. */
const LATE_MS = 1_000;

/** Ms left before `until`, at least {@link LATE_MS}: the timeout of one git call. */
const leftMs = (until: number): number => Math.max(LATE_MS, until - Date.now());

/** The folders of `objects/` whose entries are recorded at start. */
const LISTED = ['pack', 'info', 'info/commit-graphs'] as const;

/** Files in `objects/info` git reads to find objects or commits, moved when new or changed. */
const INFO_FILES: ReadonlyMap<string, string> = new Map([
  ['alternates', 'a new or changed list of other folders git reads objects from, where any bytes can stand for an object of HEAD'],
  ['http-alternates', 'a new or changed list of other places git reads objects from over HTTP'],
]);

/** What is said of a moved commit-graph. */
const GRAPH_WHY =
  "a new or changed commit-graph that does not match the commits (git commit-graph verify failed), which git trusts without checking for a commit's tree and parents: git status and git log would report other trees than the commits hold";

/** What is said of a moved cache of packs; git works without it. */
const CACHE_WHY = 'a new or changed pack cache git trusts without checking (it maps ids to places in a pack); git works without it';

/** Identity of an entry (no symlink followed): type, device, inode, change time in ns; `none` when missing. */
function keyOf(p: string): string {
  const st = fs.lstatSync(p, { bigint: true, throwIfNoEntry: false });
  if (st === undefined) return 'none';
  const kind = st.isSymbolicLink() ? 'l' : st.isDirectory() ? 'd' : st.isFile() ? 'f' : 'o';
  return `${kind}:${st.dev}:${st.ino}:${st.ctimeNs}`;
}

/** The names in `dir` when it is a real folder (no symlink followed), none otherwise. */
function namesIn(dir: string): string[] {
  try {
    return fs.lstatSync(dir).isDirectory() ? fs.readdirSync(dir) : [];
  } catch {
    return [];
  }
}

/**
 * Records what `<gitDir>/objects` holds now (the session about to start, `startedAt` its start in ms since the epoch):
 * the identity of `objects` and of the entries of `pack/`, `info/` and `info/commit-graphs/`. Reads no loose object.
 */
export function recordObjects(gitDir: string, startedAt: number = Date.now()): ObjectsBaseline {
  const objects = path.join(gitDir, 'objects');
  const keys = new Map<string, string>([['.', keyOf(objects)]]);
  for (const sub of LISTED) {
    keys.set(sub, keyOf(path.join(objects, sub)));
    for (const name of namesIn(path.join(objects, sub))) keys.set(`${sub}/${name}`, keyOf(path.join(objects, sub, name)));
  }
  let sha256 = false;
  const config = tryReadRegular(path.join(gitDir, 'config'), 4 << 20, false);
  if (config && /objectformat\s*=\s*"?sha256/i.test(config.bytes.toString('utf8'))) sha256 = true;
  return { gitDir, since: BigInt(startedAt - SINCE_MARGIN_MS) * 1_000_000n, keys, sha256 };
}

/** Moves `abs` to the quarantine (git-audit.ts `Quarantine.move`). */
export type Mover = (abs: string, why: string) => GitFinding;

/** What one audit may still spend ({@link MAX_HASHED_BYTES}, {@link MAX_VERIFIED_PACK_BYTES}, {@link MAX_LOOSE_FILES}). */
interface Budget {
  hashed: number;
  packed: number;
  files: number;
  /** When the audit's checks stop (ms since the epoch): what is left unverified then is moved. */
  readonly until: number;
}

/**
 * Checks the object store of `b.gitDir` as the module comment says, at close (no process of the session left),
 * moving what fails, and what is not verified by `until` (ms since the epoch; default {@link OBJECTS_AUDIT_MS} from
 * now; the audits of one close share one), with `move`. Never rejects: a failure is a finding that says what was NOT checked.
 */
export async function auditObjects(b: ObjectsBaseline, move: Mover, until: number = Date.now() + OBJECTS_AUDIT_MS): Promise<GitFinding[]> {
  const objects = path.join(b.gitDir, 'objects');
  const out: GitFinding[] = [];
  try {
    const now = keyOf(objects);
    if (now === 'none') return out;
    if (!now.startsWith('d:'))
      return now === b.keys.get('.') ? out : [move(objects, 'a symlink or file in place of the objects folder, which git follows')];
    for (const sub of LISTED) {
      const k = keyOf(path.join(objects, sub));
      if (!k.startsWith('d:') && k !== 'none' && k !== b.keys.get(sub))
        out.push(move(path.join(objects, sub), `a symlink or file in place of objects/${sub}, which git follows`));
    }
    out.push(...moveInfo(b, objects, move));
    const budget: Budget = { hashed: MAX_HASHED_BYTES, packed: MAX_VERIFIED_PACK_BYTES, files: MAX_LOOSE_FILES, until };
    // Loose objects first: cheap to hash, and a forged one must not stay readable while thousands of packs are verified.
    out.push(...(await checkLoose(b, objects, move, budget)));
    out.push(...(await checkPacks(b, objects, move, budget)));
    out.push(...(await checkGraph(b, objects, move, until)));
  } catch (err) {
    out.push(notChecked(objects, `the check of the objects failed: ${(err as Error).message}`));
  }
  return out;
}

/** The finding that `what` was NOT checked (named, nothing moved). */
const notChecked = (p: string, why: string): GitFinding => ({ path: p, why, movedTo: undefined, unchecked: true });

/** Whether the entry at `rel` (relative to `objects/`) is new or changed since start. */
const changed = (b: ObjectsBaseline, objects: string, rel: string): boolean => {
  const k = keyOf(path.join(objects, rel));
  return k !== 'none' && k !== b.keys.get(rel);
};

/** Moves the new or changed files of `objects/info` that list other folders to read objects from ({@link INFO_FILES}). */
function moveInfo(b: ObjectsBaseline, objects: string, move: Mover): GitFinding[] {
  const out: GitFinding[] = [];
  for (const [name, why] of INFO_FILES) if (changed(b, objects, `info/${name}`)) out.push(move(path.join(objects, 'info', name), why));
  return out;
}

/**
 * Runs `git commit-graph verify` when `objects/info/commit-graph` or an entry of `info/commit-graphs/` is new or
 * changed (after the packs and loose objects were checked: it compares each commit's tree and parents in the graph
 * with the commit objects), and moves the new or changed ones when it fails. git writes one at each `git gc`.
 */
async function checkGraph(b: ObjectsBaseline, objects: string, move: Mover, until: number): Promise<GitFinding[]> {
  const rels = ['info/commit-graph', ...namesIn(path.join(objects, 'info', 'commit-graphs')).map((n) => `info/commit-graphs/${n}`)];
  const fresh = rels.filter((rel) => changed(b, objects, rel));
  if (fresh.length === 0) return [];
  if (Date.now() >= until) return fresh.map((rel) => move(path.join(objects, rel), `${UNVERIFIED}; ${CACHE_WHY}`));
  const { failed } = await git(b, ['commit-graph', 'verify', '--no-progress'], leftMs(until), 1 << 20);
  if (failed === undefined) return [];
  return fresh.map((rel) => move(path.join(objects, rel), `${GRAPH_WHY}: ${failed}`));
}

/** What is said of a pack, index or loose object left unverified by the audit's time or byte bound, and moved. */
const UNVERIFIED = `NOT verified within the object audit's bounds (${OBJECTS_AUDIT_MS / 1000} s per close, ${MAX_VERIFIED_PACK_BYTES} pack bytes, ${MAX_HASHED_BYTES} loose bytes), so moved: the session made or changed it since start`;

/** Said of a moved index whose `.pack` the person had at start. */
const KEPT = '; its .pack was there at start: `git index-pack` on it gives it its index again';

/**
 * Verifies each pack of `objects/pack` whose `.idx` or `.pack` is new or changed ({@link verifyPack}) and moves one that
 * fails, or that the budget's time or bytes leave unverified, and moves the new or changed caches there (`.rev`,
 * `.bitmap`, `multi-pack-index*`).
 */
async function checkPacks(b: ObjectsBaseline, objects: string, move: Mover, budget: Budget): Promise<GitFinding[]> {
  const dir = path.join(objects, 'pack');
  const out: GitFinding[] = [];
  const names = namesIn(dir);
  // Each name under every stem it has before a dot (`pack-a.b.idx` under `pack-a` and `pack-a.b`): git takes the stem of an index as all before `.idx`.
  const byBase = new Map<string, string[]>();
  const verified: string[] = [];
  let forged = 0;
  const unverified: [string[], (why: string) => GitFinding[]][] = [];
  for (const n of names)
    for (let i = n.indexOf('.'); i > 0; i = n.indexOf('.', i + 1)) {
      const list = byBase.get(n.slice(0, i));
      if (list) list.push(n);
      else byBase.set(n.slice(0, i), [n]);
    }
  for (const name of names) {
    const rel = `pack/${name}`;
    if (/\.(rev|bitmap)$|^multi-pack-index/.test(name) && changed(b, objects, rel)) out.push(move(path.join(dir, name), CACHE_WHY));
    if (!name.endsWith('.idx')) continue;
    const base = name.slice(0, -4);
    const pack = `pack/${base}.pack`;
    if (keyOf(path.join(objects, pack)) === 'none' || !(changed(b, objects, rel) || changed(b, objects, pack))) continue;
    const size = fs.lstatSync(path.join(objects, pack)).size;
    const kept = changed(b, objects, pack) ? '' : KEPT;
    // The index and what the session made or changed beside it (its .pack when new, a .keep), not the caches moved above.
    const mates = (byBase.get(base) ?? []).filter((n) => (n === name || changed(b, objects, `pack/${n}`)) && !/\.(rev|bitmap)$/.test(n));
    const moveAll = (why: string): GitFinding[] =>
      mates.map((n) => move(path.join(dir, n), n.endsWith('.pack') ? `the pack of ${name}, named with it` : `${why}${kept}`));
    let failed: string | undefined;
    if (size <= budget.packed && Date.now() < budget.until) {
      budget.packed -= size;
      failed = await verifyPack(path.join(objects, pack), b.sha256, size, budget.until);
      if (failed === undefined) {
        verified.push(...mates);
        continue;
      }
    }
    // Not verified (past the bytes or the time, or the verify stopped at the audit's time) or failed: not left.
    if (failed === undefined || Date.now() >= budget.until || ++forged > MAX_MOVED_ONE_BY_ONE) unverified.push([mates, moveAll]);
    else out.push(...(await forgedPack(b, { dir, name, pack: path.join(objects, pack), size, failed, until: budget.until }, moveAll)));
  }
  if (unverified.length <= MAX_MOVED_ONE_BY_ONE)
    return [...out, ...unverified.flatMap(([, moveAll]) => moveAll(`a pack index ${UNVERIFIED}`))];
  // Thousands of packs: one move of the folder, the person's packs of start and those verified put back in a new one.
  const keep = [...new Set([...namesIn(dir).filter((n) => !changed(b, objects, `pack/${n}`)), ...verified])];
  const why = `objects/pack, with ${unverified.length} pack indexes ${UNVERIFIED}; what it held at start and the packs verified are in a new objects/pack`;
  const whole = swapFolder(dir, keep, why, move);
  return [...out, ...(whole ? [whole] : unverified.flatMap(([, moveAll]) => moveAll(`a pack index ${UNVERIFIED}`)))];
}

/** Unverified packs or loose files moved one by one at most, in one folder; past it, the folder is moved whole ({@link swapFolder}). */
const MAX_MOVED_ONE_BY_ONE = 8;

/**
 * Moves the folder `dir` whole with `move` (to the quarantine) once its entries named in `keep` are in a new folder of
 * the same mode and owner, which then takes its name: one move however many entries the session made there. At
 * close only (no process of the session is left to race the renames).
 * @returns the finding of the move, or undefined when none was made (the kept entries are back in `dir` then)
 */
function swapFolder(dir: string, keep: readonly string[], why: string, move: Mover): GitFinding | undefined {
  const st = fs.lstatSync(dir);
  const fresh = `${dir}.agent-jobs-new-${randomBytes(6).toString('hex')}`;
  const done: string[] = [];
  try {
    fs.mkdirSync(fresh, { mode: 0o700 });
    fs.lchownSync(fresh, st.uid, st.gid);
    fs.chmodSync(fresh, st.mode & 0o7777);
    for (const n of keep) {
      fs.renameSync(path.join(dir, n), path.join(fresh, n));
      done.push(n);
    }
  } catch {
    return putBack(dir, fresh, done);
  }
  const f = move(dir, why);
  if (f.movedTo === undefined) return putBack(dir, fresh, done);
  try {
    fs.renameSync(fresh, dir);
    return f;
  } catch (err) {
    return { ...f, why: `${f.why}; the new folder could NOT take its name (${(err as Error).message}): it is ${fresh}` };
  }
}

/** Puts the entries `done` of `fresh` back in `dir` and removes `fresh` (what {@link swapFolder} does when it cannot move `dir`); undefined. */
function putBack(dir: string, fresh: string, done: readonly string[]): undefined {
  for (const n of done)
    try {
      fs.renameSync(path.join(fresh, n), path.join(dir, n));
    } catch {
      /* left in fresh, which then stays */
    }
  try {
    fs.rmdirSync(fresh);
  } catch {
    /* not empty: what could not go back stays there */
  }
  return undefined;
}

/** A pack of `dir` that `git index-pack --verify` failed on (`failed`, git's complaint), and when the audit stops. */
interface FailedPack {
  readonly dir: string;
  /** Its `.idx`'s name. */
  readonly name: string;
  /** Its `.pack` (absolute). */
  readonly pack: string;
  readonly size: number;
  readonly failed: string;
  readonly until: number;
}

/**
 * Moves a pack that failed its verify (with `moveAll`, which moves it and its mates with a why), naming what git would
 * show other bytes for, and writes again each forged object of HEAD it can from the working tree ({@link restoreLoose}).
 */
async function forgedPack(b: ObjectsBaseline, p: FailedPack, moveAll: (why: string) => GitFinding[]): Promise<GitFinding[]> {
  const ids = await forgedIds(p.pack, path.join(p.dir, p.name), b.sha256, p.size, p.until);
  const named = await namedIds(b, ids, p.until);
  const why = `${shownOther(ids, named)}: a pack whose index does not match its bytes (git index-pack --verify: ${p.failed.split(p.dir).join('…')}); git reads packs before loose objects and never hashes what it reads`;
  const moved = moveAll(why);
  const back = ids.flatMap((id) => {
    const from = restoreLoose(b, id, named.get(id) ?? []);
    return from === undefined ? [] : [`${(named.get(id) ?? [id])[0]} ${restored(from)}`];
  });
  return moved.map((f, i) => (i === 0 && back.length > 0 ? { ...f, why: `${f.why}; ${back.join('; ')}` } : f));
}

/**
 * `git index-pack --verify` on `pack` (its `.idx` beside it), run from `/` with no repository, hooks or config of the
 * workspace's; a deadline of 20 s and 100 ms a megabyte, and at most until `until` (ms since the epoch; {@link leftMs}).
 * @returns undefined when the pack and its index agree, else git's first line of complaint
 */
function verifyPack(pack: string, sha256: boolean, size: number, until: number): Promise<string | undefined> {
  return indexPack(['--verify', pack], sha256, size, until);
}

/** `git index-pack <args>` as {@link verifyPack} runs it: undefined when it succeeds, else git's first line of complaint. */
function indexPack(rest: string[], sha256: boolean, size: number, until: number): Promise<string | undefined> {
  const args = [
    ...NO_REPO_CODE,
    '-c',
    'pack.writeReverseIndex=false',
    'index-pack',
    ...(sha256 ? ['--object-format=sha256'] : []),
    ...rest,
  ];
  return new Promise((resolve) => {
    execFile(
      'git',
      args,
      {
        cwd: '/',
        env: { ...MINIMAL_ENV, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CEILING_DIRECTORIES: '/' },
        timeout: Math.min(20_000 + Math.ceil(size / 10_000), leftMs(until)),
        encoding: 'utf8',
        maxBuffer: 1 << 20,
      },
      (err, _stdout, stderr) => {
        if (!err) return resolve(undefined);
        const line = stderr.split('\n').find((l) => l.trim() !== '') ?? err.message;
        resolve(line.trim().slice(0, 200));
      },
    );
  });
}

/** The object ids a pack index (version 2, or version 1) lists, at most 1,000,000; none when it cannot be read. */
function idsOfIdx(idx: string, sha256: boolean): string[] {
  const read = tryReadRegular(idx, 1 << 30, false);
  if (!read || read.truncated) return [];
  const buf = read.bytes;
  const hashLen = sha256 ? 32 : 20;
  const v2 = buf.length >= 8 && buf.readUInt32BE(0) === 0xff744f63;
  const fan = v2 ? 8 : 0;
  if (buf.length < fan + 1024) return [];
  const n = Math.min(buf.readUInt32BE(fan + 1020), 1_000_000);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const at = v2 ? fan + 1024 + i * hashLen : 1024 + i * (hashLen + 4) + 4;
    if (at + hashLen > buf.length) break;
    ids.push(buf.subarray(at, at + hashLen).toString('hex'));
  }
  return ids;
}

/**
 * The ids the index `idx` gives `pack` that the pack's bytes do not hold (the index git would write for the pack,
 * `git index-pack -o` into a folder of the worker's, compared), or all the ids of `idx` when the pack cannot be indexed.
 */
async function forgedIds(pack: string, idx: string, sha256: boolean, size: number, until: number): Promise<string[]> {
  const claimed = idsOfIdx(idx, sha256);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-jobs-idx-'));
  try {
    const truth = path.join(tmp, 'true.idx');
    if ((await indexPack(['-o', truth, pack], sha256, size, until)) !== undefined) return claimed;
    const real = new Set(idsOfIdx(truth, sha256));
    return claimed.filter((id) => !real.has(id));
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** What one run of git said: its stdout ('' when it failed) and, when it failed, its first line of complaint. */
interface GitSaid {
  stdout: string;
  /** stderr's first non-blank line, else the error's message, at most 200 characters; undefined when git succeeded. */
  failed?: string;
}

/**
 * Runs git on `b.gitDir` (worktree-git.ts {@link auditGit}: no hooks, config of the person's or workspace code) from
 * `/`, within `timeoutMs` (default 10 s) and `maxBuffer` bytes of stdout or stderr (default 256 MiB; more is a
 * failure); never rejects.
 */
function git(b: ObjectsBaseline, args: string[], timeoutMs = 10_000, maxBuffer = 256 << 20): Promise<GitSaid> {
  return auditGit(b.gitDir, args, { cwd: '/', timeoutMs, maxBuffer }).then(
    (stdout) => ({ stdout }),
    (err: Error) => ({ stdout: '', failed: err.message.slice(0, 200) }),
  );
}

/**
 * How the person knows each of `ids`: `HEAD:<path>` for each path HEAD's tree names it at (`the tree of HEAD`), read
 * before the forged files are moved (best effort: a forged tree hides the paths below it; the id is said then), git
 * stopped at `until` ({@link leftMs}).
 */
async function namedIds(b: ObjectsBaseline, ids: readonly string[], until: number): Promise<Map<string, string[]>> {
  const named = new Map<string, string[]>(ids.map((id) => [id, []]));
  if (ids.length === 0) return named;
  const head = (await git(b, ['rev-parse', '--verify', '-q', 'HEAD^{tree}'], Math.min(10_000, leftMs(until)))).stdout.trim();
  named.get(head)?.push('the tree of HEAD');
  for (const line of (await git(b, ['ls-tree', '-r', '-t', '-z', '--full-tree', 'HEAD'], Math.min(10_000, leftMs(until)))).stdout.split(
    '\0',
  )) {
    const m = /^\d+ \w+ ([0-9a-f]+)\t([^]*)$/.exec(line);
    if (m) named.get(m[1]!)?.push(`HEAD:${m[2]!}`);
  }
  return named;
}

/** Words for what `ids` are to the person ({@link namedIds}): HEAD's paths first, at most 5 named. */
function shownOther(ids: readonly string[], named: ReadonlyMap<string, string[]>): string {
  const words = [
    ...ids.flatMap((id) => named.get(id) ?? []),
    ...ids.filter((id) => (named.get(id) ?? []).length === 0).map((id) => `object ${id}`),
  ];
  if (words.length === 0) return 'git would show other bytes for the objects it names';
  return `git would show other bytes for ${words.slice(0, 5).join(', ')}${words.length > 5 ? ` and ${words.length - 5} more` : ''}`;
}

/** Loose object names under one folder: 38 hex digits (SHA-1) or 62 (SHA-256). */
const LOOSE_NAME = /^[0-9a-f]{38}$|^[0-9a-f]{62}$/;

/**
 * Hashes each loose object file the session wrote or put in place since start ({@link ObjectsBaseline.since}) and
 * moves one whose content's id is not its name, and what stands at an object's name that is no regular file. Hashes
 * for half the audit's time left at most (the packs have the rest); a file the time or {@link MAX_HASHED_BYTES} leave
 * unhashed is moved ({@link UNVERIFIED}); past {@link MAX_LOOSE_FILES} files or the audit's time, the rest is named NOT checked.
 */
async function checkLoose(b: ObjectsBaseline, objects: string, move: Mover, budget: Budget): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  const bad: [string, string][] = [];
  // Per loose-object folder: the files left unhashed, and those that are the person's (older than start) or hashed right.
  const unverified = new Map<string, string[]>();
  const good = new Map<string, string[]>();
  const hashUntil = Date.now() + (budget.until - Date.now()) / 2;
  let stopped: string | undefined;
  fans: for (const fan of namesIn(objects).filter((n) => /^[0-9a-f]{2}$/.test(n))) {
    const dir = path.join(objects, fan);
    const st = fs.lstatSync(dir, { bigint: true, throwIfNoEntry: false });
    if (st === undefined) continue;
    if (!st.isDirectory()) {
      if (st.ctimeNs >= b.since) out.push(move(dir, 'a symlink or file in place of a loose-object folder, which git follows'));
      continue;
    }
    for (const name of namesIn(dir)) {
      if (!LOOSE_NAME.test(name)) continue;
      stopped =
        --budget.files < 0 ? `past ${MAX_LOOSE_FILES} files` : Date.now() > budget.until ? `past ${OBJECTS_AUDIT_MS / 1000} s` : undefined;
      if (stopped !== undefined) break fans;
      if (budget.files % 256 === 0) await new Promise((r) => setImmediate(r));
      const file = path.join(dir, name);
      const fst = fs.lstatSync(file, { bigint: true, throwIfNoEntry: false });
      if (fst === undefined) continue;
      if (fst.isFile() && fst.ctimeNs < b.since) {
        push(good, dir, name);
        continue;
      }
      // Past half the time, or past the moves one by one a folder may have: left unhashed, moved with the folder.
      const late =
        Date.now() > hashUntil || (bad.length > MAX_MOVED_ONE_BY_ONE && bad.at(-MAX_MOVED_ONE_BY_ONE - 1)![0].startsWith(`${dir}/`));
      const why = late
        ? 'NOT'
        : fst.isFile()
          ? looseMismatch(file, `${fan}${name}`, b.sha256, budget)
          : 'no regular file where git reads a loose object';
      if (why?.startsWith('NOT')) push(unverified, dir, name);
      else if (why !== undefined) bad.push([file, why]);
      else push(good, dir, name);
    }
  }
  out.push(...(await moveBadLoose(b, bad, move, budget.until)));
  for (const [dir, names] of unverified) {
    const why = `${path.basename(dir)}/, with ${names.length} loose objects ${UNVERIFIED}; what was there at start and the objects hashed are in a new ${path.basename(dir)}/`;
    const whole = names.length > MAX_MOVED_ONE_BY_ONE ? swapFolder(dir, good.get(dir) ?? [], why, move) : undefined;
    if (!whole) out.push(...names.map((n) => move(path.join(dir, n), `a loose object ${UNVERIFIED}`)));
    else
      out.push({
        ...whole,
        why: `${whole.why}${await restoreMoved(
          b,
          names.map((n) => path.basename(dir) + n),
          budget.until,
        )}`,
      });
  }
  if (stopped !== undefined)
    out.push(notChecked(objects, `loose objects the session wrote were NOT all checked (${stopped}): run git fsck`));
  return out;
}

/** Writes again from the working tree each of `ids` (moved away) that HEAD names ({@link restoreLoose}); what was written, as words to append. */
async function restoreMoved(b: ObjectsBaseline, ids: readonly string[], until: number): Promise<string> {
  const named = await namedIds(b, ids, until);
  const back = ids.flatMap((id) => {
    const from = (named.get(id) ?? []).length > 0 ? restoreLoose(b, id, named.get(id)!) : undefined;
    return from === undefined ? [] : [`${named.get(id)![0]} ${restored(from)}`];
  });
  return back.length > 0 ? `; ${back.join('; ')}` : '';
}

/** Adds `name` to the list of `dir` in `m`. */
function push(m: Map<string, string[]>, dir: string, name: string): void {
  const list = m.get(dir);
  if (list) list.push(name);
  else m.set(dir, [name]);
}

/** Moves the loose files of `bad` (`[file, why]`), naming for a forged one what git would show other bytes for, and writing it again when it can ({@link restoreLoose}). */
async function moveBadLoose(b: ObjectsBaseline, bad: readonly [string, string][], move: Mover, until: number): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  const ids = bad.filter(([, why]) => why.startsWith('git would')).map(([file]) => path.basename(path.dirname(file)) + path.basename(file));
  const named = await namedIds(b, ids, until);
  for (const [file, why] of bad) {
    const id = path.basename(path.dirname(file)) + path.basename(file);
    if (!why.startsWith('git would')) out.push(move(file, why));
    else {
      const moved = move(file, `${shownOther([id], named)}${why.slice('git would show other bytes'.length)}`);
      const from = moved.movedTo === undefined ? undefined : restoreLoose(b, id, named.get(id) ?? []);
      out.push({ ...moved, why: `${moved.why}; ${restored(from)}` });
    }
  }
  return out;
}

/** What became of a forged object moved away: written again from `from`, or missing. */
const restored = (from: string | undefined): string =>
  from === undefined
    ? "git now finds that object missing: take it from a clone or the run's checkpoint"
    : `written again from ${from}, whose bytes are that object`;

/**
 * Writes the loose object `id` again (its name, the forged file moved away) from the working tree's file at
 * one of HEAD's `paths` for it (`HEAD:run.sh` is `<work tree>/run.sh`, the work tree the folder holding a `.git` git
 * dir), when that file's bytes, hashed as a blob, are `id`: bytes whose hash is the id are that object, whoever wrote
 * them. Created `O_EXCL|O_NOFOLLOW`, read-only, the worker's; none written where a loose file of that name is.
 * @returns the path it was written from, or undefined when none was written
 */
function restoreLoose(b: ObjectsBaseline, id: string, paths: readonly string[]): string | undefined {
  if (path.basename(b.gitDir) !== '.git') return undefined;
  const top = path.dirname(b.gitDir);
  const file = path.join(b.gitDir, 'objects', id.slice(0, 2), id.slice(2));
  for (const p of paths.filter((w) => w.startsWith('HEAD:')).map((w) => w.slice(5))) {
    const read = tryReadRegular(path.join(top, p), MAX_HASHED_BYTES, false);
    if (!read || read.truncated) continue;
    const object = Buffer.concat([Buffer.from(`blob ${read.bytes.length}\0`), read.bytes]);
    if (
      createHash(b.sha256 ? 'sha256' : 'sha1')
        .update(object)
        .digest('hex') !== id
    )
      continue;
    try {
      if (keyOf(path.dirname(file)) === 'none') fs.mkdirSync(path.dirname(file));
      const fd = fs.openSync(file, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o444);
      try {
        fs.writeSync(fd, zlib.deflateSync(object));
      } finally {
        fs.closeSync(fd);
      }
      return path.join(top, p);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Why the loose object `file` is not the object `id` (its inflated content hashes to another id, or it does not
 * inflate), undefined when it is; a why beginning `NOT` when it was not checked (past the budget).
 */
function looseMismatch(file: string, id: string, sha256: boolean, budget: Budget): string | undefined {
  const read = tryReadRegular(file, Math.max(0, budget.hashed), false);
  if (!read) return 'a loose object the audit could not read';
  if (read.truncated) return `NOT checked: a loose object past the audit's ${MAX_HASHED_BYTES} bytes: run git fsck`;
  let content: Buffer;
  try {
    content = zlib.inflateSync(read.bytes, { maxOutputLength: Math.max(1, budget.hashed) });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ERR_BUFFER_TOO_LARGE')
      return `NOT checked: a loose object past the audit's ${MAX_HASHED_BYTES} bytes: run git fsck`;
    return `a loose object that does not inflate, at the name of object ${id}`;
  }
  budget.hashed -= content.length;
  const got = createHash(sha256 ? 'sha256' : 'sha1')
    .update(content)
    .digest('hex');
  return got === id
    ? undefined
    : `git would show other bytes: the loose file of ${id} holds object ${got} (git never hashes a loose object it reads)`;
}
