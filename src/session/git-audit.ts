/**
 * The audit of the workspace's git metadata (the other half of git-guard.ts): what a session may
 * create in the workspace that the person's git on the host later obeys, and which no bind can
 * cover because it did not exist when the sandbox was made. The worker records what was there at
 * session start ({@link recordGit}) and, after each command, each edit and when the session
 * closes ({@link auditGit}), moves away what the session added:
 *
 * - a `.git` (directory, file or symlink) below the workspace's root, or a directory that git
 *   takes for a bare repository (HEAD, objects/, refs/): git run in that directory finds it before
 *   the root's and runs its config (core.fsmonitor, hooks); a gitlink in the index reaches it too,
 *   since `git status` recurses into a populated submodule. A `.git` file of a linked worktree of
 *   the root's repository (its admin folder audited as below) is left alone: `git worktree add`;
 * - `commondir` in the root's git dir: git then reads the config of the directory it names;
 * - `modules/<name>`: `git submodule update` reuses it, config and hooks included;
 * - `worktrees/<id>` whose `commondir` is not the repository's, whose `gitdir` names a path that
 *   exists on the host outside the workspace (the person's other checkout: `git worktree repair`
 *   would point it here), or, when the session closes, any path outside the workspace (the
 *   sandbox's /tmp is gone then), unless the `.git` file there already names that folder (a
 *   sub-agent's worktree, made by the worker; one the person added on the host); its
 *   `config.worktree` when the config reads those;
 * - `refs/replace/*` refs, loose or packed: the person's git shows the replacement, their push
 *   sends the original.
 *
 * What is moved goes to `<git dir>/agent-jobs-quarantine/` (nothing is deleted), a packed replace
 * ref is dropped from `packed-refs`; each is reported in the command's result. Moves are made
 * through descriptors opened without following symlinks, since a background job of the session
 * may swap a directory for a symlink meanwhile. Only a workspace whose `.git` is a directory at
 * its root at start is audited. Attack tests: adversary-round10.test.ts, adversary-round11.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** What the workspace's git metadata held at session start (absolute paths; `git` is `<workspace>/.git`). */
export interface GitBaseline {
  readonly workspace: string;
  readonly git: string;
  /** `.git` entries and bare git dirs below the root (relative to the workspace) with their inode, at start. */
  readonly nested: ReadonlyMap<string, number>;
  /** Whether the root git dir had a `commondir` at start. */
  readonly commondir: boolean;
  /** Entries of `modules/` and `worktrees/`, and loose and packed `refs/replace/` refs, at start. */
  readonly modules: ReadonlySet<string>;
  readonly worktrees: ReadonlySet<string>;
  readonly replaceRefs: ReadonlySet<string>;
  /** Tells each quarantined entry apart (session id). */
  readonly tag: string;
}

/** One thing the audit found, and what it did about it. */
export interface GitFinding {
  /** Absolute path of what was found. */
  readonly path: string;
  /** Why the person's git would obey it (one phrase). */
  readonly why: string;
  /** Where it was moved (absolute), `dropped` for a packed ref, or undefined when it could not be moved. */
  readonly movedTo: string | undefined;
}

/** The folder of the root git dir that the audit moves things into. */
export const QUARANTINE = 'agent-jobs-quarantine';

/** The largest `packed-refs` the audit rewrites, bytes (a repository of a million refs is about 100 MB). */
const MAX_PACKED_REFS_BYTES = 256 << 20;

/** Entries walked at most per audit; a workspace with more is audited in part (a finding says so). */
const MAX_WALK_ENTRIES = 2_000_000;

/**
 * What the workspace's git metadata holds now, for {@link auditGit}; undefined when `workspace`
 * (absolute, symlinks resolved) has no `.git` directory at its root.
 */
export function recordGit(workspace: string, tag: string): GitBaseline | undefined {
  const git = path.join(workspace, '.git');
  try {
    if (!fs.lstatSync(git).isDirectory()) return undefined;
  } catch {
    return undefined;
  }
  const nested = new Map<string, number>();
  for (const f of walkGitDirs(workspace).found) nested.set(f.rel, f.ino);
  return {
    workspace,
    git,
    nested,
    commondir: exists(path.join(git, 'commondir')),
    modules: new Set(list(path.join(git, 'modules'))),
    worktrees: new Set(list(path.join(git, 'worktrees'))),
    replaceRefs: new Set(replaceRefs(git)),
    tag,
  };
}

/**
 * Finds and moves away what the session added since `b` was recorded (see the module comment).
 * `final`: the session is closing (no process of it is left), so a linked worktree outside the
 * workspace is stale too. Never throws.
 */
