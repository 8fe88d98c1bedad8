/**
 * What of the workspace's own git repository a session may not write: the files in which git
 * finds programs to run (`config`, `hooks/`, `info/`, `config.worktree`), so that nothing a
 * session plants there runs later in the person's own `git status` on the host, outside the
 * sandbox (core.fsmonitor, core.hooksPath, a hook, a filter driver). A sub-agent's worktree is
 * held the same way (pins.ts, worktree-git.ts).
 *
 * The sandbox binds them read-only over the writable workspace, and binds `.git` itself onto
 * itself, so that `.git` is a mount point: the session can neither rename it away nor remove it
 * (EBUSY), and so cannot put a `.git` of its own in its place. Objects, refs, logs, the index
 * and HEAD stay writable: `git add`, `commit`, `checkout -b`, `log`, `status` work.
 *
 * The person's linked worktrees (`git worktree add ../feature`) keep their admin folder in
 * `.git/worktrees/<id>/`, whose `commondir` names the repository git then reads the config and
 * hooks of for that worktree: `worktrees/` and each folder in it are bound onto themselves too,
 * and each folder's `commondir`, `gitdir` and `config.worktree` read-only (gitrepository-layout(5);
 * the rest of a linked worktree's config, hooks and info are the common dir's). New folders stay
 * possible, so `git worktree add` works in the session. Attack tests: adversary-round11.test.ts.
 *
 * What the config makes git read or run is found by git itself (`git config --file F --null
 * --list` on the config and each file it includes, with no repository, hooks, system or global
 * config), not by a hand parser: every include, whatever its condition; `core.hooksPath` (husky
 * 9's `.husky/_`, whose files git ignores); and every existing file that any word of any value
 * names, whatever the key ({@link valueFiles}: a leading `!`, quotes, `cd dir &&`, `$PWD/` and
 * the like seen through), since a list of the keys whose value git runs (PROGRAM_KEYS) was short
 * of `!` aliases and helpers, `trailer.*.cmd`, `interactive.diffFilter` and others (round 15) and
 * grows with git. Whatever of it lies in the workspace, symlinks resolved, is bound read-only; a
 * `.git` or `.git/config` that is a symlink into the workspace counts by its target (attack tests:
 * adversary-round13.test.ts, kind 6; adversary-round15.test.ts, "a program the person's config
 * names"). Not bound: what a program reads without its config value naming it (`!make fmt` runs
 * the Makefile, as the person's own `make fmt` would), a program found on `PATH`, and a relative
 * path git resolves against the person's current folder because it runs the program before it
 * goes to the work tree's root (`git -p version` in `sub/` runs `core.pager = ./p.sh` as
 * `sub/p.sh`, which the session can create). Each folder on the way to a read-only path in the
 * workspace is bound onto itself ({@link pinFolders}), so that the session cannot rename it away
 * and make a new one with a program of its own at the same path (`mv scripts s2 && mkdir
 * scripts`; `.husky` for `core.hooksPath = .husky/_`; an included file's folder); a symlink on
 * the way to a program is no mount point: the git audit puts it back when the session replaces it
 * (git-audit.ts `heldLinks`, from {@link GuardedGit.named}). A path a word names where nothing is
 * at start (`alias.lint = !node_modules/.bin/eslint .` before `npm install`) cannot be bound; it is
 * recorded ({@link GuardedGit.missing}) and the git audit moves what appears there to the quarantine
 * (adversary round 19; missing-named.test.ts), at once while the session is open (git-audit.ts `watchMissing`). The
 * folder of a `cd`/`pushd` and of a `PATH=` entry counts as a base, missing or not, and a value that can change its
 * folder or `PATH` in ways the text does not tell ({@link MOVES_DIR}: `cd "$GIT_PREFIX"`, `sh -c`, `eval`) has its
 * program words' names recorded for anywhere in the workspace ({@link GuardedGit.anywhere}; adversary round 21). A name
 * an interpreter completes (`!node scripts/fmt` runs `scripts/fmt.js`, `-m tools.check` runs `tools/check.py`) is
 * guarded by its family, the name and every `<name>.…` beside it ({@link GuardedGit.completed}, {@link recordCompletions}),
 * with an interpreter's bare operands, a module's packages and a folder's entry points, and a file that stands where a
 * folder of a named path would be is bound ({@link blockerOf}; adversary round 23, resolved-names.test.ts).
 *
 * Each repository below the workspace's root that was there at start (a nested `vendor/lib`, a submodule's
 * `.git/modules/<name>`, a bare repository, a nested worktree's `.git` file) is held the same way, with its own folder
 * as its work tree's root ({@link guardNested}, up to {@link MAX_NESTED_REPOS}; user round 26: a hook written in
 * `vendor/lib/.git/hooks` ran at the person's next commit there). Attack tests: nested-repos.test.ts.
 *
 * The person's git on the host also obeys their system and global configs (`/etc/gitconfig`,
 * `~/.gitconfig`, `~/.config/git/config`: host-git-config.ts, the workspace owner's), whose relative
 * values land in the repository (`core.hooksPath = .githooks`, adversary round 16): those, and what
 * they include, are read and treated as the repository's config ({@link hostConfigsInto}); a path
 * with `..` keeps each folder before the `..` a real one ({@link holdDots}). Attack tests:
 * host-git-config.test.ts.
 *
 * A repository whose git dir lies outside the workspace (a linked worktree of a repository elsewhere,
 * a git dir kept apart, a submodule, a folder of a repository above it) is read-only there already,
 * but its config names hooks and programs in the workspace: {@link guardOutside} reads it with the
 * work tree's top as the base (adversary round 19; outside-git-dir.test.ts). What a bind cannot cover because it did not exist
 * at start (a new `.git/commondir`, a `.git` or repository below the root, `modules/<name>`, a stray
 * `worktrees/<id>`, replace refs), and a guarded file the person's git replaced on the host (the
 * kernel drops a bind whose directory entry is renamed over), are the audit's: git-audit.ts. So is a
 * symlink among those paths (`.git -> .gitdir`, `.git/config -> ../repo.gitconfig`): its target is
 * bound here, but a link is no mount point, so the session can remove the link itself and put a file
 * or `.git` of its own in its place; the audit puts the link back (adversary-round13.test.ts "the
 * symlink itself").
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { hostGitConfig, passwdHome, type HostGitConfig } from './host-git-config';
import type { FoundGitDir } from './git-walk';
import { DIR_FLAGS, openDirAt, readRegular } from './safe-open';

/** The paths a session's sandbox binds for the workspace's repository: `.git` onto itself, and the ones read-only. */
export interface GuardedGit {
  /** Bound writable onto themselves (mount points that cannot be renamed or removed): `<workspace>/.git`, its `worktrees/` and each `worktrees/<id>/`, and each folder on the way to a read-only path in the workspace. */
  readonly writable: string[];
  /** Bound read-only: config, hooks/, info/, config.worktree of the git dir (symlinks resolved), what its config and the person's system and global configs name in the workspace (includes, `core.hooksPath`, programs; those configs themselves when they lie there), a `.git` file itself, each linked worktree's commondir, gitdir, config.worktree. */
  readonly readonly: string[];
  /**
   * What the config names in the workspace (includes, `core.hooksPath`, programs, hooks that are symlinks) as it names
   * them, absolute but not resolved: the git audit holds each symlink on the way (git-audit.ts `heldLinks`), since the
   * binds hold only what the names led to at start.
   */
  readonly named: string[];
  /**
   * Paths in the workspace (absolute, the folders on the way resolved) that a word of a config value names but where
   * nothing was at start ({@link missingPath}; a symlink named there counts by the missing path it leads to): the git
   * audit moves to the quarantine whatever appears at one of them (git-audit.ts), since no bind covers what is not
   * there and the session could create the program the person's git runs later (adversary round 19).
   */
  readonly missing: string[];
  /**
   * File names (a basename each) that a config value names where that value can change the folder or the `PATH` the
   * person's git runs it from ({@link MOVES_DIR}: `cd`, `pushd`, `PATH=`, `$GIT_PREFIX`, `sh -c`, `eval`, `exec`, a
   * subshell, ...): the guard cannot tell which folder, so the git audit moves to the quarantine any entry (no folder)
   * of such a name that the session makes anywhere in the workspace (git-audit.ts; adversary round 21).
   */
  readonly anywhere: string[];
  /**
   * Paths in the workspace (absolute, the folders on the way resolved as far as they exist) that a word of a config value
   * names, where no regular file was at start, and which an interpreter completes ({@link recordCompletions}: `node
   * scripts/fmt` runs `scripts/fmt.js`, `python3 -m tools.check` runs `tools/check.py`): the git audit moves to the
   * quarantine every entry that the session makes in such a path's folder whose name is the path's name followed by `.`
   * and anything (`fmt.js`, `fmt.mjs`, `check.cpython-312.pyc`), folders included; those there at start that are
   * regular files are bound read-only (in {@link readonly}) as programs (adversary round 23).
   */
  readonly completed: string[];
  /**
   * File names (a basename each) that an interpreter of a value that can change its folder ({@link MOVES_DIR}) is given
   * (`cd "$GIT_PREFIX" && node fmt`): the git audit moves to the quarantine any entry, folders included, named so or so
   * followed by `.` and anything (`fmt`, `fmt.js`, `fmt/`) that the session makes anywhere in the workspace (adversary
   * round 23: {@link anywhere} holds no folder and no completed name).
   */
  readonly anywhereStems: string[];
  /**
   * The work tree's root (absolute) of each repository below the workspace's root that was there at start and is
   * guarded as the root's is ({@link guardNested}: a nested repository, a submodule, a bare repository): git in the
   * session trusts these (`safe.directory`, setup.ts), since the session's user does not own them.
   */
  readonly nestedTops: string[];
  /**
   * Git dirs below the workspace's root (relative to it) that were there at start but that the guard did NOT guard,
   * past {@link MAX_NESTED_REPOS}: their hooks and config stay writable, and every command's result says so
   * (git-audit.ts).
   */
  readonly unguarded: string[];
  /**
   * The git dirs (absolute) of those nested repositories and submodules, each a repository's own git dir with no
   * `commondir` at start: a `commondir` the session adds to one would make git read another folder's config and hooks
   * for it, so the git audit moves it (git-audit.ts), as it does the root's.
   */
  readonly nestedGitDirs: string[];
}

