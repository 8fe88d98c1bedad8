/**
 * The sandbox a session's bash runs in, and the exact command line that
 * starts it (sandbox + identity), for the shell and for any other process
 * that must run under the same restrictions ({@link sandboxedSpawnArgs}).
 *
 * Mode `bwrap` (bubblewrap): own mount, pid, ipc, uts, cgroup and (unless
 * the run asked for network) network namespaces. The whole filesystem is
 * read-only (`--ro-bind / /`); the workspace is bound read-write at its own
 * path; the session's FIFO directory read-only at its own path (bash opens
 * its FIFOs for writing, which a read-only mount allows); a private /tmp and
 * /dev/shm; fresh /dev and /proc, which show only the sandbox's processes
 * (bash is pid 2 in it; the worker is not visible). Directories that hold
 * other runs' data or the worker's (`hide`: the data dir, the workspace
 * root, the audit log, root's home, ...) are covered with empty tmpfs where
 * they are not the workspace itself. Paths stay identical inside and out,
 * so `/proc/<bash pid>/cwd` read by the worker names the directory bash
 * reports as `$PWD`.
 *
 * As root, bwrap runs as root without a user namespace (so it can reach any
 * bind source and mount), and bash is started inside it through
 * `setpriv --reuid ...` (identity.ts). `--unshare-all` would also create a
 * user namespace in which only uid 0 is mapped and setpriv could not switch
 * to the session user, so the namespaces are listed one by one. As another
 * user, bwrap uses `--unshare-all` (user namespace included) and
 * `--disable-userns`.
 *
 * As root, the sandbox's `/dev/pts` is also a devpts instance of its own bounded to
 * {@link SANDBOX_PTY_MAX} ptys ({@link DEVPTS_SCRIPT}): bwrap's has no bound, and every instance
 * draws from one pool for the whole machine.
 *
 * As root, the session's bash also runs in a user namespace of its own ({@link SandboxOptions.userns},
 * userns.ts), entered after the devpts step and before setpriv, so that the kernel's per-user counts
 * (inotify, fanotify) are charged there; its other namespaces stay the host user namespace's.
 *
 * Mode `none`: no namespaces; bash sees the machine as its user may. Every launch still runs under
 * the session's seccomp filter, loaded by a python3 launcher (seccomp-launch.ts) before setpriv,
 * when one was found ({@link SandboxOptions.seccompLauncher}).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { SessionStartError } from './errors';
import { closingLaunch, PASSED_FD_BASE, type Launch, type PassedFd } from './fds';
import { MINIMAL_ENV, type SessionIdentity } from './identity';
import { heldMounts, type HeldBinds, type HeldMount } from './held-binds';
import type { PinnedDir } from './pins';
import { launcherArgv } from './seccomp-launch';

/** `bwrap`: namespaces (see the module comment); `none`: bash runs on the machine directly. */
export type SandboxMode = 'bwrap' | 'none';