export function auditGit(b: GitBaseline, final: boolean): GitFinding[] {
  const out: GitFinding[] = [];
  const q = new Quarantine(b);
  try {
    const walk = walkGitDirs(b.workspace);
    for (const f of walk.found) {
      if (b.nested.get(f.rel) === f.ino) continue;
      const abs = path.join(b.workspace, f.rel);
      if (f.kind === 'dotgit' && linkedWorktreeFile(abs, b, final)) continue;
      out.push(
        q.move(
          abs,
          f.kind === 'bare' ? 'a git repository of its own in the workspace' : 'a .git below the root, found first by git run there',
        ),
      );
    }
    if (walk.partial)
      out.push({ path: b.workspace, why: `more than ${MAX_WALK_ENTRIES} entries: the rest was not checked`, movedTo: undefined });
    for (const rel of ['modules', 'worktrees', 'refs/replace']) {
      const p = path.join(b.git, rel);
      if (isSymlink(p)) out.push(q.move(p, `a symlink for ${rel}, which git follows`));
    }
    if (!b.commondir && exists(path.join(b.git, 'commondir')))
      out.push(q.move(path.join(b.git, 'commondir'), "a commondir: git reads another directory's config"));
    for (const name of list(path.join(b.git, 'modules')))
      if (!b.modules.has(name))
        out.push(q.move(path.join(b.git, 'modules', name), 'a submodule git dir that `git submodule update` reuses'));
    for (const id of list(path.join(b.git, 'worktrees'))) {
      if (b.worktrees.has(id)) continue;
      const admin = path.join(b.git, 'worktrees', id);
      const why = strayAdmin(admin, b, final);
      if (why) out.push(q.move(admin, why));
      else if (WORKTREE_CONFIG.test(read(path.join(b.git, 'config'))) && exists(path.join(admin, 'config.worktree')))
        out.push(q.move(path.join(admin, 'config.worktree'), 'a config.worktree of a new linked worktree'));
    }
    out.push(...dropReplaceRefs(b, q));
  } catch (err) {
    out.push({ path: b.git, why: `the audit failed: ${(err as Error).message}`, movedTo: undefined });
  } finally {
    q.close();
  }
  return out;
}

/**
 * The note a command's result carries for `findings` (paths relative to the workspace, at most
 * {@link MAX_NOTED} named), or undefined when there are none.
 */
export function gitAuditNote(findings: readonly GitFinding[], b: GitBaseline): string | undefined {
  if (findings.length === 0) return undefined;
  const rel = (p: string): string => path.relative(b.workspace, p) || '.';
  const named = (fs: readonly GitFinding[]): string =>
    fs
      .slice(0, MAX_NOTED)
      .map((f) => `${rel(f.path)} (${f.why})`)
      .join(', ') + (fs.length > MAX_NOTED ? ` and ${fs.length - MAX_NOTED} more` : '');
  const moved = findings.filter((f) => f.movedTo !== undefined);
  const stuck = findings.filter((f) => f.movedTo === undefined);
  const parts = [];
  if (moved.length > 0) parts.push(`moved to ${rel(path.join(b.git, QUARANTINE))} (packed refs dropped): ${named(moved)}`);
  if (stuck.length > 0) parts.push(`could NOT be moved, check by hand: ${named(stuck)}`);
  return `the session made git metadata that the person's git would obey later; ${parts.join('; ')}`;
}

/** How many findings a note names. */
const MAX_NOTED = 5;

/** A loose match for `extensions.worktreeConfig` on (as git-guard.ts). */
const WORKTREE_CONFIG = /worktreeconfig\s*=\s*(true|yes|on|1)?\s*$/im;

interface FoundGitDir {
  rel: string;
  ino: number;
  kind: 'dotgit' | 'bare';
}

/** Every `.git` entry below `workspace` (not the root's) and every directory git takes for a bare repository; not into either. */
function walkGitDirs(workspace: string): { found: FoundGitDir[]; partial: boolean } {
  const found: FoundGitDir[] = [];
  const stack = [''];
  let seen = 0;
  while (stack.length > 0) {
    const rel = stack.pop()!;
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(path.join(workspace, rel), { withFileTypes: true });
    } catch {
      continue;
    }
    seen += entries.length;
    if (seen > MAX_WALK_ENTRIES) return { found, partial: true };
    const names = new Map(entries.map((e) => [e.name, e]));
    if (rel !== '' && names.get('HEAD') && names.get('objects')?.isDirectory() && names.get('refs')?.isDirectory()) {
      const ino = inode(path.join(workspace, rel));
      if (ino !== undefined) found.push({ rel, ino, kind: 'bare' });
      continue;
    }
    for (const e of entries) {
      const child = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.name === '.git') {
        if (rel === '') continue;
        const ino = inode(path.join(workspace, child));
        if (ino !== undefined) found.push({ rel: child, ino, kind: 'dotgit' });
      } else if (e.isDirectory()) stack.push(child);
    }
  }
  return { found, partial: false };
}

