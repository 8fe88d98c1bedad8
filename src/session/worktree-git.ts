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
 * The git audits read git dirs with the same settings ({@link auditGit}).
 */
import { execFile } from 'node:child_process';
import { closeSync, fstatSync, lstatSync, openSync, statSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { confinementTool, runConfined } from '../checkpoint/confine';
import { MINIMAL_ENV, OWNER_FALLBACK_GID, workerIsRoot } from './identity';
import { DIR_FLAGS, openDirAt } from './safe-open';

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
  '-c',
  'submodule.recurse=false',
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

/** How {@link auditGit} runs: who as, where, with what stdin, for how long and how much output. */
export interface AuditGitOptions {
  /** Who git runs as. @default the worker */
  runner?: Runner;
  /** Its working directory. @default the git dir */
  cwd?: string;
  /** Its stdin. @default '' */
  input?: string;
  /** How long it may take, ms. @default 10 000 */
  timeoutMs?: number;
  /** Most bytes of stdout or of stderr; more is a failure. @default 256 MiB */
  maxBuffer?: number;
}

/**
 * Runs git as the git audits read a git dir (git-state-audit.ts, git-objects-audit.ts): `GIT_DIR` `gitDir`, no work
 * tree, `safe.directory=*` (the git dir is another user's to the worker), {@link NO_REPO_CODE}, no system or global
 * config and no optional locks; resolves with its stdout.
 * @throws Error whose message is git's first non-blank line of stderr, else the failure's (a timeout, too much output)
 */
export function auditGit(gitDir: string, args: string[], options: AuditGitOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      ['-c', 'safe.directory=*', ...NO_REPO_CODE, ...args],
      {
        cwd: options.cwd ?? gitDir,
        env: { ...MINIMAL_ENV, GIT_DIR: gitDir, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_OPTIONAL_LOCKS: '0' },
        timeout: options.timeoutMs ?? 10_000,
        encoding: 'utf8',
        maxBuffer: options.maxBuffer ?? 256 << 20,
        ...options.runner,
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        reject(new Error((stderr.split('\n').find((l) => l.trim() !== '') ?? err.message).trim()));
      },
    );
    // git may exit before reading its input (a failure, or a command that reads none): EPIPE is no error of ours.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(options.input ?? '');
  });
}

/**
 * Fills the worktree `dir` (made with `--no-checkout`) with its HEAD's files and index, through a
 * private git dir: `objects/info/alternates` names the repository's objects, its config and
 * `info/attributes` are written here (no filter driver is defined, `* -filter`), so no driver the
 * repository names runs. The index is the worktree's own (`GIT_INDEX_FILE`), so `git status` in
 * it sees a clean checkout. As root (with bwrap), the checkout runs confined (checkpoint/confine.ts)
 * with only the repository's own `.git/objects`, the worktree's admin folder (each opened by
 * descriptor from `top`, `O_NOFOLLOW`) and the worktree: objects an `objects/info/alternates` the
 * session wrote names elsewhere (a root-only repository) are not there to check out; so the
 * repository's `.git` must be a directory at its top.
 * @param top the repository's top (from `rev-parse --show-toplevel`, inside the workspace)
 * @throws Error when git fails, or (as root) when `.git` is no directory at `top`
 */
export async function checkoutWithoutFilters(runner: Runner, top: string, dir: string): Promise<void> {
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
    const confined = runner.uid === undefined && confinementTool() !== undefined;
    await writeFile(path.join(priv, 'objects', 'info', 'alternates'), `${confined ? OBJECTS_INSIDE : path.join(common, 'objects')}\n`);
    await writeFile(
      path.join(priv, 'config'),
      `[core]\n\trepositoryformatversion = ${format === 'sha1' ? 0 : 1}\n\tbare = false\n\tsymlinks = true\n` +
        (format === 'sha1' ? '' : `[extensions]\n\tobjectformat = ${format}\n`),
    );
    await writeFile(path.join(priv, 'info', 'attributes'), '* -filter\n');
    if (confined) await readTreeConfined(top, common, admin, priv, dir, head);
    else
      await git(runner, ['read-tree', '--reset', '-u', head], {
        GIT_DIR: priv,
        GIT_WORK_TREE: dir,
        GIT_INDEX_FILE: path.join(admin, 'index'),
      });
  } finally {
    await rm(priv, { recursive: true, force: true });
  }
}

/**
 * `git worktree add --no-checkout --detach <dir> HEAD` in the repository at `top`, writing only
 * `top/.git` and `dir`. git reads `.git/commondir` in any git dir, the main one's too, and writes
 * the new worktree's admin folder in the repository that file names: a `commondir` the session
 * wrote (`/etc/.git`, `../../other/.git`, through a symlink) would have root (or the owner, outside
 * the sandbox) register a worktree in a repository the session cannot reach. So `.git` must be a
 * directory at `top` with no `commondir` in it (checked through its descriptor, `O_NOFOLLOW`), and,
 * as root with bwrap, git runs confined (checkpoint/confine.ts), as `runner`, in a namespace that
 * holds only `top` (read-only), `top/.git` and `dir` (both opened by descriptor, bound writable)
 * and `/usr`: a `commondir` written after the check names nothing else there.
 * @param top the repository's top (from `rev-parse --show-toplevel`)
 * @param dir the new worktree, an empty directory the runner may write
 * @throws Error when `.git` is no directory at `top`, it has a `commondir`, or git fails or outlives {@link GIT_TIMEOUT_MS}
 */
