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
 * (git-audit.ts `heldLinks`, from {@link GuardedGit.named}).
 *
 * Only a repository whose `.git` is at the workspace's root is guarded (a workspace inside a
 * repository sees its `.git` read-only already). What a bind cannot cover because it did not exist
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

/** The paths a session's sandbox binds for the workspace's repository: `.git` onto itself, and the ones read-only. */
export interface GuardedGit {
  /** Bound writable onto themselves (mount points that cannot be renamed or removed): `<workspace>/.git`, its `worktrees/` and each `worktrees/<id>/`, and each folder on the way to a read-only path in the workspace. */
  readonly writable: string[];
  /** Bound read-only: config, hooks/, info/, config.worktree of the git dir (symlinks resolved), what its config names in the workspace (includes, `core.hooksPath`, programs), a `.git` file itself, each linked worktree's commondir, gitdir, config.worktree. */
  readonly readonly: string[];
  /**
   * What the config names in the workspace (includes, `core.hooksPath`, programs, hooks that are symlinks) as it names
   * them, absolute but not resolved: the git audit holds each symlink on the way (git-audit.ts `heldLinks`), since the
   * binds hold only what the names led to at start.
   */
  readonly named: string[];
}

/** The entries of a git dir in which git finds programs to run, and where it finds them first. */
const CODE_ENTRIES = ['config', 'hooks', 'info', 'config.worktree'] as const;

/**
 * The git paths to bind for `workspace` (absolute): none when `<workspace>/.git` is missing or a
 * symlink to a path outside the workspace (read-only there already); a symlink into the workspace
 * counts as its target (resolved). For a `.git` directory: itself writable, and
 * those of {@link CODE_ENTRIES} that are there read-only; `hooks/` and `info/` are created empty
 * first when missing (as `git init` makes them), so that the session cannot create them. For a
 * `.git` file (`gitdir: …`, a worktree or a separated git dir): the file read-only, and the git
 * dir it names treated as above when it lies inside the workspace (for a linked worktree's admin
 * folder: its own entries, and its common dir when that lies inside too). Either way, the
 * repository's linked worktrees' admin folders too (see the module comment).
 * Never throws: what cannot be read is not guarded.
 */
export function guardedGit(workspace: string): GuardedGit {
  const out: GuardedGit = { writable: [], readonly: [], named: [] };
  guardInto(workspace, out);
  pinFolders(out, workspace);
  return out;
}

/** {@link guardedGit}'s work, before {@link pinFolders}. */
function guardInto(workspace: string, out: GuardedGit): GuardedGit {
  const dotGit = path.join(workspace, '.git');
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
    guardGitDir(gitPath, workspace, out, true);
  } else if (st.isFile()) {
    out.readonly.push(gitPath);
    const named = gitdirOf(gitPath, workspace);
    if (named === undefined) return out;
    if (inside(named, workspace)) guardGitDir(named, workspace, out, true);
    else {
      // A linked worktree whose admin folder is elsewhere (read-only, as all outside the workspace), of a repository inside it.
      const common = commonDirOf(named);
      if (common && inside(common, workspace) && isDir(common)) guardGitDir(common, workspace, out, false);
    }
  }
  return out;
}

/**
 * Adds to `out.writable` each folder between `workspace` and a read-only path in it (`scripts`
 * for `scripts/fmt.sh`, `.husky` for `.husky/_`), bound onto itself: a mount point, so that the
 * session can neither rename nor remove it (EBUSY) and put a folder of its own, with a new
 * program at the same name, in its place (`mv scripts s2 && mkdir scripts`, round 15; the
 * person's git reaches the program by its path). Never a folder that is or lies in a read-only
 * path (a writable bind there would undo it), nor `workspace` itself (bound already). A symlink
 * on the way is no mount point and stays replaceable (see the module comment).
 */
