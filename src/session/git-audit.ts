/**
 * The audit of the workspace's git metadata (the other half of git-guard.ts): what a session may
 * create in the workspace that the person's git on the host later obeys, and which no bind can
 * cover because it did not exist when the sandbox was made. The worker records what was there at
 * session start ({@link recordGit}) and, after each command, each edit and when the session
 * closes ({@link auditGit}), moves away what the session added:
 *
 * - a `.git` (directory, file or symlink) below the workspace's root, or a directory that git
 *   takes for a git dir (setup.c `is_git_directory`, read as a superset: `HEAD`, and `objects` and
 *   `refs` beside it or a `commondir` naming where they are; git-walk.ts): git run in that directory
 *   finds it before the root's and runs its config (core.fsmonitor, hooks, a textconv driver); a
 *   gitlink in the index reaches it too, since `git status` recurses into a populated submodule. A
 *   directory with `HEAD`, `objects` and `refs` is moved whole; one made a git dir by `HEAD` and
 *   `commondir` alone (a folder of the person's, whose other files are theirs) loses those two. A
 *   `.git` file of a linked worktree of the root's repository (its admin folder audited as below)
 *   is left alone: `git worktree add`; it and `commondir` are read as git reads them, whole ({@link gitPath});
 * - `commondir` in the root's git dir: git then reads the config of the directory it names;
 * - `modules/<name>`: `git submodule update` reuses it, config and hooks included;
 * - `worktrees/<id>` whose `commondir` is not the repository's, whose `gitdir` names a path that
 *   exists on the host outside the workspace (the person's other checkout: `git worktree repair`
 *   would point it here), or, when the session closes, any path outside the workspace (the
 *   sandbox's /tmp is gone then), unless the `.git` file there already names that folder (a
 *   sub-agent's worktree, made by the worker; one the person added on the host); its
 *   `config.worktree` when the config reads those;
 * - `refs/replace/*` refs, loose or packed: the person's git shows the replacement, their push
 *   sends the original;
 * - a symlink on the way to `.git`, its `config`, `hooks`, `info` or `config.worktree` (`.git ->
 *   .gitdir`, `.git/config -> ../repo.gitconfig`, and a link its target is in turn) that is no longer
 *   the same link: git-guard.ts binds the target read-only, but a link is no mount point, so the
 *   session can remove or rename it and put a file, directory or link of its own there. What
 *   stands there is moved away and the link made again as it was ({@link HeldLink}), first in each
 *   audit. A link is a name, not a file (the kernel has no bind for it), so this is the audit's,
 *   not the sandbox's: the window between two audits stays (a refusal of such workspaces would
 *   turn away a config kept tracked, a layout some teams use);
 * - whatever appears at a path the config names as a program or file that was missing at start
 *   (git-guard.ts `GuardedGit.missing`: `node_modules/.bin/eslint` before `npm install`), or a
 *   symlink put on the way to it ({@link appeared}): the person's git would run it. What a
 *   legitimate install writes there is moved too; the note says to review it and move it back
 *   (adversary round 19, missing-named.test.ts). Between audits too: {@link watchMissing} watches those paths
 *   while the session is open and moves what appears at once (round 21: a background job's file there ran in the
 *   person's `git status` while the session was idle);
 * - an entry (no folder) the session made anywhere in the workspace whose name is one a config value runs from a
 *   folder the guard cannot tell (git-guard.ts `GuardedGit.anywhere`: `cd "$GIT_PREFIX" && ./run.sh`; round 21), and
 *   an entry, a folder too, of an interpreter's operand's name or that name and `.…` (`GuardedGit.anywhereStems`);
 * - an entry the session made beside a name an interpreter completes, named so and `.…` (git-guard.ts
 *   `GuardedGit.completed`: `scripts/fmt.js` for `!node scripts/fmt`; round 23, {@link moveCompleted}), at once too;
 * - last, what the person's `git status` would not show (git-index-audit.ts; round 24): the index's skip-worktree and
 *   assume-unchanged bits the session set are cleared, an entry whose file the session changed while its stat data
 *   still say unchanged gets empty stat data (git compares its content again), an untracked cache or fsmonitor
 *   extension is dropped, and what the session made that a rule of its own ignores is named (left in place).
 *
 * What is moved goes to `<git dir>/agent-jobs-quarantine/` (nothing is deleted), a packed replace
 * ref is dropped from `packed-refs`; each is reported in the command's result. The quarantine is
 * made by the worker before the sandbox starts and bound read-only in it ({@link prepareQuarantine}),
 * so that the session can neither block it (a file or symlink of that name) nor take back what was
 * moved; entries get the worker's own short names (`<tag>-<seq>`, within NAME_MAX whatever the
 * path), the original path and the reason in `log.jsonl` beside them. What cannot go there is
 * renamed in its own folder to `.agent-jobs-quarantined-<tag>-<seq>`, a name git never looks for;
 * only what cannot be renamed at all is left, and the result says "could NOT be moved". Moves are
 * made through descriptors opened without following symlinks, since a background job of the session
 * may swap a directory for a symlink meanwhile. So is every other file operation of the worker's
 * (root's) on what the session can write: what it creates is made with `O_CREAT|O_EXCL|O_NOFOLLOW`
 * and chowned by `fchown` on that descriptor, never by name (round 15: a chown by name followed a
 * symlink a job swapped in and gave a root-only host file to the session); renames, mkdir and
 * unlink name entries as `/proc/self/fd/<dir>/<name>`, Node's `*at` calls ({@link openDirAt}).
 *
 * The reading (the walk of the workspace, the git dir's lists) runs in a worker thread within a
 * time budget and a heap bound (git-walk.ts); the moves run on the worker's thread, yielding to its
 * event loop every {@link YIELD_EVERY} and at most {@link MAX_MOVES} per audit. A walk that does not
 * finish is a finding ("NOT checked"), in the result and the close note, never a clean workspace.
 * The root git dir is the `.git` at the workspace's root when that is, at start, a directory or a symlink to one in the
 * workspace (then the git dir is the link's target, the quarantine in it: a `.git` put in the link's place goes to
 * `.gitdir/agent-jobs-quarantine/`). A workspace with none (no repository, a monorepo's package, a linked worktree)
 * is audited too ({@link GitBaseline.rootless}; round 20): a `.git` missing at its root is a missing path, and with
 * no quarantine to move into, what is moved is renamed in its own folder. Attack tests: adversary-round10.test.ts,
 * adversary-round11.test.ts, adversary-round13.test.ts ("the symlink itself"), adversary-round14.test.ts,
 * adversary-round15.test.ts, adversary-round21.test.ts, missing-watch.test.ts.
 */
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MAX_NESTED_REPOS, type GuardedGit } from './git-guard';
import { auditIndex, recordIndex, type IndexBaseline, type NestedRepo } from './git-index-audit';
import { noteJoin, notedList, notedMost, type GitFinding, type NoteLayout } from './git-finding';
import { auditObjects, OBJECTS_AUDIT_MS, recordObjects, type ObjectsBaseline } from './git-objects-audit';
import { decodeName, GIT_WALK_LIMITS, nameBytes, showName, walkGit, type GitWalk } from './git-walk';
import { DIR_FLAGS, openDirAt, readRegularIfThere, tryReadRegular } from './safe-open';
import { auditGitState, recordGitState, type GitStateBaseline } from './git-state-audit';
import { ownerOf } from './worktree-git';

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
  /**
   * The symlinks met on the way to `.git`, its `config`, `hooks`, `info` and `config.worktree`, and to what the
   * config names in the workspace (git-guard.ts binds their targets, not the links, which are no mount points), in the
   * order met: each is put back when the session removed, renamed or replaced it ({@link HeldLink}).
   */
  readonly links: readonly HeldLink[];
  /**
   * Paths relative to the workspace that the config names as programs or files but where nothing was at start
   * (git-guard.ts {@link GuardedGit.missing}; each folder on the way a real folder then): whatever appears at one, or
   * a symlink on the way to it, is moved to the quarantine ({@link auditGit}).
   */
  readonly missing: readonly string[];
  /** File names git-guard.ts {@link GuardedGit.anywhere} lists: an entry (no folder) of one of them that the session makes anywhere in the workspace is moved to the quarantine. */
  readonly anywhere: readonly string[];
  /** Names git-guard.ts {@link GuardedGit.anywhereStems} lists: an entry, a folder too, named so or so and `.…`, that the session makes anywhere is moved. */
  readonly stems: readonly string[];
  /** The entries of an {@link anywhere} name or of a {@link stems} stem at start (relative to the workspace): left, as the person's own. */
  readonly anywhereAt: ReadonlySet<string>;
  /**
   * Paths relative to the workspace that an interpreter completes (git-guard.ts {@link GuardedGit.completed}): an entry
   * the session makes in such a path's folder named the path's name, `.` and anything (`scripts/fmt.js` for
   * `scripts/fmt`), a folder too, or a symlink on the way to that folder, is moved ({@link moveCompleted}).
   */
  readonly completed: readonly string[];
  /** The entries of the {@link completed} families at start (relative to the workspace): left, as the person's own. */
  readonly completedAt: ReadonlySet<string>;
  /** The last listing of each folder of a {@link completed} path ({@link folderNames}), read again once the folder changes. */
  readonly listings: Map<string, Listing>;
  /**
   * Set when the workspace's root held no git dir at start (`git` is then `<workspace>/.git`, missing or no git dir):
   * `.git` is a missing path when nothing was there, new git dirs below the root are moved as for a repository,
   * and moves rename in place (no quarantine to move into).
   */
  readonly rootless: boolean;
  /**
   * What the audit renamed in its own folder (`.agent-jobs-quarantined-<tag>-<seq>`, relative to the workspace) with its
   * inode: the audit's own, not taken for something the session made (a `.git` renamed so is a repository still).
   */
  readonly placed: Map<string, number>;
  /** Tells each quarantined entry apart (session id, at most 40 of `[A-Za-z0-9_-]`). */
  readonly tag: string;
  /**
   * Repositories below the root that were there at start but that the git guard did not hold (git-guard.ts
   * `GuardedGit.unguarded`, past its bound): named as NOT protected in every audit's findings, never silently.
   */
  readonly unguarded: readonly string[];
  /**
   * The nested repositories' git dirs the guard holds (git-guard.ts `GuardedGit.nestedGitDirs`, absolute), each with the
   * names in its `modules/` at start: a `commondir`, a new `modules/<name>` or a `modules` symlink made in one is moved.
   * Not the root git dir (the guard holds `.git -> .gitdir`'s target as a git dir of its own too): the root's checks cover it.
   */
  readonly nestedGitDirs: ReadonlyMap<string, ReadonlySet<string>>;
  /**
   * The replace refs of each of {@link nestedGitDirs} at start ({@link nestedReplaceRefs}): a new one is moved (loose)
   * or dropped from that git dir's `packed-refs`, as the root's are.
   */
  readonly nestedReplace: ReadonlyMap<string, NestedRefs>;
  /**
   * The object stores of the root's own git dir ({@link ownGitDirOf}) and of the other {@link nestedGitDirs} at start
   * (git-objects-audit.ts), each once: at close, what the session wrote there that git would read as other bytes than
   * an object's id names is moved.
   */
  readonly objects: readonly ObjectsBaseline[];
  /** The last `<seq>` the quarantine gave a name (`<tag>-<seq>`), kept across audits. */
  readonly names: { seq: number };
  /**
   * The index's bits and extensions, the ignore files' lines and the start time (git-index-audit.ts), for the part of
   * the audit on what the person's `git status` shows; undefined when rootless or the index could not be read at start.
   */
  readonly index: IndexBaseline | undefined;
  /**
   * HEAD, the refs and the operation state of the root's own git dir ({@link ownGitDirOf}) and of the other
   * {@link nestedGitDirs} at start (git-state-audit.ts), each once; undefined when the root has no git dir of its own.
   */
  readonly state: GitStateBaseline | undefined;
}

