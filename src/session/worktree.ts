/**
 * A sub-agent's git worktree (docs/subagents.md, `--subagent-workspace worktree`): made from the
 * parent's workspace with `git worktree add --detach <dir> HEAD`, as the workspace's owner (as
 * the session's commands run: identity.ts), in `<workspace root>/.subagent-worktrees/<child>`.
 * Idempotent: a retry finds the worktree it made. Also what the child's sandbox must show for
 * git to work in it (the repository's common dir and the worktree's gitdir: {@link WorktreeGit}),
 * found when the worktree is made and checked again on the worker that opens the child's session
 * ({@link checkWorktreeGit}). Worker code.
 *
 * git runs here outside every sandbox, on a repository the agent writes: it runs nothing the
 * session wrote into the repository (hooks, fsmonitor, filter drivers, transports): worktree-git.ts.
 */
import { constants } from 'node:fs';
import { chown, lstat, mkdir, open, readdir, realpath, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { WorktreeGit } from '../contract/subagent';
import { checkoutWithoutFilters, git as gitNoRepoCode, ownerOf, worktreeAdd, type Runner } from './worktree-git';

export type { WorktreeGit };

/** Folder under the workspace root holding the sub-agents' worktrees; no run's default folder starts with a dot (workspaceFolderName). */
export const WORKTREES_FOLDER = '.subagent-worktrees';

/** Runs git (worktree-git.ts: no code of the repository runs) on the repository `gitArgs` names (`-C <dir>` or `--git-dir=<dir>`). */
function git(runner: Runner, gitArgs: string[], args: string[]): Promise<string> {
  return gitNoRepoCode(runner, [...gitArgs, ...args]);
}

async function exists(p: string): Promise<boolean> {
  try {
    await stat(p);
    return true;
  } catch {
    return false;
  }
}

/**
 * Makes (or finds, on a retry) the worktree of `workspace` for one sub-agent.
 * @param root the worker's workspace root (the worktrees' folder is made in it)
 * @param workspace the parent's workspace, absolute
 * @param folder the worktree's folder name (from the child's workflow id)
 * @returns the child's workdir: the worktree, or the folder in it that `workspace` is in its
 *   repository, with the {@link WorktreeGit} its sandbox binds (absent when the repository's
 *   common dir is not inside `workspace`, see `gitOf`); or `error`, one line (the workspace is
 *   no git repository, git failed)
 */
export async function createWorktree(
  root: string,
  workspace: string,
  folder: string,
): Promise<{ path: string; git?: WorktreeGit } | { error: string }> {
  if (!(await exists(workspace))) return { error: `The sub-agent was not started: the workspace ${workspace} does not exist.` };
  const runner = await ownerOf(workspace);
  let top: string;
  try {
    top = await git(runner, ['-C', workspace], ['rev-parse', '--show-toplevel']);
  } catch (err) {
    const why = (err as Error).message;
    // Anything else (the owner cannot reach the folder, no git) is said as git said it.
    if (!/not a git repository/i.test(why)) return { error: `The sub-agent was not started: git failed in ${workspace}: ${why}` };
    return {
      error: `The sub-agent was not started: --subagent-workspace worktree needs a git repository, and ${workspace} is not in one.`,
    };
  }
  const inRepo = path.relative(top, await realpath(workspace));
  // core.worktree in the repository's config moves the top anywhere: the child's folder must stay in its worktree.
  if (inRepo === '..' || inRepo.startsWith(`..${path.sep}`) || path.isAbsolute(inRepo))
    return { error: `The sub-agent was not started: git places the top of ${workspace}'s repository outside it (${top}).` };
  const dir = path.join(root, WORKTREES_FOLDER, folder);
  const workdir = path.join(dir, inRepo);
  // A retry: the worktree exists (git wrote its `.git` file first).
  if (await exists(path.join(dir, '.git'))) return { path: workdir, ...(await gitOf(runner, top, workspace, dir)) };
  await mkdir(path.join(root, WORKTREES_FOLDER), { recursive: true, mode: 0o755 });
  // Made here and handed to the owner, so git (as the owner) may fill it; git accepts an empty folder.
  await mkdir(dir, { recursive: true, mode: 0o755 });
  if (runner.uid !== undefined) await chown(dir, runner.uid, runner.gid!);
  try {
    // No checkout by `worktree add`: it would run the repository's filter drivers; confined to top/.git and dir (worktree-git.ts).
    await worktreeAdd(runner, top, dir);
    await checkoutWithoutFilters(runner, top, dir);
  } catch (err) {
    return { error: `The sub-agent was not started: git worktree add failed in ${top}: ${(err as Error).message}` };
  }
  return { path: workdir, ...(await gitOf(runner, top, workspace, dir)) };
}

/**
 * The worktree's {@link WorktreeGit}, asked of the parent's repository `top`, never of the
 * worktree (whose `.git` file is the child's to rewrite once it ran: a retry may come later):
 * the common dir from `git rev-parse --git-common-dir` in `top`, the gitdir the entry of
 * `<common dir>/worktrees/` whose `gitdir` file names `<dir>/.git`, as `git worktree add` wrote
 * it. Nothing when the child must not have them: the common dir is not inside the parent's
 * workspace (the workspace is a subfolder of its repository), so the parent itself cannot
 * write it, and the child gets no more than its parent has.
 */
async function gitOf(runner: Runner, top: string, workspace: string, dir: string): Promise<{ git?: WorktreeGit }> {
  let commonDir: string;
  try {
    commonDir = await realpath(await git(runner, ['-C', top], ['rev-parse', '--path-format=absolute', '--git-common-dir']));
  } catch {
    return {};
  }
  if (!within(commonDir, await realpath(workspace))) return {};
  const dotGit = path.join(await realpath(dir), '.git');
  const worktrees = path.join(commonDir, 'worktrees');
  let names: string[];
  try {
    names = await readdir(worktrees);
  } catch {
    return {};
  }
  for (const name of names.sort()) {
    const named = await readGitdirFile(path.join(worktrees, name, 'gitdir'));
    if (named.trim() === dotGit) return { git: { commonDir, gitDir: path.join(worktrees, name) } };
  }
  return {};
}

/** Longest `gitdir` file read, bytes: 4096 (one path). */
const MAX_GITDIR_FILE_BYTES = 4096;

/**
 * The text of a worktree's `gitdir` file, or '' when it is not a small regular file: opened
 * without following a symlink and without blocking (the agent can write these files; a FIFO
 * there must not hold a thread of the worker's pool).
 */
async function readGitdirFile(p: string): Promise<string> {
  let handle: FileHandle | undefined;
  try {
    handle = await open(p, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    const st = await handle.stat();
    if (!st.isFile() || st.size > MAX_GITDIR_FILE_BYTES) return '';
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await handle.read(buf, 0, st.size, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } catch {
    return '';
  } finally {
    await handle?.close();
  }
}

/** Whether `p` is `dir` or inside it (both absolute, resolved). */
function within(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);
}

/**
 * Checks, on the worker that opens a sub-agent's session, the {@link WorktreeGit} its input
 * carries (made by `createWorktree` on the parent's worker, passed through the workflow; never
 * model text) before its sandbox binds anything of it. Each must hold:
 * - both paths absolute and normal (no `..`, no trailing `/`), and each its own real path;
 * - `gitDir` is `<commonDir>/worktrees/<name>`;
 * - `<gitDir>/gitdir` names `<worktree>/.git`, and `workdir` is that worktree or inside it;
 * - git, asked about `gitDir` alone (`--git-dir`, as the owner of `workdir`, with
 *   worktree-git.ts `NO_REPO_CODE`), says its common dir is `commonDir`.
 * The child can rewrite `<gitDir>/gitdir` and `commondir` (its gitdir is writable): that only
 * makes this check fail, and its session then opens without git's binds.
 * @param workdir the child's workdir (absolute)
 * @returns the checked paths, or `error`: one line saying which rule failed
 */
export async function checkWorktreeGit(workdir: string, claim: WorktreeGit): Promise<{ git: WorktreeGit } | { error: string }> {
  const { commonDir, gitDir } = claim;
  for (const [name, p] of [
    ['commonDir', commonDir],
    ['gitDir', gitDir],
  ] as const) {
    if (typeof p !== 'string' || !path.isAbsolute(p) || path.normalize(p) !== p || p.endsWith('/') || p.includes('\0'))
      return { error: `${name} is not a normal absolute path: ${JSON.stringify(p)}` };
    let real: string;
    try {
      real = await realpath(p);
    } catch (err) {
      return { error: `${name} ${p} cannot be resolved: ${(err as Error).message}` };
    }
    if (real !== p) return { error: `${name} ${p} is not its own real path (${real})` };
    if (!(await lstat(p)).isDirectory()) return { error: `${name} ${p} is not a directory` };
  }
  if (path.dirname(gitDir) !== path.join(commonDir, 'worktrees')) return { error: `${gitDir} is not in ${commonDir}/worktrees` };
  const dotGit = (await readGitdirFile(path.join(gitDir, 'gitdir'))).trim();
  if (dotGit === '') return { error: `${gitDir}/gitdir is no small regular file` };
  const worktree = path.dirname(dotGit);
  const real = await realpath(workdir).catch(() => workdir);
  if (path.basename(dotGit) !== '.git' || !path.isAbsolute(dotGit) || !within(real, worktree))
    return { error: `${gitDir} belongs to the worktree ${worktree}, not to ${workdir}` };
  let said: string;
  try {
    said = await git(await ownerOf(real), [`--git-dir=${gitDir}`], ['rev-parse', '--path-format=absolute', '--git-common-dir']);
  } catch (err) {
    return { error: `git cannot read ${gitDir}: ${(err as Error).message}` };
  }
  if (said !== commonDir) return { error: `the common dir of ${gitDir} is ${said}, not ${commonDir}` };
  return { git: { commonDir, gitDir } };
}
