/**
 * The process guard: enforces `limits.maxProcesses` for one shell and finds
 * every process that shell started, so they can all be killed.
 *
 * Not `ulimit -u`, which does nothing for root (src/session/README.md, "Fork
 * bombs as root", with measurements). Two mechanisms that do work for root,
 * chosen in this order by mode `auto`:
 *
 * 1. `cgroup`: a pids cgroup per shell (cgroup v1 `pids` hierarchy, or v2
 *    when the pids controller can be enabled below our own cgroup). The
 *    kernel refuses the fork past `pids.max`, so a fork bomb cannot grow even
 *    for a moment; processes cannot leave it (not even with setsid), so it
 *    also lists everything to kill. Needs a writable cgroup filesystem (true
 *    for root on a VM or a privileged container, false in a default Docker
 *    container).
 * 2. `watchdog`: a timer in the worker (every 100 ms; one {@link Watchdog} for
 *    all the sessions of a `SessionHost`) reads /proc/loadavg
 *    (one small read: the machine's task count and its newest pid).
 *    - Sudden growth: when the machine has gained more tasks than a
 *      session's limit since the last full scan and the newest processes
 *      (the 16 newest pids, a few small reads) are mostly that session's,
 *      the session is killed. A fork bomb is caught this way within two or
 *      three ticks; a full /proc listing would not do: during a fork storm
 *      listing /proc blocks for a second or more (measured here).
 *    - Slow growth: when the count has grown by 32 or more (or every 2 s)
 *      and is calm (fewer than 16 new tasks in the last tick: listing /proc
 *      while processes are created fast is slow and slows the fast path's
 *      reads too), /proc is scanned in the background (async), newest pids
 *      first, counting
 *      the tasks of each shell's session (session id = the shell's pid: it
 *      is started with setsid), stopping at the first session over its limit.
 *    The kernel does not stop the forks, so a bomb overshoots the limit by
 *    what it forks before detection (measured in src/session/README.md); a
 *    process that calls setsid itself escapes the count.
 *
 * Either way a limit hit ends the command: the guard calls `onExceeded` and
 * the session kills the shell's processes and restarts it.
 *
 * The same timer watches the kernel memory of the shell's sockets that its memory
 * cgroup's limit does not count (TCP buffers the kernel must grant past the cgroup's
 * TCP limit, netlink messages no cgroup counts: {@link ProcessGuard.socketMemory})
 * and fires past {@link socketBudget}, the part of the session's memory budget kept
 * for them. Attack test: test/unit/attack/adversary-round18.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { listProcesses, readLoadavg, readProc, readProcAsync, sessionMembers, type ProcInfo } from './procs';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * How `maxProcesses` is enforced. `auto`: a pids cgroup if one can be
 * created, else the watchdog. `cgroup`: a pids cgroup or fail to start.
 * `watchdog`: the /proc watchdog only. `none`: not enforced (processes are
 * still found and killed by process group and session id).
 */
export type ProcessGuardMode = 'auto' | 'cgroup' | 'watchdog' | 'none';

/** Interval of the guard's checks of processes, ms. */
export const GUARD_INTERVAL_MS = 100;
/**
 * Interval of the guard's checks of the sockets' kernel memory ({@link ProcessGuard.socketMemory}),
 * ms: a job fills netlink queues at about 1 GB/s (measured here), so what it holds past the
 * budget before the kill is about this long's worth. Three small reads a session each time.
 */
export const SOCKET_INTERVAL_MS = 25;
/** Growth of the machine's task count (tasks) that triggers a /proc scan in watchdog mode. */
const SCAN_TRIGGER_TASKS = 32;
/** A /proc scan happens at least this often in watchdog mode, ms, whatever the task count does. */
const SCAN_MAX_INTERVAL_MS = 2000;
/** Newest pids sampled to attribute a sudden growth to a session. */
const NEWEST_SAMPLE = 16;
/** /proc/<pid>/stat files read at once during a scan. */
const SCAN_BATCH = 32;
/** Growth per tick (tasks) at or above which no full /proc scan is started (the fast path decides). */
const QUIET_TASKS_PER_TICK = 16;

interface PidsCgroup {
  version: 1 | 2;
  /** Absolute path of the per-shell cgroup directory. */
  dir: string;
}

interface MountInfo {
  root: string;
  mountPoint: string;
  fsType: string;
  superOptions: string[];
}

function readMounts(): MountInfo[] {
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  const out: MountInfo[] = [];
  for (const line of text.split('\n')) {
    const [left, right] = line.split(' - ');
    if (!left || !right) continue;
    const l = left.split(' ');
    const r = right.split(' ');
    const unescape = (s: string) => s.replace(/\\(\d{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8)));
    out.push({ root: unescape(l[3] ?? '/'), mountPoint: unescape(l[4] ?? ''), fsType: r[0] ?? '', superOptions: (r[2] ?? '').split(',') });
  }
  return out;
}

