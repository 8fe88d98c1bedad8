/**
 * A user namespace of the session's own, owned by the session user, in which the worker (root)
 * runs the session's bash, so that the kernel's per-user counts of file-watching objects are
 * charged to that namespace with a bound of the session's own.
 *
 * The kernel counts inotify instances and watches, fanotify groups and marks per uid per user
 * namespace (`/proc/sys/user/max_inotify_instances`, ...; `fs.inotify.max_user_instances` is the
 * first namespace's: 128 by default). As root, bash runs as the workspace's owner in the host's
 * user namespace, so a job holding 128 inotify instances left every program of the owner on the
 * host (editors, build watchers, systemd --user path units) with EMFILE. A count made in a child
 * namespace is charged there against that namespace's maximum and, for its owner's uid, in the
 * parent: with the owner the session user and each maximum a quarter of the host's
 * ({@link SESSION_USERNS_SHARE}), a session holds at most a quarter of its owner's.
 *
 * The namespace maps every id to itself (`0 0 4294967295`): files, permissions and `id` read as
 * they do on the host, and no file is unwritable for an unmapped owner. Only the user namespace is
 * new: bash's mount, pid, network and IPC namespaces stay the host's user namespace's, so
 * no capability in this one reaches them, and bash has none in it anyway (setpriv drops every
 * capability and sets no_new_privs after entering it; uid 0 inside is never anyone's). Processes
 * of the owner outside any sandbox hold every capability in it (the kernel gives a namespace's
 * owner that in its children); they can already act as the owner.
 *
 * Made by a holder (`setpriv` to the session user, `unshare --user`) whose maps and maxima the
 * worker writes from outside (`nsenter --user` for the maxima, which only a process inside may
 * write); its descriptor reaches the sandbox, where `nsenter` enters it before setpriv
 * (sandbox.ts `launchArgs`). Root workers with an identity and mode `bwrap` only.
 * Attack test: test/unit/attack/adversary-round8.test.ts (kind 6, inotify instances).
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import { MINIMAL_ENV, type SessionIdentity } from './identity';
import type { PassedFd } from './fds';

/** Share of each host maximum a session's namespace gets: 1/4 (32 of the default 128 inotify instances). */
export const SESSION_USERNS_SHARE = 4;

/** The per-user counts bounded in the session's namespace (files under /proc/sys/user). */
export const USERNS_BOUNDED = ['max_inotify_instances', 'max_inotify_watches', 'max_fanotify_groups', 'max_fanotify_marks'] as const;

/** Where nsenter is, or null: `launchArgs` needs an absolute path (the sandbox's PATH is the session's). */
export function findNsenter(): string | null {
  for (const p of ['/usr/bin/nsenter', '/bin/nsenter', '/usr/sbin/nsenter', '/sbin/nsenter']) {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return p;
    } catch {
      /* not here */
    }
  }
  return null;
}

/** The maxima for a session's namespace: each of {@link USERNS_BOUNDED} a quarter of the worker's own namespace's value (at least 1). */
export function sessionUsernsMaxima(
  read: (name: string) => string = (n) => fs.readFileSync(`/proc/sys/user/${n}`, 'utf8'),
): Record<string, number> {
  const out: Record<string, number> = {};
  for (const name of USERNS_BOUNDED) {
    const host = Number(read(name).trim());
    out[name] = Number.isFinite(host) && host > 0 ? Math.max(1, Math.floor(host / SESSION_USERNS_SHARE)) : 1;
  }
  return out;
}

/** A session user namespace, held by an open descriptor of the worker's until the sandbox has entered it. */
export interface SessionUserns extends PassedFd {
  /** Closes the worker's descriptor (the processes inside keep the namespace). Idempotent. */
  close(): void;
}

/**
 * Makes a user namespace owned by `id`, every id mapped to itself, with the maxima of
 * {@link sessionUsernsMaxima}; resolves to a descriptor of it.
 * @param setpriv setpriv's path (shell.ts `findSetpriv`)
 * @throws Error when the holder cannot start or the maps or maxima cannot be written (nothing is left behind)
 */
export async function createSessionUserns(id: SessionIdentity, setpriv: string): Promise<SessionUserns> {
  const holder = spawn(
    setpriv,
    [
      '--reuid',
      String(id.uid),
      '--regid',
      String(id.gid),
      '--clear-groups',
      '--inh-caps=-all',
      '--bounding-set=-all',
      '--no-new-privs',
      '--',
      'unshare',
      '--user',
      '--',
      '/bin/sh',
      '-c',
      'echo ready; exec cat',
    ],
    { env: MINIMAL_ENV, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  try {
    await new Promise<void>((resolve, reject) => {
      let err = '';
      holder.stderr.on('data', (d: Buffer) => (err += String(d)));
      holder.once('error', reject);
      holder.once('exit', (code) => reject(new Error(`the user namespace's holder exited (${code}): ${err.trim()}`)));
      holder.stdout.once('data', () => resolve());
    });
    const pid = holder.pid!;
    fs.writeFileSync(`/proc/${pid}/uid_map`, '0 0 4294967295\n');
    fs.writeFileSync(`/proc/${pid}/gid_map`, '0 0 4294967295\n');
    const maxima = sessionUsernsMaxima();
    execFileSync(
      'nsenter',
      [
        `--user=/proc/${pid}/ns/user`,
        '--',
        '/bin/sh',
        '-ec',
        'while [ $# -gt 0 ]; do echo "$2" > "/proc/sys/user/$1"; shift 2; done',
        'agent-jobs-userns',
      ].concat(Object.entries(maxima).flatMap(([k, v]) => [k, String(v)])),
      { env: MINIMAL_ENV, stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 },
    );
    let fd = fs.openSync(`/proc/${pid}/ns/user`, 'r');
    return {
      get fd() {
        return fd;
      },
      close() {
        if (fd < 0) return;
        fs.closeSync(fd);
        fd = -1;
      },
    };
  } finally {
    holder.kill('SIGKILL');
  }
}
