/**
 * Round 3: a process of the session reaching into bash (same user) to take
 * the control channel or bash's memory: `pidfd_getfd` on bash's fd 0 (the
 * next control line, tokens included), `ptrace` (stop bash, read or change
 * what it runs), `process_vm_readv/writev`, `kcmp`, `process_madvise`; and
 * gdb attaching to bash; and looking at the next control line without taking
 * it (recv with MSG_PEEK on bash's saved stdin, in every receiving call). Held by the sandbox's seccomp filter
 * (src/session/seccomp.ts, given to bwrap by sandbox.ts launchArgs): each
 * call fails with EPERM, and a background job that tries the steal leaves the
 * next command to run for real.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap } from '../../../src/session';
import {
  AIO_SYSCALLS,
  BPF_SOCKET_OPTIONS,
  DENIED_SYSCALLS,
  FCNTL_COMMANDS,
  F_SETLEASE,
  seccompProgram,
} from '../../../src/session/seccomp';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** The probe compiled into `dir` (cc is part of the build machines' toolchain). */
function probe(dir: string): string {
  const out = path.join(dir, 'reach');
  execFileSync('cc', ['-O', '-o', out, path.join(__dirname, 'fixtures', 'reach-into-bash.c')]);
  fs.chmodSync(out, 0o755);
  return out;
}

test('the sandbox this suite needs is here (bwrap), so the attacks below are real', () => {
  expect(findBwrap()).not.toBeNull();
});

test('every system call that reaches into bash is refused with EPERM inside a session', async () => {
  const dir = tempDir();
  const reach = probe(dir);
  const s = await startSession({ cwd: dir, workspace: dir });
  const r = await s.run(`${reach} probe $$; grep '^Seccomp:' /proc/$$/status`);
  expect(r.exitCode).toBe(0);
  for (const name of ['pidfd_getfd', 'process_vm_readv', 'process_vm_writev', 'kcmp', 'process_madvise', 'ptrace_seize', 'ptrace_attach'])
    expect(r.output).toContain(`${name} EPERM\n`);
  expect(r.output).toMatch(/^Seccomp:\t2$/m);
});

test("a background job that takes bash's fd 0 with pidfd_getfd cannot read the next command: it runs for real", async () => {
  const dir = tempDir();
  const reach = probe(dir);
  const s = await startSession({ cwd: dir, workspace: dir });
  // Stops bash once it is idle (so it cannot race for the bytes), tries the steal, lets bash go on.
  await s.run(
    `( b=$$; exec 0</dev/null 1>/dev/null 2>&1; for i in $(seq 1200); do [ -e ${dir}/go ] && break; sleep 0.05; done; ` +
      `kill -STOP $b; ${reach} steal $b >${dir}/stolen 2>&1; kill -CONT $b; : > ${dir}/continued ) &`,
  );
  // Released once bash is idle (the command returned); the next command is sent only after the steal was tried and bash goes on.
  fs.writeFileSync(path.join(dir, 'go'), '');
  await waitUntil('the background job to try the steal and let bash go on', () => fs.existsSync(path.join(dir, 'continued')));
  const r = await s.run('echo second; (exit 7)');
  expect(r).toMatchObject({ exitCode: 7, output: 'second\n' });
  const stolen = fs.readFileSync(path.join(dir, 'stolen'), 'utf8');
  expect(stolen).toBe('pidfd_getfd EPERM\n');
  expect(stolen).not.toMatch(/AJ[0-9a-f]{32}/);
});

test("no other process of the session can open bash's /proc files: mem (its memory, read or written), fd, environ, maps", async () => {
  // Held by sandbox.ts sealShell: bash starts with another effective group and drops it, so the kernel makes it non-dumpable.
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  const r = await s.run(
    `python3 -c 'import os,sys\nfor f in ["mem","fd/0","fd/10","environ","maps"]:\n  try: os.close(os.open("/proc/%s/%s" % (sys.argv[1], f), os.O_RDONLY)); print(f, "opened")\n  except OSError as e: print(f, e.strerror)' $$`,
  );
  expect(r.output).toBe(['mem', 'fd/0', 'fd/10', 'environ', 'maps'].map((f) => `${f} Permission denied\n`).join(''));
  // The group bash dropped is gone for good: every id is the session user's.
  const ids = await s.run("grep -E '^(Uid|Gid):' /proc/$$/status; id -G");
  const id = s.sandboxOptions.identity;
  if (id)
    expect(ids.output).toBe(
      `Uid:\t${id.uid}\t${id.uid}\t${id.uid}\t${id.uid}\nGid:\t${id.gid}\t${id.gid}\t${id.gid}\t${id.gid}\n${id.gid}\n`,
    );
});

