/**
 * A fresh attacker's pass over kinds 2 and 6 (the /run and tmpfs parts)
 * after their fixes, as root (the worker's intended setting), against
 * real sessions. Each test here is an attack that still worked when it was
 * written; it asserts the honest outcome, so it fails until the kind is fixed.
 *
 * - kind 2: the host addresses refused to a `--network` session are those
 *   Node's `os.networkInterfaces()` lists, which leaves out interfaces that are
 *   down or have no carrier (a `docker0` with no container). The host still
 *   accepts connections on those addresses, so a listener on 0.0.0.0 (a
 *   published Temporal port, as in docker-compose.yml) is reached through
 *   them; and through an address the host routes to itself with a local route
 *   and no interface at all. The kernel's local routing table, not the list
 *   of interfaces, says what is the host.
 * - kind 6: `/tmp` and `/dev/shm` have a size now, but `memfd_create` files
 *   and SysV shared memory (the sandbox's own IPC namespace, whose shmmax and
 *   shmall are the kernel's "unlimited" defaults) are the same memory, in no
 *   size and no ulimit; SysV segments stay after every process of the command
 *   has exited. And the session user may make a user namespace, in which it
 *   mounts a tmpfs of its own without a size.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { withHostNetworkLock } from './fixtures/host-network-lock';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** The host's shared memory (tmpfs, memfd, SysV shm), bytes, from /proc/meminfo. */
function hostShmem(): number {
  const m = /^Shmem:\s+(\d+) kB$/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'));
  return Number(m![1]) * 1024;
}

const MiB = 1024 * 1024;

describe('kind 2: a --network session reaches a host service', () => {
  const IFACE = 'ajadv0';
  const ADDRESS = '198.51.100.77';
  const LOCAL_ROUTE = '198.51.100.128/25';

  /** What a --network session's attempt to send a line to `address` did: its output, and what a listener on all of the host's addresses received. */
  async function reachesHost(address: string, network = true): Promise<{ output: string; received: string }> {
    let got = '';
    const server = net.createServer((c) => c.on('data', (d) => (got += d.toString())));
    await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
    const port = (server.address() as net.AddressInfo).port;
    try {
      const ws = tempDir();
      const s = await startSession({ cwd: ws, workspace: ws, network });
      const r = await s.run(`timeout 5 bash -c 'echo from-sandbox > /dev/tcp/${address}/${port}' && echo SENT`);
      await new Promise((res) => setTimeout(res, 300));
      return { output: r.output, received: got };
    } finally {
      await new Promise((r) => server.close(() => r(undefined)));
    }
  }

  test('through the address of a host interface that is down (left out of os.networkInterfaces, still local to the host)', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting where the network namespace applies)');
    // A docker0 with no container is the same case (up, no carrier); an empty bridge left down needs nothing else.
    await withHostNetworkLock(async () => {
      execFileSync('ip', ['link', 'add', IFACE, 'type', 'bridge']);
      try {
        execFileSync('ip', ['addr', 'add', `${ADDRESS}/32`, 'dev', IFACE]);
        expect(
          Object.values(os.networkInterfaces())
            .flat()
            .map((a) => a?.address),
        ).not.toContain(ADDRESS);
        const r = await reachesHost(ADDRESS);
        expect(r).toEqual({ output: expect.not.stringContaining('SENT') as unknown, received: '' });
      } finally {
        execFileSync('ip', ['link', 'del', IFACE], { stdio: 'ignore' });
      }
    });
  });

  test('through an address the host routes to itself without any interface holding it (a local route, "AnyIP")', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting where the network namespace applies)');
    await withHostNetworkLock(async () => {
      execFileSync('ip', ['route', 'add', 'local', LOCAL_ROUTE, 'dev', 'lo']);
      try {
        const r = await reachesHost('198.51.100.200');
        expect(r).toEqual({ output: expect.not.stringContaining('SENT') as unknown, received: '' });
      } finally {
        execFileSync('ip', ['route', 'del', 'local', LOCAL_ROUTE, 'dev', 'lo']);
      }
    });
  });
});

