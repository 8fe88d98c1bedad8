/**
 * The git guard of a session without the sandbox (`AGENT_JOBS_SANDBOX=none`) whose user writes the workspace by ACL
 * entries (workspace.ts `grantWorkspace`): no bind can make the repository's `config`, `hooks/`, `info/`,
 * `config.worktree` or what the config names read-only there, and the person's git on the host (often root) runs what
 * they hold (adversary round 30, F4: a session's `.git/hooks/pre-commit` ran at the person's `git commit`). So:
 *
 * - {@link revokeGitWrite}: the session user's ACL entries are taken off every path git-guard.ts would bind read-only
 *   in the workspace (trees whole, their default entries too, so nothing made in `hooks/` later inherits write), and
 *   the default entry off each git dir itself (`.git` stays writable: git in the session makes `index.lock`, refs and
 *   objects there; what the person's git makes in it later is not the session's to write);
 * - {@link holdGitEntries}/{@link checkHeldGit}: since `.git` (and the workspace's top) stay writable, the session can
 *   still rename any of those away and put its own in their place (`mv .git/hooks h && mkdir .git/hooks`, `mv .git g
 *   && mkdir .git`), which a mount point forbids in the sandbox. Each is held by a descriptor from start; an entry of
 *   the session's at such a path (its user's, a hard link, or one it may write by an ACL entry: a file of the person's
 *   it edited and renamed there) is renamed in its folder to `.agent-jobs-quarantined-<tag>-<seq>` (a name git never
 *   reads) and the original put back: renamed back from wherever it was moved (its descriptor names it), or, deleted
 *   (git's lock-and-rename of `config` in the session deletes it), a file's bytes written back from that descriptor.
 *   A change of the person's (their `git config` renames a new root-owned `config` in) is taken as the new original.
 *
 * Not had without namespaces: the window from such a rename to the check (each command's end, each edit, close, and a
 * sweep every {@link HELD_SWEEP_MS}); the person's git that runs in it runs the session's file. docs/security.md.
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { noteJoin, notedList, notedMost, type GitFinding, type NoteLayout } from './git-finding';
import type { GuardedGit } from './git-guard';
import { MINIMAL_ENV } from './identity';
import { DIR_FLAGS, O_PATH, openDirAt, openEntryAt, readRegular } from './safe-open';

/** The findings {@link checkHeldGit} made, told apart from the git audit's by {@link isHeldFinding}. */
const HELD_FINDINGS = new WeakSet<GitFinding>();

/** Of {@link HELD_FINDINGS}, those of an entry another user replaced, kept as theirs. */
const KEPT = new WeakSet<GitFinding>();

/** Whether `f` is one of {@link checkHeldGit}'s (its note is {@link heldGitNote}'s, not git-audit.ts `gitAuditNote`'s). */
export function isHeldFinding(f: GitFinding): boolean {
  return HELD_FINDINGS.has(f);
}

/**
 * The note of {@link checkHeldGit}'s findings (paths relative to `workspace`), or undefined when there are none: what
 * the session put in place of what the person's git runs, where it went, and what was put back; `layout` as
 * git-finding.ts {@link NoteLayout} (at most 10 paths a kind named on one line, 20 on lines).
 */
export function heldGitNote(findings: readonly GitFinding[], workspace: string, layout: NoteLayout = 'line'): string | undefined {
  const rel = (p: string): string => path.relative(workspace, p) || '.';
  const most = layout === 'line' ? 10 : notedMost(layout);
  // One item per path (the sweep and each command's check can each take the same path back): its first finding's
  // text, and every quarantined name.
  const list = (fs: readonly GitFinding[]): string => {
    const byPath = new Map<string, GitFinding[]>();
    for (const f of fs) byPath.set(f.path, [...(byPath.get(f.path) ?? []), f]);
    const items = [...byPath.values()].map((same) => {
      const moved = same.flatMap((f) => (f.movedTo ? [rel(f.movedTo)] : []));
      const times = same.length > 1 ? `; ${same.length} times` : '';
      return `${rel(same[0]!.path)} (${same[0]!.why}${times}${moved.length > 0 ? `; what stood there renamed to ${moved.join(', ')}` : ''})`;
    });
    return notedList(items.slice(0, most), items.length - most, layout);
  };
  const taken = findings.filter((f) => !KEPT.has(f));
  const kept = findings.filter((f) => KEPT.has(f));
  const parts = [
    taken.length > 0
      ? `without the sandbox the session renamed away what the person's git runs (the repository's config, hooks, info, what the config names) and the worker took it back:${list(taken)}`
      : '',
    kept.length > 0
      ? layout === 'line'
        ? `what the person's git runs was replaced on the host (the person's own git?) and kept:${list(kept)}; ${CHECK_KEPT}`
        : `what the person's git runs was replaced on the host (the person's own git?) and kept (${CHECK_KEPT}):${list(kept)}`
      : '',
  ].filter((p) => p !== '');
  return parts.length > 0 ? parts.join(noteJoin(layout)) : undefined;
}