/** What a sandboxed process needs: mode, identity, network, what it may write and what it must not see. */
export interface SandboxOptions {
  mode: SandboxMode;
  /** The user to run as; null: the worker's own user. */
  identity: SessionIdentity | null;
  /**
   * Network access. As root: a namespace of its own with outbound access
   * through slirp4netns, host addresses refused (network.ts). As another
   * user: the host's network (bwrap `--share-net`). Otherwise the sandbox
   * has only its own loopback.
   */
  network: boolean;
  /** Directories bound read-write at their own paths (the workspace). */
  writable: string[];
  /** Directories bound read-only at their own paths (the session's FIFO directory). */
  readable: string[];
  /**
   * Directories bound by the descriptor the session opened when it started (pins.ts: a sub-agent's
   * git directories), at the path they had then (bwrap `--bind-fd` / `--ro-bind-fd`): what a path
   * holds at a later launch does not move them. bwrap refuses to start when the destination is a
   * symlink by then. @default none
   */
  pinned?: readonly PinnedDir[];
  /**
   * The git guard's binds (git-guard.ts), held by descriptor since the session started (held-binds.ts): every launch
   * opens each path again without following a symlink, refuses when one no longer names what is held, and binds the
   * descriptors (bwrap `--bind-fd` / `--ro-bind-fd`), never the paths, since a sibling session on the same workspace can
   * swap such a folder for a symlink to a host folder between any check and bwrap's mount (adversary-round17.test.ts,
   * kind 6). @default none
   */
  held?: HeldBinds;
  /** Paths covered (directories by an empty tmpfs, files by /dev/null) unless they are, or lie above, a writable/readable path. */
  hide: string[];
  /**
   * Size of each of the sandbox's private `/tmp` and `/dev/shm`, in bytes (bwrap `--size`): they
   * are memory, outside every ulimit, so a session cannot fill the machine's memory through them.
   * Also the total of the SysV shared memory of the session's IPC namespace (memory.ts `limitIpcNamespace`).
   * @default unbounded (the kernel's default of half the memory), for callers that set none
   */
  tmpfsBytes?: number;
  /** setpriv with --pdeathsig, or null when not installed (see shell.ts findSetpriv). */
  setpriv: string | null;
  /** bwrap executable, for mode `bwrap`. */
  bwrap?: string;
  /**
   * The process is the session's bash: started with another effective group
   * ({@link SEAL_EGID}), which bash drops at once (it does so whenever its
   * real and effective ids differ). The kernel marks a process whose
   * effective id changes non-dumpable, and refuses a non-dumpable process's
   * `/proc/<pid>/mem`, `fd/*`, `environ` to every other process of the same
   * user: no job of the session can read or rewrite bash's memory (the next
   * control line's tokens, what bash runs). Only with an identity (setpriv).
   * Attack test: test/unit/attack/reach-into-bash.test.ts. @default false
   */
  sealShell?: boolean;
  /**
   * File holding the seccomp program every process of the sandbox runs
   * under (seccomp.ts `writeSeccompFilter`): loaded by bwrap in mode `bwrap`, by the
   * {@link seccompLauncher} in mode `none`; none when unset (an architecture without a filter, or
   * mode `none` without a launcher).
   */
  seccompFilter?: string;
  /**
   * Mode `none`: the python3 that loads {@link seccompFilter} before the program runs
   * (seccomp-launch.ts), and the SHA-256 (hex) the program must have. @default none: no filter in mode `none`
   */
  seccompLauncher?: { python: string; sha256: string };
  /**
   * A user namespace of the session's own for the process (userns.ts), entered with `nsenter` (at
   * {@link nsenter}) after the sandbox's mounts and before setpriv switches identity. Only with an
   * identity and mode `bwrap`. @default none: the host's user namespace
   */
  userns?: PassedFd;
  /** Absolute path of nsenter, for {@link userns}. */
  nsenter?: string;
  /** A resolv.conf naming slirp4netns's DNS forwarder, bound at /etc/resolv.conf when `network` is set (network.ts). */
  resolvConf?: string;
}

/**
 * The effective group bash starts with when {@link SandboxOptions.sealShell}
 * is set and drops before it reads anything: `nogroup`, which owns nothing.
 */
export const SEAL_EGID = 65534;

/**
 * The sandbox mode asked for in `AGENT_JOBS_SANDBOX` (`bwrap` or `none`),
 * or undefined when unset (`auto`: bwrap when a working one is found).
 * @throws SessionStartError for any other value
 */
export function sandboxModeFromEnv(env: NodeJS.ProcessEnv = process.env): SandboxMode | undefined {
  const v = env.AGENT_JOBS_SANDBOX?.trim();
  if (v === undefined || v === '' || v === 'auto') return undefined;
  if (v === 'bwrap' || v === 'none') return v;
  throw new SessionStartError(`AGENT_JOBS_SANDBOX must be bwrap or none, not ${JSON.stringify(v)}`);
}

/** Namespaces as root: everything `--unshare-all` does except the user namespace (see the module comment). */
function namespaceArgs(asRoot: boolean, network: boolean): string[] {
  // As root the network is always a namespace of its own; with `network` the shell attaches slirp4netns to it (network.ts).
  if (asRoot) return ['--unshare-ipc', '--unshare-pid', '--unshare-uts', '--unshare-cgroup-try', '--unshare-net'];
  return ['--unshare-all', ...(network ? ['--share-net'] : []), '--unshare-user', '--disable-userns'];
}

/**
 * Path of a working bwrap: the first `bwrap` on `searchPath` that can start
 * `true` in the namespaces a session uses. Probed once per search path and
 * `probed` map (the caller's memo: `SessionHost.bwrapProbes`); every call probes without one.
 */
