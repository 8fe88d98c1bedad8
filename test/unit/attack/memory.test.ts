/**
 * Kind 6, the ways around src/session/memory.ts and the IPC bound
 * (memory.ts `limitIpcNamespace`), tried from a real session with raw
 * system calls (Python ctypes, so no libc wrapper decides): `clone` with
 * CLONE_NEWUSER and the other flags a user namespace comes with, `clone3`
 * (whose flags a filter cannot read), `unshare` alone and with other flags,
 * `memfd_create` by number; many small SysV segments instead of a few big
 * ones, and message queues. And what must still work: threads (glibc's
 * pthread_create tries clone3 first), subprocesses, git, make, node.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { seccompPrefix } from '../../../src/session/memory';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const MiB = 1024 * 1024;

/** Raw x86-64/arm64 system calls: prints `name=<return> errno=<errno>` for each. */
const PROBE = String.raw`import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
x64 = os.uname().machine == 'x86_64'
NR = dict(clone=56, clone3=435, unshare=272, memfd_create=319) if x64 else dict(clone=220, clone3=435, unshare=97, memfd_create=279)
NEWUSER, NEWNS, NEWPID, SIGCHLD = 0x10000000, 0x00020000, 0x20000000, 17
def call(name, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR[name]), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    if r == 0 and name == 'clone': os._exit(0)
    if r > 0 and name in ('clone', 'clone3'): os.waitpid(r, 0)
    print('%s=%d errno=%d' % (sys.argv[1] if len(sys.argv) > 1 else name, r, e), flush=True)
call('unshare', NEWUSER)
call('unshare', NEWUSER | NEWNS)
call('unshare', NEWUSER | (1 << 40))
call('clone', NEWUSER | SIGCHLD, 0, 0, 0, 0)
call('clone', NEWUSER | NEWNS | NEWPID | SIGCHLD, 0, 0, 0, 0)
args = (ctypes.c_uint64 * 11)(NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)
call('clone3', ctypes.addressof(args), 88)
call('memfd_create', ctypes.addressof(ctypes.create_string_buffer(b'x')), 0)
`;

test('no user namespace by any clone, clone3 or unshare, and no memfd_create, by raw system call', async () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'probe.py'), PROBE);
  const s = await startSession({ cwd: dir, workspace: dir });
  const r = await s.run('python3 probe.py 2>&1');
  const results = r.output.trim().split('\n');
  expect(results).toEqual([
    'unshare=-1 errno=1',
    'unshare=-1 errno=1',
    // High bits the kernel rejects anyway: refused either way, never a namespace.
    expect.stringMatching(/^unshare=-1 errno=(1|22)$/) as unknown as string,
    'clone=-1 errno=1',
    'clone=-1 errno=1',
    'clone3=-1 errno=38',
    'memfd_create=-1 errno=38',
  ]);
  // Nor through the tools.
  expect((await s.run('unshare -U true 2>&1; echo rc=$?')).output).toMatch(/Operation not permitted[\s\S]*rc=1/);
});

test('threads, subprocesses, git, make and node still work (clone3 falls back to clone; a process clone without CLONE_NEWUSER passes)', async () => {
  const dir = tempDir();
  fs.writeFileSync(path.join(dir, 'Makefile'), 'all:\n\t@echo made\n');
  const s = await startSession({ cwd: dir, workspace: dir });
  const py = await s.run(
    `python3 -c "import threading, subprocess; t = threading.Thread(target=lambda: print('thread')); t.start(); t.join(); print(subprocess.run(['echo', 'sub'], capture_output=True, text=True).stdout.strip())"`,
  );
  expect(py.output).toBe('thread\nsub\n');
  const git = await s.run(
    // In the sandbox's /tmp: a repository the session makes in a workspace that has none is moved by the git audit.
    '(cd /tmp && git init -q r && cd r && echo a > a && git add a && git -c user.email=a@b -c user.name=a commit -qm a && git log --oneline | wc -l)',
  );
  expect(git.output.trim()).toBe('1');
  expect((await s.run('make')).output).toBe('made\n');
  const node = await s.run(
    `node -e "require('child_process').execFileSync('true'); const { Worker } = require('worker_threads'); new Worker('console.log(1 + 1)', { eval: true })"`,
  );
  expect(node.output).toBe('2\n');
  expect((await s.run('unshare -m true 2>&1; echo rc=$?')).output).toMatch(/rc=1/);
});

