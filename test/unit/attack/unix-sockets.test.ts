/**
 * The sandbox's edges, round 3, kind 6: a host service's unix socket anywhere on the read-only root
 * (not only under /run, which is hidden) was reachable from a session without --network, since a
 * path socket crosses network namespaces. Held by src/session/seccomp.ts: `socket(AF_UNIX)` is
 * refused in every sandboxed process, and `socketpair(AF_UNIX)` but for stream and seqpacket pairs
 * (which cannot be pointed anywhere else); io_uring, whose socket and connect operations pass
 * seccomp by, is refused too.
 *
 * The attacks, each against a listening world-connectable socket the test makes on the host: in the
 * workspace's parent, in a home under /home (and the session user's, when it has one), in /var/tmp, in
 * the workspace itself, and an abstract one; from python, perl and a background job; with raw
 * system calls whose domain has high bits set (the kernel reads an `int`); a datagram pair (SOCK_DGRAM
 * and SOCK_RAW, which the unix family makes a datagram socket) that could `sendto` a path; io_uring;
 * and with --network. What must keep working: a stream socketpair, Node's child processes.
 */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { lookupUser } from '../../../src/session/identity';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const made: string[] = [];
const servers: net.Server[] = [];
let received = '';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
  await Promise.all(servers.splice(0).map((s) => new Promise<void>((r) => s.close(() => r()))));
  for (const d of made.splice(0)) fs.rmSync(d, { recursive: true, force: true });
  received = '';
});

/** A listening unix socket at `file` (or the abstract name `\0...`), world-connectable, recording what it receives. */
async function listen(file: string): Promise<string> {
  const server = net.createServer((c) => c.on('data', (d) => (received += d.toString())));
  servers.push(server);
  await new Promise<void>((r) => server.listen(file, r));
  if (!file.startsWith('\0')) fs.chmodSync(file, 0o777);
  // The socket is reachable from the host: what stops the session is the sandbox.
  await new Promise<void>((resolve, reject) => net.connect(file, resolve).on('error', reject).end(''));
  return file;
}

/** A fresh directory `dir` (made 0755 with its parents), removed after the test. */
function dirAt(dir: string): string {
  fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
  fs.chmodSync(dir, 0o755);
  made.push(dir);
  return dir;
}

const PY = '/usr/bin/python3';
const pyConnect = (p: string): string =>
  `${PY} -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1].replace("@","\\0",1)); s.send(b"PY:"+sys.argv[1].encode()); print("SENT")' '${p}' 2>&1`;
const perlConnect = (p: string): string =>
  `/usr/bin/perl -MIO::Socket::UNIX -e '$s=IO::Socket::UNIX->new(Peer=>$ARGV[0]) or die "no: $!\\n"; print $s "PERL:$ARGV[0]"; print "SENT\\n"' '${p}' 2>&1`;