/** What the person does about an entry kept ({@link heldGitNote}). */
const CHECK_KEPT = 'if nobody changed it there, check it before running git in the workspace';

/** A directory reopened through its descriptor's magic link (`/proc/self/fd/<n>`), which names the inode held: followed, never a path. */
const MAGIC_DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY;

/** How often {@link watchHeldGit} checks the held entries between commands, ms. */
export const HELD_SWEEP_MS = 250;

/** One path held since start: where (relative to the workspace), and the descriptor and inode of what was there. */
interface HeldEntry {
  readonly rel: string;
  fd: number;
  dev: number;
  ino: number;
  readonly dir: boolean;
  readonly uid: number;
  readonly gid: number;
  /** Set when nothing stood at the path and the original could not be put back: said once, not at every sweep. */
  lost?: boolean;
}

/** What {@link holdGitEntries} holds for one session. */
export interface HeldGit {
  readonly workspace: string;
  /** The session user's uid. */
  readonly uid: number;
  /** Parents before what is in them. */
  readonly entries: HeldEntry[];
  readonly tag: string;
  seq: number;
}

/** The paths of `guard` in `workspace` (absolute, resolved) that the sandbox would bind: read-only ones, and mount points. */
function guardedPaths(workspace: string, guard: GuardedGit): string[] {
  const inside = (p: string): boolean => p.startsWith(`${workspace}/`);
  return [...new Set([...guard.writable, ...guard.readonly].filter(inside))].sort((a, b) => depth(a) - depth(b) || a.localeCompare(b));
}

const depth = (p: string): number => p.split('/').length;

/** Runs setfacl `-x spec` on the inode `fd` holds (no symlink followed); ignores entries setfacl cannot change. */
function removeEntries(fd: number, spec: string): void {
  try {
    execFileSync('setfacl', ['-x', spec, '--', `/proc/${process.pid}/fd/${fd}`], { env: MINIMAL_ENV, stdio: 'ignore', timeout: 60_000 });
  } catch {
    /* no ACL there, or a filesystem without them: nothing was granted */
  }
}

/** Takes `u:<uid>` (and `d:u:<uid>` on folders) off `fd`'s inode and everything under it, never through a symlink. */
function revokeTree(fd: number, uid: number): void {
  const st = fs.fstatSync(fd);
  if (st.isSymbolicLink()) return;
  if (!st.isDirectory()) {
    if (st.nlink === 1) removeEntries(fd, `u:${uid}`);
    return;
  }
  removeEntries(fd, `u:${uid},d:u:${uid}`);
  const dir = fs.openSync(`/proc/self/fd/${fd}`, MAGIC_DIR_FLAGS);
  try {
    for (const name of fs.readdirSync(`/proc/self/fd/${dir}`)) {
      let sub: number;
      try {
        sub = openEntryAt(dir, name);
      } catch {
        continue;
      }
      try {
        revokeTree(sub, uid);
      } finally {
        fs.closeSync(sub);
      }
    }
  } finally {
    fs.closeSync(dir);
  }
}

/** Opens `rel` in `workspace` one component at a time, no symlink followed (`O_PATH`); undefined when it cannot. */
function openRel(workspace: string, rel: string): number | undefined {
  let dir: number;
  try {
    dir = fs.openSync(workspace, DIR_FLAGS);
  } catch {
    return undefined;
  }
  const parts = rel.split('/');
  try {
    for (const part of parts.slice(0, -1)) {
      const next = openDirAt(dir, part);
      fs.closeSync(dir);
      dir = next;
    }
    return openEntryAt(dir, parts[parts.length - 1]!);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(dir);
  }
}

/**
 * Takes the session user's write off what the person's git runs (see the module comment): the guarded paths in
 * `workspace` (trees whole) and `quarantine`, and the default entry of the git dirs `gitDirs`. Run by the worker
 * after the ACL grant and before any process of the session starts.
 * @param uid the session user's uid
 */
