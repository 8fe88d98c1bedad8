/**
 * Root's file work on a workspace (the checkpoint's `git add`, a restore's `read-tree -u`,
 * `chown`, `rmdir`) confined to a mount namespace that holds only the workspace, the store and
 * the system's program directories. The session's jobs run while a checkpoint is taken and can
 * swap any file or directory of the workspace for a symlink between git's lstat and its open:
 * git, run as root, follows it. In the namespace a symlink leads nowhere but into the workspace,
 * `/usr`: no root-only file of the host is there to read, and nothing outside the workspace to
 * write or chown. The store is mounted at a random path the session never learns (git writes it:
 * a symlink into it could otherwise plant a hook there), and only when the command needs it.
 *
 * The workspace is pinned before the namespace is built (opened with `O_NOFOLLOW`, bound from
 * the descriptor), so swapping the workspace itself for a symlink does not move the bind.
 * Used when the worker is root and bwrap is installed; otherwise commands run as they are (a
 * worker that is not root runs them as the session's own user; a root worker without bwrap keeps
 * the race: docs/rewind.md).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, constants, existsSync, lstatSync, openSync, readlinkSync } from 'node:fs';

/** Where bwrap is looked for (the sandbox's own lookup is in session/; this module imports nothing of it). */
const BWRAP_PATHS = ['/usr/bin/bwrap', '/bin/bwrap', '/usr/local/bin/bwrap'];

/** The system's program directories the namespace shows read-only (a merged-/usr system's links stay links). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib64', '/lib32', '/libx32'];

/** Capabilities root keeps in the namespace: read and write every file of the workspace and store, chown restored files. */
const CAPS = 'CAP_DAC_OVERRIDE,CAP_DAC_READ_SEARCH,CAP_FOWNER,CAP_CHOWN';

/** bwrap's path, when the worker is root and it is installed; undefined otherwise. */
export function confinementTool(): string | undefined {
  if (process.getuid?.() !== 0) return undefined;
  return BWRAP_PATHS.find((p) => existsSync(p));
}

/** What {@link runConfined} runs. */
export interface ConfinedCommand {
  /** Program and arguments (looked up in the namespace's /usr). */
  argv: string[];
  env: NodeJS.ProcessEnv;
  /** The workspace: the working directory, bound read-write when `writable`, else read-only. */
  workspace: string;
  writable: boolean;
  /** The checkpoint store, bound read-write at a random path (`env` values naming it are rewritten); none when undefined. */
  store?: string;
  /** Largest stdout kept, bytes; more is an error. */
  maxBuffer: number;
  /** More directories, each pinned by a descriptor the caller opened (`O_NOFOLLOW`) and bound at `dest`. */
  binds?: { fd: number; dest: string; writable: boolean }[];
}

/** bwrap's arguments for `c`, the workspace coming from descriptor 3. */
function bwrapArgs(c: ConfinedCommand, storeInside: string): string[] {
  const args = ['--die-with-parent', '--new-session', '--unshare-net', '--unshare-ipc', '--unshare-pid', '--unshare-uts'];
  args.push('--cap-add', CAPS, '--tmpfs', '/', '--dev', '/dev', '--tmpfs', '/tmp');
  for (const dir of SYSTEM_DIRS) {
    let st;
    try {
      st = lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  if (c.store) args.push('--bind', c.store, storeInside);
  (c.binds ?? []).forEach((b, i) => args.push(b.writable ? '--bind' : '--ro-bind', `/proc/self/fd/${4 + i}`, b.dest));
  args.push(c.writable ? '--bind' : '--ro-bind', '/proc/self/fd/3', c.workspace, '--chdir', c.workspace, '--');
  return [...args, ...c.argv];
}

/**
 * Runs `c` in the namespace (or as it is, when {@link confinementTool} finds none).
 * @returns stdout
 * @throws Error with stderr when the command fails; when the workspace is no directory (a symlink now)
 */
export async function runConfined(c: ConfinedCommand): Promise<string> {
  const bwrap = confinementTool();
  if (!bwrap) return collect(c.argv[0]!, c.argv.slice(1), c, c.workspace, []);
  const fd = openSync(c.workspace, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
  try {
    const storeInside = `/.aj-store-${randomBytes(12).toString('hex')}`;
    const env: NodeJS.ProcessEnv = {};
    for (const [k, v] of Object.entries(c.env))
      env[k] = c.store && v !== undefined && (v === c.store || v.startsWith(`${c.store}/`)) ? storeInside + v.slice(c.store.length) : v;
    return await collect(bwrap, bwrapArgs(c, storeInside), { ...c, env }, '/', [fd, ...(c.binds ?? []).map((b) => b.fd)]);
  } finally {
    closeSync(fd);
  }
}

/** Spawns and collects stdout (up to `maxBuffer`) and stderr; extra descriptors become 3, 4, … */
function collect(file: string, args: string[], c: ConfinedCommand, cwd: string, fds: number[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: c.env, cwd, stdio: ['ignore', 'pipe', 'pipe', ...fds] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    child.stdout!.on('data', (b: Buffer) => {
      size += b.length;
      if (size > c.maxBuffer) child.kill('SIGKILL');
      else out.push(b);
    });
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) return resolve(Buffer.concat(out).toString('utf8'));
      const why = size > c.maxBuffer ? `more than ${c.maxBuffer} bytes of output` : Buffer.concat(err).toString('utf8').trim();
      reject(new Error(`${c.argv.join(' ')} failed (${signal ?? `exit ${code}`}): ${why}`));
    });
  });
}
