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
 * Only a repository whose `.git` is at the workspace's root is guarded (a workspace inside a
 * repository sees its `.git` read-only already). What a bind cannot cover because it did not exist
 * at start (a new `.git/commondir`, a `.git` or repository below the root, `modules/<name>`, a stray
 * `worktrees/<id>`, replace refs), and a guarded file the person's git replaced on the host (the
 * kernel drops a bind whose directory entry is renamed over), are the audit's: git-audit.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The paths a session's sandbox binds for the workspace's repository: `.git` onto itself, and the ones read-only. */
export interface GuardedGit {
  /** Bound writable onto themselves (mount points that cannot be renamed or removed): `<workspace>/.git`, its `worktrees/` and each `worktrees/<id>/`. */
  readonly writable: string[];
  /** Bound read-only: config, hooks/, info/, config.worktree of the git dir, a `.git` file itself, each linked worktree's commondir, gitdir, config.worktree. */
  readonly readonly: string[];
}

/** The entries of a git dir in which git finds programs to run, and where it finds them first. */
const CODE_ENTRIES = ['config', 'hooks', 'info', 'config.worktree'] as const;

/**
 * The git paths to bind for `workspace` (absolute): none when `<workspace>/.git` is missing or a
 * symlink (whose target the sandbox shows as it is). For a `.git` directory: itself writable, and
 * those of {@link CODE_ENTRIES} that are there read-only; `hooks/` and `info/` are created empty
 * first when missing (as `git init` makes them), so that the session cannot create them. For a
 * `.git` file (`gitdir: …`, a worktree or a separated git dir): the file read-only, and the git
 * dir it names treated as above when it lies inside the workspace (for a linked worktree's admin
 * folder: its own entries, and its common dir when that lies inside too). Either way, the
 * repository's linked worktrees' admin folders too (see the module comment).
 * Never throws: what cannot be read is not guarded.
 */
export function guardedGit(workspace: string): GuardedGit {
  const out: GuardedGit = { writable: [], readonly: [] };
  const dotGit = path.join(workspace, '.git');
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dotGit);
  } catch {
    return out;
  }
  if (st.isDirectory()) {
    guardGitDir(dotGit, workspace, out, true);
  } else if (st.isFile()) {
    out.readonly.push(dotGit);
    const named = gitdirOf(dotGit, workspace);
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
    out.readonly.push(...codeEntries(gitDir, workspace));
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
 * each owned as `gitDir` is (the worker may be root; the repository is the person's); and every
 * file the config includes (`include.path`, `includeIf.*.path`) that lies in `workspace`, created
 * empty when missing (git skips a missing include, so the session could otherwise create it).
 * Includes of included files are not followed.
 */
function codeEntries(gitDir: string, workspace: string): string[] {
  const found: string[] = [];
  let owner: fs.Stats | undefined;
  let config = '';
  try {
    owner = fs.statSync(gitDir);
    config = fs.readFileSync(path.join(gitDir, 'config'), 'utf8').slice(0, 1 << 20);
  } catch {
    /* unreadable: nothing created */
  }
  // A loose match: an empty config.worktree made once too often is harmless to git.
  const worktreeConfig = /worktreeconfig\s*=\s*(true|yes|on|1)?\s*$/im.test(config);
  for (const name of CODE_ENTRIES) {
    const p = path.join(gitDir, name);
    try {
      let made = true;
      if (name === 'hooks' || name === 'info') fs.mkdirSync(p, { mode: 0o755 });
      else if (name === 'config.worktree' && worktreeConfig) fs.writeFileSync(p, '', { flag: 'wx', mode: 0o644 });
      else made = false;
      if (made && owner) fs.lchownSync(p, owner.uid, owner.gid);
    } catch {
      /* there already (or the git dir is not the worker's to write: then neither is it the session's) */
    }
    try {
      const st = fs.lstatSync(p);
      if (st.isFile() || st.isDirectory()) found.push(p);
    } catch {
      /* missing: config.worktree without extensions.worktreeConfig, which the read-only config cannot gain */
    }
  }
  for (const p of includedFiles(config, gitDir)) {
    if (!(p === workspace || p.startsWith(`${workspace}/`)) || found.includes(p)) continue;
    try {
      fs.mkdirSync(path.dirname(p), { recursive: true });
      fs.writeFileSync(p, '', { flag: 'wx', mode: 0o644 });
      if (owner) fs.lchownSync(p, owner.uid, owner.gid);
    } catch {
      /* there already */
    }
    try {
      if (fs.lstatSync(p).isFile()) found.push(p);
    } catch {
      /* could not be made */
    }
  }
  return found;
}

/**
 * The absolute paths of the `path = …` values of `config`'s `[include]` and `[includeIf "…"]`
 * sections, relative ones against `gitDir` as git reads them; `~` ones dropped (a home directory
 * is never the workspace's).
 */
function includedFiles(config: string, gitDir: string): string[] {
  const out: string[] = [];
  let including = false;
  for (const line of config.split('\n')) {
    const section = /^\s*\[\s*([A-Za-z0-9.-]+)/.exec(line);
    if (section) including = /^include(if)?$/i.test(section[1]!);
    const m = including ? /^\s*(?:\[[^\]]*\]\s*)?path\s*=\s*"?([^"]*?)"?\s*$/i.exec(line) : null;
    if (!m || m[1] === '' || m[1]!.startsWith('~')) continue;
    out.push(path.resolve(gitDir, m[1]!));
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