export function revokeGitWrite(workspace: string, uid: number, guard: GuardedGit, gitDirs: readonly string[]): void {
  const readonly = new Set(guard.readonly);
  for (const abs of guardedPaths(workspace, guard)) {
    const fd = openRel(workspace, path.relative(workspace, abs));
    if (fd === undefined) continue;
    try {
      if (readonly.has(abs)) revokeTree(fd, uid);
    } finally {
      fs.closeSync(fd);
    }
  }
  for (const abs of gitDirs) {
    if (!abs.startsWith(`${workspace}/`)) continue;
    const fd = openRel(workspace, path.relative(workspace, abs));
    if (fd === undefined) continue;
    try {
      if (fs.fstatSync(fd).isDirectory()) removeEntries(fd, `d:u:${uid}`);
    } finally {
      fs.closeSync(fd);
    }
  }
}

/** Holds each guarded path of `guard` in `workspace` by a descriptor ({@link checkHeldGit}); release with {@link releaseHeldGit}. */
export function holdGitEntries(workspace: string, uid: number, guard: GuardedGit, tag: string): HeldGit {
  const entries: HeldEntry[] = [];
  for (const abs of guardedPaths(workspace, guard)) {
    const rel = path.relative(workspace, abs);
    const fd = openRel(workspace, rel);
    if (fd === undefined) continue;
    const st = fs.fstatSync(fd);
    entries.push({ rel, fd, dev: st.dev, ino: st.ino, dir: st.isDirectory(), uid: st.uid, gid: st.gid });
  }
  return { workspace, uid, entries, tag, seq: 0 };
}

/** Closes the descriptors {@link holdGitEntries} opened. */
export function releaseHeldGit(h: HeldGit): void {
  for (const e of h.entries.splice(0)) fs.closeSync(e.fd);
}

/**
 * Whether the entry `fd` holds is the session's to have made or written: its user's, a hard link, a symlink, or one
 * with an ACL entry for it (a file of the person's that the grant let it write, renamed into place).
 */
function sessions(fd: number, uid: number): boolean {
  const st = fs.fstatSync(fd);
  if (st.uid === uid || st.isSymbolicLink() || (!st.isDirectory() && st.nlink > 1)) return true;
  try {
    const acl = execFileSync('getfacl', ['-n', '-p', '--omit-header', '--', `/proc/${process.pid}/fd/${fd}`], {
      env: MINIMAL_ENV,
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 60_000,
    }).toString();
    return new RegExp(`^user:${uid}:`, 'm').test(acl);
  } catch {
    return true;
  }
}

/**
 * Checks each held path (parents first): when something else stands there and it is the session's ({@link sessions}),
 * it is renamed in its folder to `.agent-jobs-quarantined-<tag>-<seq>` and the original put back when it is still in
 * the workspace; a change of the person's becomes the held original. Never throws.
 * @returns one finding per path taken back (git-audit.ts `GitFinding`, `inPlace`)
 */
export function checkHeldGit(h: HeldGit): GitFinding[] {
  const out: GitFinding[] = [];
  for (const e of h.entries) {
    try {
      const found = checkEntry(h, e);
      if (found) out.push(found);
    } catch (err) {
      const finding: GitFinding = {
        path: path.join(h.workspace, e.rel),
        why: `its check failed: ${(err as Error).message}`,
        movedTo: undefined,
      };
      HELD_FINDINGS.add(finding);
      out.push(finding);
    }
  }
  return out;
}

/** {@link checkHeldGit} for one entry. */
function checkEntry(h: HeldGit, e: HeldEntry): GitFinding | undefined {
  const abs = path.join(h.workspace, e.rel);
  const now = fs.lstatSync(abs, { throwIfNoEntry: false });
  if (now && now.dev === e.dev && now.ino === e.ino) return undefined;
  if (!now && e.lost) return undefined;
  e.lost = undefined;
  const fd = now ? openRel(h.workspace, e.rel) : undefined;
  // Another held original there is the session's doing (two of the person's entries exchanged in one rename), never a
  // change of the person's: moved aside, and put back at its own path by its own check.
  const swapped = now !== undefined && h.entries.some((o) => o !== e && o.dev === now.dev && o.ino === now.ino);
  if (fd !== undefined && !swapped && !sessions(fd, h.uid)) {
    // Another user's (the person's git renamed a new config in): held from now on, and named, since a file of theirs
    // whose text the session chose (a `SQUASH_MSG` of its commit messages) could be renamed there too.
    const st = fs.fstatSync(fd);
    fs.closeSync(e.fd);
    Object.assign(e, { fd, dev: st.dev, ino: st.ino });
    const kept: GitFinding = {
      path: abs,
      why: `replaced by uid ${st.uid}, not the session's user: kept`,
      movedTo: undefined,
      inPlace: true,
    };
    HELD_FINDINGS.add(kept);
    KEPT.add(kept);
    return kept;
  }
  let movedTo: string | undefined;
  let aside = 'nothing stood there';
  if (fd !== undefined) {
    fs.closeSync(fd);
    movedTo = moveAside(h, e.rel);
    const what = swapped ? "another of the person's held entries, moved there by the session" : "the session's";
    if (movedTo) aside = `the entry there was ${what}`;
    else
      aside = swapped
        ? `the entry there (${what}) could NOT be renamed: check by hand`
        : "the session's entry there could NOT be renamed: check by hand";
  }
  const back = putBack(h, e);
  if (fd === undefined && back.includes('could NOT')) e.lost = true;
  const finding: GitFinding = { path: abs, why: `${aside}; ${back}`, movedTo, inPlace: true };
  HELD_FINDINGS.add(finding);
  return finding;
}