/** Directory of the cgroup this process is in, within a hierarchy mounted at `mount`. */
function ownCgroupDir(mount: MountInfo, cgroupPath: string): string {
  let rel = cgroupPath;
  if (mount.root !== '/' && (rel === mount.root || rel.startsWith(mount.root + '/'))) rel = rel.slice(mount.root.length);
  return path.join(mount.mountPoint, rel);
}

/** Where a pids cgroup could be created for our children: our own cgroup in the hierarchy that has the pids controller. */
function findPidsParent(): { version: 1 | 2; dir: string } | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  } catch {
    return undefined;
  }
  const mounts = readMounts();
  for (const line of lines) {
    const [, , controllers, cgPath] = /^(\d+):([^:]*):(.*)$/.exec(line) ?? [];
    if (cgPath === undefined || controllers === undefined) continue;
    if (controllers.split(',').includes('pids')) {
      const mount = mounts.find((m) => m.fsType === 'cgroup' && m.superOptions.includes('pids'));
      if (mount) return { version: 1, dir: ownCgroupDir(mount, cgPath) };
    }
  }
  const v2 = lines.find((l) => l.startsWith('0::'));
  const mount = mounts.find((m) => m.fsType === 'cgroup2');
  if (v2 && mount) {
    const dir = ownCgroupDir(mount, v2.slice(3));
    try {
      if (fs.readFileSync(path.join(dir, 'cgroup.controllers'), 'utf8').split(/\s+/).includes('pids')) return { version: 2, dir };
    } catch {
      /* no v2 pids */
    }
  }
  return undefined;
}

/** Creates a pids cgroup named `name` with the limit; undefined when not possible here. Throws nothing. */
function createPidsCgroup(name: string, maxProcesses: number): PidsCgroup | undefined {
  const parent = findPidsParent();
  if (!parent) return undefined;
  const dir = path.join(parent.dir, name);
  try {
    fs.mkdirSync(dir);
  } catch {
    return undefined;
  }
  try {
    if (parent.version === 2 && !fs.existsSync(path.join(dir, 'pids.max'))) {
      // Enable the controller for our children (works where our cgroup is the
      // root of a delegated subtree; fails with EBUSY where it holds processes).
      fs.writeFileSync(path.join(parent.dir, 'cgroup.subtree_control'), '+pids');
    }
    fs.writeFileSync(path.join(dir, 'pids.max'), Number.isFinite(maxProcesses) ? String(maxProcesses) : 'max');
    return { version: parent.version, dir };
  } catch {
    try {
      fs.rmdirSync(dir);
    } catch {
      /* leave it */
    }
    return undefined;
  }
}

/**
 * Most bytes of kernel memory the sockets of one shell hold at once: 32 MiB, or a quarter of the
 * session's memory limit when that is less ({@link socketBudget}); their buffers are held to three
 * quarters of it by the cgroup v1 `memory.kmem.tcp.limit_in_bytes` of a memory cgroup of the
 * shell's own ({@link tcpLimit}), the rest by the guard's watch. Every namespace draws TCP
 * (and UDP) buffer memory from one pool for the whole machine, `net.ipv4.tcp_mem` (575,814 pages,
 * about 2.2 GiB, on a 24 GiB machine), which neither `ulimit -v` nor the OOM killer counts: a job
 * holding connections to itself that nobody reads took about 4 MiB each, and 580 of them the whole
 * pool, where the kernel holds every socket of the machine to its minimum and drops what does not
 * fit. Past the cgroup's limit the shell's sockets are under memory pressure (smaller windows, a sender
 * waits, a datagram is dropped) as on a machine whose pool is spent, and the rest of the machine is
 * not. 32 MiB is several fast downloads' worth of windows at once. Attack test:
 * test/unit/attack/adversary-round11.test.ts (kind 6, TCP memory).
 */
export const SESSION_SOCKET_BYTES = 32 * 1024 * 1024;

/**
 * The part of a session's memory budget (`maxSessionMemoryBytes`, bytes; Infinity: none) kept for
 * the kernel memory of its sockets that `memory.limit_in_bytes` does not count, in bytes:
 * {@link SESSION_SOCKET_BYTES}, or a quarter of the budget when that is less. The memory cgroup's
 * limit is the budget less this part, and the guard's watch kills the session's processes when
 * their sockets hold more than it ({@link ProcessGuard.socketMemory}), so the two together stay
 * within the budget (but for what the sockets gain within one tick of the watch).
 */
export function socketBudget(maxMemoryBytes: number): number {
  return Number.isFinite(maxMemoryBytes) ? Math.min(SESSION_SOCKET_BYTES, Math.floor(maxMemoryBytes / 4)) : SESSION_SOCKET_BYTES;
}

