/**
 * The seccomp filter every sandboxed process of a session runs under (bwrap
 * `--seccomp FD`, which takes a compiled classic-BPF program): the system
 * calls that reach into ANOTHER process are refused with EPERM.
 *
 * Why: every process of a session runs as the same user as its bash, so
 * without this any of them (a background job, a program a command left
 * behind) could `ptrace` bash (stop it, read the next control line out of
 * its memory, make it run something else), copy bash's descriptors with
 * `pidfd_getfd` (the control channel), or read and write bash's memory with
 * `process_vm_readv`/`process_vm_writev`; then forge a command's result
 * (src/session/protocol.ts). Denied here:
 *
 * - `ptrace` (attach, seize, and TRACEME: a tracee's parent could be the attacker),
 * - `pidfd_getfd` (another process's descriptors),
 * - `process_vm_readv`, `process_vm_writev` (another process's memory),
 * - `process_madvise` (another process's memory management),
 * - `kcmp` (compares other processes' descriptors and memory: a probe for the above),
 * - `perf_event_open` (samples another process's registers and stack).
 *
 * System calls of another ABI than the worker's (i386 `int 0x80` on
 * x86-64, x32) are refused too, since their numbers differ and the filter
 * only knows the native ones: a 32-bit program does not run in a session.
 *
 * Written by hand rather than with libseccomp: the program is 20
 * instructions, and its test (test/unit/attack/seccomp.test.ts) runs each
 * denied call in a real session.
 */
import * as fs from 'node:fs';
import { seccompPrefix } from './memory';

/** Per architecture (Node's `process.arch`): the AUDIT_ARCH value and the numbers of the denied system calls. */
const ARCH: Partial<Record<string, { audit: number; x32?: boolean; denied: Record<string, number> }>> = {
  x64: {
    audit: 0xc000003e, // AUDIT_ARCH_X86_64
    x32: true,
    denied: {
      ptrace: 101,
      perf_event_open: 298,
      process_vm_readv: 310,
      process_vm_writev: 311,
      kcmp: 312,
      pidfd_getfd: 438,
      process_madvise: 440,
    },
  },
  arm64: {
    audit: 0xc00000b7, // AUDIT_ARCH_AARCH64
    denied: {
      ptrace: 117,
      perf_event_open: 241,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kcmp: 272,
      pidfd_getfd: 438,
      process_madvise: 440,
    },
  },
};

/** Names of the system calls the filter refuses. */
export const DENIED_SYSCALLS: readonly string[] = Object.keys(ARCH.x64!.denied);

// Classic BPF (linux/filter.h, linux/seccomp.h).
const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_RET_K = 0x06;
const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
/** Offsets in `struct seccomp_data`. */
const OFF_NR = 0;
const OFF_ARCH = 4;
/** x32 system calls on x86-64 have this bit set in their number. */
const X32_SYSCALL_BIT = 0x40000000;

type Insn = [code: number, jt: number, jf: number, k: number];

/**
 * The filter for `arch` as bwrap wants it: `struct sock_filter` entries
 * (8 bytes each, little-endian), or null for an architecture it does not
 * know (then no filter is installed; see {@link seccompFilterFile}).
 */
export function seccompProgram(arch: string = process.arch): Buffer | null {
  const a = ARCH[arch];
  if (!a) return null;
  const nrs = Object.values(a.denied);
  // Layout: [0] ld arch, [1] arch ok?, [2] ld nr, ([3] x32?), then one jeq per number, allow, deny.
  const insns: Insn[] = [];
  const head = a.x32 ? 4 : 3;
  const allowAt = head + nrs.length;
  const denyAt = allowAt + 1;
  const to = (target: number, at: number): number => target - at - 1;
  insns.push([BPF_LD_W_ABS, 0, 0, OFF_ARCH]);
  insns.push([BPF_JMP_JEQ_K, 0, to(denyAt, 1), a.audit]);
  insns.push([BPF_LD_W_ABS, 0, 0, OFF_NR]);
  if (a.x32) insns.push([BPF_JMP_JGE_K, to(denyAt, 3), 0, X32_SYSCALL_BIT]);
  nrs.forEach((nr, i) => insns.push([BPF_JMP_JEQ_K, to(denyAt, head + i), 0, nr]));
  insns.push([BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW]);
  insns.push([BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | EPERM]);
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * Writes {@link seccompProgram} for this machine, after the prefix of
 * memory.ts (memfd_create and new user namespaces refused), to
 * `file` (0600, the worker's; bwrap reads it as fd 3, see sandbox.ts launchArgs) and returns
 * `file`, or undefined on an architecture without a filter. Put in the
 * session's private directory, so it goes with it (and the orphan reaper
 * removes it with the directory).
 */
export function writeSeccompFilter(file: string): string | undefined {
  const program = seccompProgram();
  if (!program) return undefined;
  fs.writeFileSync(file, Buffer.concat([seccompPrefix() ?? Buffer.alloc(0), program]), { mode: 0o600 });
  return file;
}