test("SysV IPC is bounded in the sandbox's namespace: many small segments total no more than /dev/shm holds, and 32 message queues", async () => {
  const dir = tempDir();
  fs.writeFileSync(
    path.join(dir, 'ipc.py'),
    [
      'import ctypes',
      'libc = ctypes.CDLL(None, use_errno=True)',
      'total, n = 0, 0',
      'for i in range(4000):',
      '    sid = libc.shmget(0, ctypes.c_size_t(64 << 10), 0o1600)',
      '    if sid < 0: break',
      '    total += 64 << 10',
      'q = 0',
      'for i in range(100):',
      '    if libc.msgget(0, 0o1600) < 0: break',
      '    q += 1',
      "print('shm', total, 'queues', q)",
    ].join('\n'),
  );
  const s = await startSession({ cwd: dir, workspace: dir, limits: { maxFileSizeBytes: 32 * MiB } });
  const r = await s.run('python3 ipc.py; cat /proc/sys/kernel/shmall /proc/sys/kernel/shmmax /proc/sys/kernel/msgmni');
  const m = /^shm (\d+) queues (\d+)$/m.exec(r.output);
  expect(m).not.toBeNull();
  expect(Number(m![1])).toBeLessThanOrEqual(32 * MiB);
  expect(Number(m![1])).toBeGreaterThan(0);
  expect(Number(m![2])).toBe(32);
  // Read-only inside: the session user cannot raise them.
  expect((await s.run('echo 1000000000 > /proc/sys/kernel/shmall 2>&1; echo rc=$?')).output).toMatch(/rc=1/);
});

test('the prefix falls through to the next program for every call it does not refuse (one filter with seccomp.ts)', () => {
  const prog = seccompPrefix('x64')!;
  const insns = Array.from({ length: prog.length / 8 }, (_, i) => ({
    code: prog.readUInt16LE(i * 8),
    jt: prog[i * 8 + 2]!,
    jf: prog[i * 8 + 3]!,
    k: prog.readUInt32LE(i * 8 + 4),
  }));
  // A classic-BPF interpreter over the opcodes the prefix uses; running off its end is "next program".
  const run = (arch: number, nr: number, arg0: number): number | 'next' => {
    let acc = 0;
    for (let pc = 0; pc < insns.length;) {
      const { code, jt, jf, k } = insns[pc]!;
      if (code === 0x20) {
        acc = k === 0 ? nr : k === 4 ? arch : arg0;
        pc++;
      } else if (code === 0x15) pc += 1 + (acc === k ? jt : jf);
      else if (code === 0x45) pc += 1 + ((acc & k) !== 0 ? jt : jf);
      else if (code === 0x05) pc += 1 + k;
      else if (code === 0x06) return k;
      else throw new Error(`unexpected opcode ${code}`);
    }
    return 'next';
  };
  const X86_64 = 0xc000003e;
  const [EPERM, ENOSYS] = [0x00050001, 0x00050026];
  expect(run(X86_64, 319, 0)).toBe(ENOSYS);
  expect(run(X86_64, 435, 0)).toBe(ENOSYS);
  expect(run(X86_64, 272, 0x10000000)).toBe(EPERM);
  expect(run(X86_64, 56, 0x10000000 | 17)).toBe(EPERM);
  expect(run(X86_64, 272, 0x00020000)).toBe('next');
  expect(run(X86_64, 56, 0x01200011 /* fork's flags */)).toBe('next');
  for (const nr of [0, 1, 57, 58, 59, 101, 318, 320, 434, 436]) expect(run(X86_64, nr, 0x10000000)).toBe('next');
  // Another ABI goes on to the next program, which refuses it.
  expect(run(0x40000003, 319, 0)).toBe('next');
});
