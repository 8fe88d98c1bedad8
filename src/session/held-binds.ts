/**
 * The git guard's binds (git-guard.ts: `.git`, `.git/worktrees`, each `.git/worktrees/<id>`, the folders it pins, and
 * what it binds read-only: config, hooks/, info/, the files its config names, the quarantine), held by descriptor for
 * the session's life and bound from those descriptors at every launch (bwrap `--bind-fd` / `--ro-bind-fd`).
 *
 * Why: a sibling session on the same workspace (a second run, a sub-agent) started before such a folder existed may
 * rename it and put a symlink to a host folder in its place. A bind by path is resolved again by bwrap at each launch
 * (a shell restart, an exact run, the editor's helper): checking the path first and then binding it by path left a
 * window in which the sibling swapped it back and forth, and the session got a writable bind of the host's folder
 * (adversary-round16.test.ts and adversary-round17.test.ts, kind 6). Here every path is opened once, when the session
 * starts, from the workspace's descriptor one component at a time without following a symlink (pins.ts, as for a
 * sub-agent's git dirs), and what bwrap mounts is that descriptor, whatever the path holds by then. bwrap itself
 * refuses to mount a directory's descriptor on a destination that a symlink leads elsewhere ("Race condition binding
 * dirfd"). Before a launch the path is opened again the same way and compared (device and inode): a folder that is no
 * longer at its path refuses the launch, naming it, since the sandbox would show it where the session expects
 * something else; a file the person's git replaced by rename (`git config` writes `config.lock`, renames it over
 * `config`) is held again from its folder's held descriptor, never through a symlink, so the new file is bound.
 *
 * Descriptors: one per held path plus one for the workspace, and one per folder of a held file that is not itself
 * held (none for what git-guard.ts lists: it holds each folder on the way to a read-only file), all `O_PATH`; closed
 * by {@link releaseHeldBinds} when the session closes. Linux only (`O_PATH`, `/proc`).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SessionStartError } from './errors';
import type { PassedFd } from './fds';
import { openDirBelow, openDirNoFollow } from './pins';
import { openEntryAt } from './safe-open';

/** A descriptor the session owns; -1 once released. */
interface Held {
  fd: number;
}

/** One guard path, bound at {@link dest} from {@link fd}. */
export interface HeldBind extends PassedFd {
  /** Its absolute path when the session started (no symlink on the way then), where the sandbox shows it. */
  readonly dest: string;
  readonly writable: boolean;
  /** A directory; otherwise a regular file. */
  readonly dir: boolean;
  /** `O_PATH` descriptor of what is bound; replaced at a launch only as the module comment says; -1 once released. */
  fd: number;
  /** The folder its name is in (a held folder, the workspace, or one of {@link HeldBinds.parents}), and its name there. */
  readonly parent: Held;
  readonly name: string;
}

/** A session's held guard paths (see the module comment). */
export interface HeldBinds {
  /** The workspace (real path) and its descriptor, from which every path is walked. */
  readonly workspace: string;
  readonly root: Held;
  readonly binds: readonly HeldBind[];
  /** Folders of held files that are not held themselves, opened only to reach those files. */
  readonly parents: Array<Held & { readonly dest: string }>;
}

/** A mount of a launch: `dest` from `source`'s descriptor, read when the launch is spawned (fds.ts `launchStdio`). */
export interface HeldMount {
  readonly dest: string;
  readonly writable: boolean;
  readonly source: PassedFd;
}

/** `abs` relative to `workspace`, or undefined when it is not inside it. */
function relInside(abs: string, workspace: string): string | undefined {
  const rel = path.relative(workspace, abs);
  return rel === '' || rel === '..' || rel.startsWith('../') || path.isAbsolute(rel) ? undefined : rel;
}

/** The folder of `abs` as held: the workspace, a held folder, or a new descriptor added to `parents`. */
function parentOf(h: HeldBinds, abs: string): Held {
  const dir = path.dirname(abs);
  if (dir === h.workspace) return h.root;
  const held = h.binds.find((b) => b.dir && b.dest === dir) ?? h.parents.find((p) => p.dest === dir);
  if (held) return held;
  const rel = relInside(dir, h.workspace);
  const fresh = { fd: rel === undefined ? openDirNoFollow(dir) : openDirBelow(h.root.fd, rel), dest: dir };
  h.parents.push(fresh);
  return fresh;
}

/**
 * Opens every guard path, folders first (so that a file's folder is one of them), each from the workspace's descriptor
 * without following a symlink; a path in both lists is held writable. Paths must be absolute and resolved, as
 * git-guard.ts gives them; one outside the workspace is walked from `/` the same way.
 * @param workspace the workspace's real path
 * @returns the held paths; nothing when both lists are empty
 * @throws SessionStartError naming the first path that cannot be opened so (a symlink on the way, missing, neither a
 *   folder nor a regular file): the guard listed it a moment before, so a process changed it; all opened so far are closed
 */