export function findBwrap(
  searchPath: string = process.env.PATH ?? MINIMAL_ENV.PATH!,
  probed: Map<string, string | null> = new Map(),
): string | null {
  const cached = probed.get(searchPath);
  if (cached !== undefined) return cached;
  let found: string | null = null;
  const asRoot = process.getuid?.() === 0;
  for (const dir of searchPath.split(':')) {
    if (!dir) continue;
    const candidate = path.join(dir, 'bwrap');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      execFileSync(
        candidate,
        ['--die-with-parent', ...namespaceArgs(asRoot, false), '--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--', 'true'],
        {
          env: MINIMAL_ENV,
          stdio: 'ignore',
          timeout: 10_000,
        },
      );
      found = candidate;
      break;
    } catch {
      /* not here, or not working (no namespaces allowed) */
    }
  }
  probed.set(searchPath, found);
  return found;
}

/**
 * The mode a session gets: `requested`, else `AGENT_JOBS_SANDBOX`, else
 * `bwrap` when a working bwrap is found and `none` otherwise. A sandbox
 * asked for is never silently dropped.
 * @param probed the caller's memo of {@link findBwrap} (`SessionHost.bwrapProbes`)
 * @throws SessionStartError when bwrap is asked for and none works here
 */
export function resolveSandbox(
  requested?: SandboxMode,
  searchPath?: string,
  probed?: Map<string, string | null>,
): { mode: SandboxMode; bwrap?: string } {
  const asked = requested ?? sandboxModeFromEnv();
  if (asked === 'none') return { mode: 'none' };
  const bwrap = findBwrap(searchPath, probed);
  if (bwrap) return { mode: 'bwrap', bwrap };
  if (asked === 'bwrap') {
    throw new SessionStartError(
      'cannot start bash session: sandbox bwrap was asked for (AGENT_JOBS_SANDBOX=bwrap or the sandbox option) but no working bwrap was found on the PATH ' +
        '(install bubblewrap, or set AGENT_JOBS_SANDBOX=none to run without a sandbox)',
    );
  }
  return { mode: 'none' };
}

function within(p: string, dir: string): boolean {
  return p === dir || dir === '/' || p.startsWith(dir.endsWith('/') ? dir : dir + '/');
}

function depth(p: string): number {
  return p === '/' ? 0 : p.split('/').length - 1;
}

/** Whether `id` may search (x) directory `dir` by its mode bits. */
function searchable(dir: string, id: SessionIdentity | null): boolean {
  if (!id) return true;
  try {
    const st = fs.statSync(dir);
    if (st.uid === id.uid) return (st.mode & 0o100) !== 0;
    if (st.gid === id.gid) return (st.mode & 0o010) !== 0;
    return (st.mode & 0o001) !== 0;
  } catch {
    return true;
  }
}

/** Ancestors of `p`, shallowest first, `/` and `p` excluded. */
function ancestors(p: string): string[] {
  const out: string[] = [];
  for (let d = path.dirname(p); d !== '/' && d !== path.dirname(d); d = path.dirname(d)) out.unshift(d);
  return out;
}

/** One mount; `fd`: a bind from that descriptor of bwrap (a pinned directory), not from `path`. */
type MountOp = { kind: 'tmpfs' | 'dir' | 'bind' | 'ro-bind' | 'hide-file'; path: string; mode?: string; fd?: number };

/** `p` absolute with symlinks resolved (as given, made absolute, when it cannot be). */
function resolvedPath(p: string): string {
  const abs = path.resolve(p);
  try {
    return fs.realpathSync(abs);
  } catch {
    return abs;
  }
}

/**
 * The mounts of `o` in no particular order: the private /tmp, the hidden paths (an empty tmpfs
 * over a directory, /dev/null over a file), the binds (`targets`), and an empty tmpfs over each
 * ancestor of a bind that the session user cannot search on the real filesystem (it costs it
 * nothing it could see). `held`: the held binds' mounts of this launch, bound from fds after the pinned directories'.
 */
