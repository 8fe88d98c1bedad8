/**
 * Where a session may be and what it may write, decided at start and for
 * exact runs and edits: the workspace (resolved, granted by ACL entries when
 * the session user does not own it), whether a directory is writable by that
 * user, the paths every sandbox hides, and how the sandbox shows a path.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { grantTree } from './acl-grant';
import { SessionStartError } from './errors';
import type { ViewCheck } from './exact';
import type { SessionIdentity } from './identity';
import { sandboxView, type SandboxOptions } from './sandbox';

/**
 * Size of the sandbox's private `/tmp` and `/dev/shm`, each, in bytes: 1 GiB, or the session's
 * `maxFileSizeBytes` when lower. They are memory that no ulimit counts.
 */
export const SANDBOX_TMPFS_BYTES = 1024 ** 3;

/** Where host services put their unix sockets (`/var/run` is a link to it on Debian and most others). */
export const HOST_SOCKETS_DIR = '/run';

/** Paths every sandbox hides: root's home, the worker's home, the temp directory (other sessions' FIFO directories). */
export function defaultHiddenPaths(): string[] {
  const out = ['/root'];
  const home = os.homedir();
  if (home && home !== '/') out.push(home);
  const tmp = path.resolve(os.tmpdir());
  if (tmp !== '/tmp' && tmp !== '/') out.push(tmp);
  return out;
}

/**
 * What is the workspace owner's alone, hidden when bash runs as the owner: its home (keys,
 * tokens, shell history) and its runtime directory (`/run/user/<uid>`: D-Bus, gpg and ssh
 * agents, a rootless container socket), which would trust bash as the owner.
 */
export function ownerPrivatePaths(identity: SessionIdentity): string[] {
  return [...(identity.ownerHome ? [identity.ownerHome] : []), `/run/user/${identity.uid}`];
}

/**
 * The workspace with symlinks resolved.
 * @throws SessionStartError when it is missing or not a directory
 */
export function realWorkspace(dir: string, sessionId: string | undefined): string {
  try {
    const real = fs.realpathSync(dir);
    if (!fs.statSync(real).isDirectory()) throw new Error('not a directory');
    return real;
  } catch (err) {
    throw new SessionStartError(`cannot start bash session: workspace ${dir} is not a directory: ${(err as Error).message}`, { sessionId });
  }
}

/**
 * Lets the session user write a workspace it does not own (a root-owned
 * one, or a `user` named): ACL entries `u:<uid>:rwX` and the same default
 * entry on directories, so files others add later are writable too
 * (walked by descriptor, symlinks never followed: acl-grant.ts). Owners and mode bits stay as
 * they are; files the agent creates are the session user's, which the
 * owner (root) edits and deletes as any. Idempotent.
 * @param fd the directory `real` names, opened when the session started (pins.ts): granted from it, not by path
 * @param signal gives the grant up at its next batch (acl-grant.ts `grantTree`)
 * @throws SessionStartError when it is `/`, setfacl is missing (package `acl`), or the filesystem refuses ACLs
 * @throws `signal`'s reason once it aborted
 */
export async function grantWorkspace(
  real: string,
  identity: SessionIdentity,
  sessionId: string | undefined,
  fd?: number,
  signal?: AbortSignal,
): Promise<void> {
  if (real === '/') throw new SessionStartError('cannot start bash session: the workspace must not be /', { sessionId });
  const st = fd !== undefined ? fs.fstatSync(fd) : fs.statSync(real);
  // Its owner made it read-only: the session refuses it as the owner's own write would be (notWritableBy).
  if ((st.mode & 0o200) === 0) return;
  const entry = `u:${identity.uid}:rwX`;
  // A non-root owner (the no-sandbox case): what the session user creates stays editable by the owner.
  const owner = st.uid;
  const ownerEntry = owner !== 0 && owner !== identity.uid ? `,d:u:${owner}:rwX` : '';
  try {
    // By descriptor, not setfacl -R: another session's job may swap a directory for a symlink meanwhile (acl-grant.ts).
    await grantTree(fd ?? real, { dirs: `${entry},d:${entry}${ownerEntry}`, files: entry }, 120_000, signal);
  } catch (err) {
    if (signal?.aborted) throw signal.reason;
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
    throw new SessionStartError(
      `cannot let ${identity.user} write the workspace ${real} (owned by uid ${st.uid}): ${
        missing ? 'setfacl is not installed (install the acl package)' : stderr || (err as Error).message
      }; or give the workspace to a user other than root, whom bash then runs as`,
      { sessionId, cause: err },
    );
  }
}

/**
 * How a process in the sandbox of `o` sees a path, for resolving one (exact.ts `resolveInView`):
 * covered (its private /tmp, a hidden directory) unless it is the real one, or a directory on
 * the way to one of its binds (which the sandbox shows as a directory leading to the bind).
 * None without a sandbox: the machine's view is the program's.
 */
export function viewCheck(o: SandboxOptions): ViewCheck | undefined {
  if (o.mode !== 'bwrap') return undefined;
  const binds = [
    ...[...o.writable, ...o.readable].map(realDir),
    ...(o.pinned ?? []).map((p) => p.dest),
    ...(o.held?.binds ?? []).map((b) => b.dest),
  ];
  return (abs) => {
    if (binds.some((b) => within(b, abs))) return undefined;
    const v = sandboxView(o, abs);
    return v.real ? undefined : v.coveredBy;
  };
}

/** `dir` with symlinks resolved (as given when it cannot be). */
export function realDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** Whether `p` is `dir` or inside it (both absolute, resolved). */
export function within(p: string, dir: string): boolean {
  return p === dir || dir === '/' || p.startsWith(`${dir}/`);
}

/**
 * Why the session's user cannot write `dir`, or undefined when it can: the
 * kernel's answer for this process (a read-only filesystem, or this user's
 * own permissions), and for another user the mode bits that apply to it.
 */
export function notWritableBy(dir: string, identity: SessionIdentity | null, aclGranted = false): string | undefined {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  if (!identity) return undefined;
  const st = fs.statSync(dir);
  // An ACL entry for the user was set where the owner may write (the group bits are then the ACL's mask, not the group's).
  if (aclGranted)
    return st.mode & 0o200 ? undefined : `mode ${(st.mode & 0o777).toString(8)}: its owner, uid ${st.uid}, cannot write it either`;
  const bit = st.uid === identity.uid ? 0o200 : st.gid === identity.gid ? 0o020 : 0o002;
  return st.mode & bit ? undefined : `mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}`;
}

/** Deletes `file`, if it is still there. */
export function removeQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    /* already gone */
  }
}

/**
 * Whether a component of `abs` under `workspace` (the file itself included) is a symlink now.
 * Missing components are not: a create makes a plain file there.
 */
export function symlinkOnTheWay(workspace: string, abs: string): boolean {
  const rel = path.relative(workspace, abs);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return false;
  let at = workspace;
  for (const part of rel.split(path.sep)) {
    at = path.join(at, part);
    try {
      if (fs.lstatSync(at).isSymbolicLink()) return true;
    } catch {
      return false;
    }
  }
  return false;
}

/** `dir` if it is an existing directory, else its nearest existing ancestor (`/` at worst). */
export function nearestExistingDir(dir: string): string {
  let d = path.resolve(dir);
  for (;;) {
    try {
      if (fs.statSync(d).isDirectory()) return d;
    } catch {
      /* go up */
    }
    const up = path.dirname(d);
    if (up === d) return '/';
    d = up;
  }
}
