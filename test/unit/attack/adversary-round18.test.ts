/**
 * Adversary round 18: attacks on the control layer of main (7aa2591), as root (the worker's
 * intended setting), in real sessions of the unit harness. Each test asserts the safe behaviour
 * and is skipped (OPEN) while its fix is missing; I ran each un-skipped against 7aa2591 and it
 * failed as written below.
 *
 * Kind 6 (a session's limits; the machine-wide pool of TCP buffer memory), around the round-11
 * fix (guard.ts `SESSION_SOCKET_BYTES`, `memory.kmem.tcp.limit_in_bytes` = 32 MiB of the shell's
 * cgroup v1 memory cgroup) and the round-14 claim that the memory cgroup bounds "sockets" in
 * `maxSessionMemoryBytes`. Steps: a session limited to 128 MiB (`maxSessionMemoryBytes`) runs a
 * background python job that opens 3,000 TCP connections to itself on the sandbox's own loopback
 * (no `--network` needed), writes into each until the send would block, never reads, and keeps
 * them. OBSERVED (load average 8 to 19 over my runs, 2 cores): the machine-wide count of TCP
 * buffer pages (`/proc/net/sockstat` "TCP: mem", read on the host) rose from 0 to 61,457 pages (240 MiB, in
 * about 1 s) while the job held 3,000 connections with 228,100,374 bytes queued; the job was not
 * killed (`pgrep` finds it, the next command runs). A first try with 7,716 connections and 512 MiB
 * queued lowered the host's MemFree by 1.2 GiB in the same 128 MiB session. Each connection costs
 * about 20 pages whatever the cgroup's TCP limit says: about 28,000 connections (2 processes at the
 * worker's `ulimit -n` of 20,000; the pids bound is 1,024) would take the whole pool
 * (`net.ipv4.tcp_mem[2]` = 575,814 pages), where every TCP socket of the machine (the worker's
 * connection to Temporal, Temporal's own) is held to its minimum and drops what does not fit
 * (round 11's observation, guard.ts); I stopped at 3,000, well under `tcp_mem[0]` (287,907), to leave the shared machine alone. Round 11
 * tried 32 connections of 4 MiB each, which the limit does stop. Why it works: the kernel
 * charges a socket's memory past the cgroup's TCP limit anyway when the socket holds nothing yet
 * (`sk_forced_mem_schedule`: the first segment of an empty receive queue and the first skb of an
 * empty write queue must fit, or TCP could not make progress), so the limit bounds the bytes per
 * connection under pressure, not the connections; and in cgroup v1 the TCP counter
 * (`memory.kmem.tcp.*`) is separate from `memory.limit_in_bytes`, so none of it counts toward
 * `maxSessionMemoryBytes` nor wakes the session's OOM killer. Fix for the whole kind (kernel
 * memory a session holds through many objects each of which the kernel must grant a minimum):
 * bound the count, not only the bytes: a session-wide bound on sockets (the worker watches the
 * sandbox's network namespace's `TCP: inuse`/`UDP: inuse`/`orphan`, per namespace in
 * `/proc/<bash>/net/sockstat`, and kills the session's jobs past a few hundred, as the pids guard
 * does), or a lower `ulimit -n` together with `pids.max` sized so their product times the forced
 * minimum (about 80 KiB a socket on loopback, whose MTU is 64 KiB; lowering the sandbox's `lo` MTU
 * to 1500 cuts it) fits the budget; where cgroup v2 is available, socket memory is charged to
 * `memory.current` itself and forced charges then count toward `memory.max`.
 *
 * Kind 6 (a session's limits; kernel memory no cgroup counts): netlink's replies. The session may
 * open NETLINK_ROUTE sockets (seccomp.ts `ALLOWED_NETLINK_PROTOCOLS`, for getaddrinfo). Steps: a
 * background python job opens a NETLINK_ROUTE socket, raises its `SO_RCVBUF` to 4 MiB (the kernel
 * doubles it: 8 MiB, `net.core.rmem_max` is 4 MiB and machine-wide), and sends it 300 requests of
 * 32 KB each that the kernel refuses (`RTM_GETLINK` of an ifindex that does not exist, padded by
 * an attribute); without `NETLINK_CAP_ACK` each error reply repeats the whole request, so the
 * socket's receive queue fills to its 8 MiB; the job never reads, and does the same with 64
 * sockets. OBSERVED (session limited to 128 MiB, load average 8 to 19 over my runs): the host's
 * `SUnreclaim` (/proc/meminfo) rose from 39.8 MB to 576.7 MB in about 2 s while the session's memory cgroup
 * read `memory.usage_in_bytes` 4,485,120 (`kmem` 192,512) against its limit of 134,217,728; the
 * job was not killed and the next command ran. Why: netlink allocates its skbs with plain
 * `GFP_KERNEL` (no `__GFP_ACCOUNT`), so neither the memory cgroup nor any machine-wide pool (as
 * `tcp_mem` for TCP) counts them; each socket is bounded only by its receive buffer, and the
 * sockets only by `ulimit -n` (20,000 here) times `pids.max` (1,024): about 3,000 sockets take this
 * machine's 24 GiB, where the host's OOM killer picks among every session's processes (all at
 * `oom_score_adj` 1000, by their own small memory), so another session's command can be the one
 * killed (reasoned, not run). Not run past 512 MiB. Fix: refuse `socket(AF_NETLINK)` in sessions
 * (seccomp; `ip` and `ss` already fail there since `MSG_PEEK` is refused; glibc's getaddrinfo falls back without it,
 * `getifaddrs` fails), or bound the sockets a session may hold (above).
 *
 * Fixed (both tests run; src/session/guard.ts `socketBudget`, `ProcessGuard.socketMemory`): the
 * session's budget keeps a part for its sockets (32 MiB, or a quarter of a smaller budget; the
 * memory cgroup's limit is the rest), and every 25 ms the worker adds the cgroup's
 * `memory.kmem.tcp.usage_in_bytes` (forced charges included) and the Rmem and Wmem of the netlink
 * sockets of the session's network namespaces, and past that part kills the session's processes and
 * says so in the result. The watch is not a kernel bound: what a job adds within one check and the
 * kill passes it (measured: the host's slab rose by at most 94 MiB, TCP pages by at most 44 MiB).
 *
 * Not tried (would take the host's pool, or needs a host on the internet): with `start --network`,
 * each outbound connection is mirrored by a socket of slirp4netns in the HOST's network namespace
 * and the worker's cgroup; a sink that accepts and never reads would fill those (same pool).
 *
 * Tried and held (one line each; run unless marked read):
 * - Unix stream socketpairs with 4 MiB send buffers, filled: charged, the job killed at 128 MiB.
 * - `memfd_secret` (syscall 447, not refused): a mapping past `ulimit -l` is EAGAIN; 40 processes
 *   of 7 MiB each are charged, killed at the limit.
 * - Netlink unicast from one user socket to another (no kernel reply needed): EPERM.
 * - A job and its cgroups across a shell restart (`exit 0`): the job dies with the pid namespace,
 *   the memory and pids cgroups are made per launch and the old ones removed.
 * - Every plain builtin with a variable holding `a[$(cmd)]` where it takes a number or a name
 *   (`kill -l/-s/-n`, `wait`, `wait -n/-f`, `jobs`, `caller`, `dirs +x`, `printf %d`/`%.*d`/`%*d`,
 *   `test x -eq 1`, `[ x -lt 1 ]`, `type`, `help`, `pwd`): nothing evaluated (bash 5.2.15).
 * - Display: every code point outside printable ASCII in `echo a?b`: none of the separator,
 *   control or format categories is shown verbatim by `displayCommand`; LF, VT, FF, CR, NEL,
 *   U+2028/9, ESC, CSI, DEL escaped by `safeText` (both modes) and `markdownCode`.
 * - An edit's diff (status.ts `editLines`, `safeText`): a Cyrillic letter inside a Latin word is
 *   shown as it is (not escaped), with a warning that names the character but not the line; in a
 *   long diff the person cannot find it (noted, not written up: the warning is there).
 * - The text editor's `command` reaches the UI's details only after it is checked to be one of
 *   four names (read); `by` names: no markup or bidi character passes `BY_PATTERN` (read).
 * - With `--network`: `::ffff:0:0/96` is in the refused set; only port 53 of the DNS forwarder
 *   is accepted (read). UDP has no forced charge (`__udp_enqueue_schedule_skb`; round 11's test).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startSession } from '../session/helpers';
import { personsRepo } from './persons-repo';
import { holdMachinePoolForFile, KILLED_FOR_SOCKETS, tcpPages, unreclaimable, watchJob } from './socket-jobs';

/** The attacks below work on 7aa2591 (see the doc comment); fixed by the guard's watch of the sockets' kernel memory (guard.ts `socketMemory`). */
const OPEN = false;
const t = OPEN ? test.skip : test;