test('no process of a session can peek at a socket: recv, recvfrom, recvmsg, recvmmsg with MSG_PEEK refused, plain reads work', async () => {
  // A job holding bash's saved stdin would see the next control line (FIFO and tokens) and leave it for bash.
  const dir = tempDir();
  fs.copyFileSync(path.join(__dirname, 'fixtures', 'peek-variants.py'), path.join(dir, 'peek.py'));
  const s = await startSession({ cwd: dir, workspace: dir });
  const r = await s.run('python3 peek.py');
  expect(r.exitCode).toBe(0);
  const tries = ['recv', 'recv_dontwait', 'recv_waitall_trunc', 'recvfrom_dup', 'recvmsg', 'recvmsg_dup', 'recvmmsg', 'recvmmsg_dup'];
  expect(r.output).toBe([...tries.map((t) => `${t} EPERM`), "plain b'AJsecret\\n'", ''].join('\n'));
});

test('gdb cannot attach to bash (ptrace refused), and bash runs the next command', async () => {
  const gdb = ['/usr/bin/gdb', '/bin/gdb'].find((p) => fs.existsSync(p));
  if (!gdb) return void console.warn('gdb not installed: the gdb case is not run (the probe above covers ptrace)');
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  const r = await s.run(`${gdb} -batch -p $$ -ex 'call (int)write(1, "PWNED\\n", 6)' 2>&1 </dev/null; echo gdb done`);
  expect(r.output).toMatch(/ptrace: Operation not permitted/);
  expect(r.output).not.toContain('PWNED');
  expect((await s.run('echo alive')).output).toBe('alive\n');
});

test("no process of a session can take from the machine's AIO pool: every AIO call ENOSYS, in bash and in a background job", async () => {
  // io_setup draws from fs.aio-max-nr, one count for the whole machine: a job holding contexts leaves every host process EAGAIN.
  const dir = tempDir();
  const x64 = process.arch === 'x64';
  const nrs = x64 ? [206, 207, 208, 209, 210, 333] : [0, 1, 2, 3, 4, 292];
  fs.writeFileSync(
    path.join(dir, 'aio.py'),
    [
      'import ctypes, os, sys',
      'libc = ctypes.CDLL(None, use_errno=True); libc.syscall.restype = ctypes.c_long',
      'out = []',
      `for nr in ${JSON.stringify(nrs)} + ([0x40000000 | 206] if ${x64 ? 'True' : 'False'} else []):`,
      '    ctx = ctypes.c_ulong(0)',
      '    for size in (1, 128, 65536):',
      '        ctypes.set_errno(0)',
      '        rc = libc.syscall(ctypes.c_long(nr), ctypes.c_long(size), ctypes.byref(ctx), ctypes.c_long(0), ctypes.c_long(0))',
      '        out.append("%d %d %s" % (nr, rc, os.strerror(ctypes.get_errno())))',
      'open(sys.argv[1], "w").write("\\n".join(out) + "\\n")',
      '',
    ].join('\n'),
  );
  const s = await startSession({ cwd: dir, workspace: dir });
  const expected = [
    ...nrs.map((nr) => `${nr} -1 Function not implemented`),
    ...(x64 ? [`${0x40000000 | 206} -1 Operation not permitted`] : []),
  ]
    .flatMap((l) => [l, l, l])
    .join('\n');
  expect((await s.run('python3 aio.py fg.txt && cat fg.txt')).output).toBe(`${expected}\n`);
  // A job left behind (its own session, stdio closed) is under the same filter.
  await s.run('(setsid python3 aio.py bg.txt </dev/null >/dev/null 2>&1 &)');
  await waitUntil(
    'the background job to try every AIO call',
    () => fs.existsSync(path.join(dir, 'bg.txt')) && fs.statSync(path.join(dir, 'bg.txt')).size > 0,
  );
  expect(fs.readFileSync(path.join(dir, 'bg.txt'), 'utf8')).toBe(`${expected}\n`);
});

