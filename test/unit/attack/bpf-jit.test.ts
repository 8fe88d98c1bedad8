/**
 * The machine's budget of JIT-compiled BPF code (`net.core.bpf_jit_limit`, one count for every
 * namespace and user): a session takes nothing from it. Every classic socket filter and every
 * seccomp filter is compiled to machine code charged to that count (this kernel has
 * CONFIG_BPF_JIT_ALWAYS_ON, no interpreter); once it is full, every process without CAP_BPF gets
 * EPERM for any filter, so sshd's, browsers' and new sessions' own seccomp filters fail. Held by the
 * session's seccomp filter (src/session/seccomp.ts `BPF_SOCKET_OPTIONS`, and the seccomp and prctl
 * rules): `setsockopt(SOL_SOCKET, SO_ATTACH_FILTER | SO_ATTACH_BPF | SO_ATTACH_REUSEPORT_CBPF |
 * SO_ATTACH_REUSEPORT_EBPF)` and `bpf(2)` with EPERM, a seccomp filter of the process's own with
 * EINVAL. The round-11 test (adversary-round11.test.ts, kind 6) counts the host's JIT packs while a
 * job tries 1,000 filters.
 *
 * The attacker's tries (fixtures/bpf-jit-probe.py): each option through Python's module and the raw
 * call, with junk in the high words of the level and the option (the kernel reads ints), on UDP,
 * TCP and UDP6 sockets; `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)` and `seccomp(2)` with junk in
 * the high words and with each flag; the x32 numbers; from a command, a job left behind and an exact
 * run. What stays: SO_REUSEADDR, SO_RCVBUF, SO_DETACH_FILTER, seccomp's queries, loopback UDP
 * and TCP, and `man` (man-db stacks a seccomp filter where it can).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';

afterEach(closeSessions);
afterAll(removeTempDirs);

const PROBE = fs.readFileSync(path.join(__dirname, 'fixtures', 'bpf-jit-probe.py'), 'utf8');
/** Tries in the probe: 3 sockets x (2 + 18 + 4), bpf, 1 + 4 prctl, 5 seccomp, 2 queries, 3 x32 (x86-64 only), the filter count. */
const TRIES = 3 * 24 + 1 + 5 + 5 + 2 + (process.arch === 'x64' ? 3 : 0) + 1;

/** Ordinary networking in the session: loopback UDP and TCP, with the options programs set. */
const NET = `
import socket
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); u.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
u.bind(("127.0.0.1", 0)); socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"u", u.getsockname())
assert u.recv(1) == b"u"
l = socket.socket(); l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); l.bind(("127.0.0.1", 0)); l.listen()
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1); c.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 65536); c.sendall(b"t")
assert a.recv(1) == b"t"
print("NET-OK")
`;

test('no process of a session attaches a BPF filter or stacks a seccomp filter: from a command, a job and an exact run', async () => {
  const ws = tempDir();
  fs.writeFileSync(path.join(ws, 'probe.py'), PROBE);
  fs.writeFileSync(path.join(ws, 'net.py'), NET);
  const s = await startSession({ cwd: ws, workspace: ws });
  expect((await s.run('python3 probe.py 2>&1')).output).toBe(`PROBED ${TRIES}\n`);

  // A job left behind (its own session, stdio closed) is under the same filter.
  await s.run('(setsid python3 probe.py </dev/null >job.txt 2>&1 &)');
  const job = path.join(ws, 'job.txt');
  await waitUntil('the background job to try every way', () => fs.existsSync(job) && fs.readFileSync(job, 'utf8').includes('PROBED'));
  expect(fs.readFileSync(job, 'utf8')).toBe(`PROBED ${TRIES}\n`);

  expect((await s.runExact(['python3', 'probe.py'], { paths: ['probe.py'] })).output).toBe(`PROBED ${TRIES}\n`);

  // Ordinary networking still works, in a command and an exact run.
  expect((await s.run('python3 net.py 2>&1')).output).toBe('NET-OK\n');
  expect((await s.runExact(['python3', 'net.py'], { paths: ['net.py'] })).output).toBe('NET-OK\n');
  // man-db loads a seccomp filter of its own (libseccomp) and takes EINVAL for a kernel without them: the page shows.
  if (fs.existsSync('/usr/share/man/man1/ls.1.gz'))
    expect((await s.run('MANPAGER=cat man ls 2>&1 | grep -c "list directory contents"')).output).toBe('1\n');
}, 120_000);