/** Whether `file` is a `.git` file naming an admin folder of the root's repository that the audit keeps (`git worktree add` in the workspace). */
function linkedWorktreeFile(file: string, b: GitBaseline, final: boolean): boolean {
  try {
    if (!fs.lstatSync(file).isFile()) return false;
    const m = /^gitdir: (.+)$/m.exec(read(file));
    if (!m) return false;
    const admin = path.resolve(path.dirname(file), m[1]!.trim());
    if (path.dirname(admin) !== path.join(b.git, 'worktrees') || !fs.lstatSync(admin).isDirectory()) return false;
    return strayAdmin(admin, b, final) === undefined;
  } catch {
    return false;
  }
}

/** Why a new admin folder `worktrees/<id>` would lead the person's git astray, or undefined when it is a worktree of the repository's own. */
function strayAdmin(admin: string, b: GitBaseline, final: boolean): string | undefined {
  try {
    if (!fs.lstatSync(admin).isDirectory()) return 'not a folder';
    const common = read(path.join(admin, 'commondir')).split('\n')[0]!.trim();
    if (common === '' || fs.realpathSync(path.resolve(admin, common)) !== b.git)
      return "a linked worktree whose commondir is not the repository's";
  } catch {
    return "a linked worktree whose commondir is not the repository's";
  }
  const gitdir = read(path.join(admin, 'gitdir')).split('\n')[0]!.trim();
  if (gitdir === '') return undefined;
  const target = path.resolve(admin, gitdir);
  if (target === b.workspace || target.startsWith(`${b.workspace}/`)) return undefined;
  // A checkout outside whose `.git` already names this folder was made by the worker (a sub-agent's) or the person:
  // the session cannot write there, and `git worktree repair` has nothing to adopt.
  if (namesBack(target, admin)) return undefined;
  if (final) return 'a linked worktree outside the workspace, gone with the sandbox';
  return exists(target) ? 'a linked worktree naming a checkout outside the workspace (`git worktree repair` would adopt it)' : undefined;
}

/** Whether `dotGit` is a `.git` file whose `gitdir:` is the admin folder `admin` (both resolved). */
function namesBack(dotGit: string, admin: string): boolean {
  const m = /^gitdir: (.+)$/m.exec(read(dotGit));
  if (!m) return false;
  try {
    return fs.realpathSync(path.resolve(path.dirname(dotGit), m[1]!.trim())) === fs.realpathSync(admin);
  } catch {
    return false;
  }
}

/** The replace refs of `git`: loose ones (relative to `refs/replace`) and packed ones (prefixed `packed:`). */
function replaceRefs(git: string): string[] {
  const out: string[] = [];
  const dir = path.join(git, 'refs', 'replace');
  const walk = (rel: string): void => {
    for (const e of listEntries(path.join(dir, rel))) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (e.isDirectory()) walk(r);
      else out.push(r);
    }
  };
  walk('');
  for (const line of read(path.join(git, 'packed-refs')).split('\n')) {
    const m = /^[0-9a-f]+ (refs\/replace\/.+)$/.exec(line);
    if (m) out.push(`packed:${m[1]}`);
  }
  return out;
}

/** Moves the loose replace refs made since `b` and drops the packed ones from `packed-refs`. */
function dropReplaceRefs(b: GitBaseline, q: Quarantine): GitFinding[] {
  const out: GitFinding[] = [];
  const why = 'a replace ref: git shows other content than what a push sends';
  let packed = false;
  for (const r of replaceRefs(b.git)) {
    if (b.replaceRefs.has(r)) continue;
    if (r.startsWith('packed:')) packed = true;
    else out.push(q.move(path.join(b.git, 'refs', 'replace', r), why));
  }
  if (packed) out.push(...q.rewritePackedRefs((ref) => ref.startsWith('refs/replace/') && !b.replaceRefs.has(`packed:${ref}`), why));
  return out;
}

/**
 * Moves entries of the workspace into `<git>/agent-jobs-quarantine/`, each through a descriptor
 * of its parent opened component by component without following a symlink (`/proc/self/fd/N/name`),
 * so that a directory swapped for a symlink meanwhile cannot send a move of the worker (root) elsewhere.
 */
class Quarantine {
  /** Descriptors opened, closed by {@link close}. */
  private readonly fds: number[] = [];
  private dest: number | undefined;
  private seq = 0;

  constructor(private readonly b: GitBaseline) {}

