/**
 * What a session is set up with before its first shell starts: its working
 * directory, who bash runs as and in what sandbox ({@link Who}), what the
 * sandbox hides, the environment that goes with the identity, and its
 * private directory.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SessionStartError } from './errors';
import type { SessionHost } from './host';
import { resolveIdentity, workspaceIdentity, type SessionIdentity, type WorkspaceAccess } from './identity';
import type { BashSessionOptions } from './options';
import { SESSION_DIR_PREFIX } from './orphans';
import { resolveSandbox, unreachableAncestor, type SandboxMode } from './sandbox';
import { defaultHiddenPaths, grantWorkspace, HOST_SOCKETS_DIR, ownerPrivatePaths, realDir, realWorkspace } from './workspace';
import type { PinnedDir } from './pins';

/** Who bash runs as, in what sandbox, and how it gets to write the workspace (identity.ts). */
export interface Who {
  identity: SessionIdentity | null;
  sandbox: { mode: SandboxMode; bwrap?: string };
  access: WorkspaceAccess;
}

/**
 * The resolved `options.cwd` (default the worker's).
 * @throws SessionStartError when it is missing or not a directory
 */
export function startDirectory(options: BashSessionOptions): string {
  const cwd = path.resolve(options.cwd ?? process.cwd());
  let isDir = false;
  try {
    isDir = fs.statSync(cwd).isDirectory();
  } catch {
    /* reported below */
  }
  if (!isDir)
    throw new SessionStartError(`cannot start bash session: working directory ${cwd} does not exist or is not a directory`, {
      sessionId: options.id,
    });
  return cwd;
}

/**
 * The sandbox, the identity bash runs as and its access to the workspace (granting it by ACL
 * entries when needed, identity.ts, and so the writable ones of `pins`, through their descriptors),
 * with `host`'s memo of bwrap and the session users.
 * @throws SessionStartError when the sandbox asked for cannot be had, the user cannot be had or
 *   granted the workspace, or (no sandbox) it cannot enter `cwd`
 * @throws `options.startSignal`'s reason once it aborted (during the grant)
 */
export async function resolveWho(
  options: BashSessionOptions,
  cwd: string,
  host: SessionHost,
  pins: readonly PinnedDir[] = [],
): Promise<Who> {
  const sandbox = resolveSandbox(options.sandbox, undefined, host.bwrapProbes);
  let identity: SessionIdentity | null;
  let access: WorkspaceAccess = 'none';
  if (options.workspace !== undefined) {
    const real = realWorkspace(path.resolve(options.workspace), options.id);
    ({ identity, access } = workspaceIdentity(options.user, real, sandbox.mode === 'bwrap', host.users));
    if (access === 'acl') await grantWorkspace(real, identity!, options.id, undefined, options.startSignal);
    if (access === 'acl')
      for (const pin of pins.filter((p) => p.writable)) await grantWorkspace(pin.dest, identity!, options.id, pin.fd, options.startSignal);
  } else {
    identity = resolveIdentity(options.user, host.users);
  }
  if (sandbox.mode === 'none') {
    const blocked = unreachableAncestor(cwd, identity);
    if (blocked) {
      throw new SessionStartError(
        `cannot start bash session as ${identity!.user}: it cannot enter ${blocked} on the way to ${cwd} (no sandbox to bind it); make it searchable or use the sandbox`,
        {
          sessionId: options.id,
        },
      );
    }
  }
  return { identity, sandbox, access };
}

/** What the sandbox hides: the caller's paths, every sandbox's, the owner's private ones, host sockets. */
export function hiddenPaths(hidePaths: string[], who: Who, network: boolean): string[] {
  // The owner's home holds its keys and tokens: bash as the owner sees none of it (but the workspace, when it lies there).
  const ownerPaths = who.access === 'owner' && who.identity ? ownerPrivatePaths(who.identity) : [];
  // Unix sockets of host services live under /run (a database's, D-Bus): a path socket is reachable from any network
  // namespace, so it is hidden unless the session shares the host's network anyway (a non-root worker's --network).
  const hostSockets = network && who.identity === null ? [] : [HOST_SOCKETS_DIR];
  return [...hidePaths, ...defaultHiddenPaths(), ...ownerPaths, ...hostSockets];
}

/**
 * The environment that goes with bash's identity, set under the caller's `env`. `nested`: the work trees' roots
 * (absolute) of the repositories below the workspace's root that the git guard holds as the root's (git-guard.ts
 * `GuardedGit.nestedTops`), trusted as the workspace is.
 */
export function identityEnv(who: Who, workspace: string | undefined, nested: readonly string[] = []): Record<string, string> {
  const { identity, sandbox, access } = who;
  // Another user gets a HOME it can write (the sandbox's private /tmp) and its own name.
  const env: Record<string, string> = identity ? { HOME: '/tmp', USER: identity.user, LOGNAME: identity.user } : {};
  // The worker's TMPDIR is hidden in the sandbox (other sessions' directories) and not the session user's to write
  // without it: temporary files go to /tmp, the sandbox's private one (or the machine's world-writable one).
  if (sandbox.mode === 'bwrap' || identity) env.TMPDIR = '/tmp';
  // A workspace owned by another user: git refuses it ("dubious ownership") unless told it is safe. Command-scope
  // config (GIT_CONFIG_COUNT) is protected configuration, which git reads safe.directory from (git-config(1)).
  // Each nested repository the guard holds too (its hooks and config read-only), and no other: not one the session makes.
  if (access === 'acl' && workspace) {
    const trusted = [realDir(workspace), ...nested];
    env.GIT_CONFIG_COUNT = String(trusted.length);
    for (const [i, dir] of trusted.entries())
      Object.assign(env, { [`GIT_CONFIG_KEY_${i}`]: 'safe.directory', [`GIT_CONFIG_VALUE_${i}`]: dir });
  }
  return env;
}

/** The session's private directory (FIFOs, command files, the owner record) in the temp directory. */
export function makeSessionDir(identity: SessionIdentity | null): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), SESSION_DIR_PREFIX));
  if (identity) {
    // Owned by root, searchable by the session's group only: bash opens the
    // FIFOs (its own) and reads command files, but cannot replace, add or
    // symlink entries the worker then opens as root.
    fs.chownSync(dir, 0, identity.gid);
    fs.chmodSync(dir, 0o710);
  }
  return dir;
}