// The TCP pool and the slab are the machine's: no other test file may fill or measure them meanwhile.
holdMachinePoolForFile();

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;
const MiB = 1024 * 1024;

/**
 * Python run in the session: opens argv[1] TCP connections to a listener of its own on 127.0.0.1,
 * writes into each until the send would block, never reads; then writes `<connections> <bytes
 * queued>` to ./held and keeps every socket 20 s.
 */
const HOLD_TCP = `import socket, sys, time
open('started', 'w').close()
n = int(sys.argv[1])
srv = socket.socket(); srv.bind(('127.0.0.1', 0)); srv.listen(4096)
keep, total, chunk = [], 0, b'x' * 65536
try:
    for i in range(n):
        c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); c.setblocking(False)
        try:
            while True: total += c.send(chunk)
        except BlockingIOError: pass
        keep += [c, a]
except OSError as e: print(e, file=sys.stderr)
open('held', 'w').write('%d %d' % (len(keep) // 2, total))
time.sleep(20)
`;

dRoot("kind 6: many small TCP connections take the machine's TCP memory past the session's bounds", () => {
  t(
    "3,000 connections a job holds to itself raise the machine's TCP memory by less than 64 MiB",
    async () => {
      const { ws } = personsRepo();
      fs.writeFileSync(path.join(ws, 'hold.py'), HOLD_TCP);
      const before = tcpPages();
      const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
      await s.run('(python3 hold.py 3000 >/dev/null 2>hold.err &)');
      const { peak, held } = await watchJob(ws, 'hold.py', tcpPages);
      const next = await s.run('true');
      await s.close();
      // Either the session holds few connections, or they cost the machine little (64 MiB: round 11's bound).
      expect({ held, raisedBy64MiBOrMore: peak - before >= 16_384 }).toEqual({
        held: expect.any(String) as string,
        raisedBy64MiBOrMore: false,
      });
      // A job killed for it is reported, as the memory limit's kill is.
      if (held === '') expect(next.output).toMatch(KILLED_FOR_SOCKETS);
    },
    180_000,
  );
});

