/**
 * Memory a session could hold outside every limit, and what closes each
 * way to it: the part of the sandbox's seccomp filter that keeps a
 * session's memory where a limit counts it, and the bound on its IPC
 * namespace. The sized `/tmp` and `/dev/shm` (sandbox.ts) and
 * the per-process ulimits (limits.ts) bound what a session can hold, but the
 * kernel offers two more ways to the same memory (shmem, the pages of a
 * tmpfs) that neither sees:
 *
 * - `memfd_create`: an anonymous tmpfs file, held as long as a descriptor
 *   is. Refused with ENOSYS, what a kernel without it says, so a program
 *   that can do without it falls back (to a file in /dev/shm, which is
 *   sized). A `MAP_SHARED | MAP_ANONYMOUS` mapping stays allowed: it is in
 *   the process's address space, which `ulimit -v` counts.
 * - a user namespace of its own (`unshare -Urm`), in which the session user
 *   is root and mounts a tmpfs of any size. `unshare` and `clone` with
 *   CLONE_NEWUSER are refused with EPERM; `clone3` with ENOSYS, as a filter
 *   cannot read the flags it is given in memory, so glibc (2.34 and later)
 *   falls back to `clone`, whose flags it can read (Docker's default profile
 *   does the same). Every other namespace needs a capability the session
 *   user does not have.
 *
 * SysV shared memory, the third way, is bounded by the sandbox's IPC
 * namespace's own limits instead ({@link limitIpcNamespace}).
 *
 * The program is a prefix: it falls through to the program after it (the
 * filter of seccomp.ts, which refuses other ABIs) for every call it does
 * not refuse, so the two are one filter, `seccompPrefix() + seccompProgram()`.
 * Attack test: test/unit/attack/adversary-round3-sandbox.test.ts (kind 6).
 */
import { execFileSync } from 'node:child_process';
import {
  BPF_JMP_JA,
  BPF_JMP_JEQ_K,
  BPF_JMP_JSET_K,
  BPF_LD_W_ABS,
  BPF_RET_K,
  ENOSYS,
  EPERM,
  OFF_ARCH,
  OFF_ARG0_LO,
  OFF_NR,
  SECCOMP_RET_ERRNO,
  encodeFilter,
  type Insn,
} from './bpf';
import { MINIMAL_ENV } from './identity';

/** Per architecture (Node's `process.arch`): AUDIT_ARCH and the numbers of the calls this prefix looks at. */
const ARCH: Partial<Record<string, { audit: number; memfd_create: number; clone3: number; unshare: number; clone: number }>> = {
  x64: { audit: 0xc000003e, memfd_create: 319, clone3: 435, unshare: 272, clone: 56 },
  arm64: { audit: 0xc00000b7, memfd_create: 279, clone3: 435, unshare: 97, clone: 220 },
};

/** linux/sched.h. */
const CLONE_NEWUSER = 0x10000000;

/**
 * The prefix for `arch` as `struct sock_filter` entries (8 bytes each,
 * little-endian), to be followed by another program: a call it does not
 * refuse (and any call of another architecture) goes on to the first
 * instruction after it. Null for an architecture it does not know.
 */
export function seccompPrefix(arch: string = process.arch): Buffer | null {
  const a = ARCH[arch];
  if (!a) return null;
  // [0] ld arch [1] other arch: next program [2] ld nr [3..6] the calls [7] next program
  // [8] ld flags [9] CLONE_NEWUSER? [10] ENOSYS [11] EPERM; 12 is the next program's first instruction.
  const END = 12;
  const CHECK = 8;
  const NOSYS = 10;
  const PERM = 11;
  const to = (target: number, at: number): number => target - at - 1;
  const insns: Insn[] = [
    [BPF_LD_W_ABS, 0, 0, OFF_ARCH],
    [BPF_JMP_JEQ_K, 0, to(END, 1), a.audit],
    [BPF_LD_W_ABS, 0, 0, OFF_NR],
    [BPF_JMP_JEQ_K, to(NOSYS, 3), 0, a.memfd_create],
    [BPF_JMP_JEQ_K, to(NOSYS, 4), 0, a.clone3],
    [BPF_JMP_JEQ_K, to(CHECK, 5), 0, a.unshare],
    [BPF_JMP_JEQ_K, to(CHECK, 6), 0, a.clone],
    [BPF_JMP_JA, 0, 0, to(END, 7)],
    [BPF_LD_W_ABS, 0, 0, OFF_ARG0_LO],
    [BPF_JMP_JSET_K, to(PERM, 9), to(END, 9), CLONE_NEWUSER],
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | ENOSYS],
    [BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM],
  ];
  return encodeFilter(insns);
}

/** SysV message queues an IPC namespace of a session may hold (16 KiB each by the kernel's `msgmnb` default). */
export const SESSION_MSG_QUEUES = 32;

/**
 * Bounds the SysV IPC of the sandbox whose process `pid` is (its own IPC
 * namespace, bwrap `--unshare-ipc`): shared memory segments, which stay
 * after every process of a command has exited and are memory outside every
 * ulimit, may total `bytes` (`kernel.shmall`, in pages; `kernel.shmmax` per
 * segment), as much as the sized /dev/shm holds; and at most
 * {@link SESSION_MSG_QUEUES} message queues (`kernel.msgmni`; 32000 by
 * default, kernel memory too). The namespace starts with the kernel's
 * "unlimited" defaults, and its /proc/sys is read-only inside the sandbox,
 * so the worker writes them from outside (`nsenter --ipc`), before bash
 * runs anything. Root workers only: another user's sandbox namespace is its
 * user namespace's.
 * @throws Error when nsenter or the writes fail
 */
export function limitIpcNamespace(pid: number, bytes: number): void {
  execFileSync(
    'nsenter',
    [
      `--ipc=/proc/${pid}/ns/ipc`,
      '--',
      '/bin/sh',
      '-ec',
      'p=$(getconf PAGESIZE); echo "$1" > /proc/sys/kernel/shmmax; echo $(( ($1 + p - 1) / p )) > /proc/sys/kernel/shmall; echo "$2" > /proc/sys/kernel/msgmni',
      'agent-jobs-ipc',
      String(Math.max(1, Math.floor(bytes))),
      String(SESSION_MSG_QUEUES),
    ],
    { env: MINIMAL_ENV, stdio: ['ignore', 'ignore', 'pipe'], timeout: 5000 },
  );
}