function mountOps(o: SandboxOptions, held: readonly HeldMount[], fdBase: number): { ops: MountOp[]; targets: MountOp[] } {
  const binds = [...new Set(o.writable.map(resolvedPath))].map((p) => ({ kind: 'bind' as const, path: p }));
  const roBinds = [...new Set(o.readable.map(resolvedPath))]
    .filter((p) => !binds.some((b) => b.path === p))
    .map((p) => ({ kind: 'ro-bind' as const, path: p }));
  // At the path they had when pinned, never resolved again: bwrap binds the descriptor.
  const pinned = (o.pinned ?? []).map((p, i) => ({
    kind: p.writable ? ('bind' as const) : ('ro-bind' as const),
    path: p.dest,
    fd: fdBase + i,
  }));
  const fromHeld = held.map((m, i) => ({
    kind: m.writable ? ('bind' as const) : ('ro-bind' as const),
    path: m.dest,
    fd: fdBase + pinned.length + i,
  }));
  const targets = [...binds, ...roBinds, ...pinned, ...fromHeld];
  const ops: MountOp[] = [{ kind: 'tmpfs', path: '/tmp', mode: '1777' }];
  const tmpfsAt = new Set(['/tmp']);
  for (const raw of o.hide) {
    const h = resolvedPath(raw);
    if (h === '/' || h === '/tmp' || targets.some((t) => within(t.path, h) && t.path === h)) continue;
    let st: fs.Stats;
    try {
      st = fs.statSync(h);
    } catch {
      continue;
    }
    if (st.isDirectory()) {
      ops.push({ kind: 'tmpfs', path: h, mode: '0755' });
      tmpfsAt.add(h);
    } else {
      // A file (the audit log outside the data dir): /dev/null over it.
      ops.push({ kind: 'hide-file', path: h });
    }
  }
  for (const t of targets) {
    for (const a of ancestors(t.path)) {
      if ([...tmpfsAt].some((t) => within(a, t))) continue;
      if (!searchable(a, o.identity)) {
        ops.push({ kind: 'tmpfs', path: a, mode: '0755' });
        tmpfsAt.add(a);
      }
    }
  }
  ops.push(...targets);
  return { ops, targets };
}

/**
 * `ops` in the order bwrap applies them, shallowest first, so that no later mount covers an
 * earlier bind; a hidden path inside a hidden directory dropped (it needs no mount of its own);
 * and before a bind or tmpfs inside a tmpfs, a searchable `--dir` for each directory on the way.
 */
function orderMounts(ops: MountOp[], targets: MountOp[]): MountOp[] {
  const sorted = ops.sort((a, b) => depth(a.path) - depth(b.path) || order(a) - order(b));
  // The mount that holds `p` when it is applied: the deepest earlier op at or above it.
  const holder = (p: string, before: number): MountOp | undefined => {
    let best: MountOp | undefined;
    for (let i = 0; i < before; i++) {
      const op = sorted[i]!;
      if (op.kind !== 'dir' && op.kind !== 'hide-file' && within(p, op.path) && (!best || depth(op.path) >= depth(best.path))) best = op;
    }
    return best;
  };
  const final: MountOp[] = [];
  const dirs = new Set<string>();
  for (let i = 0; i < sorted.length; i++) {
    const op = sorted[i]!;
    const h = holder(op.path, i);
    // A hidden directory already inside a hidden one needs no mount of its own.
    if (op.kind === 'tmpfs' && op.path !== '/tmp' && h?.kind === 'tmpfs' && !targets.some((t) => within(t.path, op.path))) continue;
    if (op.kind === 'hide-file' && h?.kind === 'tmpfs') continue;
    if (op.kind === 'bind' || op.kind === 'ro-bind' || op.kind === 'tmpfs') {
      // Directories bwrap would create inside a tmpfs are 0700 root: create them searchable.
      for (const a of ancestors(op.path)) {
        const ha = holder(a, i);
        if (ha?.kind === 'tmpfs' && ha.path !== a && !dirs.has(a)) {
          dirs.add(a);
          final.push({ kind: 'dir', path: a, mode: '0755' });
        }
      }
    }
    final.push(op);
  }
  return final;
}

