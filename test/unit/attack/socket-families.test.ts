/**
 * Socket families a session may open: only those its network namespace bounds (AF_INET, AF_INET6,
 * AF_NETLINK), and unix stream and seqpacket pairs (src/session/seccomp.ts, an allowlist). AF_VSOCK
 * reaches the hypervisor's host whatever the namespace; AF_PACKET, AF_BLUETOOTH, AF_CAN, AF_TIPC,
 * AF_RDS, AF_ALG, AF_XDP, AF_KCM, AF_QIPCRTR, AF_MCTP... reach devices or kernel services that no
 * namespace or nft rule of network.ts bounds, and a family a later kernel adds would too.
 *
 * The attacker's tries: every family number the kernel knows and some it does not, through
 * Python's socket module and through the raw system call with the high bits of the argument set
 * (the kernel reads an int), socketpair of other families (AF_TIPC makes pairs), from a command, a
 * background job and an exact run, with and without `--network`.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const PY = '/usr/bin/python3';

/** Tries every family 0..63 by the raw call (with junk in the high bits too) and prints what was made. */
const PROBE = `
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = {'x86_64': (41, 53), 'aarch64': (198, 199)}[os.uname().machine]
for fam in list(range(64)) + [0x100000028, 0xffffffff00000028, 0x10000]:
    for typ in (1, 2, 3, 5):
        fd = libc.syscall(NR[0], ctypes.c_ulong(fam), ctypes.c_ulong(typ), ctypes.c_ulong(0))
        err = ctypes.get_errno()
        if fd >= 0:
            print("MADE", fam & 0xffffffff, typ, flush=True); os.close(fd)
        elif err not in (97, 1) and fam & 0xffffffff not in (2, 10, 16):
            print("ERR", fam & 0xffffffff, typ, os.strerror(err), flush=True)
sv = (ctypes.c_int * 2)()
for fam in (2, 10, 16, 30, 40, 0x10000001e):
    for typ in (1, 2, 5):
        r = libc.syscall(NR[1], ctypes.c_ulong(fam), ctypes.c_ulong(typ), ctypes.c_ulong(0), sv)
        if r >= 0:
            print("PAIR", fam & 0xffffffff, typ, flush=True)
print("PROBED", flush=True)
`;

/** The families the session needs still work: what curl, git, node and getaddrinfo use. */
const NEEDED = `
import socket
for fam, typ in ((socket.AF_INET, socket.SOCK_STREAM), (socket.AF_INET, socket.SOCK_DGRAM), (socket.AF_INET6, socket.SOCK_STREAM), (socket.AF_NETLINK, socket.SOCK_RAW)):
    socket.socket(fam, typ).close()
a, b = socket.socketpair(); a.sendall(b"x"); assert b.recv(1) == b"x"
print("NEEDED-OK")
`;

/** The (family, type) pairs made: AF_INET (2), AF_INET6 (10) and AF_NETLINK (16) only; the raw and packet types of inet need capabilities the session lacks. */
function made(output: string): string[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('MADE') || l.startsWith('PAIR'))
    .filter((l) => !/^MADE (2|10|16) \d+$/.test(l));
}

describe('socket families', () => {
  test.each([false, true])(
    'only inet, inet6 and netlink sockets open, from a command, a job and an exact run (network %s)',
    async (network) => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      fs.writeFileSync(path.join(ws, 'probe.py'), PROBE);
      fs.writeFileSync(path.join(ws, 'needed.py'), NEEDED);
      const s = await startSession({ cwd: ws, workspace: ws, network });
      const cmd = await s.run(`${PY} probe.py 2>&1`);
      expect(cmd.output).toContain('PROBED');
      expect(made(cmd.output)).toEqual([]);
      expect(cmd.output).not.toContain('ERR');
      // Python's own module, as a program would call it, for the family of the round-5 attack.
      const vsock = await s.run(`${PY} -c 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print("VSOCK-OPEN")' 2>&1`);
      expect(vsock.output).not.toContain('VSOCK-OPEN');
      expect(vsock.output).toContain('Address family not supported');

      await s.run(`(sleep 0.2; ${PY} probe.py > job.txt 2>&1) >/dev/null 2>&1 &`);
      const deadline = Date.now() + 20_000;
      const job = path.join(ws, 'job.txt');
      while (Date.now() < deadline && !(fs.existsSync(job) && fs.readFileSync(job, 'utf8').includes('PROBED'))) {
        await new Promise((res) => setTimeout(res, 100));
      }
      const jobOut = fs.readFileSync(job, 'utf8');
      expect(jobOut).toContain('PROBED');
      expect(made(jobOut)).toEqual([]);

      const exact = await s.runExact(['python3', 'probe.py'], { paths: ['probe.py'] });
      expect(exact.output).toContain('PROBED');
      expect(made(exact.output)).toEqual([]);

      // What the session needs still works.
      expect((await s.run(`${PY} needed.py 2>&1`)).output).toBe('NEEDED-OK\n');
      expect((await s.runExact(['python3', 'needed.py'], { paths: ['needed.py'] })).output).toBe('NEEDED-OK\n');
      const tools = await s.run(
        "git init -q /tmp/g && git -C /tmp/g status --short && echo GIT-OK; node -e \"require('net').createServer().listen(0, '127.0.0.1', function () { console.log('NODE-OK'); this.close(); })\"; getent hosts localhost >/dev/null && echo RESOLVE-OK",
      );
      expect(tools.output).toBe('GIT-OK\nNODE-OK\nRESOLVE-OK\n');
      await s.close();
    },
    120_000,
  );
});