describe('kind 6: memory outside the sized /tmp and /dev/shm', () => {
  /** Writes `n` memfd files (or SysV segments) of `mib` MiB each, says how much it holds; memfd ones then sleep `hold` s. */
  const HOG = [
    'import ctypes, os, sys, time',
    'mib, n, mode, hold = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])',
    "buf, held = b'x' * (1 << 20), 0",
    'libc = ctypes.CDLL(None, use_errno=True)',
    'libc.shmat.restype = ctypes.c_void_p',
    'fds = []',
    'for i in range(n):',
    "    if mode == 'memfd':",
    "        fd = os.memfd_create('m%d' % i)",
    '        for _ in range(mib): os.write(fd, buf)',
    '        fds.append(fd)',
    '    else:',
    '        sid = libc.shmget(0, ctypes.c_size_t(mib << 20), 0o1600)',
    // A refused segment is reported, not written through shmat's (void *) -1.
    "        if sid < 0: raise OSError(ctypes.get_errno(), 'shmget')",
    '        p = libc.shmat(sid, None, 0)',
    '        ctypes.memset(p, 120, mib << 20)',
    '        libc.shmdt(ctypes.c_void_p(p))',
    '    held += mib',
    "print('held', held, flush=True)",
    'time.sleep(hold)',
  ].join('\n');
  /** The session's budget: 32 MiB files (so 32 MiB /tmp and /dev/shm) and 256 MiB of address space per process. */
  const limits = { maxFileSizeBytes: 32 * MiB, maxMemoryBytes: 256 * MiB };

  test('memfd_create files held by a background job: 600 MiB in a session whose /tmp and /dev/shm are 32 MiB each', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'hog.py'), HOG);
    const s = await startSession({ cwd: dir, workspace: dir, limits });
    expect((await s.run('df -m /tmp /dev/shm | tail -2')).output).toMatch(/^tmpfs\s+32\s/m);
    const before = hostShmem();
    await s.run('python3 hog.py 30 20 memfd 20 >held 2>&1 &');
    // The job opens `held` itself, after the command has returned: missing at first is "not yet".
    const held = (): boolean => fs.existsSync(path.join(dir, 'held')) && fs.readFileSync(path.join(dir, 'held'), 'utf8').includes('held');
    for (let i = 0; i < 100 && !held(); i++) await new Promise((r) => setTimeout(r, 100));
    const grown = hostShmem() - before;
    // Within the session's budget: at most what its two tmpfs can hold (slack for the rest of the machine).
    expect(grown).toBeLessThan(2 * 32 * MiB + 64 * MiB);
  });

  test('SysV shared memory segments: 600 MiB that stay after the command and all its processes have exited', async () => {
    const dir = tempDir();
    fs.writeFileSync(path.join(dir, 'hog.py'), HOG);
    const s = await startSession({ cwd: dir, workspace: dir, limits });
    const before = hostShmem();
    const r = await s.run('python3 hog.py 30 20 sysv 0');
    expect(r.output).toMatch(/held|Error|rror/);
    // No process of the command is left, yet the memory is held until the session ends.
    const grown = hostShmem() - before;
    expect(grown).toBeLessThan(2 * 32 * MiB + 64 * MiB);
  });

  test('a tmpfs of its own: the session user makes a user namespace (unshare -Urm), mounts a tmpfs without a size over /tmp and fills it', async () => {
    const dir = tempDir();
    // Prints how much the host's shared memory grew while the files are there (/proc/meminfo is the host's).
    fs.writeFileSync(
      path.join(dir, 'fill.sh'),
      [
        "b=$(awk '/^Shmem:/{print $2}' /proc/meminfo)",
        'mount -t tmpfs x /tmp || exit 1',
        'for i in $(seq 20); do head -c 30M /dev/zero >/tmp/f$i; done',
        'awk -v b="$b" \'/^Shmem:/{print "grew", int(($2 - b) / 1024)}\' /proc/meminfo',
      ].join('\n'),
    );
    const s = await startSession({ cwd: dir, workspace: dir, limits });
    const r = await s.run('unshare -Urm sh fill.sh 2>&1');
    const grew = Number(/grew (\d+)/.exec(r.output)?.[1] ?? 0) * MiB;
    expect(r.output).toMatch(/grew|Operation not permitted|cannot|denied/);
    expect(grew).toBeLessThan(2 * 32 * MiB + 64 * MiB);
  });
});