function pinFolders(out: GuardedGit, workspace: string): void {
  const readonly = out.readonly.filter((p) => inside(p, workspace) && p !== workspace);
  for (const p of readonly)
    for (let dir = path.dirname(p); dir !== workspace && inside(dir, workspace); dir = path.dirname(dir)) {
      if (out.writable.includes(dir) || readonly.some((r) => inside(dir, r))) continue;
      out.writable.push(dir);
    }
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
function guardGitDir(gitDir: string, workspace: string, out: GuardedGit, follow: boolean): void {
  out.writable.push(gitDir);
  const common = commonDirOf(gitDir);
  if (common === undefined) {
    out.readonly.push(...codeEntries(gitDir, workspace, out.named));
    linkedWorktrees(gitDir, workspace, out);
    return;
  }
  out.readonly.push(...adminEntries(gitDir, configOf(common ?? gitDir), workspace));
  if (follow && common !== null && common !== gitDir && inside(common, workspace) && isDir(common))
    guardGitDir(common, workspace, out, false);
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
function linkedWorktrees(gitDir: string, workspace: string, out: GuardedGit): void {
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
    const top = dotGit === undefined ? workspace : path.dirname(dotGit);
    const named = configNamedPaths([path.join(admin, 'config.worktree')], '', admin, top, workspace);
    for (const p of [...named.includes, ...named.programs]) {
      const real = realInside(p, workspace);
      if (real !== undefined && real !== workspace && isFile(real) && !out.readonly.includes(real)) out.readonly.push(real);
    }
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
    text = readRegular(file, 4096);
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
    const line = readRegular(path.join(admin, 'gitdir'), 4096).split('\n')[0]!.trim();
    const p = fs.realpathSync(path.resolve(admin, line));
    return fs.lstatSync(p).isFile() ? p : undefined;
  } catch {
    return undefined;
  }
}

/** The first MiB of `gitDir`'s `config`, or '' when unreadable. */
function configOf(gitDir: string): string {
  try {
    return readRegular(path.join(gitDir, 'config'), 1 << 20);
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

/** `O_RDONLY | O_DIRECTORY | O_NOFOLLOW`: a directory's descriptor, never through a symlink at the last component. */
const DIR_FLAGS = fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW;

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
      dir = fs.openSync(at, DIR_FLAGS);
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
function codeEntries(gitDir: string, workspace: string, names: string[]): string[] {
  const found: string[] = [];
  let owner: fs.Stats | undefined;
  let config = '';
  try {
    owner = fs.statSync(gitDir);
    config = readRegular(path.join(gitDir, 'config'), 1 << 20);
  } catch {
    /* unreadable: nothing created */
  }
  const make = (p: string, kind: 'file' | 'dir'): void => {
    if (owner) createInside(workspace, p, kind, owner);
  };
  const add = (p: string): void => {
    if (inside(p, workspace) && !names.includes(p) && !(CODE_ENTRIES as readonly string[]).includes(path.relative(gitDir, p)))
      names.push(p);
    const real = realInside(p, workspace);
    if (real !== undefined && real !== workspace && !found.includes(real)) found.push(real);
  };
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
  const named = configNamedPaths(configs, config, gitDir, workTreeOf(gitDir, workspace), workspace);
  for (const p of named.includes) {
    if (!inside(p, workspace)) continue;
    make(p, 'file');
    add(p);
  }
  const hookDirs = [path.join(gitDir, 'hooks')];
  for (const dir of named.hookDirs) {
    if (!inside(dir, workspace) || dir === workspace) continue;
    make(dir, 'dir');
    add(dir);
    hookDirs.push(dir);
  }
  for (const p of named.programs) add(p);
  // A hook that is a symlink to a script in the workspace (a tracked `scripts/pre-commit`): its target.
  for (const dir of hookDirs) {
    try {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) if (e.isSymbolicLink()) add(path.join(dir, e.name));
    } catch {
      /* unreadable */
    }
  }
  return found;
}

/**
 * The work tree's root of the repository whose git dir is `gitDir` (inside `workspace`): where git
 * runs hooks, aliases and the programs config values name. `core.worktree` (relative to the git
 * dir, as git reads it) when set, else `workspace` (the guarded git dir is the workspace's `.git`).
 */
function workTreeOf(gitDir: string, workspace: string): string {
  const set = (gitConfigList(path.join(gitDir, 'config')) ?? []).filter(([k]) => k === 'core.worktree').pop();
  return set === undefined || set[1] === '' ? workspace : path.resolve(gitDir, set[1]);
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
}

/**
 * What the config files `files` (of git dir `gitDir`; the first one's text `text`) and everything
 * they include name, as git parses it: `git config --file F --null --list` for each file (no hooks,
 * no repository: run from `/` with system and global config off, as the worker, before the
 * sandbox starts), so that comments, quoting, escapes and continued lines are git's own. Includes
 * are followed to a depth of 10 (git's own limit), relative ones against the directory of the file
 * naming them, `~/` against the worker's home. `top` is the work tree's root, where git runs hooks,
 * aliases and the programs of other keys. When git cannot be run: includes only, from a hand parse
 * of `text` ({@link includedFiles}).
 */
function configNamedPaths(files: string[], text: string, gitDir: string, top: string, workspace: string): ConfigNamed {
  const out: ConfigNamed = { includes: [], hookDirs: [], programs: [] };
  const seen = new Set<string>();
  let queue: string[] = files;
  for (let depth = 0; depth <= 10 && queue.length > 0; depth++) {
    const next: string[] = [];
    for (const f of queue) {
      if (seen.has(f)) continue;
      seen.add(f);
      const pairs = gitConfigList(f);
      if (pairs === undefined) {
        if (f === files[0]) out.includes.push(...includedFiles(text, gitDir));
        continue;
      }
      for (const [key, value] of pairs) {
        if (/^include(if\..*)?\.path$/.test(key)) {
          const p = expandPath(value, path.dirname(f));
          if (p === undefined) continue;
          out.includes.push(p);
          next.push(p);
        } else if (key === 'core.hookspath') {
          const p = expandPath(value, top);
          if (p !== undefined) out.hookDirs.push(p);
        }
        // Every value, whatever its key (PROGRAM_KEYS is git's list today; a key it lacks or git adds fails closed).
        out.programs.push(...valueFiles(value, [top, workspace, gitDir], workspace, gitDir));
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
 * tried absolute, `~/` against the worker's home, and relative to each of `bases` (the work
 * tree's root, where git runs it; the workspace; the git dir) and to each folder a word of the
 * same value names (`cd tools && ./fmt.sh`). Never the git dir's own state (objects, refs, logs,
 * HEAD, index: {@link isGitState}), which git in the session must go on writing.
 */
function valueFiles(value: string, bases: string[], workspace: string, gitDir: string): string[] {
  const words = valueWords(value);
  if (words.length === 0) return [];
  const resolve = (w: string, base: string): string | undefined => expandPath(w, base);
  const dirs = new Set(bases);
  for (const w of words)
    for (const base of bases) {
      const p = resolve(w, base);
      if (p !== undefined && dirs.size < 64 && inside(p, workspace) && isDir(p)) dirs.add(p);
    }
  const found = new Set<string>();
  for (const w of words)
    for (const base of dirs) {
      const p = resolve(w, base);
      if (p === undefined || !isFile(p)) continue;
      const real = realInside(p, workspace);
      // As named, not resolved: a symlink on the way is then one the audit holds (git-audit.ts heldLinks).
      if (real !== undefined && !isGitState(real, gitDir)) found.add(p);
    }
  return [...found];
}

/** The candidate words of a config value ({@link valueFiles}): distinct, none empty. */
function valueWords(value: string): string[] {
  const v = value.replace(/^\s*!/, '');
  const words = new Set<string>();
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
 * outside quotes, unquoted blanks and `;|&()<>` and backquotes ending a word. Expansions are kept
 * as text ({@link valueWords} tries what follows them).
 */
function shellWords(s: string): string[] {
  const out: string[] = [];
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
      else if (c === '\\' && i + 1 < s.length && '$`"\\\n'.includes(s[i + 1]!)) cur += s[++i];
      else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      started = true;
    } else if (c === '\\' && i + 1 < s.length) {
      cur += s[++i];
      started = true;
    } else if (/[\s;|&()<>`]/.test(c)) {
      if (started) out.push(cur);
      cur = '';
      started = false;
    } else {
      cur += c;
      started = true;
    }
  }
  if (started) out.push(cur);
  return out;
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

/** `value` as a path: `~/…` against the worker's home, relative against `base`; undefined for '' or `~user`. */
function expandPath(value: string, base: string): string | undefined {
  if (value === '') return undefined;
  if (value === '~' || value.startsWith('~/')) return path.join(os.homedir(), value.slice(1));
  if (value.startsWith('~')) return undefined;
  return path.resolve(base, value);
}

/** Whether `p` is a regular file (symlinks followed). */
/**
 * Up to `max` bytes of the regular file `file` (symlinks followed), as UTF-8, opened without
 * blocking (`O_NONBLOCK`): what the session left in the workspace is read on the worker's thread
 * before the sandbox starts, and a FIFO at such a name would wait for a writer for ever, freezing
 * every run of the worker (adversary round 16).
 * @throws when `file` is missing (ENOENT), unreadable, or no regular file
 */
function readRegular(file: string, max: number): string {
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
  try {
    if (!fs.fstatSync(fd).isFile()) throw new Error(`${file} is no regular file`);
    const buf = Buffer.alloc(max);
    return buf.subarray(0, fs.readSync(fd, buf, 0, max, 0)).toString('utf8');
  } finally {
    fs.closeSync(fd);
  }
}

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
  // A FIFO (or socket, device) is never handed to git: opening one waits for a writer (adversary round 16).
  if (!fs.existsSync(file) || !isFile(file)) return [];
  let raw: string;
  try {
    raw = execFileSync('git', ['config', '--file', file, '--null', '--list'], {
      cwd: '/',
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
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
    return e.status === 1 && !e.stdout ? [] : undefined;
  }
  const pairs: [string, string][] = [];
  for (const entry of raw.split('\0')) {
    if (entry === '') continue;
    const nl = entry.indexOf('\n');
    pairs.push(nl < 0 ? [entry.toLowerCase(), ''] : [entry.slice(0, nl).toLowerCase(), entry.slice(nl + 1)]);
  }
  return pairs;
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
    const text = readRegular(file, 4096);
    const m = /^gitdir: (.+)$/m.exec(text);
    if (!m) return undefined;
    const named = path.resolve(workspace, m[1]!.trim());
    return fs.realpathSync(named);
  } catch {
    return undefined;
  }
}