test('the filter refuses exactly the listed calls and other ABIs: its instructions checked one by one', () => {
  const prog = seccompProgram('x64')!;
  const insns = Array.from({ length: prog.length / 8 }, (_, i) => ({
    code: prog.readUInt16LE(i * 8),
    jt: prog[i * 8 + 2]!,
    jf: prog[i * 8 + 3]!,
    k: prog.readUInt32LE(i * 8 + 4),
  }));
  // A tiny classic-BPF interpreter over the instructions this filter uses (seccomp_data: nr, arch, ip, args).
  let acc = 0;
  const run = (arch: number, nr: number, args: number[] = []): number => {
    const word = (off: number): number =>
      off === 0 ? nr : off === 4 ? arch : off >= 16 && off % 8 === 0 ? (args[(off - 16) / 8] ?? 0) >>> 0 : NaN;
    for (let pc = 0; ;) {
      const { code, jt, jf, k } = insns[pc]!;
      if (code === 0x20) {
        acc = word(k);
        pc++;
      } else if (code === 0x54) {
        acc = (acc & k) >>> 0;
        pc++;
      } else if (code === 0x15) pc += 1 + (acc === k ? jt : jf);
      else if (code === 0x35) pc += 1 + (acc >= k ? jt : jf);
      else if (code === 0x45) pc += 1 + ((acc & k) !== 0 ? jt : jf);
      else if (code === 0x06) return k;
      else throw new Error(`unexpected opcode ${code}`);
    }
  };
  const ALLOW = 0x7fff0000;
  const EPERM = 0x00050001;
  const X86_64 = 0xc000003e;
  const denied = {
    ptrace: 101,
    perf_event_open: 298,
    process_vm_readv: 310,
    process_vm_writev: 311,
    kcmp: 312,
    io_uring_setup: 425,
    io_uring_enter: 426,
    io_uring_register: 427,
    pidfd_getfd: 438,
    process_madvise: 440,
    bpf: 321,
  };
  expect([...DENIED_SYSCALLS].sort()).toEqual(Object.keys(denied).sort());
  for (const nr of Object.values(denied)) expect(run(X86_64, nr)).toBe(EPERM);
  // Linux AIO (one pool for the whole machine, fs.aio-max-nr) and the keyrings: ENOSYS, whatever the arguments.
  const ENOSYS = 0x00050026;
  const nosys = { io_setup: 206, io_destroy: 207, io_getevents: 208, io_submit: 209, io_cancel: 210, io_pgetevents: 333 };
  expect([...AIO_SYSCALLS].sort()).toEqual(Object.keys(nosys).sort());
  for (const nr of Object.values(nosys)) for (const args of [[], [1, 0], [0xffffffff, 1, 2, 3]]) expect(run(X86_64, nr, args)).toBe(ENOSYS);
  for (const nr of [248, 249, 250]) expect(run(X86_64, nr)).toBe(ENOSYS);
  for (const nr of [205, 211, 332, 334]) expect(run(X86_64, nr)).toBe(ALLOW);
  for (const nr of [0, 1, 2, 56, 57, 59, 62 /* kill */, 102, 309, 313, 424, 428, 434 /* pidfd_open */, 437, 439, 441])
    expect(run(X86_64, nr)).toBe(ALLOW);
  // socket(AF_UNIX) refused whatever the type; other families allowed. The args are read as 32-bit ints (the low word).
  for (const type of [1, 2, 3, 5, 0x80001]) expect(run(X86_64, 41, [1, type])).toBe(EPERM);
  // Other families: only the network namespace's own (inet, inet6, netlink); the rest EAFNOSUPPORT (AF_VSOCK 40, AF_PACKET 17, ...).
  const EAFNOSUPPORT = 0x00050061;
  for (const family of [2, 10, 16, 0x100000002]) expect(run(X86_64, 41, [family, 1])).toBe(ALLOW);
  for (const family of [0, 3, 4, 5, 9, 17, 29, 30, 38, 40, 44, 45, 46, 255, 0x10000, 0x100000028])
    expect(run(X86_64, 41, [family, 1])).toBe(EAFNOSUPPORT);
  // socketpair(AF_UNIX): stream and seqpacket (with flags) allowed; datagram and raw (a datagram in the unix family) refused.
  for (const type of [1, 5, 0x80001, 0x800 | 5]) expect(run(X86_64, 53, [1, type])).toBe(ALLOW);
  for (const type of [2, 3, 4, 0x80002, 0]) expect(run(X86_64, 53, [1, type])).toBe(EPERM);
  // socketpair of any other family (AF_TIPC makes pairs): refused.
  for (const family of [2, 10, 16, 30, 40]) expect(run(X86_64, 53, [family, 1])).toBe(EAFNOSUPPORT);
  // recvfrom (45) and recvmmsg (299), flags in args[3]; recvmsg (47), flags in args[2]: MSG_PEEK (2) refused alone or
  // with other flags (MSG_DONTWAIT 0x40, MSG_WAITALL 0x100, MSG_TRUNC 0x20, MSG_CMSG_CLOEXEC 0x40000000), and the high word ignored.
  const peeks = [2, 2 | 0x40, 2 | 0x100, 2 | 0x20 | 0x40, 2 | 0x40000000, 0xffffffff, 0x100000002];
  const reads = [0, 0x40, 0x100, 0x20, 0x2000 /* MSG_ERRQUEUE */, 0x40000000, 0x100000000, 0xfffffffd];
  for (const flags of peeks) {
    expect(run(X86_64, 45, [0, 0, 0, flags])).toBe(EPERM);
    expect(run(X86_64, 299, [0, 0, 0, flags])).toBe(EPERM);
    expect(run(X86_64, 47, [0, 0, flags])).toBe(EPERM);
  }
  for (const flags of reads) {
    expect(run(X86_64, 45, [0, 0, 0, flags])).toBe(ALLOW);
    expect(run(X86_64, 299, [0, 0, 0, flags])).toBe(ALLOW);
    expect(run(X86_64, 47, [0, 0, flags])).toBe(ALLOW);
  }
  // The flags are looked for in the right argument only: a length or a vlen of 2 is no peek.
  expect(run(X86_64, 45, [0, 0, 2, 0])).toBe(ALLOW);
  expect(run(X86_64, 47, [0, 0, 0, 2])).toBe(ALLOW);
  // setsockopt (54) at SOL_SOCKET (1) of an option that attaches a BPF program: EPERM, the level and option read as
  // ints (the high words ignored, as by the kernel); the same numbers at other levels are other options, allowed.
  expect([...Object.values(BPF_SOCKET_OPTIONS)].sort()).toEqual([26, 50, 51, 52]);
  for (const level of [1, 0x100000001, 0xff00000001])
    for (const opt of [26, 50, 51, 52, 0x10000001a]) expect(run(X86_64, 54, [3, level, opt])).toBe(EPERM);
  for (const [level, opt] of [
    [1, 2],
    [1, 8],
    [1, 27],
    [1, 44],
    [1, 25],
    [1, 53],
    [0, 26],
    [6, 26],
    [41, 50],
    [0x101, 26],
    [1, 0x11a],
  ])
    expect(run(X86_64, 54, [3, level!, opt!])).toBe(ALLOW);
  // A seccomp filter of its own: prctl (157) PR_SET_SECCOMP (22) with SECCOMP_MODE_FILTER (2), seccomp (317) op 1: EINVAL.
  const EINVAL = 0x00050016;
  for (const [option, mode] of [
    [22, 2],
    [0x100000016, 2],
    [22, 0x100000002],
  ])
    expect(run(X86_64, 157, [option!, mode!, 0])).toBe(EINVAL);
  for (const [option, mode] of [
    [22, 1],
    [22, 0],
    [21, 2],
    [38, 1],
    [2, 2],
  ])
    expect(run(X86_64, 157, [option!, mode!, 0])).toBe(ALLOW);
  for (const [op, flags] of [
    [1, 0],
    [0x100000001, 0],
    [1, 1],
    [1, 8],
  ])
    expect(run(X86_64, 317, [op!, flags!, 0])).toBe(EINVAL);
  for (const op of [0, 2, 3]) expect(run(X86_64, 317, [op, 0, 0])).toBe(ALLOW);
  // fcntl (72): the listed commands allowed (FCNTL_COMMANDS), every other EINVAL, F_SETLEASE (1024) first; the command
  // read as an unsigned int (its high word ignored, as by the kernel), the file descriptor and argument not looked at.
  expect(FCNTL_COMMANDS).toEqual([
    [0, 11],
    [15, 17],
    [36, 38],
    [1025, 1038],
  ]);
  for (const cmd of [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16, 17, 36, 37, 38, 1025, 1026, 1030, 1031, 1033, 1038, 0x100000001, 0xffff00000007,
  ])
    for (const args of [
      [3, cmd, 0],
      [0xffffffff, cmd, 1],
    ])
      expect(run(X86_64, 72, args)).toBe(ALLOW);
  for (const cmd of [F_SETLEASE, 0x100000400, 0xffff00000400, 12, 13, 14, 18, 35, 39, 1023, 1039, 1040, 1041, 1100, 0x7fffffff, 0xffffffff])
    for (const arg of [0, 1, 2]) expect(run(X86_64, 72, [3, cmd, arg])).toBe(EINVAL);
  // The same numbers in other calls' argument are no command: fcntl's branch only.
  for (const nr of [0, 1, 73 /* flock */, 257 /* openat */]) expect(run(X86_64, nr, [3, F_SETLEASE, 1])).toBe(ALLOW);
  expect(run(X86_64, 0x40000000 + 72 /* x32 fcntl */, [3, F_SETLEASE, 1])).toBe(EPERM);
  expect(run(0x40000003 /* i386 */, 26)).toBe(EPERM);
  expect(run(0x40000003 /* i386 socketcall */, 102, [14 /* SYS_SETSOCKOPT */])).toBe(EPERM);
  expect(run(X86_64, 0x40000000 + 541 /* x32 setsockopt */, [3, 1, 26])).toBe(EPERM);
  expect(run(X86_64, 0x40000000 + 317 /* x32 seccomp */, [1])).toBe(EPERM);
  expect(run(X86_64, 0x40000000 + 101 /* x32 ptrace */)).toBe(EPERM);
});
