/**
 * Root's file work on a workspace (a restore's `read-tree -u`, `chown`, `rmdir`; a checkpoint's
 * reads are the worker's own, snapshot.ts) confined to a mount namespace that holds only the workspace, the store and
 * the system's program directories. The session's jobs run while a restore writes and can
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
import path from 'node:path';

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
  /** Written to the command's stdin, which is then closed; stdin is `/dev/null` without it. */
  input?: Buffer;
  /** How stdout is decoded: `latin1` keeps every byte of a path git prints as one character. @default 'utf8' */
  encoding?: 'utf8' | 'latin1';
  /**
   * More directories, each pinned by a descriptor the caller opened (`O_NOFOLLOW`) and bound at
   * `dest`, after the workspace (so one inside it shows over it).
   */
  binds?: { fd: number; dest: string; writable: boolean }[];
  /**
   * Run `argv` as this user instead of root (in the namespace, through `setpriv`: no groups, no
   * capabilities, `no_new_privs`). Without confinement `argv` is spawned with this uid and gid.
   * @default root (the worker)
   */
  as?: { uid: number; gid: number };
  /**
   * Longest the command may take, ms: past it its whole process group (bwrap, and with it every
   * process of the namespace) is killed and {@link runConfined} rejects with a {@link ConfinedTimeoutError}.
   * The files it reads are the session's: a FIFO where a file or object was would block it forever.
   */
  timeoutMs: number;
}

/** What {@link runConfined} rejects with when the command outlived its `timeoutMs` (it was killed). */
export class ConfinedTimeoutError extends Error {
  constructor(
    readonly argv: readonly string[],
    readonly timeoutMs: number,
  ) {
    super(
      `${argv.join(' ')} did not finish within ${timeoutMs / 1000} s and was killed ` +
        '(a file it reads may block forever: a FIFO put where a file or git object was)',
    );
    this.name = 'ConfinedTimeoutError';
  }
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
  // bwrap makes a bind's missing parents 0700 root: another user (`as`) could not reach the bind.
  if (c.as)
    for (const dir of searchableParents([c.workspace, ...(c.binds ?? []).map((b) => b.dest)])) args.push('--perms', '0755', '--dir', dir);
  args.push(c.writable ? '--bind' : '--ro-bind', '/proc/self/fd/3', c.workspace);
  (c.binds ?? []).forEach((b, i) => args.push(b.writable ? '--bind' : '--ro-bind', `/proc/self/fd/${4 + i}`, b.dest));
  args.push('--chdir', c.workspace, '--');
  if (!c.as) return [...args, ...c.argv];
  // setpriv needs CAP_SETUID and CAP_SETGID, which it then drops with root (a uid other than 0 keeps no capability).
  args.splice(args.indexOf('--cap-add') + 1, 1, `${CAPS},CAP_SETUID,CAP_SETGID`);
  return [...args, ...asUser(c.as), ...c.argv];
}

/** The directories above `paths` (absolute), shallowest first, but `/` and those under the system directories. */
function searchableParents(paths: string[]): string[] {
  const out = new Set<string>();
  for (const p of paths)
    for (let d = path.dirname(p); d !== '/' && d !== path.dirname(d); d = path.dirname(d))
      if (!SYSTEM_DIRS.some((s) => d === s || d.startsWith(`${s}/`))) out.add(d);
  return [...out].sort((a, b) => a.split('/').length - b.split('/').length);
}

/** setpriv's arguments that run the rest as `as`: its uid and gid, no other group, no capability, no new privileges. */
function asUser(as: { uid: number; gid: number }): string[] {
  return ['setpriv', `--reuid=${as.uid}`, `--regid=${as.gid}`, '--clear-groups', '--inh-caps=-all', '--no-new-privs', '--'];
}

/**
 * Runs `c` in the namespace (or as it is, when {@link confinementTool} finds none), for at most `c.timeoutMs`.
 * @returns stdout
 * @throws ConfinedTimeoutError when it outlived `c.timeoutMs` (its process group is killed first)
 * @throws Error with stderr when the command fails; when the workspace is no directory (a symlink now)
 */
export async function runConfined(c: ConfinedCommand): Promise<string> {
  const bwrap = confinementTool();
  if (!bwrap) return collect(c.argv[0]!, c.argv.slice(1), c, c.workspace, [], c.as);
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

/**
 * Spawns in a process group of its own and collects stdout (up to `maxBuffer`) and stderr; extra
 * descriptors become 3, 4, …; the group is killed past `c.timeoutMs`.
 */
function collect(
  file: string,
  args: string[],
  c: ConfinedCommand,
  cwd: string,
  fds: number[],
  as?: { uid: number; gid: number },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, {
      env: c.env,
      cwd,
      stdio: [c.input ? 'pipe' : 'ignore', 'pipe', 'pipe', ...fds],
      detached: true,
      ...as,
    });
    // A command that exits before reading it all: its exit status says what went wrong, not the broken pipe.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(c.input);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let timedOut = false;
    // The group: unconfined, git and what it forks; confined, bwrap, whose namespace's processes die with it (--die-with-parent).
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
    };
    const deadline = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, c.timeoutMs);
    child.stdout!.on('data', (b: Buffer) => {
      size += b.length;
      if (size > c.maxBuffer) killGroup();
      else out.push(b);
    });
    child.stderr!.on('data', (b: Buffer) => err.push(b));
    child.on('error', (e) => {
      clearTimeout(deadline);
      reject(e);
    });
    child.on('close', (code, signal) => {
      clearTimeout(deadline);
      if (timedOut) return reject(new ConfinedTimeoutError(c.argv, c.timeoutMs));
      if (code === 0) return resolve(Buffer.concat(out).toString(c.encoding ?? 'utf8'));
      const why = size > c.maxBuffer ? `more than ${c.maxBuffer} bytes of output` : Buffer.concat(err).toString('utf8').trim();
      reject(new Error(`${c.argv.join(' ')} failed (${signal ?? `exit ${code}`}): ${why}`));
    });
  });
}
