/**
 * Adversary round 20: attacks on the newest fixes of main (4935033), as root, in real sessions of
 * the unit harness. Each test asserts the safe behaviour and is skipped while `OPEN` is true (main
 * stays green); I ran each un-skipped on 4935033 and it failed as written below.
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
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { asUser, ensurePerson, hostBash, personsRepo, plant, ran } from './persons-repo';
import { holdMachinePool, releaseMachinePool } from './machine-pool';

/** The attacks below work on 4935033 (see the doc comment). */
const OPEN = true;
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

afterEach(closeSessions);
// The host's free memory is the machine's: no other test file may fill or measure it meanwhile.
beforeAll(() => holdMachinePool());
afterAll(releaseMachinePool);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;
const MiB = 1024 * 1024;

/**
 * Python run in the session: argv[1] MiB of UDP error queue, 8 MiB a socket (timestamped clones of
 * datagrams sent to a closed port on loopback, never read). Then `<sockets> <receive buffers> <bytes
 * queued (rx_queue of /proc/net/udp)>` to ./held, and every socket kept 20 s.
 */
const HOLD_ERRQUEUE = `import socket, sys, time
open('started', 'w').close()
target = int(sys.argv[1]) << 20
SOF = 1 << 1 | 1 << 4
keep, total = [], 0
dead = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); dead.bind(('127.0.0.1', 0)); port = dead.getsockname()[1]; dead.close()
chunk = b'x' * 60000
def queued():
    t = 0
    for line in open('/proc/net/udp').read().splitlines()[1:]:
        t += int(line.split()[4].split(':')[1], 16)
    return t
try:
    while total < target:
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        s.setsockopt(socket.SOL_SOCKET, 37, SOF)
        s.setsockopt(socket.SOL_IP, 11, 1)
        s.setblocking(False)
        rcv = s.getsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF)
        for i in range(400):
            try: s.sendto(chunk, ('127.0.0.1', port))
            except OSError: pass
        keep.append(s)
        total += rcv
except OSError as e: print('err', e, file=sys.stderr)
open('held', 'w').write('%d %d %d' % (len(keep), total, queued()))
time.sleep(20)
`;

/** The host's available memory, bytes (`/proc/meminfo` MemAvailable). */
const available = (): number => Number(/^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;

/**
 * Waits (60 s at most) until the job started in `ws` has written ./held or, once it has written
 * ./started, is gone (no process whose cwd is `ws` running `script`), sampling `measure` every 50 ms.
 * @returns the lowest sample, and what the job wrote to ./held ('' when it wrote nothing: killed)
 */
async function watchJob(ws: string, script: string, measure: () => number): Promise<{ low: number; held: string }> {
  const file = path.join(ws, 'held');
  const alive = (): boolean =>
    fs.readdirSync('/proc').some((pid) => {
      try {
        return (
          /^\d+$/.test(pid) &&
          fs.readlinkSync(`/proc/${pid}/cwd`) === ws &&
          fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script)
        );
      } catch {
        return false;
      }
    });
  let low = measure();
  const until = Date.now() + 60_000;
  while (!fs.existsSync(file) && Date.now() < until) {
    low = Math.min(low, measure());
    if (fs.existsSync(path.join(ws, 'started')) && !alive()) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (fs.existsSync(file)) await new Promise((r) => setTimeout(r, 300));
  low = Math.min(low, measure());
  return { low, held: fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '' };
}

dRoot("kind 6: a UDP socket's error queue holds kernel memory the socket watch does not count", () => {
  t(
    'a job of a session limited to 128 MiB cannot hold 256 MiB of timestamped clones on UDP error queues',
    async () => {
      const { ws } = personsRepo();
      fs.writeFileSync(path.join(ws, 'errq.py'), HOLD_ERRQUEUE);
      const before = available();
      const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
      await s.run('(python3 errq.py 256 >/dev/null 2>errq.err &)');
      const { low, held } = await watchJob(ws, 'errq.py', available);
      const next = await s.run('true');
      await s.close();
      const queued = held === '' ? 0 : Number(held.split(' ')[2]);
      // Safe: the job is killed at the session's socket budget (32 MiB), or what it queued stays under
      // the session's whole budget; the host's free memory is only reported (the machine moves it too).
      expect({ held, queuedPastTheBudget: queued > 128 * MiB, hostAvailableDropMiB: Math.round((before - low) / MiB) }).toEqual({
        held: '',
        queuedPastTheBudget: false,
        hostAvailableDropMiB: expect.any(Number) as number,
      });
      expect(next.output).toMatch(/sockets held more kernel memory/);
    },
    180_000,
  );
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