/**
 * A symlink the git guard holds by its target: where it is (relative to the workspace, its folder's path with no
 * symlink in it), what it says (`readlink`, as it was), and its owner, to put it back as it was.
 */
export interface HeldLink {
  readonly rel: string;
  readonly target: string;
  readonly uid: number;
  readonly gid: number;
}

/** The replace refs of one nested git dir ({@link nestedReplaceRefs}). */
export interface NestedRefs {
  /** Loose ones relative to `refs/replace`, packed ones as `packed:refs/replace/…`. */
  readonly refs: ReadonlySet<string>;
  /** Device, inode, size and change time of its `packed-refs` when last read (`none` when missing): unchanged is not read again. */
  packed: string;
}

export type { GitFinding } from './git-finding';

/** The folder of the root git dir that the audit moves things into. */
export const QUARANTINE = 'agent-jobs-quarantine';

/** The largest `packed-refs` the audit rewrites, bytes (a repository of a million refs is about 100 MB). */
const MAX_PACKED_REFS_BYTES = 256 << 20;

/** Things one audit moves or checks at most on the worker's thread; the rest is a finding, and the next audit goes on. */
const MAX_MOVES = 10_000;

/** The audit yields to the worker's event loop after this many moves or checks (each a few system calls). */
const YIELD_EVERY = 64;

/** The file in the quarantine that says what each entry was (JSON lines: name, path relative to the workspace with a byte of a name that is not UTF-8 as `\xNN`, why, at). */
export const QUARANTINE_LOG = 'log.jsonl';

/**
 * Makes `<git dir>/agent-jobs-quarantine` (`<workspace>/.git`, or the directory in the workspace a `.git` symlink
 * names: {@link gitDirOf}) a directory of the worker's, owned as `.git` is
 * (mode 0755), before the sandbox starts: the sandbox binds it read-only, so that no process of the
 * session can put a file or symlink at that name (which kept every move out) or take back what
 * was moved. Something else at that name (left by an earlier session) is renamed aside first, to
 * `agent-jobs-quarantine.blocked-<tag>` in `.git`. Call again before each new sandbox: a bind needs
 * its source. Run by the worker, with no process of the session started yet or alive in a sandbox
 * whose bind it would not see.
 * @returns its path, or undefined when `.git` is no directory or it cannot be made (moves then fall back to renames in place)
 */
export function prepareQuarantine(workspace: string, tag: string): string | undefined {
  const git = gitDirOf(workspace);
  if (git === undefined) return undefined;
  const fds: number[] = [];
  try {
    // By descriptor, not by name: a sibling session on the same workspace may be alive, and `.git` is its to write.
    // The git dir (`.git`, or the folder a `.git` symlink names) opened one folder at a time, no symlink followed.
    let dir = track(fds, fs.openSync(workspace, DIR_FLAGS));
    for (const part of path.relative(workspace, git).split('/')) dir = track(fds, openDirAt(dir, part));
    const at = (name: string): string => `/proc/self/fd/${dir}/${name}`;
    const st = fs.lstatSync(at(QUARANTINE), { throwIfNoEntry: false });
    if (st && !st.isDirectory()) fs.renameSync(at(QUARANTINE), at(`${QUARANTINE}.blocked-${tag}`));
    if (!st || !st.isDirectory()) track(fds, makeDirAt(dir, QUARANTINE));
    return path.join(git, QUARANTINE);
  } catch {
    return undefined;
  } finally {
    for (const fd of fds) fs.closeSync(fd);
  }
}

/** `fd`, after adding it to `fds` (closed by the caller). */
function track(fds: number[], fd: number): number {
  fds.push(fd);
  return fd;
}

/**
 * Makes the directory `name` (mode 0755) in the directory `dir` (a descriptor), owned as `dir` is,
 * and returns its descriptor. The owner is set with `fchown` on a descriptor opened without
 * following a symlink and checked to be the directory just made (the worker's, empty): a session
 * that renames the new directory away and puts a symlink at its name (`.git` is its to write) gets
 * the open refused, never a chown of what the symlink names (round 15).
 * @throws when it cannot be made, or what is at `name` once made is not the worker's new directory
 */