/**
 * The memory cgroup's TCP limit (`memory.kmem.tcp.limit_in_bytes`) for a socket budget of
 * `budget` bytes ({@link socketBudget}): three quarters of it (24 MiB of 32 MiB). The rest is the
 * watch's margin: a job whose TCP and UDP buffers fill the cgroup's limit is held there by the
 * kernel (smaller windows, dropped datagrams), as on a machine whose pool is spent, and is not
 * killed for it. With the limit at the whole budget, such a job sat exactly at the watch's bound,
 * and anything the watch counted on top (a datagram in flight on a send queue, a charge the
 * counter holds for an instant before refusing it) killed it: round 11's UDP job was killed so
 * (its test's `held` was never written). The watch kills past the budget for what the cgroup
 * cannot refuse: forced TCP charges, queues no cgroup counts.
 */
export function tcpLimit(budget: number): number {
  return budget - Math.floor(budget / 4);
}

/** Our own cgroup in the cgroup v1 `memory` hierarchy, where a session's memory cgroup could be made; undefined on v2 or without one. */
function findMemoryV1Parent(): string | undefined {
  let lines: string[];
  try {
    lines = fs.readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  } catch {
    return undefined;
  }
  for (const line of lines) {
    const [, , controllers, cgPath] = /^(\d+):([^:]*):(.*)$/.exec(line) ?? [];
    if (cgPath === undefined || controllers === undefined || !controllers.split(',').includes('memory')) continue;
    const mount = readMounts().find((m) => m.fsType === 'cgroup' && m.superOptions.includes('memory'));
    if (mount) return ownCgroupDir(mount, cgPath);
  }
  return undefined;
}

/**
 * Creates a cgroup v1 memory cgroup named `name` whose sockets' buffers may hold {@link tcpLimit} of
 * the {@link socketBudget} of `memoryBytes` and whose processes the rest of the budget (`memory.limit_in_bytes`; Infinity: no total).
 * The kernel charges to the memory cgroup of the process that allocates: its pages, the page cache
 * it reads and writes, tmpfs and shared memory it fills, and the kernel objects allocated for it
 * with accounting (epoll watches, pipe buffers, sockets, inodes and dentries; measured here: 214
 * bytes per epoll watch): a charge past the limit is reclaimed from the cgroup's own page cache or
 * ends in the cgroup's own OOM killer, which kills a process of the session and no other. Undefined
 * where there is no writable v1 memory hierarchy (cgroup v2 charges the same to `memory.current`
 * and bounds it by the `memory.max` of the worker's own cgroup only; docs/security.md). Throws
 * nothing.
 */
function createMemoryCgroup(name: string, memoryBytes: number): string | undefined {
  const sockets = socketBudget(memoryBytes);
  const parent = findMemoryV1Parent();
  if (!parent) return undefined;
  const dir = path.join(parent, name);
  try {
    fs.mkdirSync(dir);
  } catch {
    return undefined;
  }
  try {
    fs.writeFileSync(path.join(dir, 'memory.kmem.tcp.limit_in_bytes'), String(tcpLimit(sockets)));
    if (Number.isFinite(memoryBytes)) fs.writeFileSync(path.join(dir, 'memory.limit_in_bytes'), String(Math.floor(memoryBytes) - sockets));
    return dir;
  } catch {
    removeDir(dir);
    return undefined;
  }
}