/**
 * Files of the sandbox's `/proc` covered with an empty read-only file (`/dev/null`) in every
 * sandbox (bash, exact runs, the editor's helper): they are the kernel's views of the whole
 * machine, not of the sandbox's pid namespace. `/proc/keys` lists every key the reader may view
 * (with bash running as the workspace's owner, the owner's host keys: serial, type, description
 * such as `github-token-for-ci`, payload length), `/proc/key-users` every uid holding keys and its
 * counts; the rest are Docker's masked paths that hold kernel addresses or other processes' timers
 * (`kallsyms` shows zeros to the unprivileged, `timer_list` is root's, but a kernel may differ).
 * The key calls themselves are refused by seccomp (seccomp.ts). Not covered: `/proc/sys/kernel/keys`
 * (limits, not keys). Attack test: test/unit/attack/adversary-round22.test.ts (kind 6).
 */
export const PROC_MASKED: readonly string[] = [
  '/proc/keys',
  '/proc/key-users',
  '/proc/timer_list',
  '/proc/sched_debug',
  '/proc/kallsyms',
  '/proc/kcore',
  '/proc/latency_stats',
];

/**
 * The bwrap arguments before `--` (without the bwrap path): namespaces, the
 * read-only root, /dev, /proc, private /tmp and /dev/shm, the hidden paths,
 * and the binds, in an order where no later mount covers an earlier bind.
 * @param held the held binds' mounts of this launch (fds after the pinned directories'; see {@link launchArgs}); @default
 *   `heldMounts(o.held)`
 * @param fdBase the pinned directories' first fd, then the held binds' @default {@link PASSED_FD_BASE}
 * @throws SessionStartError when a held bind no longer is at its path (held-binds.ts `heldMounts`)
 */
export function bwrapArgs(
  o: SandboxOptions,
  chdir?: string,
  held: readonly HeldMount[] = o.held ? heldMounts(o.held) : [],
  fdBase = PASSED_FD_BASE,
): string[] {
  const { ops, targets } = mountOps(o, held, fdBase);
  const final = orderMounts(ops, targets);
  const args = [
    '--die-with-parent',
    ...namespaceArgs(o.identity !== null || process.getuid?.() === 0, o.network),
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
  ];
  // Files of the kernel's /proc that list the whole machine's state: covered where this kernel has them (bwrap cannot make a file in /proc).
  for (const f of PROC_MASKED) if (fs.existsSync(f)) args.push('--ro-bind', '/dev/null', f);
  const size = (p: string): string[] =>
    (p === '/tmp' || p === '/dev/shm') && o.tmpfsBytes !== undefined ? ['--size', String(Math.floor(o.tmpfsBytes))] : [];
  args.push('--perms', '1777', ...size('/dev/shm'), '--tmpfs', '/dev/shm');
  for (const op of final) {
    if (op.kind === 'tmpfs') args.push('--perms', op.mode ?? '0755', ...size(op.path), '--tmpfs', op.path);
    else if (op.kind === 'dir') args.push('--perms', op.mode ?? '0755', '--dir', op.path);
    else if (op.kind === 'bind') args.push(...(op.fd !== undefined ? ['--bind-fd', String(op.fd)] : ['--bind', op.path]), op.path);
    else if (op.kind === 'ro-bind') args.push(...(op.fd !== undefined ? ['--ro-bind-fd', String(op.fd)] : ['--ro-bind', op.path]), op.path);
    else args.push('--ro-bind', '/dev/null', op.path);
  }
  // The namespace's DNS is slirp4netns's forwarder, not the host's resolver (which may listen on the host's loopback).
  if (o.network && o.resolvConf) args.push('--ro-bind', o.resolvConf, '/etc/resolv.conf');
  if (chdir !== undefined) args.push('--chdir', chdir);
  return args;
}

/**
 * What a process in the sandbox of `o` sees at `dir` (absolute): the real
 * directory (writable when a writable bind holds it), or something else
 * when a mount of the sandbox covers it: its private /tmp or /dev/shm, its
 * own /dev or /proc, a hidden path's empty tmpfs, or the tmpfs over an
 * ancestor of a bind that the session user cannot search. The mounts are
 * those of {@link bwrapArgs}; the deepest one holding `dir` decides (a bind
 * over a tmpfs at the same depth wins, as bwrap applies it after).
 */
