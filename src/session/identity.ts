/**
 * Who a session's bash runs as, and keeping the worker's own memory out of
 * its reach.
 *
 * When the worker runs as root, bash runs with no capabilities, no
 * supplementary groups and `no_new_privs` (setpriv, see shell.ts) as:
 * - the workspace's owner, when the session has a workspace owned by a
 *   user other than root: files the agent creates are the owner's, git sees
 *   a repository of its own user (no "dubious ownership"), and files the
 *   owner adds during the run are editable ({@link workspaceIdentity});
 * - otherwise (no workspace, a root-owned one, or `user` named) a dedicated
 *   unprivileged system user (`agent-jobs`, or `AGENT_JOBS_SESSION_USER`),
 *   given a workspace it does not own by ACL entries, never by a chown
 *   (session.ts `prepareWorkspace`).
 * Never as root: a root-owned workspace is not a reason to give the session
 * uid 0 (without capabilities uid 0 still opens every root-owned file and
 * socket by its owner bits). A process
 * of another uid without CAP_SYS_PTRACE cannot read the worker's
 * `/proc/<pid>/environ`, `mem` or `fd`, nor signal it. When the worker is
 * not root it cannot change uid: bash runs as the worker's own user, which
 * can read the worker's memory (the worker logs a warning).
 *
 * Every helper process the worker starts gets {@link MINIMAL_ENV}, never
 * `process.env` (which holds the API key): a process's environment is
 * readable by its uid through `/proc/<pid>/environ` and `ps e`.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { SessionStartError } from './errors';

/** The environment of every helper process the worker starts (sentinel, probes, mkfifo, chown, useradd). */
export const MINIMAL_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: '/usr/sbin:/usr/bin:/sbin:/bin' });

/** Default name of the session user. */
export const DEFAULT_SESSION_USER = 'agent-jobs';

/** A user bash runs as. */
export interface SessionIdentity {
  /** User name (the uid in decimal when it has no passwd entry). */
  user: string;
  uid: number;
  gid: number;
  /** Set when this is the workspace's owner: its home directory (from passwd), which the sandbox hides (with `/run/user/<uid>`). */
  ownerHome?: string;
}

/** How a session gets to write its workspace: it owns it, it was given ACL entries on it, or nothing was needed (the worker's own user). */
export type WorkspaceAccess = 'owner' | 'acl' | 'none';

/** Name of the session user: `AGENT_JOBS_SESSION_USER`, default `agent-jobs`. */
export function sessionUserName(env: NodeJS.ProcessEnv = process.env): string {
  const name = env.AGENT_JOBS_SESSION_USER?.trim();
  return name ? name : DEFAULT_SESSION_USER;
}

/** Whether this process runs as root (uid 0). */
export function workerIsRoot(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/**
 * Looks a user up through NSS (`getent passwd`, by name or by uid in decimal: local files, LDAP, ...), else, when
 * getent cannot be run or fails, in `/etc/passwd`; undefined when there is none or `name` is empty or holds `:` or a
 * newline. The one passwd reader: the session user's and the workspace owner's identity, and the homes git's `~/` and
 * `~user/` mean (host-git-config.ts `passwdHome`).
 */
export function lookupUser(name: string): (SessionIdentity & { home: string }) | undefined {
  if (name === '' || name.includes(':') || name.includes('\n')) return undefined;
  let line: string | undefined;
  try {
    line = execFileSync('getent', ['passwd', name], {
      env: MINIMAL_ENV,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 5000,
    }).split('\n')[0];
  } catch {
    try {
      const numeric = /^\d+$/.test(name);
      line = readFileSync('/etc/passwd', 'utf8')
        .split('\n')
        .find((l) => l.split(':')[numeric ? 2 : 0] === name);
    } catch {
      line = undefined;
    }
  }
  if (line === undefined) return undefined;
  const f = line.trim().split(':');
  const uid = Number(f[2]);
  const gid = Number(f[3]);
  if ((f[0] !== name && f[2] !== name) || !Number.isInteger(uid) || !Number.isInteger(gid)) return undefined;
  return { user: f[0]!, uid, gid, home: f[5] ?? '' };
}

/**
 * The session user `name`, created first when missing (`useradd --system
 * --no-create-home --shell /usr/sbin/nologin`; root only). Cached per name
 * in `ensured` (the caller's memo: `SessionHost.users`).
 * @throws SessionStartError when the user is missing and cannot be created, or is root
 */
export function ensureSessionUser(name: string = sessionUserName(), ensured: Map<string, SessionIdentity> = new Map()): SessionIdentity {
  const cached = ensured.get(name);
  if (cached) return cached;
  if (!/^[a-z_][a-z0-9_-]*\$?$/i.test(name) || name.length > 32)
    throw new SessionStartError(`invalid session user name ${JSON.stringify(name)}`);
  let id = lookupUser(name);
  if (!id) {
    try {
      execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', name], {
        env: MINIMAL_ENV,
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 30_000,
      });
    } catch (err) {
      // Another worker may have created it meanwhile.
      id = lookupUser(name);
      if (!id) {
        const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
        throw new SessionStartError(`cannot create the session user ${name}: ${stderr || (err as Error).message}`, { cause: err });
      }
    }
    id ??= lookupUser(name);
    if (!id) throw new SessionStartError(`useradd ${name} succeeded but the user cannot be looked up`);
  }
  if (id.uid === 0 || id.gid === 0)
    throw new SessionStartError(`the session user ${name} has uid or gid 0; it must be an unprivileged user`);
  const found: SessionIdentity = { user: id.user, uid: id.uid, gid: id.gid };
  ensured.set(name, found);
  return found;
}