/**
 * Why a session does not start (thrown by {@link guardedGit}): a config file the person's git reads
 * on the host could not be read safely (no regular file, too large, unreadable, or git could not
 * parse it), or a path a config names goes back out of a folder with `..` where that folder is a
 * symlink or no folder ({@link holdDots}). The message names the file or path; nothing is skipped
 * silently.
 */
export class GitGuardRefusal extends Error {}

/** What one {@link guardedGit} call shares between its steps. */
interface Scope {
  /** The workspace (absolute, symlinks resolved). */
  readonly workspace: string;
  /** The homes `~/` means for the person's git (host-git-config.ts: the workspace owner's). */
  readonly homes: readonly string[];
  /** `~user/` homes looked up so far (passwd), by name. */
  readonly userHomes: Map<string, string | undefined>;
  /** The workspace root's owner: what the guard makes for the host configs is theirs. */
  readonly owner: { uid: number; gid: number } | undefined;
  /** Folders in the workspace that a `..` of a config path goes back out of: each pinned with those on the way ({@link holdDots}). */
  readonly holds: string[];
  /** Each guarded repository's git dir and work tree root, where the host configs' relative values land too. */
  readonly repos: { gitDir: string; top: string }[];
  /** {@link GuardedGit.anywhere}, gathered from every config read. */
  readonly anywhere: Set<string>;
  /** {@link GuardedGit.completed}, gathered from every config read. */
  readonly completed: Set<string>;
  /** {@link GuardedGit.anywhereStems}, gathered from every config read. */
  readonly stems: Set<string>;
  /** The names of each folder {@link recordCompletions} read, by folder. */
  readonly lists: Map<string, string[]>;
}

/** The entries of a git dir in which git finds programs to run, and where it finds them first. */
const CODE_ENTRIES = ['config', 'hooks', 'info', 'config.worktree'] as const;

/**
 * The git paths to bind for `workspace` (absolute, symlinks resolved): none when `<workspace>/.git` is missing or a
 * symlink to a path outside the workspace (read-only there already); a symlink into the workspace
 * counts as its target (resolved). For a `.git` directory: itself writable, and
 * those of {@link CODE_ENTRIES} that are there read-only; `hooks/` and `info/` are created empty
 * first when missing (as `git init` makes them), so that the session cannot create them. For a
 * `.git` file (`gitdir: …`, a worktree or a separated git dir): the file read-only, and the git
 * dir it names treated as above when it lies inside the workspace (for a linked worktree's admin
 * folder: its own entries, and its common dir when that lies inside too). Either way, the
 * repository's linked worktrees' admin folders too (see the module comment). When the git dir git
 * uses there lies outside the workspace, what its config names in the workspace ({@link guardOutside}).
 * Paths a config names that are missing are listed in `missing` for the git audit. Then the same for
 * what the person's system and global configs name (`host`, by default those of the workspace
 * root's owner: host-git-config.ts), read as the repository's ({@link hostConfigsInto}), whether or
 * not the workspace holds a repository. Of the repository's own git metadata, what cannot be
 * read is not guarded (as git would not read it either).
 * @throws GitGuardRefusal when a system or global config (or a file it includes) is there but
 *   cannot be read safely, or a `..` in a config path cannot be held ({@link holdDots})
 */
export function guardedGit(workspace: string, host?: HostGitConfig, nested: readonly FoundGitDir[] = []): GuardedGit {
  const out: GuardedGit = emptyGuard();
  let owner: { uid: number; gid: number } | undefined;
  try {
    const st = fs.statSync(workspace);
    owner = { uid: st.uid, gid: st.gid };
  } catch {
    /* no workspace: nothing is made */
  }
  const configs = host ?? (owner ? hostGitConfig(owner.uid) : { system: [], global: [], homes: [] });
  const scope: Scope = {
    workspace,
    homes: configs.homes,
    userHomes: new Map(),
    owner,
    holds: [],
    repos: [],
    anywhere: new Set(),
    completed: new Set(),
    stems: new Set(),
    lists: new Map(),
  };
  guardInto(workspace, workspace, out, scope);
  // No git dir of the workspace's own guarded: the repository git uses there may lie outside (round 19). Asked before
  // the nested repositories add theirs to `scope.repos`.
  if (scope.repos.length === 0) guardOutside(workspace, out, scope, outsideRepo(workspace));
  guardNested(nested, out, scope);
  hostConfigsInto([...configs.system, ...configs.global], out, scope);
  pinFolders(out, workspace, scope.holds);
  out.anywhere.push(...[...scope.anywhere].sort());
  out.completed.push(...[...scope.completed].sort());
  out.anywhereStems.push(...[...scope.stems].sort());
  return out;
}

/** A {@link GuardedGit} with nothing to bind (no workspace, or no sandbox to bind it in). */
export function emptyGuard(): GuardedGit {
  return {
    writable: [],
    readonly: [],
    named: [],
    missing: [],
    anywhere: [],
    completed: [],
    anywhereStems: [],
    nestedTops: [],
    unguarded: [],
    nestedGitDirs: [],
  };
}

/**
 * Repositories below the workspace's root guarded at most ({@link guardNested}). Each costs a few binds, each bind a
 * descriptor held while the session lasts (held-binds.ts) and an argument of every bwrap launch, so a `node_modules`
 * of hundreds of git checkouts is not bound whole: past this, the rest are named as NOT protected.
 */
export const MAX_NESTED_REPOS = 64;

/**
 * Guards each git dir of `nested` (what git-walk.ts found below the workspace's root at start: a `.git` directory,
 * a `.git` file and the git dir it names, a bare repository) as the root's own ({@link guardInto}, with the folder
 * holding it as the work tree's root): the person's git run there later on the host obeys its config and hooks as it
 * does the root's (user round 26: a pre-commit hook written in `vendor/lib/.git/hooks` ran as root at the
 * person's next commit there). Those outside `node_modules` and nearer the root first, at most
 * {@link MAX_NESTED_REPOS}; the rest go to `out.unguarded`. Split git dirs (`HEAD` and `commondir` only) are left
 * to the audit.
 */