export function sandboxView(o: SandboxOptions, dir: string): { real: true; writable: boolean } | { real: false; coveredBy: string } {
  const resolve = (p: string): string => {
    try {
      return fs.realpathSync(path.resolve(p));
    } catch {
      return path.resolve(p);
    }
  };
  const target = resolve(dir);
  const writable = o.writable.map(resolve);
  const binds = [
    ...writable.map((p) => ({ path: p, kind: 'bind' as const })),
    ...o.readable.map((p) => ({ path: resolve(p), kind: 'ro-bind' as const })),
    ...(o.pinned ?? []).map((p) => ({ path: p.dest, kind: p.writable ? ('bind' as const) : ('ro-bind' as const) })),
    ...(o.held?.binds ?? []).map((b) => ({ path: b.dest, kind: b.writable ? ('bind' as const) : ('ro-bind' as const) })),
  ];
  const covers: Array<{ path: string; kind: 'tmpfs' | 'bind' | 'ro-bind'; why: string }> = [
    { path: '/tmp', kind: 'tmpfs', why: 'the sandbox gives bash a private /tmp' },
    { path: '/dev/shm', kind: 'tmpfs', why: 'the sandbox gives bash a private /dev/shm' },
    { path: '/dev', kind: 'tmpfs', why: 'the sandbox gives bash its own /dev' },
    { path: '/proc', kind: 'tmpfs', why: 'the sandbox gives bash its own /proc' },
  ];
  for (const raw of o.hide) {
    const h = resolve(raw);
    if (h === '/' || h === '/tmp' || binds.some((b) => b.path === h)) continue;
    try {
      if (fs.statSync(h).isDirectory()) covers.push({ path: h, kind: 'tmpfs', why: `the sandbox hides ${h}` });
    } catch {
      /* not there: nothing mounted */
    }
  }
  for (const b of binds)
    for (const a of ancestors(b.path))
      if (!searchable(a, o.identity))
        covers.push({ path: a, kind: 'tmpfs', why: `${o.identity?.user ?? 'the session user'} cannot search ${a}` });
  covers.push(...binds.map((b) => ({ ...b, why: '' })));
  let best: (typeof covers)[number] | undefined;
  for (const c of covers) {
    if (!within(target, c.path)) continue;
    if (!best || depth(c.path) > depth(best.path) || (depth(c.path) === depth(best.path) && c.kind !== 'tmpfs')) best = c;
  }
  // Said of where `dir` leads when a symlink on the way led elsewhere, so a reason about a link names its target.
  if (best?.kind === 'tmpfs')
    return { real: false, coveredBy: target === path.resolve(dir) ? best.why : `it leads to ${target}, and ${best.why}` };
  return { real: true, writable: best?.kind === 'bind' };
}

function order(op: MountOp): number {
  return { tmpfs: 0, dir: 1, 'hide-file': 2, bind: 3, 'ro-bind': 3 }[op.kind];
}

/**
 * Most ptys one sandbox (a session's shell, an exact run, an edit) holds at once: 32, its devpts
 * instance's `max=`. Every devpts instance mounted outside the host's first mount namespace draws
 * from one pool for the whole machine, `kernel.pty.max` less `kernel.pty.reserve` (4,096 - 1,024 =
 * 3,072 by default), which one job holding `/dev/ptmx` open could otherwise take from every other
 * sandbox and container (ENOSPC from openpty). 32 is far above what a session's work uses at once
 * (`script`, `expect`, Python's `pty`, `ssh -t`, a few tmux panes: one each), and keeps a sandbox
 * to about 1 % of the default pool: taking it all needs 96 sandboxes at their bound at the same
 * time. Past the bound, opening `/dev/ptmx` in that sandbox fails with ENOSPC, as for a full pool.
 * Attack test: test/unit/attack/adversary-round10.test.ts (kind 6, ptys).
 */
export const SANDBOX_PTY_MAX = 32;

/**
 * Mount options of the sandbox's `/dev/pts`: bwrap's own (`newinstance,ptmxmode=0666,mode=620`;
 * its `/dev/ptmx` is a symlink to `pts/ptmx`, so it names this instance) and `max=`.
 */
export const DEVPTS_OPTIONS = `newinstance,ptmxmode=0666,mode=620,max=${SANDBOX_PTY_MAX}`;