/**
 * The identity bash gets: `user` as given (null: the worker's own user); by
 * default the session user when the worker is root, else the worker's own.
 * @param ensured the caller's memo of {@link ensureSessionUser}
 * @returns null when bash runs as the worker's own user
 * @throws SessionStartError when a user is asked for and the worker is not root, or it cannot be created
 */
export function resolveIdentity(user: string | null | undefined, ensured?: Map<string, SessionIdentity>): SessionIdentity | null {
  if (user === null) return null;
  if (!workerIsRoot()) {
    if (user === undefined) return null;
    throw new SessionStartError(
      `cannot run bash as ${user}: the worker is not root (it runs as uid ${process.getuid?.()}), so it cannot change user`,
    );
  }
  return ensureSessionUser(user ?? sessionUserName(), ensured);
}

/** gid given to a workspace owner whose primary group (and the workspace's group) is root's: `nogroup`. */
export const OWNER_FALLBACK_GID = 65534;

/**
 * The identity and access of a session with a workspace: as root with no
 * `user` named, the workspace's owner when that is not root (its passwd
 * name, primary group and home; a uid with no passwd entry, as in a
 * container with a bind-mounted repository, gets the directory's group and
 * its uid as name; group 0 is replaced by {@link OWNER_FALLBACK_GID}). Only
 * in the sandbox, which hides the owner's home and runtime directory and
 * every process: without it the owner's uid would hand bash the owner's
 * whole account (its keys, its processes' environments, its agent sockets).
 * Else {@link resolveIdentity}, and `acl` when that user is not the owner.
 * @param workspace the workspace with symlinks resolved (its owner is read with stat)
 * @param sandboxed whether bash runs in the bwrap sandbox
 * @param ensured the caller's memo of {@link ensureSessionUser}
 * @throws SessionStartError as {@link resolveIdentity}
 */
export function workspaceIdentity(
  user: string | null | undefined,
  workspace: string,
  sandboxed: boolean,
  ensured?: Map<string, SessionIdentity>,
): { identity: SessionIdentity | null; access: WorkspaceAccess } {
  const st = statSync(workspace);
  if (user === undefined && sandboxed && workerIsRoot() && st.uid !== 0) {
    const found = lookupUser(String(st.uid));
    const known = found?.uid === st.uid ? found : undefined;
    let gid = known ? known.gid : st.gid;
    if (gid === 0) gid = st.gid !== 0 ? st.gid : OWNER_FALLBACK_GID;
    const home = known?.home && known.home !== '/' ? known.home : undefined;
    return {
      identity: { user: known?.user ?? String(st.uid), uid: st.uid, gid, ...(home ? { ownerHome: home } : {}) },
      access: 'owner',
    };
  }
  const identity = resolveIdentity(user, ensured);
  if (!identity) return { identity, access: 'none' };
  return { identity, access: identity.uid === st.uid ? 'owner' : 'acl' };
}

/**
 * Makes this process non-dumpable (root only): changing the effective uid
 * sets the kernel's dumpable flag to `fs.suid_dumpable` (0 by default), and
 * switching back keeps it. A non-dumpable process's `/proc/<pid>/environ`,
 * `mem` and `fd` need CAP_SYS_PTRACE even from its own uid, and it makes no
 * core dump. Call it early (before other work: for a moment the process
 * runs with that uid). Returns what it did, or why not.
 */
export function makeNonDumpable(uid = 65534): { done: boolean; why?: string } {
  if (!workerIsRoot() || typeof process.seteuid !== 'function') return { done: false, why: 'the worker is not root' };
  let dumpableSetting = '?';
  try {
    dumpableSetting = readFileSync('/proc/sys/fs/suid_dumpable', 'utf8').trim();
  } catch {
    /* unknown */
  }
  try {
    process.seteuid(uid);
  } finally {
    process.seteuid(0);
  }
  if (dumpableSetting !== '0') return { done: false, why: `fs.suid_dumpable is ${dumpableSetting}, not 0` };
  return { done: true };
}
