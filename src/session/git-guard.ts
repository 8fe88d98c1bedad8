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
 * 9's `.husky/_`, whose files git ignores); the programs that `core.fsmonitor`, filter, diff,
 * merge drivers and the like name. Whatever of it lies in the workspace, symlinks resolved, is
 * bound read-only, and each folder between the workspace's root and it bound onto itself (no
 * `mv .husky` aside and a new `.husky/_`); a `.git` or `.git/config` that is a symlink into the
 * workspace counts by its target (attack tests: adversary-round13.test.ts, kind 6).
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
  /** Bound writable onto themselves (mount points that cannot be renamed or removed): `<workspace>/.git`, its `worktrees/` and each `worktrees/<id>/`. */
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
  holdAncestors(workspace, out);
  return out;
}

/**
 * Adds to `out.writable` each directory strictly between `workspace` and a read-only path that is not there yet, so
 * that it is bound onto itself: a mount point, which the session can neither rename nor remove (EBUSY). Else it
 * could rename the folder holding a guarded file or directory (`mv .husky .husky.old`, with `core.hooksPath =
 * .husky/_`) and make a new one of its own at the name git reads (observed: the bind went with the old folder).
 * The sandbox applies shallower mounts first, so the read-only binds inside stay.
 */
function holdAncestors(workspace: string, out: GuardedGit): void {
  for (const p of [...out.readonly]) {
    if (!p.startsWith(`${workspace}/`)) continue;
    for (let a = path.dirname(p); a !== workspace && a.startsWith(`${workspace}/`); a = path.dirname(a))
      if (!out.writable.includes(a) && !out.readonly.includes(a)) out.writable.push(a);
  }
}

/** {@link guardedGit}'s work, before {@link holdAncestors}. */
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
  out.readonly.push(...adminEntries(gitDir, configOf(common ?? gitDir)));
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
function adminEntries(admin: string, commonConfig: string): string[] {
  const found: string[] = [];
  if (WORKTREE_CONFIG.test(commonConfig)) makeEmpty(path.join(admin, 'config.worktree'), admin);
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
    out.readonly.push(...adminEntries(admin, config));
    // The worktree's own `.git` file, when the worktree lies in the workspace: git reads it first, to find this folder.
    const dotGit = backlinkOf(admin);
    if (dotGit !== undefined && inside(dotGit, workspace)) out.readonly.push(dotGit);
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
    text = fs.readFileSync(file, 'utf8').slice(0, 4096);
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
    const line = fs.readFileSync(path.join(admin, 'gitdir'), 'utf8').slice(0, 4096).split('\n')[0]!.trim();
    const p = fs.realpathSync(path.resolve(admin, line));
    return fs.lstatSync(p).isFile() ? p : undefined;
  } catch {
    return undefined;
  }
}

