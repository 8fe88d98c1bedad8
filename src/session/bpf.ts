/**
 * Classic BPF for seccomp filters (linux/filter.h, linux/seccomp.h): the
 * opcodes, return values and `struct seccomp_data` offsets the session's
 * filters use (./seccomp.ts, ./memory.ts), and the encoding bwrap's
 * `--seccomp` reads.
 */

export const BPF_LD_W_ABS = 0x20;
export const BPF_ALU_AND_K = 0x54;
export const BPF_JMP_JA = 0x05;
export const BPF_JMP_JEQ_K = 0x15;
export const BPF_JMP_JGE_K = 0x35;
export const BPF_JMP_JSET_K = 0x45;
export const BPF_RET_K = 0x06;
export const SECCOMP_RET_ALLOW = 0x7fff0000;
export const SECCOMP_RET_ERRNO = 0x00050000;
export const EPERM = 1;
/** errno "address family not supported by protocol" (the same number on x86-64 and arm64). */
export const EAFNOSUPPORT = 97;
/** errno "protocol not supported" (the same number on x86-64 and arm64): what socket(2) says for a netlink protocol the kernel lacks. */
export const EPROTONOSUPPORT = 93;
export const ENOSYS = 38;
/** Offsets in `struct seccomp_data`: the call's number, the architecture, the low 32 bits of args[0] to args[3] (little-endian). */
export const OFF_NR = 0;
export const OFF_ARCH = 4;
export const OFF_ARG0_LO = 16;
export const OFF_ARG1_LO = 24;
export const OFF_ARG2_LO = 32;
export const OFF_ARG3_LO = 40;

/** One `struct sock_filter`: opcode, jump-if-true and jump-if-false offsets, constant. */
export type Insn = [code: number, jt: number, jf: number, k: number];

/** The program as `struct sock_filter` entries, 8 bytes each, little-endian (as bwrap `--seccomp` reads it). */
export function encodeFilter(insns: readonly Insn[]): Buffer {
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}