  /** Moves `abs` (inside the workspace) to the quarantine; the finding says where, or that it could not. */
  move(abs: string, why: string): GitFinding {
    try {
      const parent = this.openDir(path.relative(this.b.workspace, path.dirname(abs)));
      const name = `${this.b.tag}-${Date.now()}-${++this.seq}-${path.relative(this.b.workspace, abs).replace(/\//g, '_')}`.slice(0, 200);
      fs.renameSync(`/proc/self/fd/${parent}/${path.basename(abs)}`, `/proc/self/fd/${this.quarantine()}/${name}`);
      return { path: abs, why, movedTo: path.join(this.b.git, QUARANTINE, name) };
    } catch {
      return { path: abs, why, movedTo: undefined };
    }
  }

  /** Drops from `packed-refs` the refs `drop` names (and their peeled lines), by a new file renamed over it, owned as it was. */
  rewritePackedRefs(drop: (ref: string) => boolean, why: string): GitFinding[] {
    const out: GitFinding[] = [];
    const file = path.join(this.b.git, 'packed-refs');
    try {
      const dir = this.openDir('.git');
      const st = fs.lstatSync(`/proc/self/fd/${dir}/packed-refs`);
      // Rewritten whole or not at all: a ref cut off would be lost.
      if (!st.isFile() || st.size > MAX_PACKED_REFS_BYTES) return [{ path: file, why, movedTo: undefined }];
      const kept: string[] = [];
      let dropping = false;
      for (const line of read(`/proc/self/fd/${dir}/packed-refs`, MAX_PACKED_REFS_BYTES).split('\n')) {
        const ref = /^[0-9a-f]+ (.+)$/.exec(line)?.[1];
        if (ref !== undefined) dropping = drop(ref);
        if (ref !== undefined && dropping) out.push({ path: `${file}: ${ref}`, why, movedTo: 'dropped' });
        if (!(dropping && (ref !== undefined || line.startsWith('^')))) kept.push(line);
      }
      const tmp = `/proc/self/fd/${dir}/packed-refs.${this.b.tag}.tmp`;
      fs.writeFileSync(tmp, kept.join('\n'), { mode: st.mode & 0o777, flag: 'wx' });
      fs.chownSync(tmp, st.uid, st.gid);
      fs.renameSync(tmp, `/proc/self/fd/${dir}/packed-refs`);
    } catch {
      out.push({ path: file, why, movedTo: undefined });
    }
    return out;
  }

  close(): void {
    for (const fd of this.fds.splice(0)) fs.closeSync(fd);
  }

  /** The quarantine folder's descriptor, made (owned as the git dir is) when missing. */
  private quarantine(): number {
    if (this.dest !== undefined) return this.dest;
    const git = this.openDir('.git');
    const p = `/proc/self/fd/${git}/${QUARANTINE}`;
    try {
      fs.mkdirSync(p, { mode: 0o755 });
      const owner = fs.fstatSync(git);
      fs.chownSync(p, owner.uid, owner.gid);
    } catch {
      /* there already: opened below without following a symlink */
    }
    this.dest = this.openAt(git, QUARANTINE);
    return this.dest;
  }

  /** A descriptor of the directory `rel` (relative to the workspace), no symlink followed on the way. */
  private openDir(rel: string): number {
    let fd = this.track(fs.openSync(this.b.workspace, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW));
    for (const part of rel.split('/').filter((p) => p !== '' && p !== '.')) {
      if (part === '..') throw new Error('outside the workspace');
      fd = this.openAt(fd, part);
    }
    return fd;
  }

  private openAt(dir: number, name: string): number {
    return this.track(
      fs.openSync(`/proc/self/fd/${dir}/${name}`, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW),
    );
  }

  private track(fd: number): number {
    this.fds.push(fd);
    return fd;
  }
}

function exists(p: string): boolean {
  try {
    fs.lstatSync(p);
    return true;
  } catch {
    return false;
  }
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

function inode(p: string): number | undefined {
  try {
    return fs.lstatSync(p).ino;
  } catch {
    return undefined;
  }
}

/** Names in directory `dir` (not a symlink), or none. */
function list(dir: string): string[] {
  return listEntries(dir).map((e) => e.name);
}

function listEntries(dir: string): fs.Dirent[] {
  try {
    if (!fs.lstatSync(dir).isDirectory()) return [];
    return fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
}

/**
 * The first `max` bytes (default 1 MiB) of `file`, or '' when it is unreadable or no regular file: opened without following
 * a symlink and without blocking, since the session could put a FIFO there to hang the worker.
 */
function read(file: string, max = 1 << 20): string {
  let fd: number | undefined;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return '';
    const buf = Buffer.alloc(Math.min(st.size, max));
    return buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, 0)).toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