/** Times the kernel's OOM killer killed a process of the memory cgroup `dir` for its limit (`memory.oom_control` `oom_kill`); 0 when unknown. */
function readOomKills(dir: string | undefined): number {
  if (!dir) return 0;
  try {
    const m = /^oom_kill (\d+)/m.exec(fs.readFileSync(path.join(dir, 'memory.oom_control'), 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Removes an empty cgroup directory, if any. Throws nothing. */
function removeDir(dir: string | undefined): void {
  if (!dir) return;
  try {
    fs.rmdirSync(dir);
  } catch {
    /* leave it */
  }
}

/** A small numeric file (a cgroup's counter), or 0 when it cannot be read. */
function readNumber(file: string): number {
  try {
    const n = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isFinite(n) ? n : 0;
  } catch {
    return 0;
  }
}

/** The network namespace of `pid` (`net:[inode]`), or undefined when it is gone. */
function netnsOf(pid: number | 'self'): string | undefined {
  try {
    return fs.readlinkSync(`/proc/${pid}/ns/net`);
  } catch {
    return undefined;
  }
}

/** New processes whose network namespace one socket check looks up, at most (the rest at the next checks). */
const NETNS_LOOKUPS = 16;

/** The worker's own network namespace: a session's processes in it (bwrap's own, or all of them unsandboxed) are not the session's to count. */
const WORKER_NETNS = netnsOf('self');

/**
 * Bytes queued on the netlink sockets of the network namespace `pid` is in: the sum of the Rmem and
 * Wmem columns of `/proc/<pid>/net/netlink` (every netlink socket of that namespace, the kernel's
 * own included, which hold none), or 0 when it cannot be read. The kernel allocates netlink's
 * messages with no memory cgroup accounting and counts them in no pool: a socket's receive buffer
 * (up to twice `net.core.rmem_max`) is their only bound.
 */
function netlinkBytes(pid: number): number {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/net/netlink`, 'utf8');
  } catch {
    return 0;
  }
  let total = 0;
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 6) total += (Number(f[4]) || 0) + (Number(f[5]) || 0);
  }
  return total;
}

/**
 * Socket tables of `/proc/<pid>/net` whose receive queues no memory cgroup counts in full, by the
 * name `/proc/<pid>/net/protocols` counts their sockets under. Each line gives a socket's queued
 * bytes as `tx_queue:rx_queue` (hex, fifth column): the receive queue is `sk_rmem_alloc`, which holds
 * the error queue too (ICMP errors, timestamped clones of sent datagrams: `sock_queue_err_skb`), and
 * the send queue `sk_wmem_alloc`.
 */
const DATAGRAM_TABLES: ReadonlyArray<readonly [string, string]> = [
  ['UDP', 'udp'],
  ['UDPv6', 'udp6'],
  ['UDP-Lite', 'udplite'],
  ['UDPLITEv6', 'udplite6'],
  ['RAW', 'raw'],
  ['RAWv6', 'raw6'],
  ['PING', 'icmp'],
  ['PINGv6', 'icmp6'],
];

/** The TCP socket tables, in the same format: `tx_queue` is the bytes sent and not yet acknowledged, `rx_queue` those received and not yet read. */
const TCP_TABLES: ReadonlyArray<readonly [string, string]> = [
  ['TCP', 'tcp'],
  ['TCPv6', 'tcp6'],
];

/** Queued bytes of the sockets of the session's network namespaces, by {@link addQueuedSockets}. */
interface Queued {
  /** Receive queues of datagram, raw and ping sockets (error queues included) and of AF_PACKET sockets. */
  receive: number;
  /** Send queues of datagram, raw and ping sockets. */
  send: number;
  /** Data queued on TCP sockets, both ways (listening sockets, whose columns count connections, left out). */
  tcp: number;
}

/**
 * Adds the `tx_queue:rx_queue` columns of the socket table `/proc/<pid>/net/<table>` to `into`
 * (`receive` and `send`, or both to `tcp` when `tcp`); a table that cannot be read adds nothing.
 */
function addQueues(pid: number, table: string, into: Queued, tcp: boolean): void {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8');
  } catch {
    return;
  }
  for (const line of text.split('\n').slice(1)) {
    const m = /^\s*\S+\s+\S+\s+\S+\s+([0-9A-Fa-f]{2})\s+([0-9A-Fa-f]+):([0-9A-Fa-f]+)/.exec(line);
    if (!m) continue;
    const send = parseInt(m[2]!, 16);
    const receive = parseInt(m[3]!, 16);
    if (!tcp) {
      into.send += send;
      into.receive += receive;
    } else if (m[1] !== '0A') into.tcp += send + receive;
  }
}

/** Adds the Rmem column of `/proc/<pid>/net/packet` (AF_PACKET sockets' receive queues) to `into.receive`. */
function addPacketQueues(pid: number, into: Queued): void {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/net/packet`, 'utf8');
  } catch {
    return;
  }
  for (const line of text.split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length >= 7) into.receive += Number(f[6]) || 0;
  }
}

/**
 * Adds the queued bytes of the datagram, raw, ping and packet sockets of the network namespace
 * `pid` is in to `into`: one read of `/proc/<pid>/net/protocols` (the namespace's count of sockets
 * of each protocol), then one table for each of those protocols that has sockets there
 * ({@link DATAGRAM_TABLES}, AF_PACKET). Unix sockets list no queues in `/proc` (the memory cgroup
 * charges their buffers: round 18's and round 20's attack tests).
 * @returns whether the namespace has TCP sockets, whose tables {@link addTcpQueues} reads when needed
 */
function addQueuedSockets(pid: number, into: Queued): boolean {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/net/protocols`, 'utf8');
  } catch {
    return false;
  }
  const counts = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^(\S+)\s+\d+\s+(\d+)/.exec(line);
    if (m) counts.set(m[1]!, Number(m[2]));
  }
  const has = (protocol: string): boolean => (counts.get(protocol) ?? 0) > 0;
  for (const [protocol, table] of DATAGRAM_TABLES) if (has(protocol)) addQueues(pid, table, into, false);
  if (has('PACKET')) addPacketQueues(pid, into);
  return TCP_TABLES.some(([protocol]) => has(protocol));
}

/** Adds the data queued on the TCP sockets of the network namespace `pid` is in ({@link TCP_TABLES}) to `into.tcp`. */
function addTcpQueues(pid: number, into: Queued): void {
  for (const [, table] of TCP_TABLES) addQueues(pid, table, into, true);
}

/**
 * Bytes the queues `q` of a session's sockets hold that its cgroup's TCP counter (`tcpCharged`,
 * `memory.kmem.tcp.usage_in_bytes`) does not: every datagram send queue (UDP charges no memory for
 * sending), and of the receive queues what is past what the counter can hold of them. The counter
 * charges a UDP socket's ordinary receive queue (and its forward allocation) and the TCP sockets'
 * buffers, never an error queue (`skb_set_owner_r`: no `__sk_mem_raise_allocated`) nor a raw or
 * packet socket's; the TCP part is at least the TCP data queued, so what the counter holds of the
 * receive queues is at most `tcpCharged - q.tcp`. An ordinary UDP receive queue is so counted once,
 * not twice (a job that fills its UDP buffers to the cgroup's limit is not killed for it); an error
 * queue is counted but for what it can hide behind the TCP sockets' overhead (their skbs' size past
 * their data, plus forward allocations), which is part of `tcpCharged`: what passes the budget
 * unseen is at most that.
 */
function uncharged(q: Queued, tcpCharged: number): number {
  return q.send + Math.max(0, q.receive - Math.max(0, tcpCharged - q.tcp));
}

/** The pids of the cgroup directory `dir` (`cgroup.procs`), or none when it cannot be read. */
function readProcs(dir: string): number[] {
  try {
    return fs
      .readFileSync(path.join(dir, 'cgroup.procs'), 'utf8')
      .split('\n')
      .filter((s) => s !== '')
      .map(Number);
  } catch {
    return [];
  }
}

function readLimitHits(cg: PidsCgroup): number {
  try {
    const m = /^max (\d+)/m.exec(fs.readFileSync(path.join(cg.dir, 'pids.events'), 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Thrown (internally) when mode `cgroup` was asked for and no pids cgroup can be created. */
export class CgroupUnavailableError extends Error {}

/** Guard of one shell process (one per bash; a restarted session gets a new one). */
export class ProcessGuard {
  /** Mechanism in use. */
  readonly kind: 'cgroup' | 'watchdog' | 'none';
  /** The per-shell cgroup, for kind `cgroup`. */
  readonly cgroup: PidsCgroup | undefined;
  readonly maxProcesses: number;
  /**
   * The shell's memory cgroup (v1) bounding its sockets' buffers to {@link SESSION_SOCKET_BYTES} and
   * all its memory, kernel memory included, to the session's `maxSessionMemoryBytes`, or undefined
   * where none can be made. Whatever the guard's kind: it counts bytes, not processes.
   */
  readonly socketCgroup: string | undefined;
  /** Bytes of kernel memory the shell's sockets may hold outside its memory limit ({@link socketBudget}): past it, the watch fires. */
  readonly socketBytes: number;
  /** The network namespace of each process of the shell seen so far, by pid ({@link socketMemory}). */
  private readonly memberNetns = new Map<number, string | undefined>();
  /** Which bound was passed when the guard fired. */
  private firedFor: 'processes' | 'sockets' | undefined;
  /** `oom_kill` of {@link socketCgroup} when last read: kills for the memory limit count from there. */
  private oomKillsSeen = 0;
  /** Pid of the shell (session leader) once adopted. */
  private leader = 0;
  private hitsAtStart = 0;
  private fired = false;
  private onExceeded: (() => void) | undefined;

  private constructor(
    kind: 'cgroup' | 'watchdog' | 'none',
    cgroup: PidsCgroup | undefined,
    maxProcesses: number,
    private readonly watchdog: Watchdog,
    socketCgroup: string | undefined,
    socketBytes: number,
  ) {
    this.socketBytes = socketBytes;
    this.kind = kind;
    this.cgroup = cgroup;
    this.maxProcesses = maxProcesses;
    this.socketCgroup = socketCgroup;
  }

  /**
   * Creates the guard. `name` names the cgroup directory (made safe here);
   * `watchdog` checks it once adopted (one per process: `SessionHost`);
   * `maxMemoryBytes` bounds all the shell's memory, kernel memory included, in
   * bytes (Infinity: sockets only; limits.ts `maxSessionMemoryBytes`).
   * Throws {@link CgroupUnavailableError} in mode `cgroup` when no pids cgroup
   * can be created.
   */
  static create(mode: ProcessGuardMode, maxProcesses: number, name: string, watchdog: Watchdog, maxMemoryBytes = Infinity): ProcessGuard {
    const dirName = `agent-jobs-${name.replace(/[^A-Za-z0-9_.-]/g, '_').slice(0, 80)}`;
    const sockets = createMemoryCgroup(dirName, maxMemoryBytes);
    const budget = socketBudget(maxMemoryBytes);
    if (mode === 'none') return new ProcessGuard('none', undefined, maxProcesses, watchdog, sockets, budget);
    if (mode === 'auto' || mode === 'cgroup') {
      const cg = createPidsCgroup(dirName, maxProcesses);
      if (cg) return new ProcessGuard('cgroup', cg, maxProcesses, watchdog, sockets, budget);
      if (mode === 'cgroup') {
        removeDir(sockets);
        throw new CgroupUnavailableError(
          'no writable pids cgroup (cgroup v1 pids hierarchy, or v2 with the pids controller delegated) is available',
        );
      }
    }
    return new ProcessGuard('watchdog', undefined, maxProcesses, watchdog, sockets, budget);
  }

  /**
   * Puts the shell under guard: moves it into the cgroup (before it has run
   * anything, so all its descendants are inside) and starts watching.
   * `onExceeded` is called once when the limit is hit. Throws when the pid
   * cannot be moved into the cgroup.
   */
  adopt(pid: number, onExceeded: () => void): void {
    this.leader = pid;
    this.onExceeded = onExceeded;
    // Before it has run anything, so every socket of the session is charged to it.
    if (this.socketCgroup) {
      fs.writeFileSync(path.join(this.socketCgroup, 'cgroup.procs'), String(pid));
      this.oomKillsSeen = readOomKills(this.socketCgroup);
    }
    if (this.cgroup) {
      fs.writeFileSync(path.join(this.cgroup.dir, 'cgroup.procs'), String(pid));
      this.hitsAtStart = readLimitHits(this.cgroup);
    }
    if (this.kind !== 'none' || this.socketCgroup) this.watchdog.watch(this);
  }

  /**
   * Moves one more process of the shell into the cgroup (a sandbox's
   * processes forked before {@link adopt}); nothing for other kinds.
   * Best effort: a process that is gone is skipped.
   */
  include(pid: number): void {
    for (const dir of [this.socketCgroup, this.cgroup?.dir]) {
      if (!dir) continue;
      try {
        fs.writeFileSync(path.join(dir, 'cgroup.procs'), String(pid));
      } catch {
        /* exited meanwhile */
      }
    }
  }

  /** The `cgroup.procs` files a process of this shell started apart from it (an exact run) joins, before it runs anything. */
  joinFiles(): string[] {
    return [this.socketCgroup, this.cgroup?.dir].filter((d): d is string => d !== undefined).map((d) => path.join(d, 'cgroup.procs'));
  }

  /** Pids in the cgroup (empty for other kinds). */
  cgroupPids(): number[] {
    return this.cgroup ? readProcs(this.cgroup.dir) : [];
  }

  /**
   * Bytes of kernel memory the shell's sockets hold that its memory limit does not count: the TCP
   * and UDP buffers charged to its memory cgroup (`memory.kmem.tcp.usage_in_bytes`, which the
   * kernel raises past the cgroup's TCP limit for a socket that holds nothing yet, and counts apart
   * from `memory.limit_in_bytes` in cgroup v1), what the netlink sockets of every network namespace
   * its processes are in hold ({@link netlinkBytes}), and what the other sockets of those namespaces
   * queue past that counter ({@link uncharged}: UDP error queues, datagram send queues, raw and
   * packet sockets). The namespaces are the sandbox's and an exact run's; not the worker's own, which
   * bwrap's outer process and an unsandboxed shell share. A socket is counted wherever it is held
   * (a namespace lists every socket made in it, one sent away in a unix message included). 0 without
   * a memory cgroup. Four small reads (more while the namespace has sockets of those kinds; its TCP
   * tables only while their data decides whether the budget is passed), and one
   * more for each new process of the shell (up to {@link NETNS_LOOKUPS} a call: a namespace whose
   * processes are all new is counted a few calls later).
   */
  socketMemory(): number {
    if (!this.socketCgroup) return 0;
    const tcp = readNumber(path.join(this.socketCgroup, 'memory.kmem.tcp.usage_in_bytes'));
    let total = tcp;
    const pids = readProcs(this.socketCgroup);
    const live = new Set(pids);
    for (const pid of this.memberNetns.keys()) if (!live.has(pid)) this.memberNetns.delete(pid);
    const namespaces = new Map<string, number>();
    let lookups = 0;
    for (const pid of pids) {
      // A few new processes a check: during a fork storm /proc is slow, and the watchdog's own reads with it.
      if (!this.memberNetns.has(pid) && lookups++ < NETNS_LOOKUPS) this.memberNetns.set(pid, netnsOf(pid));
      const ns = this.memberNetns.get(pid);
      if (ns !== undefined && ns !== WORKER_NETNS && !namespaces.has(ns)) namespaces.set(ns, pid);
    }
    const queued: Queued = { receive: 0, send: 0, tcp: 0 };
    const withTcp: number[] = [];
    for (const pid of namespaces.values()) {
      total += netlinkBytes(pid);
      if (addQueuedSockets(pid, queued)) withTcp.push(pid);
    }
    // The TCP tables (a line a connection, costly with many) only when they decide: the budget is
    // passed if the counter holds none of the receive queues, and not if it may hold them all.
    if (total + uncharged(queued, tcp) <= this.socketBytes && total + queued.send + queued.receive > this.socketBytes) {
      for (const pid of withTcp) addTcpQueues(pid, queued);
    }
    return total + uncharged(queued, tcp);
  }

  /**
   * Every process of the shell, zombies included (their state says so): the
   * cgroup's members (nothing leaves a cgroup, so that is all of them), or
   * without a cgroup its session and process group, from a /proc listing.
   * `leaderReaped`: the shell has exited and been reaped, so a process now
   * carrying its pid is someone else's (pid reuse) and is never included;
   * processes with its session id are ours only while the pid is unused
   * (the kernel does not reuse a pid still in use as a session id).
   */
  members(leaderReaped: boolean): ProcInfo[] {
    if (this.leader <= 0) return [];
    if (this.cgroup) {
      const found: ProcInfo[] = [];
      for (const pid of this.cgroupPids()) {
        const p = readProc(pid);
        if (p) found.push(p);
      }
      // The shell, between its exit and being reaped, has already left the cgroup.
      if (!leaderReaped && !found.some((p) => p.pid === this.leader)) {
        const p = readProc(this.leader);
        if (p) found.push(p);
      }
      return found;
    }
    if (leaderReaped && readProc(this.leader)) return [];
    return sessionMembers(this.leader, listProcesses()).filter((p) => !(leaderReaped && p.pid === this.leader));
  }

  /** Pid of the shell this guard watches (0 before {@link adopt}). */
  get leaderPid(): number {
    return this.leader;
  }

  /** cgroup kind: whether the kernel refused a fork because of `pids.max` since adopt. */
  cgroupLimitHit(): boolean {
    return this.cgroup !== undefined && readLimitHits(this.cgroup) > this.hitsAtStart;
  }

  /**
   * Processes of the shell the kernel killed for its memory limit (the memory cgroup's OOM killer)
   * since the last call (or adopt); 0 without a memory cgroup.
   */
  takeMemoryKills(): number {
    const now = readOomKills(this.socketCgroup);
    const fresh = Math.max(0, now - this.oomKillsSeen);
    this.oomKillsSeen = now;
    return fresh;
  }

  /** Marks the limit as hit and calls `onExceeded` (once); `by` says which: the process count or the sockets' memory. */
  fire(by: 'processes' | 'sockets' = 'processes'): void {
    if (this.fired || this.leader === 0) return;
    this.fired = true;
    this.firedFor = by;
    this.onExceeded?.();
  }

  /** Which bound the guard fired for, once it has: `processes` (maxProcesses) or `sockets` ({@link socketBytes}). */
  get exceededBy(): 'processes' | 'sockets' | undefined {
    return this.firedFor;
  }

  /** Whether the limit was hit (and `onExceeded` called). */
  get exceeded(): boolean {
    return this.fired;
  }

  /** Stops watching and removes the cgroup (retrying while its last processes exit). */
  async dispose(): Promise<void> {
    this.watchdog.unwatch(this);
    for (const dir of [this.cgroup?.dir, this.socketCgroup]) {
      if (!dir) continue;
      for (let attempt = 0; attempt < 50; attempt++) {
        try {
          fs.rmdirSync(dir);
          break;
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code;
          if (code === 'ENOENT') break;
          await sleep(20);
        }
      }
    }
  }
}

/**
 * Scans /proc for the tasks of the watched sessions, newest pids first (a
 * fork bomb's processes are the newest), and returns the first guard whose
 * session has more tasks than its limit, stopping there. Asynchronous (the
 * reads run on libuv's thread pool) so that a slow /proc never blocks the
 * worker's event loop.
 */
async function findExceeded(guards: ProcessGuard[]): Promise<ProcessGuard | undefined> {
  const byLeader = new Map(guards.map((g) => [g.leaderPid, g]));
  const counts = new Map<ProcessGuard, number>();
  let names: string[];
  try {
    names = await fs.promises.readdir('/proc');
  } catch {
    return undefined;
  }
  const pids = names.filter((n) => n.charCodeAt(0) >= 48 && n.charCodeAt(0) <= 57).map(Number);
  pids.sort((a, b) => b - a);
  for (let i = 0; i < pids.length; i += SCAN_BATCH) {
    const batch = await Promise.all(pids.slice(i, i + SCAN_BATCH).map(readProcAsync));
    for (const p of batch) {
      if (!p || p.state === 'Z') continue;
      const g = byLeader.get(p.sid) ?? byLeader.get(p.pgid);
      if (!g) continue;
      const n = (counts.get(g) ?? 0) + (p.threads || 1);
      counts.set(g, n);
      if (n > g.maxProcesses) return g;
    }
  }
  return undefined;
}

/**
 * Which watched session owns most of the newest processes on the machine:
 * reads /proc/loadavg's last pid and the stat of the `sample` pids below it
 * (a few small reads, fast even during a fork storm, when listing /proc can
 * block for a second).
 */
function ownerOfNewest(guards: ProcessGuard[], lastPid: number, sample: number): ProcessGuard | undefined {
  const byLeader = new Map(guards.map((g) => [g.leaderPid, g]));
  const votes = new Map<ProcessGuard, number>();
  let live = 0;
  for (let pid = lastPid; pid > lastPid - sample && pid > 1; pid--) {
    const p = readProc(pid);
    if (!p || p.state === 'Z') continue;
    live++;
    const g = byLeader.get(p.sid) ?? byLeader.get(p.pgid);
    if (g) votes.set(g, (votes.get(g) ?? 0) + 1);
  }
  for (const [g, n] of votes) if (n * 2 >= live && live > 0) return g;
  return undefined;
}

/**
 * The timer that checks every watched guard: each {@link SOCKET_INTERVAL_MS} its
 * sockets' kernel memory, and each {@link GUARD_INTERVAL_MS} its processes:
 * a cgroup guard's `pids.events`, and for the rest the watchdog of the module
 * comment (the machine's task count, the newest pids, a background /proc
 * scan). One per process is enough and cheapest (one loadavg read per tick
 * for all sessions); its owner passes it to every session (`SessionHost`).
 * The timer runs only while a guard is watched, and is unref'd.
 */
export class Watchdog {
  private readonly watched = new Set<ProcessGuard>();
  private timer: NodeJS.Timeout | undefined;
  /** Machine task count at the last full scan, or the lowest seen since. */
  private baselineTasks: number | undefined;
  /** Machine task count at the previous tick. */
  private previousTasks: number | undefined;
  private lastScanAt = 0;
  private scanning = false;
  /** Socket checks since the last check of processes. */
  private socketTicks = 0;

  /** Starts checking `guard` (and the timer, if it is the first). */
  watch(guard: ProcessGuard): void {
    this.watched.add(guard);
    this.updateTimer();
  }

  /** Stops checking `guard` (and the timer, if it was the last). */
  unwatch(guard: ProcessGuard): void {
    this.watched.delete(guard);
    this.updateTimer();
  }

  private updateTimer(): void {
    if (this.watched.size > 0 && !this.timer) {
      this.timer = setInterval(() => this.tick(), SOCKET_INTERVAL_MS);
      this.timer.unref();
    } else if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
      this.previousTasks = this.baselineTasks = undefined;
    }
  }

  /**
   * One check: a guard whose sockets hold more than its {@link ProcessGuard.socketBytes} fires;
   * cgroup guards fire on a refused fork; watchdog guards go to {@link watchTasks}.
   */
  private tick(): void {
    const processes = ++this.socketTicks * SOCKET_INTERVAL_MS >= GUARD_INTERVAL_MS;
    if (processes) this.socketTicks = 0;
    const watchdogs: ProcessGuard[] = [];
    for (const guard of this.watched) {
      if (guard.exceeded || guard.leaderPid <= 0) continue;
      if (guard.socketMemory() > guard.socketBytes) guard.fire('sockets');
      else if (!processes) continue;
      else if (guard.kind === 'cgroup') {
        if (guard.cgroupLimitHit()) guard.fire();
      } else if (guard.kind === 'watchdog') {
        watchdogs.push(guard);
      }
    }
    if (watchdogs.length > 0) this.watchTasks(watchdogs);
  }

  /** The watchdog's tick: the fast path on sudden growth, a background scan when it is calm and due. */
  private watchTasks(watchdogs: ProcessGuard[]): void {
    const load = readLoadavg();
    const now = Date.now();
    if (!load) {
      if (now - this.lastScanAt >= SCAN_MAX_INTERVAL_MS) {
        this.lastScanAt = now;
        this.scanInBackground(watchdogs);
      }
      return;
    }
    if (this.previousTasks === undefined || this.baselineTasks === undefined) {
      // First tick: just learn the machine's task count.
      this.previousTasks = this.baselineTasks = load.tasks;
      this.lastScanAt = now;
      return;
    }
    const delta = load.tasks - this.previousTasks;
    this.previousTasks = load.tasks;
    this.baselineTasks = Math.min(this.baselineTasks, load.tasks);
    const growth = load.tasks - this.baselineTasks;
    if (growth >= SCAN_TRIGGER_TASKS || delta >= SCAN_TRIGGER_TASKS) {
      // Fast path: the machine grew by more than a session's whole allowance
      // since the last full scan, and the newest processes are that session's.
      const owner = ownerOfNewest(watchdogs, load.lastPid, NEWEST_SAMPLE);
      if (owner && growth > owner.maxProcesses) {
        owner.fire();
        return;
      }
    }
    // A full scan lists /proc, which is slow while processes are being created
    // fast (and slows down the reads of the fast path): only when it is calm.
    if (this.scanning || delta >= QUIET_TASKS_PER_TICK) return;
    if (growth < SCAN_TRIGGER_TASKS && now - this.lastScanAt < SCAN_MAX_INTERVAL_MS) return;
    this.lastScanAt = now;
    this.baselineTasks = load.tasks;
    this.scanInBackground(watchdogs);
  }

  /** Runs {@link findExceeded} unless one is already running, and fires the guard it finds. */
  private scanInBackground(guards: ProcessGuard[]): void {
    if (this.scanning) return;
    this.scanning = true;
    findExceeded(guards)
      .then((g) => g?.fire())
      .catch(() => undefined)
      .finally(() => {
        this.scanning = false;
      });
  }
}
