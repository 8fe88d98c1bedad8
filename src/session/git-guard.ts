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
 * Only a repository whose `.git` is at the workspace's root is guarded (a workspace inside a
 * repository sees its `.git` read-only already). Still open (test/unit/attack/adversary-round10.test.ts):
 * a new `.git/commondir` (git then reads the config of the directory it names), a nested
 * repository the session adds to the index as a gitlink (`git status` runs in it), a
 * repository deeper in the workspace, and a config replaced on the host during the run (the
 * kernel drops a bind whose directory entry is renamed over).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** The paths a session's sandbox binds for the workspace's repository: `.git` onto itself, and the ones read-only. */
export interface GuardedGit {
  /** Bound writable onto themselves (mount points that cannot be renamed or removed): `<workspace>/.git`. */
  readonly writable: string[];
  /** Bound read-only: config, hooks/, info/, config.worktree of the git dir, or a `.git` file itself. */
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
 * dir it names treated as above when it lies inside the workspace.
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
    out.writable.push(dotGit);
    out.readonly.push(...codeEntries(dotGit, workspace));
  } else if (st.isFile()) {
    out.readonly.push(dotGit);
    const named = gitdirOf(dotGit, workspace);
    if (named !== undefined && (named === workspace || named.startsWith(`${workspace}/`)))
      out.readonly.push(...codeEntries(named, workspace));
  }
  return out;
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