/** Renames `rel` in its folder to `.agent-jobs-quarantined-<tag>-<seq>`; its new path, or undefined when it could not. */
function moveAside(h: HeldGit, rel: string): string | undefined {
  const parent = path.dirname(rel);
  const dir = parent === '.' ? fs.openSync(h.workspace, DIR_FLAGS) : dirFd(h.workspace, parent);
  if (dir === undefined) return undefined;
  try {
    const name = `.agent-jobs-quarantined-${h.tag}-held${++h.seq}`;
    fs.renameSync(`/proc/self/fd/${dir}/${path.basename(rel)}`, `/proc/self/fd/${dir}/${name}`);
    return path.join(h.workspace, parent, name);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(dir);
  }
}

/** The folder `rel` of `workspace`, opened one component at a time with no symlink followed; undefined when it cannot. */
function dirFd(workspace: string, rel: string): number | undefined {
  const fd = openRel(workspace, rel);
  if (fd === undefined) return undefined;
  try {
    return fs.openSync(`/proc/self/fd/${fd}`, MAGIC_DIR_FLAGS);
  } catch {
    return undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** The most bytes of a held file {@link writeBack} copies back (git's config and hooks are far smaller). */
const MAX_WRITE_BACK = 16 * 1024 * 1024;

/**
 * Puts the held original of `e` back at its path: renamed back from wherever the session moved it (its descriptor
 * names it), else (deleted, as git's lock-and-rename of `config` deletes it, or out of reach) a file's bytes, mode and
 * owner written back from the descriptor, a folder made again empty as the person's. Says what was done.
 */
function putBack(h: HeldGit, e: HeldEntry): string {
  const where = fs.readlinkSync(`/proc/self/fd/${e.fd}`);
  const parent = path.dirname(e.rel);
  const to = parent === '.' ? fs.openSync(h.workspace, DIR_FLAGS) : dirFd(h.workspace, parent);
  if (to === undefined) return 'the original could NOT be put back: its folder is gone';
  try {
    if (renameBack(e, where, to)) return `the original put back from ${where}`;
    return e.dir ? remakeFolder(e, where, to) : writeBack(h, e, where, to);
  } finally {
    fs.closeSync(to);
  }
}

/**
 * Renames the held original of `e` from `where` (absolute, as its descriptor names it) into the folder `to`, each
 * folder on the way opened with no symlink followed and the entry checked to be the held inode; false when it cannot
 * (deleted, another filesystem, something else stands there).
 */
function renameBack(e: HeldEntry, where: string, to: number): boolean {
  if (!path.isAbsolute(where)) return false;
  const dir = path.dirname(where);
  const from = dir === '/' ? fs.openSync('/', DIR_FLAGS) : dirFd('/', dir.slice(1));
  if (from === undefined) return false;
  try {
    const st = fs.lstatSync(`/proc/self/fd/${from}/${path.basename(where)}`, { throwIfNoEntry: false });
    if (!st || st.dev !== e.dev || st.ino !== e.ino) return false;
    fs.renameSync(`/proc/self/fd/${from}/${path.basename(where)}`, `/proc/self/fd/${to}/${path.basename(e.rel)}`);
    return true;
  } catch {
    return false;
  } finally {
    fs.closeSync(from);
  }
}

/**
 * Writes the bytes of the held file `e` (read through its descriptor, which keeps a deleted file's inode) to a new
 * file in the folder `to`, owned and moded as the original, with no ACL entry for the session's user, renamed into
 * place and held from then on. Says what was done.
 */
function writeBack(h: HeldGit, e: HeldEntry, where: string, to: number): string {
  let read: ReturnType<typeof readRegular>;
  try {
    read = readRegular(`/proc/self/fd/${e.fd}`, MAX_WRITE_BACK, true);
  } catch (err) {
    return `the original could NOT be put back: it is gone (${where}) and could not be read: ${(err as Error).message}`;
  }
  if (read.truncated) return `the original could NOT be put back: it is gone (${where}) and larger than ${MAX_WRITE_BACK} bytes`;
  // A name the session cannot guess and plant first (the folder is its to write); the copy is held by its own
  // descriptor, never reopened by name, so a swap at the path after the rename is caught by the next check.
  const name = `.agent-jobs-restoring-${h.tag}-${randomBytes(8).toString('hex')}`;
  const c = fs.constants;
  const fd = fs.openSync(`/proc/self/fd/${to}/${name}`, c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o600);
  let held: number;
  try {
    fs.writeSync(fd, read.bytes);
    // The owner first: fchown clears set-id bits that fchmod then sets as the original had them.
    fs.fchownSync(fd, e.uid, e.gid);
    copyAcl(e.fd, fd, h.uid);
    fs.fchmodSync(fd, read.st.mode & 0o7777);
    held = fs.openSync(`/proc/self/fd/${fd}`, O_PATH);
  } finally {
    fs.closeSync(fd);
  }
  try {
    fs.renameSync(`/proc/self/fd/${to}/${name}`, `/proc/self/fd/${to}/${path.basename(e.rel)}`);
  } catch (err) {
    fs.closeSync(held);
    fs.rmSync(`/proc/self/fd/${to}/${name}`, { force: true });
    return `the original could NOT be put back: it is gone (${where}) and its copy could not be renamed into place: ${(err as Error).message}`;
  }
  const made = fs.fstatSync(held);
  fs.closeSync(e.fd);
  Object.assign(e, { fd: held, dev: made.dev, ino: made.ino });
  return `the original's bytes and mode written back from the worker's descriptor (the original is ${where.endsWith(' (deleted)') ? 'deleted' : `at ${where}`})`;
}

/**
 * Gives the file `to` the ACL of the file `from` (both descriptors) without any entry for the session's user `uid`, in
 * place of the default entries it inherited from its folder; none when `from` has none or a filesystem has no ACLs.
 */
function copyAcl(from: number, to: number, uid: number): void {
  try {
    const acl = execFileSync('getfacl', ['-n', '-p', '--omit-header', '--', `/proc/${process.pid}/fd/${from}`], {
      env: MINIMAL_ENV,
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 60_000,
    })
      .toString()
      .split('\n')
      .filter((l) => !l.startsWith(`user:${uid}:`))
      .join('\n');
    execFileSync('setfacl', ['--set-file=-', '--', `/proc/${process.pid}/fd/${to}`], {
      env: MINIMAL_ENV,
      input: acl,
      stdio: ['pipe', 'ignore', 'ignore'],
      timeout: 60_000,
    });
  } catch {
    removeEntries(to, `u:${uid}`);
  }
}

/** Makes the held folder `e`, gone from its place, again in `to`: empty, owned as the original, and held from then on. */
function remakeFolder(e: HeldEntry, where: string, to: number): string {
  fs.mkdirSync(`/proc/self/fd/${to}/${path.basename(e.rel)}`, { mode: 0o755 });
  // Owned as the original by fchown on a descriptor opened without following a symlink: never a chown by name.
  const made = openDirAt(to, path.basename(e.rel));
  try {
    const st = fs.fstatSync(made);
    if (st.uid !== process.geteuid?.()) return 'the original is gone and the folder made in its place was taken';
    fs.fchownSync(made, e.uid, e.gid);
    fs.closeSync(e.fd);
    Object.assign(e, { fd: fs.openSync(`/proc/self/fd/${made}`, O_PATH), dev: st.dev, ino: st.ino });
  } finally {
    fs.closeSync(made);
  }
  return `the original is gone (${where}): an empty folder made in its place`;
}

/**
 * Checks the held entries every {@link HELD_SWEEP_MS} until the returned function is called, handing what it found to
 * `onFound` (for the next result). The timer does not keep the worker alive.
 */
export function watchHeldGit(h: HeldGit, onFound: (found: GitFinding[]) => void): () => void {
  const timer = setInterval(() => {
    const found = checkHeldGit(h);
    if (found.length > 0) onFound(found);
  }, HELD_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}