test('a session reaches no host unix socket by path or abstract name, however it asks', async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const tag = `aj-sock-${process.pid}-${Date.now()}`;
  const parent = dirAt(`/var/tmp/${tag}-parent`);
  const ws = dirAt(path.join(parent, 'ws'));
  const sessionHome = lookupUser('agent-jobs')?.home;
  const sockets = [
    await listen(path.join(parent, 'parent.sock')),
    await listen(path.join(dirAt(`/var/tmp/${tag}`), 's.sock')),
    await listen(path.join(dirAt(`/home/${tag}`), 's.sock')),
    await listen(path.join(ws, 'in-workspace.sock')),
  ];
  // The session user's own home, when it has one (never made here: it would be root's).
  if (sessionHome && sessionHome !== '/' && fs.existsSync(sessionHome))
    sockets.push(await listen(path.join(dirAt(path.join(sessionHome, tag)), 's.sock')));
  await listen(`\0${tag}`);
  const s = await startSession({ cwd: ws, workspace: ws });
  // Each socket is there, as a socket, in the sandbox's view: nothing hides it but the filter.
  const seen = await s.run(`for f in ${sockets.join(' ')}; do test -S "$f" && echo S; done`);
  expect(seen.output).toBe('S\n'.repeat(sockets.length));
  for (const p of [...sockets, `@${tag}`]) {
    const py = await s.run(pyConnect(p));
    expect(py.output).not.toContain('SENT');
    expect(py.output).toMatch(/PermissionError|Operation not permitted/);
    const perl = await s.run(perlConnect(p));
    expect(perl.output).not.toContain('SENT');
  }
  // Raw system calls: the domain with high bits set (the kernel truncates it to an int), and every type.
  const raw = await s.run(
    `${PY} - <<'EOF'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
for dom in (1, 0x100000001, 0xffffffff00000001):
    for typ in (1, 2, 3, 5, 0x80001, 0x800 | 2):
        fd = libc.syscall(41, ctypes.c_ulong(dom), ctypes.c_ulong(typ), ctypes.c_ulong(0))
        print("socket", hex(dom), hex(typ), fd if fd >= 0 else os.strerror(ctypes.get_errno()))
        if fd >= 0: os.close(fd)
sv = (ctypes.c_int * 2)()
for typ in (2, 3, 0x80002, 0x100000002):
    r = libc.syscall(53, ctypes.c_ulong(0x100000001), ctypes.c_ulong(typ), ctypes.c_ulong(0), sv)
    print("socketpair", hex(typ), r if r < 0 else "MADE", os.strerror(ctypes.get_errno()) if r < 0 else "")
params = (ctypes.c_char * 120)()
r = libc.syscall(425, ctypes.c_ulong(8), params)
print("io_uring_setup", r if r >= 0 else os.strerror(ctypes.get_errno()))
EOF`,
  );
  expect(raw.output).not.toMatch(/MADE|socket 0x\w+ 0x\w+ \d+\n|io_uring_setup \d/);
  expect(raw.output.match(/Operation not permitted/g)).toHaveLength(3 * 6 + 4 + 1);
  // The pairs that are allowed cannot be pointed at a socket, even once their other end is closed.
  const repoint = await s.run(
    `${PY} -c '
import socket, sys
for t in (socket.SOCK_STREAM, socket.SOCK_SEQPACKET):
    a, b = socket.socketpair(socket.AF_UNIX, t)
    b.close()
    for f in (lambda: a.connect(sys.argv[1]), lambda: a.sendto(b"PAIR", sys.argv[1])):
        try:
            f(); print("SENT")
        except OSError as e:
            print("refused")
' ${sockets[3]!} 2>&1`,
  );
  expect(repoint.output).toBe('refused\n'.repeat(4));
  // A background job, after the command that started it returned.
  await s.run(`(sleep 0.3; ${pyConnect(sockets[0]!)}; ${perlConnect(sockets[3]!)}) >/dev/null 2>&1 &`);
  await new Promise((r) => setTimeout(r, 2_000));
  // With --network too (its own namespace and slirp4netns as root): the socket is still refused.
  const n = await startSession({ cwd: ws, workspace: ws, network: true });
  expect((await n.run(pyConnect(sockets[3]!))).output).not.toContain('SENT');
  expect(received).toBe('');
});

test('what needs unix sockets of its own still works: a stream socketpair, Node child processes', async () => {
  const ws = tempDir();
  const s = await startSession({ cwd: ws, workspace: ws });
  const pair = await s.run(`${PY} -c 'import socket; a,b=socket.socketpair(); a.send(b"pair-ok"); print(b.recv(9).decode())'`);
  expect(pair.output).toBe('pair-ok\n');
  const seq = await s.run(
    `${PY} -c 'import socket; a,b=socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET); a.send(b"seq-ok"); print(b.recv(9).decode())'`,
  );
  expect(seq.output).toBe('seq-ok\n');
  fs.writeFileSync(
    path.join(ws, 'child.js'),
    `const c = require('child_process');
console.log(c.execFileSync('echo', ['child-ok']).toString().trim());
const k = c.spawn(process.execPath, ['-e', 'process.send("ipc-ok")'], { stdio: ['inherit', 'inherit', 'inherit', 'ipc'] });
k.on('message', (m) => { console.log(m); process.exit(0); });`,
  );
  const child = await s.run(`${process.execPath} child.js 2>&1`);
  expect(child.output).toBe('child-ok\nipc-ok\n');
});