function guardNested(nested: readonly FoundGitDir[], out: GuardedGit, scope: Scope): void {
  const rank = (f: FoundGitDir): [number, number, string] => [/(^|\/)node_modules\//.test(f.rel) ? 1 : 0, f.rel.split('/').length, f.rel];
  const cmp = (a: FoundGitDir, b: FoundGitDir): number => {
    const [x, y] = [rank(a), rank(b)];
    return x[0] - y[0] || x[1] - y[1] || (x[2] < y[2] ? -1 : x[2] > y[2] ? 1 : 0);
  };
  let count = 0;
  for (const f of [...nested].filter((n) => n.kind !== 'split').sort(cmp)) {
    // A name that is no UTF-8 (git-walk.ts keeps its bytes as lone surrogates) has no path to bind here: named instead.
    if (count >= MAX_NESTED_REPOS || /[\uDC80-\uDCFF]/u.test(f.rel)) {
      out.unguarded.push(f.rel);
      continue;
    }
    count++;
    const at = path.join(scope.workspace, f.rel);
    const top = f.kind === 'dotgit' ? path.dirname(at) : at;
    const before = out.writable.length + out.readonly.length;
    if (f.kind === 'dotgit') guardInto(top, scope.workspace, out, scope);
    else if (isDir(at)) guardGitDir(at, scope.workspace, out, true, scope, at);
    if (out.writable.length + out.readonly.length > before && !out.nestedTops.includes(top)) out.nestedTops.push(top);
  }
}

/**
 * {@link guardedGit}'s work on the git metadata of the repository whose work tree's root is `top` (the workspace, or a
 * folder in it holding a nested repository's `.git`), before {@link hostConfigsInto} and {@link pinFolders}.
 */
function guardInto(top: string, workspace: string, out: GuardedGit, scope: Scope): GuardedGit {
  const dotGit = path.join(top, '.git');
  let st: fs.Stats;
  let gitPath = dotGit;
  try {
    st = fs.lstatSync(dotGit);
    if (st.isSymbolicLink()) {
      // `.git -> .gitdir`: git follows it, so the guard does too, when its target lies in the workspace (elsewhere it is read-only already).
      const real = realInside(dotGit, workspace);
      if (real === undefined || real === workspace) return out;
      gitPath = real;
      st = fs.lstatSync(real);
    }
  } catch {
    return out;
  }
  if (st.isDirectory()) {
    guardGitDir(gitPath, workspace, out, true, scope, top);
  } else if (st.isFile()) {
    // Held already when it is a linked worktree of a repository guarded before ({@link linkedWorktrees}).
    if (!out.readonly.includes(gitPath)) out.readonly.push(gitPath);
    const named = gitdirOf(gitPath, top);
    if (named === undefined) return out;
    if (inside(named, workspace)) guardGitDir(named, workspace, out, true, scope, top);
    else {
      // A linked worktree whose admin folder is elsewhere (read-only, as all outside the workspace), of a repository inside it.
      const common = commonDirOf(named);
      if (common && inside(common, workspace) && isDir(common)) guardGitDir(common, workspace, out, false, scope, top);
      // A nested linked worktree (or submodule, or git dir kept apart) of a repository outside: its config's relative
      // values (husky's `core.hooksPath = .husky/_`) land at this top, which the root's discovery never reads (round 27).
      else if (top !== workspace && isDir(named)) guardOutside(workspace, out, scope, outsideAt(top, named));
    }
  }
  return out;
}

/**
 * The repository git uses in `workspace` (absolute, symlinks resolved) when its git dir lies outside it, found as
 * git's discovery finds it (setup.c: `<dir>/.git` from the workspace up to `/`, a directory or a `gitdir:` file), by
 * reading, not by running git: what lies outside the workspace is read-only to the session, and nothing of the
 * repository runs. `gitDir` is the git dir (a linked worktree's admin folder, a git dir kept apart, a submodule's
 * `modules/<name>`), `common` its common dir (whose `config` git reads), `tops` the work tree's root (the folder
 * holding `.git`, and `core.worktree` too when set). Undefined when there is none or the workspace's own `.git` is a git dir
 * inside it ({@link guardInto}'s).
 */
function outsideRepo(workspace: string): OutsideRepo | undefined {
  for (let dir = workspace; ; dir = path.dirname(dir)) {
    const dotGit = path.join(dir, '.git');
    let st: fs.Stats | undefined;
    try {
      st = fs.statSync(dotGit);
    } catch {
      st = undefined;
    }
    let gitDir: string | undefined;
    if (st?.isDirectory()) gitDir = realOrUndefined(dotGit);
    else if (st?.isFile()) gitDir = gitdirOf(dotGit, dir);
    if (gitDir !== undefined && isDir(gitDir)) return inside(gitDir, workspace) ? undefined : outsideAt(dir, gitDir);
    if (dir === '/') return undefined;
  }
}

/**
 * The repository whose `.git` lies in `dir` (absolute) and names the git dir `gitDir` (absolute, a directory): `common`
 * its common dir, `tops` its work tree's root (`dir`, and `core.worktree` too when set); undefined when its
 * `commondir` is there but names nothing that resolves.
 */
function outsideAt(dir: string, gitDir: string): OutsideRepo | undefined {
  const c = commonDirOf(gitDir);
  if (c === null) return undefined;
  const common = c ?? gitDir;
  const set = (gitConfigList(path.join(common, 'config')) ?? []).filter(([k]) => k === 'core.worktree').pop();
  // Both when `core.worktree` is set: a superset, whichever git takes for the `.git` file's layout.
  const tops = set === undefined || set[1] === '' ? [dir] : [...new Set([dir, path.resolve(common, set[1])])];
  return { gitDir, common, tops };
}

/** A repository whose git dir lies outside the workspace ({@link outsideRepo}, {@link outsideAt}). */
interface OutsideRepo {
  readonly gitDir: string;
  readonly common: string;
  readonly tops: string[];
}

/** `fs.realpathSync(p)`, or undefined when that fails. */
function realOrUndefined(p: string): string | undefined {
  try {
    return fs.realpathSync(p);
  } catch {
    return undefined;
  }
}

/**
 * Adds to `out` what the config of `repo` names in `workspace`: the repository git uses in the workspace when its git
 * dir lies outside ({@link outsideRepo}), or one nested in it whose git dir lies outside ({@link outsideAt}: a linked
 * worktree of a repository elsewhere, a git dir kept apart, a submodule, a folder of a
 * repository above the workspace such as a monorepo's package; nothing when undefined): its `config`, its `config.worktree` when
 * `extensions.worktreeConfig` is on, and their includes, read as {@link codeEntries} reads them, with the work tree's
 * top as the base (relative `core.hooksPath` and programs land there: husky's `frontend/.husky/_` in a monorepo). What
 * they name in the workspace is made, bound read-only, recorded when missing and pinned as for a git dir inside it;
 * the git dir itself is outside and read-only already (adversary round 19).
 */
function guardOutside(workspace: string, out: GuardedGit, scope: Scope, repo: OutsideRepo | undefined): void {
  if (repo === undefined) return;
  const { gitDir, common, tops } = repo;
  let text = '';
  try {
    text = readText(path.join(common, 'config'), 1 << 20);
  } catch {
    /* unreadable: git reads nothing either */
  }
  const configs = [path.join(common, 'config')];
  if (/worktreeconfig\s*=\s*(true|yes|on|1)?\s*$/im.test(text)) configs.push(path.join(gitDir, 'config.worktree'));
  for (const top of tops) scope.repos.push({ gitDir: common, top });
  const found: string[] = [];
  const add = adder(workspace, out.named, found, () => false);
  const make = (p: string, kind: 'file' | 'dir'): void => {
    if (scope.owner) createInside(workspace, p, kind, scope.owner);
  };
  const named = configNamedPaths(configs, text, scope, { tops, gitDirs: [...new Set([common, gitDir])], strict: false });
  applyNamed(named, workspace, make, add, [], out.missing);
  for (const p of found) if (!out.readonly.includes(p)) out.readonly.push(p);
}

/**
 * Adds to `out.writable` each folder between `workspace` and a read-only path in it (`scripts`
 * for `scripts/fmt.sh`, `.husky` for `.husky/_`), bound onto itself: a mount point, so that the
 * session can neither rename nor remove it (EBUSY) and put a folder of its own, with a new
 * program at the same name, in its place (`mv scripts s2 && mkdir scripts`, round 15; the
 * person's git reaches the program by its path). Never a folder that is or lies in a read-only
 * path (a writable bind there would undo it), nor `workspace` itself (bound already). A symlink
 * on the way is no mount point and stays replaceable (see the module comment). Each of `holds`
 * (folders a config path leaves again by `..`: {@link holdDots}) is pinned too, with the folders
 * on its way, so that the kernel's `dir/..` stays the parent the guard saw.
 */
function pinFolders(out: GuardedGit, workspace: string, holds: readonly string[]): void {
  const readonly = out.readonly.filter((p) => inside(p, workspace) && p !== workspace);
  const pinFrom = (first: string): void => {
    for (let dir = first; dir !== workspace && inside(dir, workspace); dir = path.dirname(dir)) {
      if (out.writable.includes(dir) || readonly.some((r) => inside(dir, r))) continue;
      out.writable.push(dir);
    }
  };
  for (const p of readonly) pinFrom(path.dirname(p));
  for (const h of holds) pinFrom(h);
}

/** Whether `p` is `dir` or lies inside it (both absolute). */
const inside = (p: string, dir: string): boolean => p === dir || p.startsWith(`${dir}/`);

/**
 * Adds to `out` what holds `gitDir` (absolute, inside `workspace`): itself bound onto itself; when
 * it has a `commondir` (the admin folder of a linked worktree, `<common>/worktrees/<id>`), that
 * folder's own entries ({@link adminEntries}) and, when `follow` and the common dir lies in the
 * workspace too, the common dir as below; otherwise (a repository's own git dir) its
 * {@link codeEntries} and the admin folder of every linked worktree it has ({@link linkedWorktrees}).
 */
function guardGitDir(gitDir: string, workspace: string, out: GuardedGit, follow: boolean, scope: Scope, top = workspace): void {
  if (out.writable.includes(gitDir)) return;
  out.writable.push(gitDir);
  const common = commonDirOf(gitDir);
  if (common === undefined) {
    if (gitDir !== scope.workspace && !inside(path.join(scope.workspace, '.git'), gitDir)) out.nestedGitDirs.push(gitDir);
    out.readonly.push(...codeEntries(gitDir, workspace, out.named, out.missing, scope, top));
    linkedWorktrees(gitDir, workspace, out, scope, top);
    for (const module of submoduleDirs(gitDir)) guardGitDir(module, workspace, out, false, scope, module);
    return;
  }
  out.readonly.push(...adminEntries(gitDir, configOf(common ?? gitDir), workspace));
  if (follow && common !== null && common !== gitDir && inside(common, workspace) && isDir(common))
    guardGitDir(common, workspace, out, false, scope, top);
}

/** Submodule git dirs looked for below one `modules/` at most: a submodule's name may hold `/` (`modules/a/b`). */
const MAX_MODULE_DEPTH = 4;

/**
 * The submodules' git dirs in `gitDir`'s `modules/` (gitrepository-layout(5): `modules/<name>`, a name that may hold
 * `/`), each a real folder holding `HEAD` (symlinks not followed), whether or not a work tree uses it now: `git
 * submodule update` checks it out again and runs its hooks. Their own `modules/` are the caller's, by recursion.
 * Their work tree's root is their `core.worktree` ({@link workTreeOf}), else the git dir itself.
 */
function submoduleDirs(gitDir: string): string[] {
  const out: string[] = [];
  const visit = (dir: string, depth: number): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      if (!e.isDirectory()) continue;
      const p = path.join(dir, e.name);
      if (isFile(path.join(p, 'HEAD'))) out.push(p);
      else if (depth < MAX_MODULE_DEPTH) visit(p, depth + 1);
    }
  };
  visit(path.join(gitDir, 'modules'), 1);
  return out;
}

/**
 * The entries of a linked worktree's admin folder (gitrepository-layout(5), `worktrees/<id>/`)
 * that git reads to find or configure that worktree's repository: `commondir` (the common dir
 * whose `config`, `hooks/` and `info/` git reads for it), `gitdir` (the worktree's `.git` file,
 * which `git worktree repair` writes to and `prune`/`remove` act on), `config.worktree` (read as
 * configuration when the common config turns `extensions.worktreeConfig` on; created empty then,
 * owned as the folder is, when missing). `HEAD`, `index`, `logs/`, `refs/` and the state of a
 * merge or rebase stay writable: git in the session moves the worktree's HEAD and reflog when it
 * rewrites refs, and `gc` reads them.
 */
function adminEntries(admin: string, commonConfig: string, workspace: string): string[] {
  const found: string[] = [];
  if (WORKTREE_CONFIG.test(commonConfig)) makeEmpty(path.join(admin, 'config.worktree'), admin, workspace);
  for (const name of ADMIN_ENTRIES) {
    const p = path.join(admin, name);
    try {
      if (fs.lstatSync(p).isFile()) found.push(p);
    } catch {
      /* missing: `gitdir` of a hand-made folder, `config.worktree` git does not read */
    }
  }
  return found;
}

/** The files of a linked worktree's admin folder bound read-only ({@link adminEntries}). */
const ADMIN_ENTRIES = ['commondir', 'gitdir', 'config.worktree'] as const;

/** A loose match for `extensions.worktreeConfig` on: an empty config.worktree made once too often is harmless to git. */
const WORKTREE_CONFIG = /worktreeconfig\s*=\s*(true|yes|on|1)?\s*$/im;

/**
 * The linked worktrees of the repository whose own git dir is `gitDir` (`git worktree add`
 * elsewhere, by the person): `worktrees/` bound onto itself and each folder in it onto itself, so
 * that the session can neither rename nor remove one (EBUSY) and put a folder of its own in its
 * place, with the entries git reads to find that worktree's repository read-only
 * ({@link adminEntries}); a folder with no `commondir` (then git would take the folder itself for
 * the common dir, its `config` and `hooks/` included) is bound read-only whole. New folders stay
 * possible (`git worktree add` in the session). Nothing when `worktrees` is missing or no
 * directory (a symlink is shown as it is).
 */