/**
 * Python run in the session: argv[1] MiB of netlink error replies, 8 MiB a socket: each NETLINK_ROUTE
 * socket gets 300 requests of 32 KB that the kernel refuses (RTM_GETLINK of ifindex 999999, padded by
 * an IFLA_IFNAME of 32,000 bytes) and whose replies repeat them; never read. Then `<sockets> <bytes>`
 * to ./held, and every socket kept 20 s.
 */
const HOLD_NETLINK = `import socket, struct, sys, time
open('started', 'w').close()
target = int(sys.argv[1]) << 20
keep, total = [], 0
pad = 32000
body = struct.pack('BxHiII', 0, 0, 999999, 0, 0) + struct.pack('HH', pad + 4, 3) + b'x' * pad
msg = struct.pack('IHHII', 16 + len(body), 18, 1, 1, 0) + body
try:
    while total < target:
        s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
        s.bind((0, 0))
        for i in range(300):
            s.send(msg)
        total += s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        keep.append(s)
except OSError as e: print('err', e, file=sys.stderr)
open('held', 'w').write('%d %d' % (len(keep), total))
time.sleep(20)
`;

dRoot("kind 6: netlink replies a job never reads hold kernel memory outside the session's memory limit", () => {
  t(
    'a job of a session limited to 128 MiB cannot hold 512 MiB of netlink replies',
    async () => {
      const { ws } = personsRepo();
      fs.writeFileSync(path.join(ws, 'hold.py'), HOLD_NETLINK);
      const before = unreclaimable();
      const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
      await s.run('(python3 hold.py 512 >/dev/null 2>hold.err &)');
      const { peak, held, running } = await watchJob(ws, 'hold.py', unreclaimable);
      const next = await s.run('true');
      // Safe: the job is killed at the session's socket budget (32 MiB of its 128 MiB), so the machine's
      // slab never rises by twice the session's budget (the rest of the machine moves it by a few MB).
      expect({ held, running, slabRoseByTwiceTheLimit: peak - before >= 256 * MiB }).toEqual({
        held: '',
        running: false,
        slabRoseByTwiceTheLimit: false,
      });
      expect(next.output).toMatch(KILLED_FOR_SOCKETS);
    },
    180_000,
  );
});

dRoot("kind 6: the sockets' budget is the session's, whatever holds them", () => {
  test('four jobs each under the socket budget (two of TCP connections, two of netlink replies) are killed together past it', async () => {
    const { ws } = personsRepo();
    fs.writeFileSync(path.join(ws, 'tcp.py'), HOLD_TCP.replace("'held'", "'held-' + sys.argv[2]"));
    fs.writeFileSync(path.join(ws, 'nl.py'), HOLD_NETLINK.replace("'held'", "'held-' + sys.argv[2]"));
    const tcpBefore = tcpPages();
    const slabBefore = unreclaimable();
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
    // 250 connections take about 26 MiB, 24 MiB of netlink replies 24 MiB: each under the 32 MiB budget, together 100 MiB.
    const r = await s.run(
      'python3 tcp.py 250 a 2>/dev/null & python3 tcp.py 250 b 2>/dev/null & python3 nl.py 24 c 2>/dev/null & python3 nl.py 24 d 2>/dev/null & wait; echo done',
    );
    const tcp = tcpPages() - tcpBefore;
    const slab = unreclaimable() - slabBefore;
    const held = fs.readdirSync(ws).filter((f) => f.startsWith('held-'));
    // Killed before all four have held theirs for 20 s; the command's result says why.
    expect({ killedTooLate: held.length === 4, note: KILLED_FOR_SOCKETS.test(r.output) }).toEqual({ killedTooLate: false, note: true });
    expect({ tcpOver64MiB: tcp >= 16_384, slabOver128MiB: slab >= 128 * MiB }).toEqual({ tcpOver64MiB: false, slabOver128MiB: false });
  }, 180_000);
});
