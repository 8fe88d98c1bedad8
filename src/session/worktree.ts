/**
 * A sub-agent's git worktree (docs/subagents.md, `--subagent-workspace worktree`): made from the
 * parent's workspace with `git worktree add --detach <dir> HEAD`, as the workspace's owner (as
 * the session's commands run: identity.ts), in `<workspace root>/.subagent-worktrees/<child>`.
 * Idempotent: a retry finds the worktree it made. Worker code.
 */
import { execFile } from 'node:child_process';
import { chown, mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { MINIMAL_ENV, OWNER_FALLBACK_GID, workerIsRoot } from './identity';

/** Folder under the workspace root holding the sub-agents' worktrees; no run's default folder starts with a dot (workspaceFolderName). */
export const WORKTREES_FOLDER = '.subagent-worktrees';

/** Longest a git command of {@link createWorktree} may take, ms: 25 000 (inside the 30 s start-to-close of session control activities). */
const GIT_TIMEOUT_MS = 25_000;

/** Who git runs as: the workspace's owner when the worker is root and the owner is not, else the worker itself. */
interface Runner {
  uid?: number;
  gid?: number;
}

async function ownerOf(workspace: string): Promise<Runner> {
  const st = await stat(workspace);
  if (!workerIsRoot() || st.uid === 0) return {};
  return { uid: st.uid, gid: st.gid !== 0 ? st.gid : OWNER_FALLBACK_GID };
}

/** Runs git; resolves with its stdout, trimmed, or rejects with an Error whose message is git's first line of stderr. */
function git(runner: Runner, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { env: { ...MINIMAL_ENV, GIT_TERMINAL_PROMPT: '0' }, timeout: GIT_TIMEOUT_MS, encoding: 'utf8', ...runner },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout.trim());
        const line = stderr.split('\n').find((l) => l.trim() !== '') ?? err.message;
        reject(new Error(line.trim()));
      },
    );
  });
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
  const dir = path.join(root, WORKTREES_FOLDER, folder);
  const workdir = path.join(dir, inRepo);
  // A retry: the worktree exists (git wrote its `.git` file first).
  if (await exists(path.join(dir, '.git'))) return { path: workdir };
  await mkdir(path.join(root, WORKTREES_FOLDER), { recursive: true, mode: 0o755 });
  // Made here and handed to the owner, so git (as the owner) may fill it; git accepts an empty folder.
  await mkdir(dir, { recursive: true, mode: 0o755 });
  if (runner.uid !== undefined) await chown(dir, runner.uid, runner.gid!);
  try {
    await git(runner, ['-C', top, 'worktree', 'add', '--detach', dir, 'HEAD']);
  } catch (err) {
    return { error: `The sub-agent was not started: git worktree add failed in ${top}: ${(err as Error).message}` };
  }
  return { path: workdir };
}