function linkedWorktrees(gitDir: string, workspace: string, out: GuardedGit, scope: Scope, top = workspace): void {
  const dir = path.join(gitDir, 'worktrees');
  let ids: fs.Dirent[];
  try {
    if (!fs.lstatSync(dir).isDirectory()) return;
    ids = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return;
  }
  out.writable.push(dir);
  const config = configOf(gitDir);
  for (const id of ids) {
    if (!id.isDirectory()) continue;
    const admin = path.join(dir, id.name);
    if (commonDirOf(admin) === undefined) {
      out.readonly.push(admin);
      continue;
    }
    out.writable.push(admin);
    out.readonly.push(...adminEntries(admin, config, workspace));
    // The worktree's own `.git` file, when the worktree lies in the workspace: git reads it first, to find this folder.
    const dotGit = backlinkOf(admin);
    if (dotGit !== undefined && inside(dotGit, workspace)) out.readonly.push(dotGit);
    // What its `config.worktree` names in the workspace (existing files: programs, includes), run or read by git in that worktree.
    const at = dotGit === undefined ? top : path.dirname(dotGit);
    if (dotGit !== undefined && inside(dotGit, workspace)) scope.repos.push({ gitDir, top: at });
    const named = configNamedPaths([path.join(admin, 'config.worktree')], '', scope, { tops: [at], gitDirs: [admin], strict: false });
    for (const p of [...named.includes, ...named.programs]) {
      const real = realInside(p, workspace);
      if (real !== undefined && real !== workspace && isFile(real) && !out.readonly.includes(real)) out.readonly.push(real);
    }
    for (const [, m] of named.missing) if (!out.missing.includes(m)) out.missing.push(m);
  }
}

/**
 * The common dir `gitDir`'s `commondir` file names (relative to `gitDir`, as git reads it), with
 * symlinks resolved; null when the file is there but unreadable or names nothing that resolves;
 * undefined when there is no `commondir`.
 */
function commonDirOf(gitDir: string): string | null | undefined {
  const file = path.join(gitDir, 'commondir');
  let text: string;
  try {
    text = readText(file, 4096);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : null;
  }
  const line = text.split('\n')[0]!.trim();
  if (line === '') return null;
  try {
    return fs.realpathSync(path.resolve(gitDir, line));
  } catch {
    return null;
  }
}

/** The `.git` file an admin folder's `gitdir` names (absolute, symlinks resolved) when it is a regular file there, else undefined. */
function backlinkOf(admin: string): string | undefined {
  try {
    const line = readText(path.join(admin, 'gitdir'), 4096).split('\n')[0]!.trim();
    const p = fs.realpathSync(path.resolve(admin, line));
    return fs.lstatSync(p).isFile() ? p : undefined;
  } catch {
    return undefined;
  }
}

/** The first MiB of `gitDir`'s `config`, or '' when unreadable. */
function configOf(gitDir: string): string {
  try {
    return readText(path.join(gitDir, 'config'), 1 << 20);
  } catch {
    return '';
  }
}

/** Whether `p` is a directory (symlinks followed). */
function isDir(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}

/** Creates `file` empty (mode 0644) when missing, owned as `dir` is; never throws (there already, or not the worker's to write). */
function makeEmpty(file: string, dir: string, workspace: string): void {
  try {
    createInside(workspace, file, 'file', fs.statSync(dir));
  } catch {
    /* the folder is gone */
  }
}

/**
 * Creates `target` (absolute, in `workspace`) as an empty file or a folder, and each missing folder
 * on the way, owned by `owner` (uid, gid), one name at a time from a descriptor of `workspace`,
 * never through a symlink: each folder is opened with `O_NOFOLLOW` (as `/proc/self/fd/<dir>/<name>`,
 * Node's `openat`), the file made with `O_EXCL | O_NOFOLLOW` and owned with `fchown` on its
 * descriptor. A folder of the working tree that an earlier session replaced by a symlink
 * (`conf -> /usr/local/bin` for an include `conf/x/inc`) stops it there: the worker, root, never
 * creates or chowns anything outside the workspace (a text check of the path cannot see that).
 * What is there already is left as it is. Throws nothing.
 */
function createInside(workspace: string, target: string, kind: 'file' | 'dir', owner: { uid: number; gid: number }): void {
  const rel = path.relative(workspace, target);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return;
  const parts = rel.split('/');
  const fds: number[] = [];
  try {
    let dir = fs.openSync(workspace, DIR_FLAGS);
    fds.push(dir);
    for (const [i, part] of parts.entries()) {
      const at = `/proc/self/fd/${dir}/${part}`;
      if (i === parts.length - 1 && kind === 'file') {
        const c = fs.constants;
        const fd = fs.openSync(at, c.O_WRONLY | c.O_CREAT | c.O_EXCL | c.O_NOFOLLOW, 0o644);
        fds.push(fd);
        fs.fchownSync(fd, owner.uid, owner.gid);
        return;
      }
      let made = true;
      try {
        fs.mkdirSync(at, { mode: 0o755 });
      } catch {
        made = false;
      }
      dir = openDirAt(dir, part);
      fds.push(dir);
      if (made) fs.fchownSync(dir, owner.uid, owner.gid);
    }
  } catch {
    /* there already, or a symlink or a file on the way: nothing made there */
  } finally {
    for (const fd of fds) fs.closeSync(fd);
  }
}

/**
 * The {@link CODE_ENTRIES} of `gitDir` to bind read-only, after creating `hooks/` and `info/` when
 * missing, and an empty `config.worktree` when the config turns `extensions.worktreeConfig` on,
 * each owned as `gitDir` is (the worker may be root; the repository is the person's); an entry
 * that is a symlink counts by its target, bound when that lies in `workspace` (the sandbox binds
 * the resolved path). Then what the config makes git read or run, as git itself reads it
 * ({@link configNamedPaths}): every file it includes, however deep, that lies in `workspace`
 * (created empty when missing: git skips a missing include, so the session could otherwise create
 * it), the `core.hooksPath` directory and the programs other keys name there, and the targets of
 * hooks that are symlinks into the workspace. Each of those (not the entries of the git dir) is added to `names` as
 * the config names it ({@link GuardedGit.named}). The config's `config.worktree` too, when git reads it.
 */
function codeEntries(gitDir: string, workspace: string, names: string[], missing: string[], scope: Scope, top = workspace): string[] {
  const found: string[] = [];
  let owner: fs.Stats | undefined;
  let config = '';
  try {
    owner = fs.statSync(gitDir);
    config = readText(path.join(gitDir, 'config'), 1 << 20);
  } catch {
    /* unreadable: nothing created */
  }
  const make = (p: string, kind: 'file' | 'dir'): void => {
    if (owner) createInside(workspace, p, kind, owner);
  };
  const add = adder(workspace, names, found, (p) => (CODE_ENTRIES as readonly string[]).includes(path.relative(gitDir, p)));
  // A loose match: an empty config.worktree made once too often is harmless to git.
  const worktreeConfig = /worktreeconfig\s*=\s*(true|yes|on|1)?\s*$/im.test(config);
  for (const name of CODE_ENTRIES) {
    const p = path.join(gitDir, name);
    if (name === 'hooks' || name === 'info') make(p, 'dir');
    else if (name === 'config.worktree' && worktreeConfig) make(p, 'file');
    try {
      const st = fs.statSync(p);
      if (st.isFile() || st.isDirectory()) add(p);
    } catch {
      /* missing: config.worktree without extensions.worktreeConfig, which the read-only config cannot gain */
    }
  }
  const configs = [path.join(gitDir, 'config')];
  if (worktreeConfig) configs.push(path.join(gitDir, 'config.worktree'));
  const root = workTreeOf(gitDir, top);
  scope.repos.push({ gitDir, top: root });
  const named = configNamedPaths(configs, config, scope, { tops: [root], gitDirs: [gitDir], strict: false });
  applyNamed(named, workspace, make, add, [path.join(gitDir, 'hooks')], missing);
  return found;
}

/**
 * `add(p)` for {@link codeEntries} and {@link hostConfigsInto}: `p` (absolute, as named) is added to
 * `names` when it lies in `workspace` (unless `skipName(p)`), and its real path to `found` (bound
 * read-only) when that lies in `workspace` and is not the workspace itself.
 */
function adder(workspace: string, names: string[], found: string[], skipName: (p: string) => boolean): (p: string) => void {
  return (p) => {
    if (inside(p, workspace) && !names.includes(p) && !skipName(p)) names.push(p);
    const real = realInside(p, workspace);
    if (real !== undefined && real !== workspace && !found.includes(real)) found.push(real);
  };
}

/**
 * What `named` names in `workspace`, made and added alike for the repository's config and the
 * host's: each include (made empty when missing: git skips a missing include, so the session could
 * otherwise create it), each `core.hooksPath` folder (made when missing) and the targets of its
 * hooks that are symlinks (and of those in `hookDirs`), each program file.
 */
function applyNamed(
  named: ConfigNamed,
  workspace: string,
  make: (p: string, kind: 'file' | 'dir') => void,
  add: (p: string) => void,
  hookDirs: string[],
  missing: string[],
): void {
  for (const p of named.includes) {
    if (!inside(p, workspace)) continue;
    make(p, 'file');
    add(p);
    // Not made because a file stands on the way (`conf` for `conf/x`): that file is held, so that no folder takes its place.
    const blocker = blockerOf(p, workspace);
    if (blocker !== undefined) add(blocker);
  }
  for (const dir of named.hookDirs) {
    if (!inside(dir, workspace) || dir === workspace) continue;
    make(dir, 'dir');
    add(dir);
    hookDirs.push(dir);
  }
  for (const p of named.programs) add(p);
  for (const [as, m] of named.missing) {
    if (!missing.includes(m)) missing.push(m);
    // A symlink on the way (`scripts/fmt.sh -> ../build/fmt.sh`): held by the audit, as for a program that is there.
    if (path.resolve(as) !== m) add(as);
  }
  // A hook that is a symlink to a script in the workspace (a tracked `scripts/pre-commit`): its target.
  for (const dir of hookDirs) {
    try {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isSymbolicLink()) add(path.join(dir, e.name));
    } catch {
      /* unreadable */
    }
  }
}

/**
 * Adds to `out` what the person's system and global config files `files` (absolute, existing or
 * not: host-git-config.ts) and the files they include name, read as the repository's config is
 * ({@link configNamedPaths}, strict: one that is there but cannot be read safely refuses the
 * session): a relative `core.hooksPath` and relative program words are taken against each guarded
 * repository's work tree root (where the person's git runs them), includes against the including
 * file's folder, `~/` against the owner's homes. Each config file, and each include, that lies in
 * the workspace (the workspace is the person's home or holds their dotfiles) is made empty when
 * missing and bound read-only, since git would read one the session created; one that is a
 * symlink into the workspace has its target bound and the link held by the audit.
 * @throws GitGuardRefusal (see {@link guardedGit})
 */