/**
 * The sandbox's first program as root (`sh -p -c` this, then the options `$1`, then the program):
 * replaces bwrap's devpts at `/dev/pts` (no `max`) with one mounted with `$1`, then execs the
 * program in place (same pid): setpriv, which drops every capability before the session's program
 * starts. It runs with CAP_SYS_ADMIN only (bwrap `--cap-add`: the one capability mount(2) needs,
 * which setpriv's identity arguments take from every later program) and reads nothing the session
 * controls: `-p` keeps a bash-as-sh from importing functions from the environment (dash imports
 * none), and the mount programs' `PATH` is theirs alone (the program gets the environment as
 * given). A failure ends the launch (exit 126) rather than leave the sandbox unbounded. bwrap
 * cannot do it itself (`--dev` takes no options); mounting an instance on the host and binding it
 * would let it draw on the host's reserve and leave a mount on the host to clean up.
 */
const DEVPTS_SCRIPT =
  'PATH=/usr/sbin:/usr/bin:/sbin:/bin umount -n /dev/pts && PATH=/usr/sbin:/usr/bin:/sbin:/bin mount -n -t devpts -o "$1" devpts /dev/pts || ' +
  '{ echo "agent-jobs: cannot mount the sandbox\'s /dev/pts (devpts $1)" >&2; exit 126; }; shift; exec "$@"';

/** `setpriv` arguments that switch to `id`: no groups, no capabilities (none inheritable, none in the bounding set), no_new_privs. */
export function identityArgs(id: SessionIdentity, seal = false): string[] {
  return [
    '--reuid',
    String(id.uid),
    ...(seal ? ['--rgid', String(id.gid), '--egid', String(SEAL_EGID)] : ['--regid', String(id.gid)]),
    '--clear-groups',
    '--inh-caps=-all',
    '--bounding-set=-all',
    '--no-new-privs',
  ];
}

/**
 * The program and arguments that run `argv` in the sandbox and identity of
 * `o`: `[bwrap ... --] [setpriv <identity> --pdeathsig KILL --] argv`, or in mode `none` with a
 * launcher `[python3 <launcher> ...] [setpriv ...] argv`.
 * Without setpriv and without an identity to switch to, `argv` runs
 * directly (inside bwrap in mode `bwrap`).
 * @throws SessionStartError when an identity is asked for and setpriv is missing
 */
export function launchArgs(o: SandboxOptions, argv: string[], chdir?: string): Launch {
  let inner = argv;
  if (o.identity && !o.setpriv) throw new SessionStartError(`cannot run bash as ${o.identity.user}: setpriv (util-linux) is not installed`);
  if (o.setpriv)
    inner = [o.setpriv, ...(o.identity ? identityArgs(o.identity, o.sealShell === true) : []), '--pdeathsig', 'KILL', '--', ...argv];
  if (o.mode === 'bwrap') {
    if (!o.bwrap) throw new SessionStartError('sandbox bwrap: no bwrap path');
    const filter = o.seccompFilter;
    // The launch closes every descriptor the worker holds without close-on-exec (fds.ts), and opens the
    // seccomp program as fd 3 for bwrap (same pid), so every spawn site gets both without passing descriptors itself.
    // The user namespace first (fd 4: the sh that closes it cannot name a descriptor above 9), then the pinned
    // directories and the held guard paths, reach bwrap as fds 4, 5, … (the spawn passes them: fds.ts launchStdio).
    const held = o.held ? heldMounts(o.held) : [];
    const pass: PassedFd[] = [];
    if (o.identity && o.userns && o.nsenter) {
      // Entered by its descriptor (the host's /proc is not the sandbox's), which is then closed: bash never holds it.
      const n = PASSED_FD_BASE;
      pass.push(o.userns);
      inner = [o.nsenter, `--user=/proc/self/fd/${n}`, '--', '/bin/sh', '-c', `exec ${n}<&-; exec "$@"`, 'agent-jobs-userns', ...inner];
    }
    const fdBase = PASSED_FD_BASE + pass.length;
    pass.push(...(o.pinned ?? []), ...held.map((m) => m.source));
    // With an identity (root, no user namespace), bounded ptys: see DEVPTS_SCRIPT; setpriv's identity args drop the capability.
    if (o.identity) inner = ['/bin/sh', '-p', '-c', DEVPTS_SCRIPT, 'agent-jobs-devpts', DEVPTS_OPTIONS, ...inner];
    const caps = o.identity ? ['--cap-add', 'CAP_SYS_ADMIN'] : [];
    if (!filter) return closingLaunch([o.bwrap, ...bwrapArgs(o, chdir, held, fdBase), ...caps, '--', ...inner], undefined, pass);
    return closingLaunch([o.bwrap, ...bwrapArgs(o, chdir, held, fdBase), ...caps, '--seccomp', '3', '--', ...inner], filter, pass);
  }
  // Without bwrap, the same filter, loaded by the launcher before setpriv (seccomp-launch.ts), as bwrap loads it before its program.
  const launcher = o.seccompFilter && o.seccompLauncher ? launcherArgv(o.seccompLauncher.python, o.seccompLauncher.sha256) : undefined;
  if (launcher) return closingLaunch(inner, o.seccompFilter, [], launcher);
  return closingLaunch(inner);
}