/** The first MiB of `gitDir`'s `config`, or '' when unreadable. */
function configOf(gitDir: string): string {
  try {
    return fs.readFileSync(path.join(gitDir, 'config'), 'utf8').slice(0, 1 << 20);
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
function makeEmpty(file: string, dir: string): void {
  try {
    const owner = fs.statSync(dir);
    fs.writeFileSync(file, '', { flag: 'wx', mode: 0o644 });
    fs.lchownSync(file, owner.uid, owner.gid);
  } catch {
    /* there already (or the folder is not the worker's to write: then neither is it the session's) */
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
 * the config names it ({@link GuardedGit.named}).
 */
function codeEntries(gitDir: string, workspace: string, names: string[]): string[] {
  const found: string[] = [];
  let owner: fs.Stats | undefined;
  let config = '';
  try {
    owner = fs.statSync(gitDir);
    config = fs.readFileSync(path.join(gitDir, 'config'), 'utf8').slice(0, 1 << 20);
  } catch {
    /* unreadable: nothing created */
  }
  const own = (p: string): void => {
    if (owner) fs.lchownSync(p, owner.uid, owner.gid);
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
    try {
      let made = true;
      if (name === 'hooks' || name === 'info') fs.mkdirSync(p, { mode: 0o755 });
      else if (name === 'config.worktree' && worktreeConfig) fs.writeFileSync(p, '', { flag: 'wx', mode: 0o644 });
      else made = false;
      if (made) own(p);
    } catch {
      /* there already (or the git dir is not the worker's to write: then neither is it the session's) */
    }
    try {
      const st = fs.statSync(p);
      if (st.isFile() || st.isDirectory()) add(p);
    } catch {
      /* missing: config.worktree without extensions.worktreeConfig, which the read-only config cannot gain */
    }
  }
  const named = configNamedPaths(path.join(gitDir, 'config'), config, gitDir, workspace);
  for (const p of named.includes) {
    if (!inside(p, workspace)) continue;
    try {
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, '', { flag: 'wx', mode: 0o644 });
      own(p);
    } catch {
      /* there already */
    }
    add(p);
  }
  const hookDirs = [path.join(gitDir, 'hooks')];
  for (const dir of named.hookDirs) {
    if (!inside(dir, workspace) || dir === workspace) continue;
    try {
      fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
      own(dir);
    } catch {
      /* there already, or not makeable */
    }
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
 * Keys whose value git runs as a program or shell command (git-config(1)): the person's git on
 * the host runs them in `git status`, `diff`, `commit`, `fetch` and the like. Matched on the
 * lower-cased key git prints.
 */
const PROGRAM_KEYS =
  /^(core\.(fsmonitor|sshcommand|editor|pager|askpass|gitproxy)|sequence\.editor|diff\.external|diff\..+\.(textconv|command)|filter\..+\.(clean|smudge|process)|merge\..+\.driver|(difftool|mergetool)\..+\.cmd|credential\.(.+\.)?helper|gpg\.(.+\.)?program|pager\..+|alias\..+|uploadpack\.packobjectshook)$/;

/** What a repository's config makes git read or run ({@link configNamedPaths}): absolute paths, not resolved. */
interface ConfigNamed {
  /** Every file the config includes (`include.path`, `includeIf.<cond>.path`, whatever the condition: a session can make one true), and their includes. */
  includes: string[];
  /** `core.hooksPath` (relative to the worktree's root, where git runs hooks). */
  hookDirs: string[];
  /** Each word of a {@link PROGRAM_KEYS} value that names an existing file (relative ones against the worktree's root). */
  programs: string[];
}

/**
 * What the config file `file` (of git dir `gitDir`, text `text`) and everything it includes name,
 * as git parses it: `git config --file F --null --list` for each file (no hooks, no repository:
 * run from `/` with system and global config off, as the worker, before the sandbox starts), so
 * that comments, quoting, escapes and continued lines are git's own. Includes are followed to a
 * depth of 10 (git's own limit), relative ones against the directory of the file naming them, `~/`
 * against the worker's home. When git cannot be run: includes only, from a hand parse of `text`
 * ({@link includedFiles}).
 */
function configNamedPaths(file: string, text: string, gitDir: string, workspace: string): ConfigNamed {
  const out: ConfigNamed = { includes: [], hookDirs: [], programs: [] };
  const seen = new Set<string>();
  let queue: string[] = [file];
  for (let depth = 0; depth <= 10 && queue.length > 0; depth++) {
    const next: string[] = [];
    for (const f of queue) {
      if (seen.has(f)) continue;
      seen.add(f);
      const pairs = gitConfigList(f);
      if (pairs === undefined) {
        if (f === file) out.includes.push(...includedFiles(text, gitDir));
        continue;
      }
      for (const [key, value] of pairs) {
        if (/^include(if\..*)?\.path$/.test(key)) {
          const p = expandPath(value, path.dirname(f));
          if (p === undefined) continue;
          out.includes.push(p);
          next.push(p);
        } else if (key === 'core.hookspath') {
          const p = expandPath(value, workspace);
          if (p !== undefined) out.hookDirs.push(p);
        } else if (PROGRAM_KEYS.test(key)) {
          for (const word of value.split(/[\s;|&()<>'"`=]+/)) {
            const p = word === '' ? undefined : expandPath(word, workspace);
            if (p !== undefined && isFile(p)) out.programs.push(p);
          }
        }
      }
    }
    queue = next;
  }
  return out;
}

/** `value` as a path: `~/…` against the worker's home, relative against `base`; undefined for '' or `~user`. */
function expandPath(value: string, base: string): string | undefined {
  if (value === '') return undefined;
  if (value === '~' || value.startsWith('~/')) return path.join(os.homedir(), value.slice(1));
  if (value.startsWith('~')) return undefined;
  return path.resolve(base, value);
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
  if (!fs.existsSync(file)) return [];
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
    const text = fs.readFileSync(file, 'utf8').slice(0, 4096);
    const m = /^gitdir: (.+)$/m.exec(text);
    if (!m) return undefined;
    const named = path.resolve(workspace, m[1]!.trim());
    return fs.realpathSync(named);
  } catch {
    return undefined;
  }
}