function hostConfigsInto(files: string[], out: GuardedGit, scope: Scope): void {
  const { workspace, owner } = scope;
  const found: string[] = [];
  const add = adder(workspace, out.named, found, () => false);
  const make = (p: string, kind: 'file' | 'dir'): void => {
    if (owner) createInside(workspace, p, kind, owner);
  };
  for (const f of files) {
    if (inside(f, workspace)) make(f, 'file');
    add(f);
  }
  const tops = [...new Set(scope.repos.map((r) => r.top))];
  const gitDirs = [...new Set(scope.repos.map((r) => r.gitDir))];
  const named = configNamedPaths(files, '', scope, { tops, gitDirs, strict: true });
  applyNamed(named, workspace, make, add, [], out.missing);
  for (const p of found) if (!out.readonly.includes(p)) out.readonly.push(p);
}

/**
 * The work tree's root of the repository whose git dir is `gitDir`: where git runs hooks, aliases and the programs
 * config values name. `core.worktree` (relative to the git dir, as git reads it) when set, else `top` (the folder
 * holding the `.git` that led to it: the workspace for its own).
 */
function workTreeOf(gitDir: string, top: string): string {
  const set = (gitConfigList(path.join(gitDir, 'config')) ?? []).filter(([k]) => k === 'core.worktree').pop();
  return set === undefined || set[1] === '' ? top : path.resolve(gitDir, set[1]);
}