function makeDirAt(dir: number, name: string): number {
  fs.mkdirSync(`/proc/self/fd/${dir}/${name}`, { mode: 0o755 });
  const fd = openDirAt(dir, name);
  try {
    const st = fs.fstatSync(fd);
    if (st.uid !== process.geteuid?.() || fs.readdirSync(`/proc/self/fd/${fd}`).length > 0)
      throw new Error(`${name} is not the directory just made`);
    const owner = fs.fstatSync(dir);
    fs.fchownSync(fd, owner.uid, owner.gid);
    return fd;
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/** Whether two stats are of the same file (device and inode). */
const sameFile = (a: fs.Stats | undefined, b: fs.Stats): boolean => a !== undefined && a.dev === b.dev && a.ino === b.ino;

/**
 * The root git dir the audit watches: `<workspace>/.git` when it is a directory, or, when it is a symlink, the
 * directory it resolves to when that lies in the workspace (`.git -> .gitdir`: `<workspace>/.gitdir`), as git-guard.ts
 * binds it; undefined otherwise (missing, a file, a symlink elsewhere or to the workspace itself).
 */
export function gitDirOf(workspace: string): string | undefined {
  const dotGit = path.join(workspace, '.git');
  try {
    const st = fs.lstatSync(dotGit);
    if (st.isDirectory()) return dotGit;
    if (!st.isSymbolicLink()) return undefined;
    const real = fs.realpathSync(dotGit);
    return real.startsWith(`${workspace}/`) && fs.lstatSync(real).isDirectory() ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The git dir of the repository at `workspace`'s root, as git finds it, when it is the repository's own and lies in the
 * workspace: `root` ({@link gitDirOf}: `.git` a directory or a symlink to one), else the directory a `.git` file names
 * (`gitdir: .gitdir`, resolved as git resolves it) when that has no `commondir` (a linked worktree's admin folder is
 * not; its common dir is audited as the guard found it). Undefined otherwise. With such a file the audit stays rootless
 * (no quarantine, no index audit), but the object and state audits take that git dir as the root's.
 */
function ownGitDirOf(workspace: string, root: string | undefined): string | undefined {
  if (root !== undefined) return root;
  const dotGit = path.join(workspace, '.git');
  try {
    if (!fs.lstatSync(dotGit).isFile()) return undefined;
    const named = gitFileTarget(dotGit);
    return named !== undefined && named.startsWith(`${workspace}/`) && isDirectory(named) && !exists(path.join(named, 'commondir'))
      ? named
      : undefined;
  } catch {
    return undefined;
  }
}

/** The names git reads in the root git dir whose symlinks the audit holds ({@link HeldLink}), as git-guard.ts's CODE_ENTRIES. */
const HELD_NAMES = ['.git', '.git/config', '.git/hooks', '.git/info', '.git/config.worktree'] as const;

/**
 * The symlinks met while resolving each of {@link HELD_NAMES}, then each of `named` (absolute paths as the config
 * names them: git-guard.ts {@link GuardedGit.named}), in `workspace` (absolute, symlinks resolved), component
 * by component as the kernel does (`..` after a symlink is the parent of where it led), in the order met, each once;
 * a resolution stops where it leaves the workspace (read-only in the sandbox), at a missing entry or after 40 links.
 */
export function heldLinks(workspace: string, named: readonly string[] = []): HeldLink[] {
  const out = new Map<string, HeldLink>();
  const rels = named.filter((p) => p.startsWith(`${workspace}/`)).map((p) => path.relative(workspace, p));
  for (const name of [...HELD_NAMES, ...rels]) {
    let dir = workspace;
    let parts = name.split('/');
    for (let hops = 0; parts.length > 0;) {
      const part = parts.shift()!;
      if (part === '' || part === '.') continue;
      if (part === '..') {
        dir = path.dirname(dir);
        if (dir !== workspace && !dir.startsWith(`${workspace}/`)) break;
        continue;
      }
      const p = path.join(dir, part);
      let st: fs.Stats;
      let target: string;
      try {
        st = fs.lstatSync(p);
        if (!st.isSymbolicLink()) {
          dir = p;
          continue;
        }
        target = fs.readlinkSync(p);
      } catch {
        break;
      }
      if (++hops > 40) break;
      const rel = path.relative(workspace, p);
      if (!out.has(rel)) out.set(rel, { rel, target, uid: st.uid, gid: st.gid });
      if (path.isAbsolute(target)) {
        // An absolute target into the workspace goes on from its root; one elsewhere leaves it.
        if (target !== workspace && !target.startsWith(`${workspace}/`)) break;
        dir = workspace;
        parts = [...path.relative(workspace, target).split('/'), ...parts];
      } else parts = [...target.split('/'), ...parts];
    }
  }
  return [...out.values()];
}

/**
 * What the workspace's git metadata holds now, for {@link auditGit}; undefined when `workspace`
 * (absolute, symlinks resolved) has no root git dir ({@link gitDirOf}). `named`: what the guard holds by the names the
 * config gives ({@link heldLinks}). `repos`: the nested repositories the guard did not hold and the git dirs of those it
 * did (git-guard.ts `GuardedGit.unguarded`, `nestedGitDirs`). Read off the event loop (git-walk.ts).
 */
export async function recordGit(
  workspace: string,
  tag: string,
  named: readonly string[] = [],
  missing: readonly string[] = [],
  anywhere: readonly string[] = [],
  completed: readonly string[] = [],
  stems: readonly string[] = [],
  repos: Pick<GuardedGit, 'unguarded' | 'nestedGitDirs'> = { unguarded: [], nestedGitDirs: [] },
): Promise<GitBaseline | undefined> {
  const root = gitDirOf(workspace);
  if (!isDirectory(workspace)) return undefined;
  const git = root ?? path.join(workspace, '.git');
  // No repository of its own at the root: a `.git` the session makes there is what the person's git finds first (round 20).
  const more = root === undefined && !exists(git) ? [git] : [];
  // The nested git dirs' own config, hooks, info and config.worktree, and each nested `.git`, are held as the root's are.
  const nestedNamed = repos.nestedGitDirs.flatMap((d) => HELD_NAMES.filter((n) => n !== '.git').map((n) => path.join(d, n.slice(5))));
  const links = heldLinks(workspace, [...named, ...nestedNamed]);
  const walk = await walkGit(workspace, git, GIT_WALK_LIMITS, anywhere, stems);
  links.push(...heldLinks(workspace, nestedDotGits(workspace, walk)).filter((l) => !links.some((k) => k.rel === l.rel)));
  // The root git dir (a git dir of its own to the guard too, when `.git` links to it) is audited as the root, once.
  const ownGitDirs = repos.nestedGitDirs.filter((d) => d !== root && !exists(path.join(d, 'commondir')));
  // The repository at the root, by its real git dir: the state and object audits see it once, and as the root.
  const top = ownGitDirOf(workspace, root);
  const others = ownGitDirs.filter((d) => d !== top);
  const lists = new Map<string, Listing>();
  const rels = completed.filter((p) => p.startsWith(`${workspace}/`)).map((p) => path.relative(workspace, p));
  const nested = new Map<string, number>();
  for (const f of walk.found) nested.set(f.rel, f.ino);
  return {
    workspace,
    git,
    nested,
    commondir: exists(path.join(git, 'commondir')),
    modules: new Set(walk.modules),
    worktrees: new Set(walk.worktrees),
    replaceRefs: new Set(walk.replaceRefs),
    links,
    missing: [...missing, ...more]
      .filter((p) => p.startsWith(`${workspace}/`))
      .map((p) => path.relative(workspace, p))
      .filter((rel) => !exists(path.join(workspace, rel))),
    anywhere: [...anywhere],
    stems: [...stems],
    anywhereAt: new Set(walk.named),
    completed: rels,
    completedAt: new Set(rels.flatMap((rel) => completions(workspace, rel, lists))),
    listings: lists,
    rootless: root === undefined,
    placed: new Map(),
    tag,
    unguarded: [...repos.unguarded],
    nestedGitDirs: new Map(ownGitDirs.map((d) => [d, new Set(moduleNames(d))])),
    nestedReplace: new Map(ownGitDirs.flatMap((d) => nestedStart(d))),
    objects: [...(top === undefined ? [] : [top]), ...others].map((d) => recordObjects(d)),
    names: { seq: 0 },
    index: root === undefined ? undefined : await recordIndex(workspace, git, await ownerOf(workspace), nestedRepos(workspace, walk)),
    state: top === undefined ? undefined : await recordGitState(workspace, [top, ...others], await ownerOf(workspace)),
  };
}

/**
 * Finds and moves away what the session added since `b` was recorded (see the module comment).
 * `final`: the session is closing (no process of it is left), so a linked worktree outside the
 * workspace is stale too. Never rejects.
 */
export async function auditGit(b: GitBaseline, final: boolean): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  const q = new Quarantine(b);
  let done = 0;
  let left = 0;
  /** Whether one more move or check fits in this audit; yields to the event loop every {@link YIELD_EVERY}. */
  const pace = async (): Promise<boolean> => {
    if (done >= MAX_MOVES) {
      left++;
      return false;
    }
    if (++done % YIELD_EVERY === 0) await new Promise((r) => setImmediate(r));
    return true;
  };
  try {
    // First: the links by which git reaches the root git dir and its config, so that what follows reads the right one.
    for (const link of b.links) out.push(...q.holdLink(link));
    // First too: a `.git` made at a rootless workspace's root, before the walk reads it.
    if (b.rootless) out.push(...moveMissing(b, q));
    const walk = await walkGit(b.workspace, b.git, GIT_WALK_LIMITS, b.anywhere, b.stems);
    for (const f of walk.found) {
      if (b.nested.get(f.rel) === f.ino || b.placed.get(f.rel) === f.ino) continue;
      if (!(await pace())) continue;
      const abs = path.join(b.workspace, f.rel);
      if (f.kind === 'dotgit' && linkedWorktreeFile(abs, b, final)) continue;
      if (f.kind === 'split') {
        const why = `a HEAD and commondir that make ${f.rel} a git dir whose objects, refs and config are in the directory commondir names`;
        for (const name of ['HEAD', 'commondir']) out.push(q.move(path.join(abs, name), why));
      } else
        out.push(
          q.move(
            abs,
            f.kind === 'bare' ? 'a git repository of its own in the workspace' : 'a .git below the root, found first by git run there',
          ),
        );
    }
    if (walk.unfinished !== undefined) out.push(unchecked(b, `the walk stopped: ${walk.unfinished}`));
    out.push(...nestedFindings(b, q), ...(await objectFindings(b, q, final)));
    const gone: string[] = [];
    for (const rel of walk.named) {
      // Not what lies in a folder of such a name moved just before (the walk lists a folder before what is in it).
      if (b.anywhereAt.has(rel) || gone.some((g) => rel.startsWith(`${g}/`)) || !(await pace())) continue;
      out.push(q.move(path.join(b.workspace, rel), ANYWHERE_WHY));
      gone.push(rel);
    }
    if (b.rootless) {
      out.push(...moveCompleted(b, q), ...leftOver(b, left));
      // The git state of a git dir a root `.git` file names in the workspace (ownGitDirOf); no index audit here.
      out.push(...(await lastFindings(b, q, final)));
      return out;
    }
    for (const rel of ['modules', 'worktrees', 'refs/replace']) {
      const p = path.join(b.git, rel);
      if (isSymlink(p)) out.push(q.move(p, `a symlink for ${rel}, which git follows`));
    }
    if (!b.commondir && exists(path.join(b.git, 'commondir')))
      out.push(q.move(path.join(b.git, 'commondir'), "a commondir: git reads another directory's config"));
    for (const name of walk.modules)
      if (!b.modules.has(name) && (await pace()))
        out.push(q.move(path.join(b.git, 'modules', name), 'a submodule git dir that `git submodule update` reuses'));
    const worktreeConfig = readsWorktreeConfig(path.join(b.git, 'config'));
    for (const id of walk.worktrees) {
      if (b.worktrees.has(id) || !(await pace())) continue;
      const admin = path.join(b.git, 'worktrees', id);
      const why = strayAdmin(admin, b, final);
      if (why) out.push(q.move(admin, why));
      else if (worktreeConfig && exists(path.join(admin, 'config.worktree')))
        out.push(q.move(path.join(admin, 'config.worktree'), 'a config.worktree of a new linked worktree'));
    }
    out.push(...(await dropReplaceRefs(b, q, walk, pace)));
    out.push(...moveMissing(b, q), ...moveCompleted(b, q), ...leftOver(b, left));
    // Last: what the person's `git status` would not show, and the git state their next git command obeys.
    out.push(...(await lastFindings(b, q, final)));
  } catch (err) {
    out.push({ path: b.git, why: `the audit failed: ${(err as Error).message}`, movedTo: undefined, unchecked: true });
  } finally {
    q.close();
  }
  return out;
}

/**
 * What the audit finds of the repositories below the root that were there at start: those the guard did not hold,
 * named as NOT protected each time, and a `commondir` made in the git dir of one it held (moved: git would read the
 * config and hooks of the folder it names for that repository).
 */
function nestedFindings(b: GitBaseline, q: Quarantine): GitFinding[] {
  const out = b.unguarded.length > 0 ? [unchecked(b, unguardedWhy(b.unguarded))] : [];
  for (const [d, modules] of b.nestedGitDirs) {
    if (exists(path.join(d, 'commondir')))
      out.push(q.move(path.join(d, 'commondir'), "a commondir in a nested repository's git dir: git reads another directory's config"));
    if (isSymlink(path.join(d, 'modules'))) out.push(q.move(path.join(d, 'modules'), 'a symlink for modules, which git follows'));
    for (const name of moduleNames(d))
      if (!modules.has(name))
        out.push(
          q.move(
            path.join(d, 'modules', name),
            "a submodule git dir in a nested repository's git dir, which `git submodule update` reuses",
          ),
        );
    const start = b.nestedReplace.get(d);
    if (start) out.push(...nestedReplaceFindings(d, start, q));
  }
  return out;
}

/**
 * What the session wrote in the object stores that git would read as other bytes than an id names
 * (git-objects-audit.ts), at close only: no process of the session is left to race the checks, and hashing and pack
 * checks cost more than a command's audit may.
 */
async function objectFindings(b: GitBaseline, q: Quarantine, final: boolean): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  // One time bound for every repository's object store, so close's worst case does not grow with nested repositories.
  const until = Date.now() + OBJECTS_AUDIT_MS;
  if (final) for (const o of b.objects) out.push(...(await auditObjects(o, (abs, why) => q.move(abs, why), until)));
  return out;
}

/** The `.git` entries of the repositories nested in `workspace` at start (absolute), whose symlinks {@link heldLinks} holds. */
function nestedDotGits(workspace: string, walk: GitWalk): string[] {
  return walk.found.filter((f) => f.kind === 'dotgit').map((f) => path.join(workspace, f.rel));
}

/** `[gitDir, its replace refs]` when `gitDir` lies in the workspace and they could be read; none otherwise. */
function nestedStart(gitDir: string): [string, NestedRefs][] {
  const r = nestedReplaceRefs(gitDir, undefined);
  return r === undefined || r.refs === undefined ? [] : [[gitDir, { refs: r.refs, packed: r.packed }]];
}

/** The longest list of replace refs read in one nested git dir. */
const MAX_NESTED_REPLACE = 10_000;

/**
 * The replace refs in `gitDir` (absolute): loose ones under `refs/replace` (no symlink followed, at most
 * {@link MAX_NESTED_REPLACE}) and packed ones in `packed-refs` (read, with no symlink followed and at most
 * {@link MAX_PACKED_REFS_BYTES}, only when its stat differs from `packedWas`; `refs` lacks them then). `refs` is
 * undefined, with `why`, when either could not be read whole.
 */
function nestedReplaceRefs(gitDir: string, packedWas: string | undefined): { refs?: Set<string>; packed: string; why?: string } {
  const refs = new Set<string>();
  const walk = (rel: string): boolean => {
    let ents: fs.Dirent[];
    try {
      ents = fs.readdirSync(path.join(gitDir, 'refs', 'replace', rel), { withFileTypes: true });
    } catch (err) {
      return (err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR';
    }
    for (const e of ents) {
      const r = rel === '' ? e.name : `${rel}/${e.name}`;
      if (refs.size >= MAX_NESTED_REPLACE || (e.isDirectory() ? !walk(r) : !refs.add(r))) return false;
    }
    return true;
  };
  const file = path.join(gitDir, 'packed-refs');
  const packed = packedStat(file);
  if (!walk('')) return { packed, why: `${path.join(gitDir, 'refs', 'replace')} could not be read whole` };
  if (packed === 'none' || packed === packedWas) return { refs, packed };
  const read = tryReadRegular(file, MAX_PACKED_REFS_BYTES, false);
  if (!read || read.truncated) return { packed, why: `${file} could not be read whole (a symlink, no regular file, or too large)` };
  for (const m of read.bytes.toString('latin1').matchAll(/^[0-9a-fA-F]+[ \t]+(refs\/replace\/.+)$/gm))
    refs.add(`packed:${decodeName(Buffer.from(m[1]!, 'latin1'))}`);
  return { refs, packed };
}

/** Moves the loose replace refs made in nested `gitDir` since `start` and drops the packed ones from its `packed-refs`. */
function nestedReplaceFindings(gitDir: string, start: NestedRefs, q: Quarantine): GitFinding[] {
  const why = "a replace ref in a nested repository's git dir: git shows other content than what a push sends";
  const dir = path.join(gitDir, 'refs', 'replace');
  if (isSymlink(dir)) return [q.move(dir, 'a symlink for refs/replace in a nested git dir, which git follows')];
  const now = nestedReplaceRefs(gitDir, start.packed);
  if (now.refs === undefined)
    return [{ path: gitDir, why: `not checked for replace refs: ${now.why}`, movedTo: undefined, unchecked: true }];
  const out: GitFinding[] = [];
  let packed = false;
  for (const r of now.refs) {
    if (start.refs.has(r)) continue;
    if (r.startsWith('packed:')) packed = true;
    else out.push(q.move(path.join(dir, r), why));
  }
  if (packed) out.push(...q.rewritePackedRefs((ref) => ref.startsWith('refs/replace/') && !start.refs.has(`packed:${ref}`), why, gitDir));
  // Read again only once it changes: what was dropped is gone from it, what was kept was there at start.
  if (!out.some((f) => f.movedTo === undefined)) start.packed = packedStat(path.join(gitDir, 'packed-refs'));
  return out;
}

/** Device, inode, size, change and modification times of `file` (no symlink followed), or `none` when missing. */
function packedStat(file: string): string {
  const st = fs.lstatSync(file, { throwIfNoEntry: false });
  return st === undefined ? 'none' : `${st.dev}:${st.ino}:${st.size}:${st.ctimeMs}:${st.mtimeMs}`;
}

/** The names in `<gitDir>/modules` (none when it is missing, unreadable or a symlink). */
function moduleNames(gitDir: string): string[] {
  const dir = path.join(gitDir, 'modules');
  try {
    return isSymlink(dir) ? [] : fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** Why the repositories `unguarded` (relative paths, or why the walk at start did not find them all) were NOT protected. */
function unguardedWhy(unguarded: readonly string[]): string {
  const shown = unguarded.slice(0, MAX_NOTED).map(showName).join(', ');
  const more = unguarded.length > MAX_NOTED ? ` and ${unguarded.length - MAX_NOTED} more` : '';
  return `repositories below the root that were there at start were NOT protected (past the git guard's bound of ${MAX_NESTED_REPOS}, or not found at start): their hooks and config may hold what the session wrote: ${shown}${more}`;
}

/** The finding that `left` moves or checks did not fit in one audit ({@link MAX_MOVES}), or none. */
function leftOver(b: GitBaseline, left: number): GitFinding[] {
  return left > 0 ? [unchecked(b, `${left} more things to move or check than one audit does (${MAX_MOVES}); the next audit goes on`)] : [];
}

/** The audit's last parts: what the person's `git status` would not show, then the git state their next git command obeys (git-state-audit.ts). */
async function lastFindings(b: GitBaseline, q: Quarantine, final: boolean): Promise<GitFinding[]> {
  const out = b.index ? await indexFindings(b.index, q, final) : [];
  if (b.state) out.push(...(await auditGitState(b.state, final, (abs, why) => q.move(abs, why))));
  return out;
}

/**
 * What the person's `git status` would not show ({@link auditIndex} on `index`), as findings; a stale index.lock of the
 * session's is moved to the quarantine with `q` (at close) and named too.
 */
async function indexFindings(index: NonNullable<GitBaseline['index']>, q: Quarantine, final: boolean): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  const moveLock = (abs: string): boolean => {
    const moved = q.move(abs, 'an index.lock left by the session, which kept the index from being written');
    out.push(moved);
    return moved.movedTo !== undefined;
  };
  for (const f of await auditIndex(index, final, moveLock))
    out.push(
      f.kind === 'unchecked'
        ? { path: f.path, why: f.why, movedTo: undefined, unchecked: true }
        : { path: f.path, why: f.why, movedTo: undefined, hidden: f.kind },
    );
  return out;
}

/** Moves what now stands at or on the way to each of `b.missing` ({@link appeared}) with `q`; synchronous (the watch's too). */
function moveMissing(b: GitBaseline, q: Quarantine): GitFinding[] {
  const out: GitFinding[] = [];
  for (const rel of b.missing) {
    const at = appeared(b.workspace, rel);
    if (at !== undefined)
      out.push(
        q.move(
          at,
          `${at === path.join(b.workspace, rel) ? '' : `a symlink on the way to ${rel}, `}${rel === '.git' ? ROOT_WHY : MISSING_WHY}`,
        ),
      );
  }
  return out;
}

/**
 * Moves with `q` each entry that now stands in the folder of one of `b.completed` named as its completions are
 * ({@link completions}) and was not there at start, and a symlink on the way to that folder; synchronous (the watch's
 * too).
 */
function moveCompleted(b: GitBaseline, q: Quarantine): GitFinding[] {
  const out: GitFinding[] = [];
  const lists = b.listings;
  const moved = new Set<string>();
  for (const rel of b.completed) {
    const dir = path.dirname(rel);
    const link = dir === '.' ? undefined : appeared(b.workspace, dir);
    if (link !== undefined && isSymlink(link)) {
      out.push(q.move(link, `a symlink on the way to ${dir}, ${COMPLETED_WHY}`));
      continue;
    }
    for (const c of completions(b.workspace, rel, lists)) {
      if (b.completedAt.has(c) || moved.has(c)) continue;
      moved.add(c);
      out.push(q.move(path.join(b.workspace, c), COMPLETED_WHY));
    }
    const listing = lists.get(dir);
    if (listing?.more && !listing.told) {
      listing.told = true;
      out.push(
        unchecked(
          b,
          `${dir} holds more than ${MAX_FOLDER_NAMES} entries, so of the names an interpreter completes ${rel} to only ${LIKELY_COMPLETIONS.map((x) => `${path.basename(rel)}${x}`).join(', ')} were looked for`,
        ),
      );
    }
  }
  return out;
}

/**
 * The entries (relative to `workspace`) in the folder of `rel` whose name is `rel`'s name followed by `.` and anything,
 * when that folder is reached through real folders only (no symlink on the way); none otherwise. `lists` keeps each
 * folder's names for one pass (one read of a folder however many names it holds).
 */
function completions(workspace: string, rel: string, lists: Map<string, Listing>): string[] {
  const name = path.basename(rel);
  const dir = path.dirname(rel);
  const at = (n: string): string => (dir === '.' ? n : `${dir}/${n}`);
  const listing = folderNames(workspace, dir, lists);
  const out = new Set(listing.names.filter((n) => n.startsWith(`${name}.`)).map(at));
  // A folder too big to list whole: the usual completions are looked up by name (the caller says the rest was not).
  if (listing.more)
    for (const ext of LIKELY_COMPLETIONS)
      if (fs.lstatSync(nameBytes(path.join(workspace, at(`${name}${ext}`))), { throwIfNoEntry: false })) out.add(at(`${name}${ext}`));
  return [...out];
}

/** A folder's names as {@link folderNames} read them. */
interface Listing {
  /** The folder's inode, ctime and mtime when read (a change of its entries changes its ctime, which no session can set back). */
  readonly stamp: string;
  /** Its names, all of them or (`more`) the first {@link MAX_FOLDER_NAMES} read. */
  readonly names: readonly string[];
  readonly more: boolean;
  /** Whether {@link moveCompleted} said already that this listing is partial. */
  told?: boolean;
}

/**
 * Most names of one folder {@link folderNames} reads: a session can fill a folder with hundreds of thousands of files,
 * and the sweep lists it every 250 ms on the worker's event loop (round 25: blocks of 4.5 s while idle with 600,000).
 */
const MAX_FOLDER_NAMES = 20_000;

/** The completions looked up by name in a folder past {@link MAX_FOLDER_NAMES}: what node, python, sh and others try. */
const LIKELY_COMPLETIONS = [
  '.js',
  '.cjs',
  '.mjs',
  '.json',
  '.node',
  '.ts',
  '.py',
  '.pyc',
  '.pyw',
  '.so',
  '.sh',
  '.bash',
  '.rb',
  '.pl',
  '.php',
  '.lua',
];

/**
 * The names in `dir` (relative to `workspace`, `.` for it), at most {@link MAX_FOLDER_NAMES}; none when a symlink or no
 * folder is on the way. `lists` keeps the last listing of each folder, read again only when the folder changed.
 */
function folderNames(workspace: string, dir: string, lists: Map<string, Listing>): Listing {
  const none: Listing = { stamp: '', names: [], more: false };
  let p = workspace;
  if (dir !== '.')
    for (const part of dir.split('/')) {
      p = path.join(p, part);
      try {
        if (!fs.lstatSync(nameBytes(p)).isDirectory()) return none;
      } catch {
        return none;
      }
    }
  let st: fs.BigIntStats | undefined;
  try {
    st = fs.lstatSync(nameBytes(p), { bigint: true });
  } catch {
    return none;
  }
  const stamp = `${st.ino}:${st.ctimeNs}:${st.mtimeNs}`;
  const known = lists.get(dir);
  if (known !== undefined && known.stamp === stamp) return known;
  const names: string[] = [];
  let more = false;
  try {
    // Names as bytes (Node's opendir takes `buffer` as readdir does; its types say string encodings only).
    const d = fs.opendirSync(nameBytes(p), { encoding: 'buffer' } as unknown as fs.OpenDirOptions);
    try {
      for (let e = d.readSync(); e !== null; e = d.readSync()) {
        if (names.length === MAX_FOLDER_NAMES) {
          more = true;
          break;
        }
        names.push(decodeName(e.name as unknown as Buffer));
      }
    } finally {
      d.closeSync();
    }
  } catch {
    /* gone or unreadable: nothing there to move */
  }
  // Said once per folder that it is too big: a session that keeps changing it gets no note every sweep.
  const listing: Listing = { stamp, names, more, told: known?.told };
  lists.set(dir, listing);
  return listing;
}

/** Why an entry an interpreter completes a name of the config to is moved. */
const COMPLETED_WHY =
  "named as an interpreter completes a name the person's git config runs (`scripts/fmt` runs `scripts/fmt.js`, `-m tools.check` runs `tools/check.py`), made by the session, so the person's git would run it; review it and move it back from the quarantine if it is wanted";

/** How often (ms) {@link watchMissing} checks every missing path whatever the watch said: its bound when an event is lost. */
export const MISSING_SWEEP_MS = 250;

/**
 * Events {@link watchMissing}'s watches may deliver between two sweeps; past it they are closed until the next sweep.
 * A job that renames in a watched folder in a loop (a second session's, on the same workspace) makes events faster than
 * Node reads them, and libuv reads inotify until the queue is empty: without a bound the worker's event loop served
 * nothing else for as long as the job ran (71 s for one session start with two cores busy).
 */
export const WATCH_EVENT_BUDGET = 64;

/**
 * Watches the paths of `b.missing` while the session is open, between its commands too (round 21: a background job's
 * file there, written after a command's audit, ran in the person's `git status` on the host while the session was
 * idle): an inotify watch (`fs.watch`) on the deepest folder on the way to each that exists (a real folder, not a
 * symlink), set again on every event, so that a folder the session makes on the way is followed; on any event in one
 * of them, and every {@link MISSING_SWEEP_MS} whatever the events (Node's watch drops the kernel's `IN_Q_OVERFLOW`
 * unreported, and a folder made and filled before its watch is set sends nothing), what stands at each path is moved
 * ({@link moveMissing}) and `report` is called with the findings. Past {@link WATCH_EVENT_BUDGET} events between two
 * sweeps the watches are closed and the sweep alone keeps the bound until the next one sets them again (a storm of
 * events must not take the worker's event loop). Nothing for a baseline with no missing path.
 * `sweepMs` (default {@link MISSING_SWEEP_MS}) and `watch` (default `fs.watch`) are the tests' to set.
 * @returns stop: closes the watches and the sweep (call before the last audit)
 */
export function watchMissing(
  b: GitBaseline,
  report: (found: GitFinding[]) => void,
  sweepMs = MISSING_SWEEP_MS,
  watch: (dir: string | Buffer, listener: () => void) => fs.FSWatcher = (dir, listener) => fs.watch(dir, { persistent: false }, listener),
): () => void {
  if (b.missing.length === 0 && b.completed.length === 0) return () => undefined;
  const watches = new Map<string, fs.FSWatcher>();
  let stopped = false;
  let pending = false;
  // Events since the last sweep; past the budget no watch is set until the next sweep.
  let events = 0;
  const closeAll = (): void => {
    for (const w of watches.values()) w.close();
    watches.clear();
  };
  const onEvent = (): void => {
    if (stopped) return;
    if (++events > WATCH_EVENT_BUDGET) closeAll();
    schedule();
  };
  const check = (): void => {
    pending = false;
    if (stopped) return;
    const q = new Quarantine(b);
    let found: GitFinding[] = [];
    try {
      found = [...moveMissing(b, q), ...moveCompleted(b, q)];
    } catch {
      /* the next event or sweep tries again */
    } finally {
      q.close();
    }
    // A new folder on the way: watched from now, and checked once more for what was made in it before.
    if (arm()) schedule();
    if (found.length > 0) report(found);
  };
  const schedule = (): void => {
    if (pending || stopped) return;
    pending = true;
    setImmediate(check);
  };
  const arm = (): boolean =>
    events <= WATCH_EVENT_BUDGET &&
    setWatches(
      watches,
      new Set([...b.missing, ...b.completed].map((rel) => deepestFolder(b.workspace, rel))),
      (dir) => watch(nameBytes(dir), onEvent),
      schedule,
    );
  arm();
  const timer = setInterval(() => {
    events = 0;
    check();
  }, sweepMs);
  timer.unref();
  schedule();
  return () => {
    stopped = true;
    clearInterval(timer);
    closeAll();
  };
}

/**
 * Makes `watches` (folder → its watch) hold exactly the folders of `want`: closes the others, and sets a watch on each
 * new one with `open`; a watch that fails is closed and dropped, then `lost` is called (the caller checks at once).
 * @returns whether a watch was set (a folder new on the way, to be checked once more for what was made before)
 */
function setWatches(watches: Map<string, fs.FSWatcher>, want: Set<string>, open: (dir: string) => fs.FSWatcher, lost: () => void): boolean {
  for (const [dir, w] of watches)
    if (!want.has(dir)) {
      w.close();
      watches.delete(dir);
    }
  let added = false;
  for (const dir of want) {
    if (watches.has(dir)) continue;
    try {
      const w = open(dir);
      w.on('error', () => {
        w.close();
        watches.delete(dir);
        lost();
      });
      watches.set(dir, w);
      added = true;
    } catch {
      /* gone meanwhile: the sweep sets it again */
    }
  }
  return added;
}

/** The deepest folder on the way to `rel` (relative to `workspace`) that exists as a real folder (no symlink): the workspace at least. */
function deepestFolder(workspace: string, rel: string): string {
  let p = workspace;
  for (const part of path.dirname(rel).split('/')) {
    if (part === '.' || part === '') continue;
    const next = path.join(p, part);
    try {
      if (!fs.lstatSync(nameBytes(next)).isDirectory()) break;
    } catch {
      break;
    }
    p = next;
  }
  return p;
}

/** Why an entry of a {@link GitBaseline.anywhere} name is moved. */
const ANYWHERE_WHY =
  "of a name that the person's git config runs from a folder it cannot tell (the value changes folder or PATH), made by the session, so the person's git could run it; review it and move it back from the quarantine if it is wanted";

/** Why a `.git` made at the root of a workspace that had none is moved. */
const ROOT_WHY =
  "a .git made at the root of a workspace that had none: the person's git finds it first and obeys its config and hooks; review it and move it back if it is wanted";

/** Why a path the config names that was missing at start is moved: what the person's git would do, and what to do. */
const MISSING_WHY =
  "named by the person's git config and missing when the session started, so the person's git would run or read what the session made there; review it and move it back from the quarantine if it is wanted (e.g. installed by npm install)";

/**
 * What now stands on the way to `rel` (relative to `workspace`; missing at start, each folder on the way a real folder
 * then): the first symlink met, else the entry at `rel` whatever it is (a file, a hard link, a folder, a FIFO);
 * undefined when the path still ends at a missing name or at something that is no folder before its end.
 */
function appeared(workspace: string, rel: string): string | undefined {
  let p = workspace;
  const parts = rel.split('/');
  for (let i = 0; i < parts.length; i++) {
    p = path.join(p, parts[i]!);
    let st: fs.Stats | undefined;
    try {
      st = fs.lstatSync(nameBytes(p), { throwIfNoEntry: false });
    } catch {
      return undefined;
    }
    if (st === undefined) return undefined;
    if (st.isSymbolicLink() || i === parts.length - 1) return p;
    if (!st.isDirectory()) return undefined;
  }
  return undefined;
}

/** The finding that part of `b`'s workspace was not checked. */
const unchecked = (b: GitBaseline, why: string): GitFinding => ({ path: b.workspace, why, movedTo: undefined, unchecked: true });

/**
 * The note a command's result carries for `findings` (paths relative to the workspace, at most
 * {@link notedMost} of a kind named), or undefined when there are none; `layout` `lines` for the note a person reads
 * at close, a part and a finding a line ({@link NoteLayout}).
 */
export function gitAuditNote(findings: readonly GitFinding[], b: GitBaseline, layout: NoteLayout = 'line'): string | undefined {
  if (findings.length === 0) return undefined;
  const rel = (p: string): string => showName(path.relative(b.workspace, p)) || '.';
  const most = notedMost(layout);
  const listed = (items: readonly string[]): string => notedList(items.slice(0, most), items.length - most, layout);
  const named = (fs: readonly GitFinding[]): string => listed(fs.map((f) => `${rel(f.path)} (${f.why})`));
  const moved = findings.filter((f) => f.movedTo !== undefined && !f.inPlace);
  const inPlace = findings.filter((f) => f.inPlace);
  const relinked = findings.filter((f) => f.relinked !== undefined);
  const stuck = findings.filter((f) => f.movedTo === undefined && !f.unchecked && f.relinked === undefined && f.hidden === undefined);
  const unchecked = findings.filter((f) => f.unchecked);
  const parts = [];
  const dropped = moved.filter((f) => f.movedTo === 'dropped');
  const toQuarantine = moved.filter((f) => f.movedTo !== 'dropped');
  if (toQuarantine.length > 0) parts.push(`moved to ${rel(path.join(b.git, QUARANTINE))}:${named(toQuarantine)}`);
  if (dropped.length > 0) parts.push(`dropped from packed-refs:${named(dropped)}`);
  if (relinked.length > 0)
    parts.push(`symlinks the git guard holds by their target put back:${listed(relinked.map((f) => `${rel(f.path)} -> ${f.relinked}`))}`);
  if (inPlace.length > 0)
    parts.push(`renamed in their folders to .agent-jobs-quarantined-* (the quarantine could not take them):${named(inPlace)}`);
  if (stuck.length > 0) parts.push(`could NOT be moved, check by hand:${named(stuck)}`);
  const hidden = hiddenNote(findings, named);
  parts.push(...hidden.parts);
  if (unchecked.length > 0)
    parts.push(
      `the workspace was NOT checked whole, so git metadata may be left that the person's git would obey; do not run git in it before checking by hand:${named(unchecked)}`,
    );
  const whats = [
    moved.length + inPlace.length + stuck.length + relinked.length > 0
      ? "the session made git metadata that the person's git would obey later"
      : '',
    ...hidden.whats,
  ].filter((w) => w !== '');
  const join = noteJoin(layout);
  const head = whats.join(join) || 'the git audit';
  return parts.length > 0 ? `${head}${join}${parts.join(join)}` : head;
}

/**
 * The parts of {@link gitAuditNote} for what the person's `git status` would not show (git-index-audit.ts), each list
 * of `findings` written by `named`; and what happened, in a phrase or two.
 */
function hiddenNote(findings: readonly GitFinding[], named: (fs: readonly GitFinding[]) => string): { parts: string[]; whats: string[] } {
  const of = (kind: GitFinding['hidden']): GitFinding[] => findings.filter((f) => f.hidden === kind);
  const [shown, ignored, notShown, unlisted, nested, removed, partial, state] = [
    of('shown'),
    of('ignored'),
    of('failed'),
    of('unlisted'),
    of('nested'),
    of('removed'),
    of('partial'),
    of('state'),
  ];
  const parts = [];
  if (shown.length > 0) parts.push(`git status shows again:${named(shown)}`);
  if (notShown.length > 0) parts.push(`git status may still NOT show, check by hand:${named(notShown)}`);
  if (partial.length > 0) parts.push(`ignored files NOT fully checked:${named(partial)}`);
  // What was found under ignore rules is said once, in its heading; each path adds only its rule (git-index-audit.ts).
  const whats = [
    shown.length + notShown.length > 0 ? "the session hid changes from the person's git status" : '',
    ignored.length > 0
      ? `the session made or changed files that an ignore rule it wrote keeps out of git status; review them (\`git status --ignored\` lists them):${named(ignored)}`
      : '',
    unlisted.length > 0
      ? `the session made or changed files that your own ignore rules keep out of git status; review them:${named(unlisted)}`
      : '',
    nested.length > 0
      ? `the session changed files in a repository nested in the workspace, which the person's git status may not show; review them there:${named(nested)}`
      : '',
    partial.length > 0 ? 'the audit did not read every ignored file' : '',
    state.length > 0 ? `the session left git state that your next git command obeys; review it:${named(state)}` : '',
    removed.length > 0
      ? `the session wrote Python bytecode, which Python would run instead of its source (its header may claim the source's mtime and size); removed, Python writes it again from the source:${named(removed)}`
      : '',
  ];
  return { parts, whats };
}

/** How many paths a one-line note names. */
const MAX_NOTED = 5;

/** A loose match for `extensions.worktreeConfig` on (as git-guard.ts). */
const WORKTREE_CONFIG = /worktreeconfig\s*=\s*(true|yes|on|1)?\s*$/im;

/**
 * Whether the config file `file` may turn `extensions.worktreeConfig` on ({@link WORKTREE_CONFIG}): false when it is
 * missing, true when it is there but cannot be read (what git reads of it is unknown, so a new worktree's
 * `config.worktree` is moved as if it were on; adversary round 23: unreadable was taken for empty).
 */
function readsWorktreeConfig(file: string): boolean {
  try {
    return WORKTREE_CONFIG.test(readRegularIfThere(file, 1 << 20, false)?.bytes.toString('utf8') ?? '');
  } catch {
    return true;
  }
}

/** Whether `file` is a `.git` file naming an admin folder of the root's repository that the audit keeps (`git worktree add` in the workspace). */
function linkedWorktreeFile(file: string, b: GitBaseline, final: boolean): boolean {
  try {
    if (!fs.lstatSync(nameBytes(file)).isFile()) return false;
    // The admin folder as git reaches it (symlinks on the way followed), and it must be one of the repository's own.
    const admin = gitFileTarget(file);
    if (admin === undefined || path.dirname(admin) !== path.join(b.git, 'worktrees') || !fs.lstatSync(nameBytes(admin)).isDirectory())
      return false;
    return strayAdmin(admin, b, final) === undefined;
  } catch {
    return false;
  }
}

/** Why a new admin folder `worktrees/<id>` would lead the person's git astray, or undefined when it is a worktree of the repository's own. */
function strayAdmin(admin: string, b: GitBaseline, final: boolean): string | undefined {
  try {
    if (!fs.lstatSync(nameBytes(admin)).isDirectory()) return 'not a folder';
    // A FIFO (or socket, device) where git and the next session's guard read a file would make them wait for a writer.
    for (const name of ['commondir', 'gitdir', 'config.worktree']) {
      const st = fs.statSync(nameBytes(path.join(admin, name)), { throwIfNoEntry: false });
      if (st !== undefined && !st.isFile()) return `a linked worktree whose ${name} is no regular file`;
    }
    const common = gitPath(path.join(admin, 'commondir'));
    if (common === undefined || resolveAsGit(admin, common) !== b.git) return "a linked worktree whose commondir is not the repository's";
  } catch {
    return "a linked worktree whose commondir is not the repository's";
  }
  let raw: Buffer | undefined;
  try {
    raw = gitPath(path.join(admin, 'gitdir'));
  } catch (err) {
    // There, but not read as git reads it (a symlink, which git follows; EWOULDBLOCK; over 1 MiB): not taken for none.
    return `a linked worktree whose gitdir the audit cannot read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`;
  }
  // git reads this file in more than one way (`git worktree prune` strips CR and LF, `list` all blanks): a path that a
  // line break or NUL could end early is read no way, and one that is only blanks is none.
  if (raw !== undefined && /[\r\n\0]/.test(raw.toString('latin1'))) return 'a linked worktree whose gitdir git may read otherwise';
  const gitdir = raw === undefined ? '' : decodeName(raw).trim();
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
  try {
    return gitFileTarget(dotGit) === realpath(admin);
  } catch {
    return false;
  }
}

/**
 * The path a file of git's holding one (`commondir`, `gitdir`, the rest of a `.git` file) gives, read as git reads it
 * (setup.c `get_common_dir_noenv`, `read_gitfile_gently`): the whole content, its trailing CR and LF stripped, then up to
 * the first NUL (git goes on with a C string). Not a first line: round 15's `gitdir: <CR><LF>gitdir: ../.git/worktrees/w`
 * is one path to git, `<CR><LF>gitdir: ../.git/worktrees/w`, and a `commondir` of `../..<LF>X` names `..<LF>X`. Undefined
 * when the file is missing or gives an empty path (git refuses it then).
 * @param skip bytes that must open the file and are not part of the path (`gitdir: ` for a `.git` file), else undefined
 * @throws when the file is there but cannot be read whole (a symlink, no plain file, EWOULDBLOCK under a lease, over
 *   1 MiB): git may read it all the same, so that is never "no path" (adversary round 23)
 */
function gitPath(file: string, skip?: Buffer): Buffer | undefined {
  const r = readRegularIfThere(file, 1 << 20, false);
  if (!r) return undefined;
  if (r.truncated) throw new Error(`${file} is over 1 MiB`);
  if (skip && !r.bytes.subarray(0, skip.length).equals(skip)) return undefined;
  let end = r.bytes.length;
  while (end > 0 && (r.bytes[end - 1] === 0x0a || r.bytes[end - 1] === 0x0d)) end--;
  const rest = r.bytes.subarray(skip?.length ?? 0, Math.max(end, skip?.length ?? 0));
  const nul = rest.indexOf(0);
  const p = nul >= 0 ? rest.subarray(0, nul) : rest;
  return p.length > 0 ? p : undefined;
}

/**
 * The git dir a `.git` file names, as git finds it ({@link gitPath} after `gitdir: `, from the file's folder), resolved;
 * undefined when git would refuse the file.
 * @throws as {@link gitPath} (there but unreadable) and {@link resolveAsGit} (names nothing)
 */
function gitFileTarget(file: string): string | undefined {
  const p = gitPath(file, GITDIR_PREFIX);
  return p === undefined ? undefined : resolveAsGit(path.dirname(file), p);
}

const GITDIR_PREFIX = Buffer.from('gitdir: ');

/**
 * `p` (bytes, from a file of git's) taken from the folder `dir` as git does (absolute as it is, else `<dir>/<p>`) with every
 * symlink resolved as the kernel and git's `strbuf_realpath` do, before a `..` after it (not `path.resolve`, which drops
 * `<symlink>/..` by its text); names as git-walk.ts's `decodeName` gives them.
 * @throws when it names nothing
 */
function resolveAsGit(dir: string, p: Buffer): string {
  const full = p[0] === 0x2f ? p : Buffer.concat([Buffer.from(nameBytes(dir)), Buffer.from('/'), p]);
  return decodeName(fs.realpathSync.native(full, { encoding: 'buffer' }));
}

/**
 * The repositories nested in `workspace` at start, from git-walk.ts's `walk` of it: each `.git` below the root that is
 * a folder, or a file naming a git dir ({@link gitFileTarget}), with its work tree; for the index audit
 * (git-index-audit.ts), which audits each as the top one.
 */
function nestedRepos(workspace: string, walk: GitWalk): NestedRepo[] {
  const out: NestedRepo[] = [];
  for (const f of walk.found) {
    if (f.kind !== 'dotgit') continue;
    const abs = path.join(workspace, f.rel);
    try {
      const st = fs.lstatSync(nameBytes(abs));
      const git = st.isDirectory() ? abs : st.isFile() ? gitFileTarget(abs) : undefined;
      if (git !== undefined) out.push({ worktree: path.dirname(abs), git });
    } catch {
      /* gone, or a .git file naming nothing: no repository to audit */
    }
  }
  return out;
}

/** Moves the loose replace refs made since `b` and drops the packed ones from `packed-refs` (as `walk` listed them). */
async function dropReplaceRefs(b: GitBaseline, q: Quarantine, walk: GitWalk, pace: () => Promise<boolean>): Promise<GitFinding[]> {
  const out: GitFinding[] = [];
  const why = 'a replace ref: git shows other content than what a push sends';
  let packed = false;
  for (const r of walk.replaceRefs) {
    if (b.replaceRefs.has(r)) continue;
    if (r.startsWith('packed:')) packed = true;
    else if (await pace()) out.push(q.move(path.join(b.git, 'refs', 'replace', r), why));
  }
  if (packed) out.push(...q.rewritePackedRefs((ref) => ref.startsWith('refs/replace/') && !b.replaceRefs.has(`packed:${ref}`), why));
  return out;
}

/**
 * Moves entries of the workspace into `<git>/agent-jobs-quarantine/`, each through a descriptor
 * of its parent opened component by component without following a symlink (`/proc/self/fd/N/name`),
 * so that a directory swapped for a symlink meanwhile cannot send a move of the worker (root) elsewhere.
 * Names are the worker's own, `<tag>-<seq>` (at most 40 + 1 + 10 bytes: within NAME_MAX, which a
 * name made of the path was not for a long non-ASCII one); {@link QUARANTINE_LOG} says what each was.
 */
class Quarantine {
  /** Descriptors opened, closed by {@link close}. */
  private readonly fds: number[] = [];
  private dest: number | undefined;

  /** The root git dir relative to the workspace (`.git`, or where a `.git` symlink led at start), opened without following a symlink. */
  private readonly gitRel: string;

  constructor(private readonly b: GitBaseline) {
    this.gitRel = path.relative(b.workspace, b.git);
  }

  /**
   * Puts `link` back when what stands at its path is not that same symlink: what stands there (a file, a
   * directory, another symlink) is moved away first ({@link move}), then the symlink is made again, owned as it was.
   * A job of the session that fills the name again meanwhile is moved too, three times at most.
   * @returns the findings (none when the link is as it was)
   */
  holdLink(link: HeldLink): GitFinding[] {
    const abs = path.join(this.b.workspace, link.rel);
    const out: GitFinding[] = [];
    const why = `in place of the symlink ${link.rel} -> ${link.target}, which the git guard holds by its target: the person's git would read it instead`;
    for (let tries = 0; tries < 3; tries++) {
      let at: string;
      let st: fs.Stats | undefined;
      try {
        at = `/proc/self/fd/${this.openDir(path.dirname(link.rel))}/${path.basename(link.rel)}`;
        st = fs.lstatSync(at, { throwIfNoEntry: false });
        if (st?.isSymbolicLink() && fs.readlinkSync(at) === link.target) return out;
      } catch {
        break;
      }
      if (st) {
        const moved = this.move(abs, why);
        out.push(moved);
        if (moved.movedTo === undefined) return out;
      }
      try {
        fs.symlinkSync(link.target, at);
        fs.lchownSync(at, link.uid, link.gid);
        // The audit's own from now on: a nested `.git` link put back is no new `.git` for the walk to move.
        this.b.placed.set(link.rel, fs.lstatSync(at).ino);
        out.push({ path: abs, why: 'removed, renamed or replaced by the session', movedTo: undefined, relinked: link.target });
        return out;
      } catch {
        /* filled again meanwhile: moved on the next try */
      }
    }
    out.push({ path: abs, why: `the symlink ${link.rel} -> ${link.target} could not be put back`, movedTo: undefined });
    return out;
  }

  /**
   * Moves `abs` (inside the workspace) to the quarantine, or, when the quarantine cannot take it,
   * renames it in its own folder to `.agent-jobs-quarantined-<tag>-<seq>` (a name git never looks
   * for); the finding says where, or that neither was possible (its folder cannot be reached
   * without a symlink, or it is gone).
   */
  move(abs: string, why: string): GitFinding {
    const rel = path.relative(this.b.workspace, abs);
    let parent: number;
    try {
      parent = this.openDir(path.dirname(rel));
    } catch {
      return { path: abs, why, movedTo: undefined };
    }
    const from = `/proc/self/fd/${parent}/${path.basename(abs)}`;
    try {
      const dest = this.quarantine();
      const name = this.freeName(dest, '');
      fs.renameSync(nameBytes(from), `/proc/self/fd/${dest}/${name}`);
      this.log(dest, { name, path: showName(rel), why, at: new Date().toISOString() });
      return { path: abs, why, movedTo: path.join(this.b.git, QUARANTINE, name) };
    } catch {
      /* renamed in place below */
    }
    try {
      const name = this.freeName(parent, '.agent-jobs-quarantined-');
      fs.renameSync(nameBytes(from), `/proc/self/fd/${parent}/${name}`);
      const st = fs.lstatSync(`/proc/self/fd/${parent}/${name}`, { throwIfNoEntry: false });
      if (st) this.b.placed.set(path.join(path.dirname(rel), name).replace(/^\.\//, ''), st.ino);
      return { path: abs, why, movedTo: path.join(path.dirname(abs), name), inPlace: true };
    } catch {
      return { path: abs, why, movedTo: undefined };
    }
  }

  /** `<prefix><tag>-<seq>` with the next `seq` whose name is free in directory `dir` (a descriptor). */
  private freeName(dir: number, prefix: string): string {
    for (let tries = 0; tries < 1000; tries++) {
      const name = `${prefix}${this.b.tag}-${++this.b.names.seq}`;
      if (!fs.lstatSync(`/proc/self/fd/${dir}/${name}`, { throwIfNoEntry: false })) return name;
    }
    throw new Error('no free name');
  }

  /**
   * Appends `entry` to the quarantine's log (owned as the git dir is); a log that cannot be written loses the line, not the
   * move. Made with `O_EXCL` and chowned by its descriptor; an existing one is written only when it is a plain file of one
   * link (not a hard link to a file elsewhere).
   */
  private log(dest: number, entry: { name: string; path: string; why: string; at: string }): void {
    const c = fs.constants;
    const file = `/proc/self/fd/${dest}/${QUARANTINE_LOG}`;
    let fd: number | undefined;
    try {
      try {
        fd = fs.openSync(file, c.O_WRONLY | c.O_APPEND | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o644);
        const owner = fs.fstatSync(dest);
        fs.fchownSync(fd, owner.uid, owner.gid);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        fd = fs.openSync(file, c.O_WRONLY | c.O_APPEND | c.O_NOFOLLOW | c.O_NONBLOCK);
        const st = fs.fstatSync(fd);
        if (!st.isFile() || st.nlink !== 1) return;
      }
      fs.writeSync(fd, `${JSON.stringify(entry)}\n`);
    } catch {
      /* the entry is moved all the same; its name says which session */
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }

  /**
   * Drops from `packed-refs` the refs `drop` names (and their peeled lines), by a new file renamed over it, owned as it
   * was. `.git` is the session's to write and its background jobs run during the audit, so every step is on a
   * descriptor or a name relative to one (round 15: a chown by name of the temporary file followed a symlink a job
   * swapped in and gave a root-only host file to the session): the file is read through the descriptor whose `fstat`
   * gives its size, owner and mode; the new one is made with `O_CREAT | O_EXCL | O_NOFOLLOW` at a random name, written,
   * `fchown`ed and `fchmod`ed on that descriptor, and renamed (`renameat` through `/proc/self/fd/<.git>/`, which moves the
   * name itself, never what a symlink names) only while that name is still the file made; the refs are reported
   * dropped only when `packed-refs` is that file afterwards. Lines are kept byte for byte (latin1 in, latin1 out).
   * `gitDir`: the git dir (absolute, in the workspace) whose `packed-refs` it is; the root's by default.
   */
  rewritePackedRefs(drop: (ref: string) => boolean, why: string, gitDir = this.b.git): GitFinding[] {
    const out: GitFinding[] = [];
    const file = path.join(gitDir, 'packed-refs');
    // Not dropped: each ref read that would have been, or the file when none could be read.
    const failed = (): GitFinding[] =>
      out.length > 0 ? out.map((f) => ({ ...f, movedTo: undefined })) : [{ path: file, why, movedTo: undefined }];
    let dir: number;
    try {
      dir = this.openDir(path.relative(this.b.workspace, gitDir));
    } catch {
      return failed();
    }
    const at = (name: string): string => `/proc/self/fd/${dir}/${name}`;
    const tmp = `packed-refs.${this.b.tag}.${randomBytes(8).toString('hex')}.tmp`;
    let fd: number | undefined;
    let made: fs.Stats | undefined;
    try {
      const old = tryReadRegular(at('packed-refs'), MAX_PACKED_REFS_BYTES, false);
      // Rewritten whole or not at all: a ref cut off would be lost.
      if (!old || old.truncated) return failed();
      const kept: string[] = [];
      let dropping = false;
      for (const line of old.bytes.toString('latin1').split('\n')) {
        const ref = /^[0-9a-fA-F]+[ \t]+(.+)$/.exec(line)?.[1]; // as git reads it: hex of either case, then spaces or tabs
        if (ref !== undefined) dropping = drop(decodeName(Buffer.from(ref, 'latin1')));
        if (ref !== undefined && dropping)
          out.push({ path: `${file}: ${decodeName(Buffer.from(ref, 'latin1'))}`, why, movedTo: 'dropped' });
        if (!(dropping && (ref !== undefined || line.startsWith('^')))) kept.push(line);
      }
      const c = fs.constants;
      fd = fs.openSync(at(tmp), c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o600);
      made = fs.fstatSync(fd);
      fs.writeFileSync(fd, Buffer.from(kept.join('\n'), 'latin1'));
      fs.fchownSync(fd, old.st.uid, old.st.gid);
      fs.fchmodSync(fd, old.st.mode & 0o777);
      fs.closeSync(fd);
      fd = undefined;
      if (!sameFile(fs.lstatSync(at(tmp), { throwIfNoEntry: false }), made)) return failed();
      fs.renameSync(at(tmp), at('packed-refs'));
      return sameFile(fs.lstatSync(at('packed-refs'), { throwIfNoEntry: false }), made) ? out : failed();
    } catch {
      return failed();
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
      // Left behind only on failure; removed by name only while it is still the file made (unlink follows no symlink).
      try {
        if (made && sameFile(fs.lstatSync(at(tmp), { throwIfNoEntry: false }), made)) fs.unlinkSync(at(tmp));
      } catch {
        /* gone */
      }
    }
  }

  close(): void {
    for (const fd of this.fds.splice(0)) fs.closeSync(fd);
  }

  /** The quarantine folder's descriptor, made (owned as the git dir is, {@link makeDirAt}) when missing (the person removed it during the run). */
  private quarantine(): number {
    if (this.dest !== undefined) return this.dest;
    if (this.b.rootless) throw new Error('no root git dir to keep a quarantine in');
    const git = this.openDir(this.gitRel);
    try {
      this.dest = this.track(makeDirAt(git, QUARANTINE));
    } catch {
      // There already: opened without following a symlink.
      this.dest = this.track(openDirAt(git, QUARANTINE));
    }
    return this.dest;
  }

  /** A descriptor of the directory `rel` (relative to the workspace), no symlink followed on the way. */
  private openDir(rel: string): number {
    let fd = this.track(fs.openSync(this.b.workspace, DIR_FLAGS));
    for (const part of rel.split('/').filter((p) => p !== '' && p !== '.')) {
      if (part === '..') throw new Error('outside the workspace');
      fd = this.track(openDirAt(fd, part));
    }
    return fd;
  }

  private track(fd: number): number {
    this.fds.push(fd);
    return fd;
  }
}

/** `p` (its names as git-walk.ts's `decodeName` gives them) with every symlink resolved, the same way; throws as `realpathSync`. */
function realpath(p: string): string {
  return decodeName(fs.realpathSync(nameBytes(p), { encoding: 'buffer' }));
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

function exists(p: string): boolean {
  try {
    fs.lstatSync(nameBytes(p));
    return true;
  } catch {
    return false;
  }
}

function isSymlink(p: string): boolean {
  try {
    return fs.lstatSync(nameBytes(p)).isSymbolicLink();
  } catch {
    return false;
  }
}