export function holdBinds(workspace: string, writable: readonly string[], readonly: readonly string[]): HeldBinds {
  const h: HeldBinds = { workspace, root: { fd: -1 }, binds: [], parents: [] };
  if (writable.length === 0 && readonly.length === 0) return h;
  const binds = h.binds as HeldBind[];
  const all = [...new Set([...writable, ...readonly])].sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b));
  let current = workspace;
  try {
    h.root.fd = openDirNoFollow(workspace);
    for (const dest of all) {
      current = dest;
      const parent = parentOf(h, dest);
      const name = path.basename(dest);
      const fd = openEntryAt(parent.fd, name);
      const st = fs.fstatSync(fd);
      if (!st.isDirectory() && !st.isFile()) {
        fs.closeSync(fd);
        throw new Error(st.isSymbolicLink() ? 'it is a symlink' : 'it is neither a folder nor a regular file');
      }
      binds.push({ dest, writable: writable.includes(dest), dir: st.isDirectory(), fd, parent, name });
    }
    return h;
  } catch (err) {
    releaseHeldBinds(h);
    throw new SessionStartError(
      `cannot start bash session: the git guard's ${current} cannot be held (opened without following a symlink): ` +
        `${(err as NodeJS.ErrnoException).code ?? (err as Error).message}; a process changed it while the session started, try again`,
      { cause: err },
    );
  }
}

/** What `b`'s path holds now, opened as at the start (no symlink followed): a new descriptor, or the error's code. */
function openNow(h: HeldBinds, b: HeldBind): number | string {
  try {
    if (!b.dir) return openEntryAt(b.parent.fd, b.name);
    const rel = relInside(b.dest, h.workspace);
    return rel === undefined ? openDirNoFollow(b.dest) : openDirBelow(h.root.fd, rel);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
}

/** What a path holds now, for the error. */
function describe(st: fs.Stats | string, dir: boolean): string {
  if (typeof st === 'string')
    return st === 'ENOENT' ? 'it is missing' : st === 'ELOOP' ? 'a symlink is on the way' : `it cannot be opened (${st})`;
  if (st.isSymbolicLink()) return 'it is a symlink';
  return st.isDirectory() ? 'it is another folder' : st.isFile() ? (dir ? 'it is a file' : 'it is another file') : 'it is no regular file';
}

/**
 * The mounts of one launch: each held path from its descriptor, after opening its path again as at the start. A file
 * the path now names by another regular file (the person's git replaced it by rename) is held again first; a folder
 * that was deleted is held again when a folder is at its path now (the person removed and made it again: `git worktree
 * remove`, then `add`), and not bound when nothing is. A folder or file whose path now names something else (it was
 * moved, a symlink or another folder put there) refuses the launch.
 * @throws SessionStartError naming the path, what it holds now, and that the next launch tries again
 */
export function heldMounts(h: HeldBinds): HeldMount[] {
  const out: HeldMount[] = [];
  for (const b of h.binds) {
    if (b.fd < 0) throw new SessionStartError(`cannot start the sandbox: the session is closing (${b.dest} is released)`);
    const now = openNow(h, b);
    const st = typeof now === 'number' ? fs.fstatSync(now) : now;
    const held = fs.fstatSync(b.fd);
    const same = typeof st !== 'string' && st.dev === held.dev && st.ino === held.ino;
    let mount = true;
    if (same) {
      if (typeof now === 'number') fs.closeSync(now);
    } else if (typeof now === 'number' && typeof st !== 'string' && (b.dir ? st.isDirectory() && held.nlink === 0 : st.isFile())) {
      fs.closeSync(b.fd);
      b.fd = now;
    } else if (b.dir && held.nlink === 0 && now === 'ENOENT') {
      mount = false;
    } else {
      if (typeof now === 'number') fs.closeSync(now);
      throw new SessionStartError(
        `refusing to start the sandbox: ${b.dest} no longer is the ${b.dir ? 'folder' : 'file'} it was when the session started ` +
          `(${describe(st, b.dir)}); a process changed it (a sibling session on the workspace can), and the sandbox binds only ` +
          `what it held then; the next command tries again, and starts once it is back`,
      );
    }
    if (mount) out.push({ dest: b.dest, writable: b.writable, source: b });
  }
  return out;
}

/** Closes every descriptor of `h` (once): a launch that comes later is refused. */
export function releaseHeldBinds(h: HeldBinds): void {
  for (const x of [...h.binds, ...h.parents, h.root]) {
    if (x.fd < 0) continue;
    fs.closeSync(x.fd);
    x.fd = -1;
  }
}

/** How many descriptors `h` holds now. */
export function heldDescriptors(h: HeldBinds): number {
  return [...h.binds, ...h.parents, h.root].filter((x) => x.fd >= 0).length;
}