/** `p` with symlinks resolved when that lies in `workspace` (or is it), else undefined (missing, or elsewhere). */
function realInside(p: string, workspace: string): string | undefined {
  try {
    const real = fs.realpathSync(p);
    return inside(real, workspace) ? real : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The keys whose value git runs as a program or shell command, from git-config(1) (git's
 * Documentation/config/*.adoc, 2.39 to 2.5x), lower-cased, `*` for a name the person chooses;
 * a value that starts with `!` (an alias, a credential helper, `submodule.*.update`) is a shell
 * command. Not what the guard matches on (it reads every value of every key, {@link valueFiles}):
 * the list the tests attack with and the docs name, so that a key git adds later is covered too.
 */
export const PROGRAM_KEYS: readonly string[] = [
  'alias.*',
  'alias.*.command',
  'browser.*.cmd',
  'browser.*.path',
  'core.alternaterefscommand',
  'core.askpass',
  'core.editor',
  'core.fsmonitor',
  'core.gitproxy',
  'core.pager',
  'core.sshcommand',
  'credential.helper',
  'credential.*.helper',
  'diff.external',
  'diff.*.command',
  'diff.*.textconv',
  'difftool.*.cmd',
  'difftool.*.path',
  'filter.*.clean',
  'filter.*.process',
  'filter.*.smudge',
  'gc.recentobjectshook',
  'gpg.program',
  'gpg.*.program',
  'gpg.ssh.defaultkeycommand',
  'guitool.*.cmd',
  'help.browser',
  'hook.*.command',
  'imap.tunnel',
  'instaweb.browser',
  'instaweb.httpd',
  'interactive.difffilter',
  'man.viewer',
  'man.*.cmd',
  'man.*.path',
  'merge.*.driver',
  'mergetool.*.cmd',
  'mergetool.*.path',
  'pager.*',
  'remote.*.receivepack',
  'remote.*.uploadpack',
  'remote.*.url',
  'remote.*.pushurl',
  'url.*.insteadof',
  'sendemail.cccmd',
  'sendemail.headercmd',
  'sendemail.sendmailcmd',
  'sendemail.smtpserver',
  'sendemail.tocmd',
  'sequence.editor',
  'submodule.*.update',
  'trailer.*.cmd',
  'trailer.*.command',
  'uploadpack.packobjectshook',
  'web.browser',
];

/** What a repository's config makes git read or run ({@link configNamedPaths}): absolute paths, not resolved. */
interface ConfigNamed {
  /** Every file the config includes (`include.path`, `includeIf.<cond>.path`, whatever the condition: a session can make one true), and their includes. */
  includes: string[];
  /** `core.hooksPath` (relative to the worktree's root, where git runs hooks). */
  hookDirs: string[];
  /** Each existing regular file that a word of any value names ({@link valueFiles}), whatever the key, as named (absolute; symlinks not resolved). */
  programs: string[];
  /** Where a path word of a value names nothing yet ({@link valueFiles}): `[as named, missing path]`, in the workspace. */
  missing: [string, string][];
}

/** How {@link configNamedPaths} reads: where relative values land, and whether a file it cannot read refuses. */
interface NamedOptions {
  /** The work trees' roots, where git runs hooks, aliases and the programs of other keys (relative `core.hooksPath` and words). */
  readonly tops: readonly string[];
  /** The git dirs: relative words are tried against them too, and their state is never bound ({@link isGitState}). */
  readonly gitDirs: readonly string[];
  /** The host's configs: a file that is there but cannot be read safely, or that git cannot read, throws GitGuardRefusal. */
  readonly strict: boolean;
}

/**
 * What the config files `files` (the first one's text `text`) and everything they include name,
 * as git parses it: `git config --file F --null --list` for each file ({@link readGitConfig}: a
 * regular file only, opened without blocking, handed to git by descriptor; no hooks, no
 * repository: run from `/` with system and global config off, as the worker, before the sandbox
 * starts), so that comments, quoting, escapes and continued lines are git's own. Includes are
 * followed to a depth of 10 (git's own limit), relative ones against the directory of the file
 * naming them, `~/` against the owner's homes ({@link expandPaths}). Every path a value names is
 * also held where a `..` goes back out of a folder of the workspace ({@link holdDots}). When git
 * cannot be run on a repository file (not `strict`): includes only, from a hand parse of `text`
 * ({@link includedFiles}).
 * @throws GitGuardRefusal when `strict` and a file is there but cannot be read; from {@link holdDots}
 */
function configNamedPaths(files: string[], text: string, scope: Scope, o: NamedOptions): ConfigNamed {
  const { workspace } = scope;
  const out: ConfigNamed = { includes: [], hookDirs: [], programs: [], missing: [] };
  const seen = new Set<string>();
  const bases = [...new Set([...o.tops, workspace, ...o.gitDirs])];
  let queue: string[] = files;
  for (let depth = 0; depth <= 10 && queue.length > 0; depth++) {
    const next: string[] = [];
    for (const f of queue) {
      if (seen.has(f)) continue;
      seen.add(f);
      const read = readGitConfig(f);
      let pairs: [string, string][];
      if ('pairs' in read) pairs = read.pairs;
      else if ('missing' in read) continue;
      else if (o.strict)
        throw new GitGuardRefusal(
          `${f}, a git config the person's git reads on the host, ${read.error}: the git guard cannot tell what it makes git run in the workspace`,
        );
      else if (read.regular) {
        if (f === files[0] && o.gitDirs[0] !== undefined) out.includes.push(...includedFiles(text, o.gitDirs[0]));
        continue;
      } else continue;
      for (const [key, value] of pairs) {
        if (/^include(if\..*)?\.path$/.test(key)) {
          for (const raw of expandPaths(value, path.dirname(f), scope)) {
            holdDots(raw, scope, true);
            out.includes.push(path.resolve(raw));
            next.push(path.resolve(raw));
          }
        } else if (key === 'core.hookspath') {
          for (const top of o.tops)
            for (const raw of expandPaths(value, top, scope)) {
              holdDots(raw, scope, true);
              out.hookDirs.push(path.resolve(raw));
            }
          if (o.tops.length === 0)
            for (const raw of expandPaths(value, '', scope))
              if (path.isAbsolute(raw)) {
                holdDots(raw, scope, true);
                out.hookDirs.push(path.resolve(raw));
              }
        }
        // Every value, whatever its key (PROGRAM_KEYS is git's list today; a key it lacks or git adds fails closed).
        out.programs.push(...valueFiles(value, bases, scope, o.gitDirs, out.missing));
      }
    }
    queue = next;
  }
  return out;
}

/**
 * The existing regular files in `workspace` (symlinks resolved) that a word of the config value
 * `value` may name, when git runs it as a program or hands it to `sh -c`: a superset, so that
 * what git or a shell would run is among them. A leading `!` is dropped; the words are the
 * shell's (quotes, backslashes, `;|&()<>` and blanks; a word with blanks, as in
 * `sh -c "./x.sh --a"`, split again), and also the value split at every blank, quote and shell
 * character, each word split again at `=`, `:` and `,` (`FOO=./x`, `--file=x`, `ext::sh x`, a
 * list), and every tail of a word after a `/` (`$PWD/x`, `$(git rev-parse --show-toplevel)/x`,
 * `"$GIT_DIR"/../x`: whatever an expansion gives, the rest is relative to it). Each word is
 * tried absolute, `~/` and `~user/` against the owner's and that user's home, and relative to
 * each of `bases` (the work trees' roots, where git runs it; the workspace; the git dirs) and to
 * each folder a word of the same value names (`cd tools && ./fmt.sh`). A word with `..` counts
 * both as read (`a/../x` is `x`) and as the kernel resolves it (through `a` when that is a
 * symlink), and its folders before a `..` are held ({@link holdDots}) when it names a file. Never
 * the git dirs' own state (objects, refs, logs, HEAD, index: {@link isGitState}), which git in the
 * session must go on writing.
 * @throws GitGuardRefusal from {@link holdDots}
 */
function valueFiles(value: string, bases: string[], scope: Scope, gitDirs: readonly string[], missing: [string, string][]): string[] {
  const { workspace } = scope;
  const words = valueWords(value);
  if (words.length === 0) return [];
  const dirs = new Set(bases);
  for (const w of words)
    for (const base of bases)
      for (const raw of expandPaths(w, base, scope)) {
        const p = path.resolve(raw);
        if (dirs.size < 64 && inside(p, workspace) && isDir(p)) dirs.add(p);
      }
  // `cd tools`, `PATH=$PWD/bin:…`: folders the command moves to or runs from, missing or not; a bare word counts there too.
  const moved = new Set<string>();
  for (const [d, onPath] of movedDirs(value))
    for (const base of bases)
      for (const raw of expandPaths(d, base, scope)) {
        const p = path.resolve(raw);
        if (moved.size < 64 && inside(p, workspace) && !gitDirs.includes(base)) {
          moved.add(p);
          dirs.add(p);
          // A `PATH` folder missing at start: whatever the session puts in it may run (a program of the value calls others by name).
          const m = onPath && !NOT_A_PATH.test(d) ? missingPath(p) : undefined;
          if (m !== undefined && m !== workspace && inside(m, workspace)) missing.push([p, m]);
        }
      }
  const given = interpreterWords(value);
  if (MOVES_DIR.test(value)) {
    for (const name of anywhereNames(words)) if (scope.anywhere.size < 256) scope.anywhere.add(name);
    for (const name of anywhereNames(given.stems)) if (scope.stems.size < 256) scope.stems.add(name);
  }
  // Each word with whether an interpreter is given it (then a bare word is a file too, and a folder's entry points count).
  const queue: [string, 'word' | 'given' | 'entry'][] = [
    ...words.map((w): [string, 'word'] => [w, 'word']),
    ...given.files.map((w): [string, 'given'] => [w, 'given']),
    ...given.derived.map((w): [string, 'entry'] => [w, 'entry']),
  ];
  const found = new Set<string>();
  for (let i = 0; i < queue.length; i++) {
    const [w, kind] = queue[i]!;
    for (const base of dirs)
      for (const raw of expandPaths(w, base, scope)) {
        const hits = [path.resolve(raw)];
        if (DOTS.test(raw)) hits.push(physicalPath(raw) ?? hits[0]!);
        const files = hits.filter((p) => isFile(p));
        if (files.length === 0) {
          // Not a git dir as a base: git runs nothing relative to it, and its files there are mostly git's own.
          if (
            !gitDirs.includes(base) &&
            (PATH_WORD.test(w) || kind !== 'word' || (moved.has(base) && BARE_NAME.test(w))) &&
            !NOT_A_PATH.test(w)
          ) {
            const m = missingPath(hits[0]!);
            if (m !== undefined && m !== workspace && inside(m, workspace) && !gitDirs.some((g) => isGitState(m, g))) {
              // `sub/../x`: the kernel goes through `sub`, which must stay the folder it is, as for a file that is there.
              if (DOTS.test(raw)) holdDots(raw, scope, true);
              missing.push([hits[0]!, m]);
            } else if (m === undefined) {
              // A file on the way (`scripts` a file for `scripts/fmt`): held, so that no folder with a program takes its place.
              const blocker = blockerOf(hits[0]!, workspace);
              if (blocker !== undefined && !gitDirs.some((g) => isGitState(blocker, g))) found.add(blocker);
            }
            // What an interpreter makes of the name (`fmt.js`, `check.py`), whether the name is missing or a folder.
            for (const f of recordCompletions(hits[0]!, scope, gitDirs)) found.add(f);
            // A folder an interpreter is given runs its entry point (`tools/lint/index.js`, `tools/check/__main__.py`).
            if (kind === 'given' && queue.length < 512 && isDir(hits[0]!))
              for (const e of ENTRY_POINTS) if (!queue.some(([q]) => q === `${w}/${e}`)) queue.push([`${w}/${e}`, 'entry']);
          }
          continue;
        }
        if (DOTS.test(raw)) holdDots(raw, scope, true);
        for (const p of files) {
          const real = realInside(p, workspace);
          // As named, not resolved: a symlink on the way is then one the audit holds (git-audit.ts heldLinks).
          if (real !== undefined && !gitDirs.some((g) => isGitState(real, g))) found.add(p);
        }
      }
  }
  return [...found];
}

/** The most {@link GuardedGit.completed} paths one guard records (each costs the audit a look at its folder). */
const MAX_COMPLETED = 1024;

/**
 * Records `p` (absolute; no regular file there) in {@link GuardedGit.completed}, as the name an interpreter completes
 * (node: `p.js`, `p.json`, `p.node`, then `p/index.js`; bun: `p.ts`, `p.tsx`, ...; python's `-m`: `p.py`, `p.pyc`,
 * `p.cpython-312-x86_64-linux-gnu.so`, `__pycache__/p.cpython-312.pyc`): not a list of interpreters or extensions but
 * every name of `p`'s folder that begins with `p`'s name and a `.`, now or later. `p` is recorded with the folders on
 * its way resolved as far as they exist; nothing when its folder lies outside the workspace or is git's state.
 * @returns the entries of that family there now that are regular files (symlinks followed, in the workspace): programs
 *   the person's git may run, to bind read-only
 */
function recordCompletions(p: string, scope: Scope, gitDirs: readonly string[]): string[] {
  const { workspace } = scope;
  const name = path.basename(p);
  if (name === '' || name === '.' || name === '..' || p === workspace) return [];
  const dir = resolvedDir(path.dirname(p));
  if (dir === undefined || !inside(dir, workspace)) return [];
  const at = path.join(dir, name);
  if (gitDirs.some((g) => isGitState(at, g) || at === g)) return [];
  if (scope.completed.size < MAX_COMPLETED) scope.completed.add(at);
  const out: string[] = [];
  for (const entry of listing(dir, scope.lists))
    if (entry.startsWith(`${name}.`)) {
      const f = path.join(dir, entry);
      const real = realInside(f, workspace);
      if (real !== undefined && isFile(f) && !gitDirs.some((g) => isGitState(real, g))) out.push(f);
    }
  return out;
}

/** The names in folder `dir` (none when it is missing or unreadable), read once per guard (`lists`). */
function listing(dir: string, lists: Map<string, string[]>): string[] {
  let names = lists.get(dir);
  if (names === undefined) {
    try {
      names = fs.readdirSync(dir);
    } catch {
      names = [];
    }
    lists.set(dir, names);
  }
  return names;
}

/** `d` (absolute) with symlinks resolved when it is a folder, else as {@link missingPath} gives it; undefined when neither. */
function resolvedDir(d: string): string | undefined {
  if (isDir(d)) return realOrUndefined(d);
  return missingPath(d);
}

/**
 * The regular file (not a symlink) that stands on the way to `p` (absolute) in `workspace`, where a folder would have
 * to be (`scripts` for `scripts/fmt`), or undefined: the guard binds it read-only, since the session could otherwise
 * remove it, make a folder of that name and put there the program or include the config names.
 */
function blockerOf(p: string, workspace: string): string | undefined {
  const rel = path.relative(workspace, path.resolve(p));
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  let at = workspace;
  const parts = rel.split('/');
  for (let i = 0; i < parts.length - 1; i++) {
    at = path.join(at, parts[i]!);
    const st = lstatOrUndefined(at);
    if (st === undefined || st.isSymbolicLink()) return undefined;
    if (st.isFile()) return at;
    if (!st.isDirectory()) return undefined;
  }
  return undefined;
}

/**
 * The entry points an interpreter runs in a folder it is given (node and bun: `index.*` and `package.json`; python:
 * `__main__.py`, `__init__.py` and their cached code), tried below such a folder as words of their own
 * ({@link recordCompletions} adds the extensions).
 */
const ENTRY_POINTS = ['index', 'package.json', '__main__', '__init__', '__pycache__/__main__', '__pycache__/__init__'] as const;

/**
 * A program that runs a file it is given by a name it may complete (an extension, a folder's entry point, a module
 * name), or runs a package's program by name: JavaScript (node, bun, deno, tsx, ts-node, npx), Python (python, pypy,
 * uv), Ruby, Perl, PHP, Lua, R, Julia, Go and the shells (whose file operand is looked for in the current folder too).
 * The list widens only what a bare word counts as ({@link interpreterWords}); a word with a `/` or an extension is
 * completed whatever runs it.
 */
const INTERPRETER =
  /^(node|nodejs|bun|bunx|deno|tsx|ts-node|ts-node-esm|esno|babel-node|npx|pnpx|python[0-9.]*|pypy[0-9.]*|uv|uvx|ruby|perl|php|lua|luajit|Rscript|julia|go|sh|bash|dash|zsh|ksh|mksh|ash|fish|busybox)$/;

/** Programs whose first operand names a package's program, found in `node_modules/.bin`. */
const PACKAGE_RUNNER = /^(npx|pnpx|bunx)$/;

/** A Python module name (`tools.check`). */
const MODULE_NAME = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/;

/** An interpreter's option whose next word is code, not a file: no script operand follows (`node -e`, `python3 -c`, `sh -c`). */
const CODE_OPTION = /^(-[A-Za-z]*c|-e|-E|-p|--eval|--print|--command)$/;

/** An interpreter's option whose next word is a file or module it loads first (`node -r ./setup`, `ruby -I lib`). */
const LOAD_OPTION = /^(-r|--require|--import|--loader|--experimental-loader|-I|--preload)$/;

/** A subcommand before the file it runs (`go run x`, `bun run x`, `uv run x`, `npm exec x`). */
const SUBCOMMAND = /^(run|exec|x|dlx)$/;

/**
 * What the interpreters of `value` ({@link INTERPRETER}, in each simple command and in a string a nested shell runs,
 * three deep) run: `files`, the first operand, the file it runs (`fmt` of `node fmt --fix src`; what follows it is the
 * script's own, not the interpreter's), after a subcommand (`go run`) when there is one, the value of an option that
 * loads a file (`-r ./setup`), and after `npx` also `node_modules/.bin/<name>` (and that name's own first operand when
 * it is an interpreter too: `npx tsx fmt`); `derived`, for a module of `-m` (`-m tools.check`), the paths Python loads
 * for it (`tools/check` and its `__init__`/`__main__`, each package's `__init__`, their `__pycache__`); `stems`, the
 * names run (first operands and a module's first and last name), for {@link GuardedGit.anywhereStems}.
 */
function interpreterWords(value: string): { files: string[]; derived: string[]; stems: string[] } {
  const files = new Set<string>();
  const derived = new Set<string>();
  const stems = new Set<string>();
  const fileish = (w: string | undefined): w is string =>
    w !== undefined && w !== '' && w !== '.' && w !== '..' && !w.startsWith('-') && !/[\s=]/.test(w) && !NOT_A_PATH.test(w);
  let level = shellCommands(joinLines(value.replace(/^\s*!/, '')));
  for (let depth = 0; depth < 3 && level.length > 0; depth++) {
    const deeper: string[][] = [];
    for (const cmd of level) {
      for (const w of cmd) if (/[\s;|&()<>'"`]/.test(w)) deeper.push(...shellCommands(w.replace(/^\s*!/, '')));
      let at = cmd.findIndex((w) => INTERPRETER.test(path.basename(w)));
      while (at >= 0) {
        const runner = PACKAGE_RUNNER.test(path.basename(cmd[at]!));
        let next = -1;
        let sub = true;
        for (let j = at + 1; j < cmd.length; j++) {
          const w = cmd[j]!;
          const module = w === '-m' ? cmd[++j] : /^-m[A-Za-z_]/.test(w) ? w.slice(2) : undefined;
          if (module !== undefined) {
            if (MODULE_NAME.test(module)) addModule(module, derived, stems);
            break;
          }
          if (CODE_OPTION.test(w)) break;
          if (LOAD_OPTION.test(w)) {
            if (fileish(cmd[j + 1])) files.add(cmd[j + 1]!);
            j++;
            continue;
          }
          if (w.startsWith('-')) continue;
          if (!fileish(w)) break;
          if (sub && SUBCOMMAND.test(w)) {
            sub = false;
            continue;
          }
          files.add(w);
          stems.add(w);
          if (runner) files.add(`node_modules/.bin/${w}`);
          if (INTERPRETER.test(path.basename(w))) next = j;
          break;
        }
        at = next;
      }
    }
    level = deeper;
  }
  return { files: [...files], derived: [...derived], stems: [...stems] };
}

/** Adds to `derived` the paths Python loads for the module `module` (`a.b`: see {@link interpreterWords}), to `stems` its first and last name. */
function addModule(module: string, derived: Set<string>, stems: Set<string>): void {
  const parts = module.split('.');
  stems.add(parts[0]!).add(parts[parts.length - 1]!);
  for (let k = 1; k < parts.length; k++) {
    const pkg = parts.slice(0, k).join('/');
    derived.add(`${pkg}/__init__`).add(`${pkg}/__pycache__/__init__`);
  }
  const full = parts.join('/');
  const up = parts.length > 1 ? `${parts.slice(0, -1).join('/')}/` : '';
  derived.add(full).add(`${up}__pycache__/${parts[parts.length - 1]!}`);
  for (const e of ENTRY_POINTS) if (e.includes('__')) derived.add(`${full}/${e}`);
}

/**
 * A word that may name a file (a `/` in it, or a name with an extension such as `lint.sh`): the words of a value that
 * {@link valueFiles} records where nothing is yet. A bare word (`origin`, `main`, `true`, a user name) is run from
 * `PATH`, not the work tree, and would otherwise make every such name in the workspace's root a candidate; it is
 * recorded only against a folder the value `cd`s to or puts on `PATH` ({@link movedDirs}).
 */
const PATH_WORD = /\/|[^./]\.[A-Za-z0-9]{1,8}$/;

/**
 * A value that can change the folder or the `PATH` its commands run from, so that a relative or bare program word of it
 * may name a file in any folder of the workspace: `cd`, `pushd`, `popd`, `chdir`, `eval`, `exec`, `source`/`.`, `env`,
 * `xargs`, `find`, a shell run on a string (`sh -c`, `bash`, `dash`, `zsh`, `ksh`, `busybox`), `PATH=`, `$GIT_PREFIX`
 * (the person's subfolder an alias runs from: git(1)), `GIT_WORK_TREE`/`GIT_DIR`, a subshell or command substitution,
 * `-C dir` (git, make, tar) and `--prefix`/`--cwd`/`--dir`-style options. A superset: a word that merely looks so
 * costs only a wider audit ({@link GuardedGit.anywhere}).
 */
const MOVES_DIR =
  /(^|[^A-Za-z0-9_.-])(cd|pushd|popd|chdir|eval|exec|source|env|xargs|find|sh|bash|dash|zsh|ksh|ash|busybox)(?![A-Za-z0-9_.-])|(^|[\s;&|!])\.\s|PATH\s*=|GIT_PREFIX|GIT_WORK_TREE|GIT_DIR|[()`]|(^|\s)-C|--(prefix|cwd|dir|directory|chdir|cd|working-directory)\b/;

/** A bare word that can be a program's file name (no option, no assignment, no `/`). */
const BARE_NAME = /^[A-Za-z0-9_@+][A-Za-z0-9_.@+-]*$/;

/** Shell words that are builtins or keywords (`sh` runs no file of that name), left out of {@link GuardedGit.anywhere}. */
const SHELL_BUILTINS = new Set(
  'cd pushd popd eval exec export set unset if then else elif fi for in do done while until case esac echo printf test true false exit return shift read local source alias command type umask wait trap break continue readonly getopts hash times ulimit'.split(
    ' ',
  ),
);

/**
 * The file names {@link GuardedGit.anywhere} records for a value's words: the last name of each path-like or bare word
 * (`./run.sh`, `tools/fmt.sh`, `fmt`, `npx`), not options, assignments, expansions, globs, `.`/`..` or shell builtins.
 */
function anywhereNames(words: readonly string[]): string[] {
  const out = new Set<string>();
  for (const w of words) {
    if (NOT_A_PATH.test(w) || w.startsWith('-') || w.includes('=')) continue;
    const name = path.basename(w);
    if (name === '' || name === '.' || name === '..' || !BARE_NAME.test(name) || SHELL_BUILTINS.has(name)) continue;
    out.add(name);
  }
  return [...out];
}

/**
 * Folders a value's commands move to or run programs from, as written (relative, `~/` or absolute; `$PWD/` and the
 * like dropped): the operand of `cd`/`pushd` and each entry of a `PATH=` assignment, in the value and in each string a
 * nested shell runs (three deep, as {@link valueWords}); each with whether it is a `PATH` entry.
 */
function movedDirs(value: string): [string, boolean][] {
  const out = new Set<string>();
  const onPath = new Set<string>();
  let level = [shellWords(joinLines(value.replace(/^\s*!/, '')))];
  for (let depth = 0; depth < 3 && level.length > 0; depth++) {
    const deeper: string[][] = [];
    for (const ws of level)
      for (let i = 0; i < ws.length; i++) {
        const w = ws[i]!;
        if ((w === 'cd' || w === 'pushd') && ws[i + 1] !== undefined) out.add(ws[i + 1]!);
        const assign = /^PATH=(.*)$/.exec(w);
        if (assign)
          for (const e of assign[1]!.split(':')) {
            out.add(e);
            onPath.add(e);
          }
        if (/[\s;|&()<>'"`]/.test(w)) deeper.push(shellWords(w));
      }
    level = deeper;
  }
  const dirs = new Map<string, boolean>();
  for (const d of out) {
    // `$PWD/bin`, `"$(git rev-parse --show-toplevel)"/tools`: what follows the expansion.
    const tail = d.includes('$') || d.includes('`') ? d.slice(d.lastIndexOf('/') + 1) : d;
    if (d.includes('$') && !d.includes('/')) continue;
    if (tail !== '' && !NOT_A_PATH.test(tail) && !tail.startsWith('-')) dirs.set(tail, (dirs.get(tail) ?? false) || onPath.has(d));
  }
  return [...dirs];
}

/** `s` with each backslash-newline dropped, as the shell joins a line continued outside single quotes. */
const joinLines = (s: string): string => s.replace(/\\\n/g, '');

/**
 * A word with an expansion, a glob or a format placeholder, which names no one path. Not `@`: an npm scope
 * (`node_modules/@biomejs/biome/bin/biome`) or pnpm's `name@version` folder is a path (round 20).
 */
const NOT_A_PATH = /[$*?[\]{}%`]/;

/**
 * Where the path `p` (absolute) names nothing yet: `p` with the folders on the way resolved, a symlink on the way or
 * at `p` followed to where it leads (40 at most, as the kernel); undefined when something is there (a file, a folder),
 * a file stands in the way, or a link cannot be followed.
 */
function missingPath(p: string): string | undefined {
  let cur = path.resolve(p);
  for (let hops = 0; hops <= 40; hops++) {
    let head = cur;
    const rest: string[] = [];
    let st = lstatOrUndefined(head);
    while (st === undefined) {
      if (head === '/') return undefined;
      rest.unshift(path.basename(head));
      head = path.dirname(head);
      st = lstatOrUndefined(head);
    }
    if (st.isSymbolicLink()) {
      try {
        cur = path.join(path.resolve(fs.realpathSync(path.dirname(head)), fs.readlinkSync(head)), ...rest);
      } catch {
        return undefined;
      }
      continue;
    }
    if (rest.length === 0 || !st.isDirectory()) return undefined;
    try {
      return path.join(fs.realpathSync(head), ...rest);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** A path with a `..` component. */
const DOTS = /(^|\/)\.\.(\/|$)/;

/** `raw` (absolute, not normalized) resolved by the kernel (realpath(3): `a/..` is the parent of where `a` leads), or undefined when missing. */
function physicalPath(raw: string): string | undefined {
  try {
    return fs.realpathSync.native(raw);
  } catch {
    return undefined;
  }
}

/**
 * Holds what the kernel's resolution of `raw` (absolute, not normalized: a config path before
 * `path.resolve`) goes through before each `..`: git hands the path to the kernel, for which
 * `dir/..` is the parent of wherever `dir` leads, while the guard binds the path as read
 * (`dir/..` dropped). So each such folder that lies in the workspace (not the workspace itself)
 * must stay a real folder for the session's life: it is added to `scope.holds` (pinned by
 * {@link pinFolders}), made first when missing and `create` (owned as the workspace), else left
 * (the path names nothing then, as any missing program).
 * @throws GitGuardRefusal when such a folder is a symlink or no folder: the session could then
 *   make the path land on a file of its own (a link to a folder of the workspace), or already has
 */
function holdDots(raw: string, scope: Scope, create: boolean): void {
  if (!DOTS.test(raw)) return;
  const { workspace } = scope;
  let prefix = '/';
  for (const c of raw.split('/')) {
    if (c === '' || c === '.') continue;
    if (c !== '..') {
      prefix = path.join(prefix, c);
      continue;
    }
    if (prefix !== workspace && inside(prefix, workspace) && !scope.holds.includes(prefix)) {
      let st = lstatOrUndefined(prefix);
      if (st === undefined && create && scope.owner) {
        createInside(workspace, prefix, 'dir', scope.owner);
        st = lstatOrUndefined(prefix);
      }
      if (st?.isDirectory()) scope.holds.push(prefix);
      else if (st !== undefined)
        throw new GitGuardRefusal(
          `${raw}, a path a git config names, goes back out of ${prefix} with '..', and ${prefix} is ${st.isSymbolicLink() ? 'a symlink' : 'no folder'}: where the person's git lands there can change; remove the '..' from the config value or make ${prefix} a folder`,
        );
    }
    prefix = path.dirname(prefix);
  }
}