export async function worktreeAdd(runner: Runner, top: string, dir: string): Promise<void> {
  const args = ['worktree', 'add', '--no-checkout', '--detach', dir, 'HEAD'];
  const fds: number[] = [];
  const keep = (fd: number): number => (fds.push(fd), fd);
  try {
    const gitFd = openGitDir(top, keep);
    if (entryExists(gitFd, 'commondir'))
      throw new Error(`${path.join(top, '.git', 'commondir')} exists: it would name another repository's git dir, refused`);
    if (confinementTool() === undefined) return void (await git(runner, ['-C', top, ...args]));
    const dirFd = keep(openDir(dir));
    await runConfined({
      argv: ['git', ...NO_REPO_CODE, '-C', top, ...args],
      env: { ...MINIMAL_ENV, GIT_TERMINAL_PROMPT: '0' },
      workspace: top,
      writable: false,
      maxBuffer: 1024 * 1024,
      timeoutMs: GIT_TIMEOUT_MS,
      binds: [
        { fd: gitFd, dest: path.join(top, '.git'), writable: true },
        { fd: dirFd, dest: dir, writable: true },
      ],
      ...(runner.uid !== undefined ? { as: { uid: runner.uid, gid: runner.gid ?? OWNER_FALLBACK_GID } } : {}),
    });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}

/** Whether `name` is an entry of the directory `dirFd` (of any type; a symlink is not followed). */
function entryExists(dirFd: number, name: string): boolean {
  try {
    lstatSync(`/proc/self/fd/${dirFd}/${name}`);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
}

/** Where the confined checkout sees the repository's objects, its private git dir and the worktree's admin folder. */
const OBJECTS_INSIDE = '/.aj-objects';
const GIT_DIR_INSIDE = '/.aj-git';
const ADMIN_INSIDE = '/.aj-admin';

/** Opens the directory at `p`, never through a symlink. Throws when `p` is no directory. */
function openDir(p: string): number {
  return openSync(p, DIR_FLAGS);
}

/**
 * Opens `top` and its `.git` directory by descriptor (no symlink followed on the way), both
 * handed to `keep` to be closed by the caller; returns the `.git` descriptor.
 * @throws Error when `.git` is no directory at `top`
 */
function openGitDir(top: string, keep: (fd: number) => number): number {
  const topFd = keep(openDir(top));
  try {
    return keep(openDirAt(topFd, '.git'));
  } catch {
    throw new Error(`${path.join(top, '.git')} is no directory (a worktree is made only of a repository whose .git is at its top)`);
  }
}

/** `read-tree --reset -u` as root in a mount namespace holding the worktree, `top/.git/objects`, the admin folder and `priv`. */
async function readTreeConfined(top: string, common: string, admin: string, priv: string, dir: string, head: string): Promise<void> {
  const fds: number[] = [];
  const keep = (fd: number): number => (fds.push(fd), fd);
  try {
    const gitFd = openGitDir(top, keep);
    const gitSt = fstatSync(gitFd);
    const commonSt = statSync(common);
    if (gitSt.dev !== commonSt.dev || gitSt.ino !== commonSt.ino || path.dirname(admin) !== path.join(common, 'worktrees'))
      throw new Error(`git's common dir ${common} is not ${path.join(top, '.git')}`);
    const objectsFd = keep(openDirAt(gitFd, 'objects'));
    const adminFd = keep(openDirAt(keep(openDirAt(gitFd, 'worktrees')), path.basename(admin)));
    const privFd = keep(openDir(priv));
    await runConfined({
      argv: ['git', ...NO_REPO_CODE, 'read-tree', '--reset', '-u', head],
      env: {
        ...MINIMAL_ENV,
        GIT_TERMINAL_PROMPT: '0',
        GIT_DIR: GIT_DIR_INSIDE,
        GIT_WORK_TREE: dir,
        GIT_INDEX_FILE: `${ADMIN_INSIDE}/index`,
      },
      workspace: dir,
      writable: true,
      maxBuffer: 1024 * 1024,
      // An object the session replaced by a FIFO blocks read-tree: killed, and the worktree refused.
      timeoutMs: GIT_TIMEOUT_MS,
      binds: [
        { fd: privFd, dest: GIT_DIR_INSIDE, writable: false },
        { fd: objectsFd, dest: OBJECTS_INSIDE, writable: false },
        { fd: adminFd, dest: ADMIN_INSIDE, writable: true },
      ],
    });
  } finally {
    for (const fd of fds) closeSync(fd);
  }
}
