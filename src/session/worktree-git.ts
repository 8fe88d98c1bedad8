/**
 * git for a sub-agent's worktree (worktree.ts) that runs nothing the session wrote. The
 * repository's `.git` (config, hooks, info/attributes) is the session user's to write, and this
 * git runs as root or the owner, outside the sandbox, so it must execute no code from it:
 * - hooks (post-checkout, reference-transaction, post-index-change, …): `core.hooksPath=/dev/null`;
 * - `core.fsmonitor` (a program git runs to list changed files): `false`;
 * - transports (a partial clone's lazy fetch runs `remote.*.uploadpack`, `core.sshCommand`):
 *   `protocol.allow=never`; no auto gc or maintenance;
 * - filter drivers (`filter.<name>.smudge` / `process`, chosen by `.gitattributes` or
 *   `.git/info/attributes`, any name): `worktree add --no-checkout`, then the files are checked out
 *   by a git whose git dir is a private one the worker writes ({@link checkoutWithoutFilters}): its
 *   config and attributes are ours, so only git's built-in conversions (eol, ident) apply.
 * Command-line `-c` wins over every file the repository includes (`include.path`, `includeIf`).
 */
import { execFile } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MINIMAL_ENV, OWNER_FALLBACK_GID, workerIsRoot } from './identity';

/** Longest one git command may take, ms: 25 000 (inside the 30 s start-to-close of session control activities). */
const GIT_TIMEOUT_MS = 25_000;

/** `-c` settings of every git this module runs: no hook, fsmonitor, transport, gc or maintenance of the repository's config runs. */
export const NO_REPO_CODE: readonly string[] = [
  '-c',
  'core.hooksPath=/dev/null',
  '-c',
  'core.fsmonitor=false',
  '-c',
  'protocol.allow=never',
  '-c',
  'gc.auto=0',
  '-c',
  'maintenance.auto=false',
];

/** Who git runs as: the workspace's owner when the worker is root and the owner is not, else the worker itself. */
export interface Runner {
  uid?: number;
  gid?: number;
}

/** The {@link Runner} for `workspace` (stat follows it: the realpath the caller gave). */
export async function ownerOf(workspace: string): Promise<Runner> {
  const st = await stat(workspace);
  if (!workerIsRoot() || st.uid === 0) return {};
  return { uid: st.uid, gid: st.gid !== 0 ? st.gid : OWNER_FALLBACK_GID };
}

/**
 * Runs git with {@link NO_REPO_CODE}; resolves with its stdout, trimmed.
 * @param env added to {@link MINIMAL_ENV} (GIT_DIR, GIT_WORK_TREE, GIT_INDEX_FILE)
 * @throws Error whose message is git's first line of stderr
 */
export function git(runner: Runner, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      [...NO_REPO_CODE, ...args],
      { env: { ...MINIMAL_ENV, GIT_TERMINAL_PROMPT: '0', ...env }, timeout: GIT_TIMEOUT_MS, encoding: 'utf8', ...runner },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout.trim());
        const line = stderr.split('\n').find((l) => l.trim() !== '') ?? err.message;
        reject(new Error(line.trim()));
      },
    );
  });
}

/**
 * Fills the worktree `dir` (made with `--no-checkout`) with its HEAD's files and index, through a
 * private git dir: `objects/info/alternates` names the repository's objects, its config and
 * `info/attributes` are written here (no filter driver is defined, `* -filter`), so no driver the
 * repository names runs. The index is the worktree's own (`GIT_INDEX_FILE`), so `git status` in
 * it sees a clean checkout.
 * @throws Error when git fails
 */
export async function checkoutWithoutFilters(runner: Runner, dir: string): Promise<void> {
  const admin = await git(runner, ['-C', dir, 'rev-parse', '--path-format=absolute', '--git-dir']);
  const common = await git(runner, ['-C', dir, 'rev-parse', '--path-format=absolute', '--git-common-dir']);
  const head = await git(runner, ['-C', dir, 'rev-parse', '--verify', 'HEAD^{commit}']);
  const format = await git(runner, ['-C', dir, 'rev-parse', '--show-object-format']);
  const priv = await mkdtemp(path.join(tmpdir(), 'aj-worktree-git-'));
  try {
    // Readable by the runner (the owner), written by no one else: root made it.
    await chmod(priv, 0o755);
    await mkdir(path.join(priv, 'objects', 'info'), { recursive: true });
    await mkdir(path.join(priv, 'refs'), { recursive: true });
    await mkdir(path.join(priv, 'info'), { recursive: true });
    await writeFile(path.join(priv, 'HEAD'), 'ref: refs/heads/none\n');
    await writeFile(path.join(priv, 'objects', 'info', 'alternates'), `${path.join(common, 'objects')}\n`);
    await writeFile(
      path.join(priv, 'config'),
      `[core]\n\trepositoryformatversion = ${format === 'sha1' ? 0 : 1}\n\tbare = false\n\tsymlinks = true\n` +
        (format === 'sha1' ? '' : `[extensions]\n\tobjectformat = ${format}\n`),
    );
    await writeFile(path.join(priv, 'info', 'attributes'), '* -filter\n');
    await git(runner, ['read-tree', '--reset', '-u', head], {
      GIT_DIR: priv,
      GIT_WORK_TREE: dir,
      GIT_INDEX_FILE: path.join(admin, 'index'),
    });
  } finally {
    await rm(priv, { recursive: true, force: true });
  }
}