/** `fs.lstatSync(p)`, or undefined when that fails. */
function lstatOrUndefined(p: string): fs.Stats | undefined {
  try {
    return fs.lstatSync(p);
  } catch {
    return undefined;
  }
}

/** The candidate words of a config value ({@link valueFiles}): distinct, none empty. */
function valueWords(value: string): string[] {
  const raw = value.replace(/^\s*!/, '');
  // As the shell reads it (a backslash-newline joins two lines) and as written (inside single quotes it is kept).
  const v = joinLines(raw);
  const words = new Set<string>();
  if (v !== raw) for (const w of shellWords(raw)) words.add(w);
  // The shell's words, and those of a word that holds blanks (a nested `sh -c "…"`), three deep.
  let level = shellWords(v);
  for (let depth = 0; depth < 3 && level.length > 0; depth++) {
    const deeper: string[] = [];
    for (const w of level) {
      words.add(w.replace(/^!/, ''));
      if (/[\s;|&()<>'"`]/.test(w)) deeper.push(...shellWords(w.replace(/^\s*!/, '')));
    }
    level = deeper;
  }
  for (const w of v.split(/[\s;|&()<>'"`!]+/)) words.add(w);
  for (const w of [...words]) for (const part of w.split(/[=:,]/)) words.add(part);
  for (const w of [...words]) for (let i = w.indexOf('/'); i >= 0; i = w.indexOf('/', i + 1)) words.add(w.slice(i + 1));
  words.delete('');
  return [...words];
}

/**
 * `s` split into words as a POSIX shell splits a simple command line: single quotes literal,
 * double quotes with `\$`, `` \` ``, `\"`, `\\` escapes, a backslash quoting the next character
 * outside quotes (a backslash-newline dropped, outside single quotes, as the shell joins the lines), unquoted blanks and `;|&()<>` and backquotes ending a word. Expansions are kept
 * as text ({@link valueWords} tries what follows them).
 */
function shellWords(s: string): string[] {
  return shellCommands(s).flat();
}

/**
 * `s` split as {@link shellWords} splits it, into its simple commands: a new one after each unquoted `;`, `|`, `&`, `(`,
 * `)`, backquote or newline.
 */
function shellCommands(s: string): string[][] {
  const cmds: string[][] = [];
  let out: string[] = [];
  let cur = '';
  let started = false;
  let quote = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (quote === "'") {
      if (c === "'") quote = '';
      else cur += c;
    } else if (quote === '"') {
      if (c === '"') quote = '';
      else if (c === '\\' && s[i + 1] === '\n') i++;
      else if (c === '\\' && i + 1 < s.length && '$`"\\'.includes(s[i + 1]!)) cur += s[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      started = true;
    } else if (c === '\\' && s[i + 1] === '\n') {
      // A line continued: the shell drops both (a path split over two lines is one word).
      i++;
    } else if (c === '\\' && i + 1 < s.length) {
      cur += s[++i];
      started = true;
    } else if (/[\s;|&()<>`]/.test(c)) {
      if (started) out.push(cur);
      cur = '';
      started = false;
      if (/[\n;|&()`]/.test(c) && out.length > 0) {
        cmds.push(out);
        out = [];
      }
    } else {
      cur += c;
      started = true;
    }
  }
  if (started) out.push(cur);
  if (out.length > 0) cmds.push(out);
  return cmds;
}

/**
 * Whether `p` (absolute, resolved) is the state git keeps in `gitDir` and rewrites by rename in
 * every `commit`, `checkout` or `fetch` (objects, refs, logs, HEAD, the index, the state of a
 * merge, rebase or sequencer, a linked worktree's admin folder): never bound read-only, even
 * when a value names it (`alias.head = !cat .git/HEAD`), so that git in the session works; no
 * person's config runs a program from there.
 */
function isGitState(p: string, gitDir: string): boolean {
  let real = gitDir;
  try {
    real = fs.realpathSync(gitDir);
  } catch {
    /* as given */
  }
  const rel = path.relative(real, p);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return false;
  return (
    /^(index|packed-refs|shallow|COMMIT_EDITMSG|TAG_EDITMSG|MERGE_MSG|MERGE_MODE|SQUASH_MSG|AUTO_MERGE|[A-Z_]*HEAD|sharedindex\.[0-9a-f]+)(\.lock)?$/.test(
      rel,
    ) || /^(objects|refs|logs|worktrees|rebase-merge|rebase-apply|sequencer|rr-cache|lfs|modules|agent-jobs-quarantine)\//.test(rel)
  );
}

/**
 * `value` as the paths git (or a shell) may take it for, absolute but not normalized (a `..` kept
 * for {@link holdDots}; `path.resolve` gives the path as read): `~/…` against each of the owner's
 * homes, `~user/…` against that user's home (passwd), relative against `base`; none for '' or an
 * unknown user.
 */
function expandPaths(value: string, base: string, scope: Scope): string[] {
  if (value === '') return [];
  const tilde = /^~([^/]*)(\/.*)?$/.exec(value);
  if (tilde) {
    const [, user, rest] = tilde;
    let homes: readonly string[] = scope.homes;
    if (user !== '') {
      if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/.test(user!)) return [];
      if (!scope.userHomes.has(user!)) scope.userHomes.set(user!, passwdHome(user!));
      const home = scope.userHomes.get(user!);
      homes = home === undefined ? [] : [home];
    }
    return homes.map((h) => `${h}${rest ?? ''}`);
  }
  if (path.isAbsolute(value)) return [value];
  return base === '' ? [] : [`${base}/${value}`];
}

/**
 * Up to `max` bytes of the regular file `file` (symlinks followed, as git follows them), as UTF-8,
 * by safe-open.ts `readRegular`: what the session left in the workspace is read on the worker's
 * thread before the sandbox starts, and a FIFO at such a name would freeze every run of the worker
 * (adversary round 16).
 * @throws when `file` is missing (ENOENT), unreadable, or no regular file
 */
function readText(file: string, max: number): string {
  return readRegular(file, max, true).bytes.toString('utf8');
}

/** Whether `p` is a regular file (symlinks followed). */
function isFile(p: string): boolean {
  try {
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/**
 * The lower-cased keys and values of the config file `file` as git reads it (includes not
 * followed): [] when missing, undefined when git cannot be run or fails otherwise. Git runs with
 * no repository (cwd `/`, `GIT_DIR` unset), no system or global config, so nothing of the
 * person's configuration runs (`git config` runs no hook, pager or fsmonitor with `--null --list`).
 */
function gitConfigList(file: string): [string, string][] | undefined {
  const read = readGitConfig(file);
  if ('pairs' in read) return read.pairs;
  // Missing, or a FIFO (or socket, device): git reads none of it. Too large, or git failed: unknown.
  return 'missing' in read || !read.regular ? [] : undefined;
}

/** The largest config file the guard hands to git (bytes): far above any person's config, far below what stalls the worker. */
const MAX_CONFIG_BYTES = 4 << 20;

/**
 * The config file `file` as git reads it ({@link gitConfigList}), or why not: `missing` when it is
 * not there (ENOENT, ENOTDIR), else an `error` (said after the file's name) and whether it is a
 * regular file. Opened once without blocking and following symlinks as git does (`O_NONBLOCK`: a
 * FIFO would wait for a writer for ever, adversary round 16), `fstat` a regular file of at most
 * {@link MAX_CONFIG_BYTES}, and handed to git as that descriptor (`--file /dev/fd/3`), so that what
 * git reads is what was checked, whatever the name holds by then.
 */
function readGitConfig(file: string): { pairs: [string, string][] } | { missing: true } | { error: string; regular: boolean } {
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK | fs.constants.O_NOCTTY);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === 'ENOENT' || code === 'ENOTDIR' ? { missing: true } : { error: `cannot be opened (${code})`, regular: false };
  }
  let raw: string;
  try {
    const st = fs.fstatSync(fd);
    if (!st.isFile()) return { error: 'is no regular file', regular: false };
    if (st.size > MAX_CONFIG_BYTES) return { error: `is larger than ${MAX_CONFIG_BYTES} bytes`, regular: true };
    raw = execFileSync('git', ['config', '--file', '/dev/fd/3', '--null', '--list'], {
      cwd: '/',
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore', fd],
      timeout: 10_000,
      maxBuffer: 8 << 20,
      env: {
        PATH: process.env.PATH ?? '/usr/bin:/bin',
        HOME: os.homedir(),
        LC_ALL: 'C',
        GIT_CONFIG_NOSYSTEM: '1',
        GIT_CONFIG_GLOBAL: '/dev/null',
        GIT_CEILING_DIRECTORIES: '/',
      },
    });
  } catch (err) {
    // Exit 1 with no output: a file with no entries (or not a config file at all; git then reads none of it either).
    const e = err as { status?: number; stdout?: string };
    if (e.status === 1 && !e.stdout) return { pairs: [] };
    return { error: 'could not be read by git', regular: true };
  } finally {
    fs.closeSync(fd);
  }
  const pairs: [string, string][] = [];
  for (const entry of raw.split('\0')) {
    if (entry === '') continue;
    const nl = entry.indexOf('\n');
    pairs.push(nl < 0 ? [entry.toLowerCase(), ''] : [entry.slice(0, nl).toLowerCase(), entry.slice(nl + 1)]);
  }
  return { pairs };
}

/**
 * The fallback when git cannot be run: the absolute paths of the `path = …` values of `config`'s
 * `[include]` and `[includeIf "…"]` sections, relative ones against `gitDir` as git reads them;
 * `~` ones dropped (a home directory is never the workspace's). A hand parse: a comment after
 * the value is cut, escapes and continued lines are not git's.
 */
function includedFiles(config: string, gitDir: string): string[] {
  const out: string[] = [];
  let including = false;
  for (const line of config.split('\n')) {
    const section = /^\s*\[\s*([A-Za-z0-9.-]+)/.exec(line);
    if (section) including = /^include(if)?$/i.test(section[1]!);
    const m = including ? /^\s*(?:\[[^\]]*\]\s*)?path\s*=\s*("[^"]*"|[^;#]*)/i.exec(line) : null;
    const value = m ? m[1]!.trim().replace(/^"(.*)"$/, '$1') : '';
    if (value === '' || value.startsWith('~')) continue;
    out.push(path.resolve(gitDir, value));
  }
  return out;
}

/** The absolute git dir a `.git` file names (`gitdir: <path>`, relative to the file's directory), or undefined. */
function gitdirOf(file: string, workspace: string): string | undefined {
  try {
    const text = readText(file, 4096);
    const m = /^gitdir: (.+)$/m.exec(text);
    if (!m) return undefined;
    const named = path.resolve(workspace, m[1]!.trim());
    return fs.realpathSync(named);
  } catch {
    return undefined;
  }
}
