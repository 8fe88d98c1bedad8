/**
 * A sub-agent's git worktree (docs/subagents.md, `--subagent-workspace worktree`): made from the
 * parent's workspace with `git worktree add --detach <dir> HEAD`, as the workspace's owner (as
 * the session's commands run: identity.ts), in `<workspace root>/.subagent-worktrees/<child>`.
 * Idempotent: a retry finds the worktree it made. Worker code. git runs nothing the session
 * wrote into the repository (hooks, fsmonitor, filter drivers): worktree-git.ts.
 */
import { chown, mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { checkoutWithoutFilters, git, ownerOf } from './worktree-git';

/** Folder under the workspace root holding the sub-agents' worktrees; no run's default folder starts with a dot (workspaceFolderName). */
export const WORKTREES_FOLDER = '.subagent-worktrees';

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
 *   repository; or `error`, one line (the workspace is no git repository, git failed)
 */
export async function createWorktree(root: string, workspace: string, folder: string): Promise<{ path: string } | { error: string }> {
  if (!(await exists(workspace))) return { error: `The sub-agent was not started: the workspace ${workspace} does not exist.` };
  const runner = await ownerOf(workspace);
  let top: string;
  try {
    top = await git(runner, ['-C', workspace, 'rev-parse', '--show-toplevel']);
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
  if (await exists(path.join(dir, '.git'))) return { path: workdir };
  await mkdir(path.join(root, WORKTREES_FOLDER), { recursive: true, mode: 0o755 });
  // Made here and handed to the owner, so git (as the owner) may fill it; git accepts an empty folder.
  await mkdir(dir, { recursive: true, mode: 0o755 });
  if (runner.uid !== undefined) await chown(dir, runner.uid, runner.gid!);
  try {
    // No checkout by `worktree add`: it would run the repository's filter drivers (worktree-git.ts).
    await git(runner, ['-C', top, 'worktree', 'add', '--no-checkout', '--detach', dir, 'HEAD']);
    await checkoutWithoutFilters(runner, top, dir);
  } catch (err) {
    return { error: `The sub-agent was not started: git worktree add failed in ${top}: ${(err as Error).message}` };
  }
  return { path: workdir };
}