/**
 * Program and arguments to start ANOTHER process (not the session's bash)
 * in the same kind of sandbox and identity as a session: a fresh bwrap per
 * call with the same binds and network setting, `argv` exactly, in `cwd`.
 * Spawn it with `{ cwd, env, stdio: launchStdio(launch, [0, 1, 2 as wanted]) }` (env: what the
 * process may see, never `process.env`; `launchStdio` (fds.ts) adds the pinned directories' descriptors); in mode `none` the cwd is the spawn's, in mode `bwrap`
 * it is also passed as `--chdir`. Get `options` from
 * `BashSession.sandboxOptions`.
 */
export function sandboxedSpawnArgs(options: SandboxOptions, argv: string[], cwd: string): Launch {
  if (argv.length === 0) throw new Error('sandboxedSpawnArgs: empty argv');
  return launchArgs(options, argv, options.mode === 'bwrap' ? cwd : undefined);
}

/**
 * The first directory on the way to `dir` (from /) that `id` cannot search,
 * or undefined when it can reach `dir`.
 */
export function unreachableAncestor(dir: string, id: SessionIdentity | null): string | undefined {
  if (!id) return undefined;
  for (const a of [...ancestors(path.resolve(dir)), path.resolve(dir)]) if (!searchable(a, id)) return a;
  return undefined;
}

/** What {@link containerName} looks at; tests give their own. */
export interface HostProbe {
  exists(path: string): boolean;
  read(path: string): string | null;
  env: NodeJS.ProcessEnv;
}

const realProbe: HostProbe = {
  exists: (p) => fs.existsSync(p),
  read: (p) => {
    try {
      return fs.readFileSync(p, 'utf8');
    } catch {
      return null;
    }
  },
  env: process.env,
};

/**
 * The container runtime this process runs in, or null: Docker (`/.dockerenv`),
 * Podman (`/run/.containerenv`), systemd's `container` variable, or a
 * cgroup path of docker, containerd, kubepods or libpod in `/proc/1/cgroup`.
 */
export function containerName(probe: HostProbe = realProbe): string | null {
  if (probe.exists('/.dockerenv')) return 'docker';
  if (probe.exists('/run/.containerenv')) return 'podman';
  if (probe.env.container) return probe.env.container;
  const cgroup = probe.read('/proc/1/cgroup') ?? '';
  const m = /\b(docker|containerd|kubepods|libpod|lxc)\b/.exec(cgroup);
  return m ? m[1]! : null;
}

/**
 * Why a worker must not start: in a container, with no working sandbox,
 * unless `AGENT_JOBS_SANDBOX=none` says so explicitly (Docker's defaults
 * forbid the namespaces bwrap needs, and a worker that fell back to no
 * sandbox there would run every command with the container's whole view;
 * docs/deploy.md, "Docker", gives the settings that allow bwrap).
 * @returns the one-line reason, or null when the worker may start
 */
export function containerSandboxProblem(mode: SandboxMode | 'unavailable', probe: HostProbe = realProbe): string | null {
  if (mode === 'bwrap') return null;
  if (sandboxModeFromEnv(probe.env) === 'none') return null;
  const runtime = containerName(probe);
  if (!runtime) return null;
  return (
    `refusing to start: this worker runs in a container (${runtime}) with no working bwrap (not installed, or its namespaces are not allowed), ` +
    'so bash would run without the sandbox; install bubblewrap and allow its namespaces ' +
    '(docs/deploy.md, "Docker": cap_add SYS_ADMIN, security_opt apparmor=unconfined and systempaths=unconfined) ' +
    'or set AGENT_JOBS_SANDBOX=none to run without a sandbox knowingly'
  );
}
