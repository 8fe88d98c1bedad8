/**
 * The seccomp filter every sandboxed process of a session runs under (bwrap
 * `--seccomp FD`, which takes a compiled classic-BPF program). Refused:
 *
 * - the calls that reach into another process, with EPERM: `ptrace` (attach, seize and
 *   TRACEME), `pidfd_getfd`, `process_vm_readv`, `process_vm_writev`, `process_madvise`,
 *   `kcmp`, `perf_event_open`, and `io_uring_*` (its operations do not pass seccomp);
 * - `recvfrom`, `recvmsg`, `recvmmsg` with MSG_PEEK in their flags, with EPERM;
 * - every socket family but the network namespace's own ({@link ALLOWED_SOCKET_FAMILIES},
 *   of netlink only {@link ALLOWED_NETLINK_PROTOCOLS}; see {@link seccompProgram});
 * - the kernel's keyrings (`add_key`, `request_key`, `keyctl`: {@link KEYRING_SYSCALLS}), with ENOSYS;
 * - Linux AIO (`io_setup`, `io_submit`, ...: {@link AIO_SYSCALLS}), with ENOSYS: its contexts come from
 *   one pool for the whole machine (`fs.aio-max-nr`), which a job could take from every other process;
 * - every way to a JIT-compiled BPF program, whose code is charged to one budget for the machine
 *   (`net.core.bpf_jit_limit`): `setsockopt(SOL_SOCKET, ...)` of {@link BPF_SOCKET_OPTIONS} and
 *   `bpf(2)` with EPERM, a seccomp filter of its own (`seccomp(SECCOMP_SET_MODE_FILTER)`,
 *   `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`) with EINVAL;
 * - `fcntl(2)` of a command not in {@link FCNTL_COMMANDS}, with EINVAL: `F_SETLEASE` above all, whose lease
 *   makes every other open of the file (the worker's, root's, an unasked program's) wait up to
 *   `fs.lease-break-time` (45 s) or fail with EWOULDBLOCK;
 * - every call of another ABI than the worker's (i386 `int 0x80` on x86-64, x32).
 *
 * Each keeps a process of the session (all run as bash's user) from forging a command's result
 * (src/session/protocol.ts) or reaching past the sandbox. Why each, what it costs (iproute2's
 * `ip` and `ss` fail; a 32-bit program does not run), and why by hand rather than with
 * libseccomp: docs/decisions.md, "The sandbox's seccomp filter, by hand". Test:
 * test/unit/attack/reach-into-bash.test.ts runs each denied call in a real session.
 */
import * as fs from 'node:fs';
import {
  BPF_ALU_AND_K,
  BPF_JMP_JEQ_K,
  BPF_JMP_JGE_K,
  BPF_JMP_JSET_K,
  BPF_LD_W_ABS,
  BPF_RET_K,
  EAFNOSUPPORT,
  EPERM,
  EPROTONOSUPPORT,
  OFF_ARCH,
  OFF_ARG0_LO,
  OFF_ARG1_LO,
  OFF_ARG2_LO,
  OFF_ARG3_LO,
  OFF_NR,
  SECCOMP_RET_ALLOW,
  SECCOMP_RET_ERRNO,
  encodeFilter,
  type Insn,
} from './bpf';
import { seccompPrefix } from './memory';

/**
 * Per architecture (Node's `process.arch`): the AUDIT_ARCH value, the numbers of the system calls
 * refused outright, those of `socket` and `socketpair`, refused for unix sockets only, of
 * `setsockopt`, `prctl` and `seccomp`, refused for BPF programs only ({@link seccompProgram}), of `fcntl`,
 * refused for the commands outside {@link FCNTL_COMMANDS}, and the
 * receiving calls whose flags are their third (`recvFlagsArg2`) or fourth (`recvFlagsArg3`) argument.
 */
const ARCH: Partial<
  Record<
    string,
    {
      audit: number;
      x32?: boolean;
      denied: Record<string, number>;
      socket: number;
      socketpair: number;
      setsockopt: number;
      prctl: number;
      seccomp: number;
      fcntl: number;
      recvFlagsArg2: number[];
      recvFlagsArg3: number[];
    }
  >
> = {
  x64: {
    audit: 0xc000003e, // AUDIT_ARCH_X86_64
    x32: true,
    denied: {
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
    },
    socket: 41,
    socketpair: 53,
    setsockopt: 54,
    prctl: 157,
    seccomp: 317,
    fcntl: 72,
    recvFlagsArg2: [47 /* recvmsg */],
    recvFlagsArg3: [45 /* recvfrom */, 299 /* recvmmsg */],
  },
  arm64: {
    audit: 0xc00000b7, // AUDIT_ARCH_AARCH64
    denied: {
      ptrace: 117,
      perf_event_open: 241,
      process_vm_readv: 270,
      process_vm_writev: 271,
      kcmp: 272,
      io_uring_setup: 425,
      io_uring_enter: 426,
      io_uring_register: 427,
      pidfd_getfd: 438,
      process_madvise: 440,
      bpf: 280,
    },
    socket: 198,
    socketpair: 199,
    setsockopt: 208,
    prctl: 167,
    seccomp: 277,
    fcntl: 25,
    recvFlagsArg2: [212 /* recvmsg */],
    recvFlagsArg3: [207 /* recvfrom */, 243 /* recvmmsg */],
  },
};

/** Per architecture: the numbers of the keyring system calls, refused with ENOSYS (module doc). */
const KEYRING: Partial<Record<string, Record<string, number>>> = {
  x64: { add_key: 248, request_key: 249, keyctl: 250 },
  arm64: { add_key: 217, request_key: 218, keyctl: 219 },
};

/**
 * Per architecture: the numbers of the Linux AIO system calls, refused with ENOSYS (module doc;
 * x86-64 arch/x86/entry/syscalls/syscall_64.tbl, arm64 include/uapi/asm-generic/unistd.h). Every
 * `io_setup` draws from `fs.aio-max-nr`, counted once for the machine (every namespace and uid), so
 * a job holding contexts would leave the host's own users (a database with native AIO, QEMU) with
 * EAGAIN. ENOSYS because libaio's users (InnoDB, fio) then fall back to threads, as for io_uring.
 */
const AIO: Partial<Record<string, Record<string, number>>> = {
  x64: { io_setup: 206, io_destroy: 207, io_getevents: 208, io_submit: 209, io_cancel: 210, io_pgetevents: 333 },
  arm64: { io_setup: 0, io_destroy: 1, io_submit: 2, io_cancel: 3, io_getevents: 4, io_pgetevents: 292 },
};

/** ENOSYS, what the kernel returns for a system call it does not have (asm-generic/errno.h). */
const ENOSYS = 38;
/** EINVAL (asm-generic/errno-base.h): what a kernel without CONFIG_SECCOMP_FILTER answers to a filter's installation. */
const EINVAL = 22;

/** `setsockopt(2)`'s level for the options of every socket (asm-generic/socket.h, x86-64 and arm64 alike). */
const SOL_SOCKET = 1;
/**
 * The `SOL_SOCKET` options that attach a BPF program to a socket (asm-generic/socket.h), refused
 * with EPERM: a classic filter (`SO_ATTACH_FILTER`, `SO_ATTACH_REUSEPORT_CBPF`) is JIT-compiled
 * (this kernel has no interpreter: CONFIG_BPF_JIT_ALWAYS_ON) and its code charged to
 * `bpf_jit_current`, one count for the machine against `net.core.bpf_jit_limit`; past it every
 * process without CAP_BPF gets EPERM for any filter, seccomp's included, so a job holding filters on
 * its sockets (only its descriptor limit bounds them) stops new sandboxes, sshd's and browsers'
 * from starting. The eBPF ones take a program from `bpf(2)`, refused too. libpcap then filters in
 * user space (with a warning); `SO_DETACH_FILTER` and `SO_LOCK_FILTER` stay allowed. Attack test:
 * test/unit/attack/adversary-round11.test.ts (kind 6), bpf-jit.test.ts.
 */
export const BPF_SOCKET_OPTIONS: Readonly<Record<string, number>> = {
  SO_ATTACH_FILTER: 26,
  SO_ATTACH_BPF: 50,
  SO_ATTACH_REUSEPORT_CBPF: 51,
  SO_ATTACH_REUSEPORT_EBPF: 52,
};
/** `prctl(2)`'s option PR_SET_SECCOMP (linux/prctl.h) and its mode SECCOMP_MODE_FILTER (linux/seccomp.h). */
const PR_SET_SECCOMP = 22;
const SECCOMP_MODE_FILTER = 2;
/** `seccomp(2)`'s operation that installs a filter (linux/seccomp.h); strict mode (0) and the queries (2, 3) stay allowed. */
const SECCOMP_SET_MODE_FILTER = 1;

/**
 * The `fcntl(2)` commands a session may use, as inclusive ranges of the command's number (asm-generic/fcntl.h and
 * linux/fcntl.h of Linux 6.18; the command is an unsigned int, so its low 32 bits are all the kernel reads): F_DUPFD
 * to F_GETSIG (0-11), F_SETOWN_EX, F_GETOWN_EX, F_GETOWNER_UIDS (15-17), the open file description locks F_OFD_*
 * (36-38), and F_GETLEASE to F_SET_FILE_RW_HINT (1025-1038: F_NOTIFY, F_DUPFD_QUERY, F_CREATED_QUERY,
 * F_DUPFD_CLOEXEC, the pipe sizes, the seals, the write hints). Every other command is refused with EINVAL, what a
 * kernel says for a command it does not have:
 *
 * - `F_SETLEASE` (1024): a lease, which any process may take on a file it owns and has open alone, makes every other
 *   open of the file wait in the kernel's lease break until the holder lets go or `fs.lease-break-time` passes (45 s
 *   by default; then the holder takes it again), or fail with EWOULDBLOCK when opened `O_NONBLOCK`. So a job of the
 *   session held an auto-approved `cat` past its timeout and made the git audit read no `packed-refs` while the
 *   person's git read it whole (adversary round 23). No program of a session needs one (Samba's kernel oplocks and
 *   NFS servers do, and fall back without them);
 * - the commands a later kernel adds (F_SETDELEG, a delegation that breaks as a lease does, was on its way when this
 *   was written): refused until they are read and listed here, as an older kernel would.
 *
 * Advisory locks (F_SETLK, F_SETLKW, F_OFD_*, and `flock(2)`) stay: they hold only a process that asks for one, and
 * neither the worker nor an unasked program (src/policy/programs.ts) takes any. Attack tests:
 * test/unit/attack/adversary-round23.test.ts (kind 3, kind 6), reach-into-bash.test.ts.
 */
export const FCNTL_COMMANDS: ReadonlyArray<readonly [from: number, to: number]> = [
  [0, 11],
  [15, 17],
  [36, 38],
  [1025, 1038],
];

/** `fcntl(2)`'s F_SETLEASE (linux/fcntl.h, F_LINUX_SPECIFIC_BASE + 0): refused ({@link FCNTL_COMMANDS}). */
export const F_SETLEASE = 1024;

/** Names of the keyring system calls the filter refuses with ENOSYS whatever their arguments (module doc). */
export const KEYRING_SYSCALLS: readonly string[] = Object.keys(KEYRING.x64!);

/** Names of the Linux AIO system calls the filter refuses with ENOSYS whatever their arguments ({@link AIO}). */
export const AIO_SYSCALLS: readonly string[] = Object.keys(AIO.x64!);

/** Names of the system calls the filter refuses whatever their arguments. */
export const DENIED_SYSCALLS: readonly string[] = Object.keys(ARCH.x64!.denied);

/** x32 system calls on x86-64 have this bit set in their number. */
const X32_SYSCALL_BIT = 0x40000000;
/** socket(2) constants: the unix family, the type mask (the rest are SOCK_CLOEXEC, SOCK_NONBLOCK), and the connection types. */
const AF_UNIX = 1;
/**
 * The families `socket(2)` may create in a session, by number (linux/socket.h): AF_INET (2),
 * AF_INET6 (10), both bounded by the session's network namespace and its rules (network.ts), and
 * AF_NETLINK (16) with a protocol of {@link ALLOWED_NETLINK_PROTOCOLS} only. Every other family
 * is refused: the attack test is test/unit/attack/socket-families.test.ts.
 */
export const ALLOWED_SOCKET_FAMILIES: Readonly<Record<string, number>> = { AF_INET: 2, AF_INET6: 10, AF_NETLINK: 16 };
const AF_NETLINK = 16;
/**
 * The netlink protocols (the third argument of `socket(2)`, linux/netlink.h) a session may open:
 * NETLINK_ROUTE (0) only, the routes, addresses and links of the session's own network namespace
 * (glibc's getaddrinfo, `ip addr`, `ip route`). The others are refused with EPROTONOSUPPORT, what a
 * kernel without the protocol says: NETLINK_KOBJECT_UEVENT (15) hears the host's device events in
 * every namespace, NETLINK_AUDIT (9) the audit log, NETLINK_SOCK_DIAG (4) lists sockets, and
 * NETLINK_GENERIC (16) and NETLINK_NETFILTER (12) reach families of kernel services a later kernel
 * may add to. Attack tests: test/unit/attack/adversary-round7.test.ts, socket-families.test.ts.
 */
export const ALLOWED_NETLINK_PROTOCOLS: Readonly<Record<string, number>> = { NETLINK_ROUTE: 0 };
const SOCK_TYPE_MASK = 0xf;
const SOCK_STREAM = 1;
const SOCK_SEQPACKET = 5;
/**
 * recv(2)'s flag that returns queued data without taking it off the queue (linux/socket.h). The
 * flags are an int: the filter tests the low 32 bits, all the kernel reads. MSG_ERRQUEUE is left
 * alone: it reads the socket's error queue (ICMP errors, timestamps), never its data.
 */
export const MSG_PEEK = 2;

/** A jump target: a label of the program being assembled. */
type Label =
  | 'allow'
  | 'ok'
  | 'deny'
  | 'nofamily'
  | 'noprotocol'
  | 'nosys'
  | 'inval'
  | 'socket'
  | 'socketpair'
  | 'netlink'
  | 'flags2'
  | 'flags3'
  | 'setsockopt'
  | 'prctl'
  | 'seccomp'
  | 'fcntl'
  | null;

/**
 * The filter for `arch` as bwrap wants it: `struct sock_filter` entries
 * (8 bytes each, little-endian), or null for an architecture it does not
 * know (then no filter is installed; see {@link seccompFilterFile}).
 *
 * Besides {@link DENIED_SYSCALLS}: `socket(2)` of a family not in
 * {@link ALLOWED_SOCKET_FAMILIES} is refused (EPERM for AF_UNIX,
 * EAFNOSUPPORT for the rest, which programs read as "this kernel has no
 * such family" and fall back from), and `socketpair(2)` of any family but
 * AF_UNIX, or of AF_UNIX unless its type is SOCK_STREAM or
 * SOCK_SEQPACKET; `socket(AF_NETLINK)` of a protocol not in
 * {@link ALLOWED_NETLINK_PROTOCOLS} with EPROTONOSUPPORT. The family and the
 * protocol are ints: the filter compares the low 32 bits of each argument,
 * which is all the kernel reads (high bits set change nothing either way). A process of the sandbox can then reach no unix socket
 * by path (a host service's socket anywhere on the read-only root: under
 * /var/lib, in another user's home, in /var/tmp) and no abstract one: a
 * seccomp filter cannot read the address `connect(2)` is given, so the
 * family is refused whole. A stream or seqpacket pair is connected to its
 * own other end for good (connect gives EISCONN, sendto's address is
 * refused), which is what libuv (Node's child stdio) and Python's
 * `socketpair()` use; a datagram pair could `sendto` any path (SOCK_RAW is
 * a datagram socket in the unix family). io_uring is refused because its
 * operations (IORING_OP_SOCKET, IORING_OP_CONNECT, IORING_OP_RECV with
 * MSG_PEEK) bypass seccomp. `recvfrom`, `recvmsg` and `recvmmsg` with
 * {@link MSG_PEEK} set in their flags (alone or with any other flag) are
 * refused with EPERM, on every socket: a seccomp filter cannot tell which
 * socket a descriptor is, and bash's saved stdin may sit on any number.
 * `setsockopt(2)` at level `SOL_SOCKET` of an option in {@link BPF_SOCKET_OPTIONS} is refused with
 * EPERM (level and option compared as the kernel reads them, their low 32 bits), and a seccomp
 * filter of the process's own with EINVAL, what a kernel without CONFIG_SECCOMP_FILTER says, so
 * programs that probe for one (man-db) run without it: each filter is JIT-compiled against
 * the same machine-wide budget, and a task may stack 32,768 instructions of them. Dividing by a
 * constant takes about 14 bytes of code an instruction: a task's full chain took about 455 KiB
 * (measured: 14 unprivileged processes, one 2 MiB pack every 4 or 5), so a session's 1,024 tasks
 * about 455 MiB of the 504 MiB budget. Strict mode and the queries of `seccomp(2)` stay allowed.
 * `fcntl(2)` of a command outside {@link FCNTL_COMMANDS} (`F_SETLEASE` first) is refused with EINVAL.
 */
export function seccompProgram(arch: string = process.arch): Buffer | null {
  const a = ARCH[arch];
  if (!a) return null;
  const prog: Array<{ code: number; jt: Label; jf: Label; k: number; label?: Label }> = [];
  const emit = (code: number, k: number, jt: Label = null, jf: Label = null, label?: Label): void => {
    prog.push({ code, jt, jf, k, ...(label ? { label } : {}) });
  };
  emit(BPF_LD_W_ABS, OFF_ARCH);
  emit(BPF_JMP_JEQ_K, a.audit, null, 'deny');
  emit(BPF_LD_W_ABS, OFF_NR);
  if (a.x32) emit(BPF_JMP_JGE_K, X32_SYSCALL_BIT, 'deny', null);
  for (const nr of Object.values(a.denied)) emit(BPF_JMP_JEQ_K, nr, 'deny', null);
  for (const nr of Object.values(KEYRING[arch] ?? {})) emit(BPF_JMP_JEQ_K, nr, 'nosys', null);
  for (const nr of Object.values(AIO[arch] ?? {})) emit(BPF_JMP_JEQ_K, nr, 'nosys', null);
  emit(BPF_JMP_JEQ_K, a.socket, 'socket', null);
  emit(BPF_JMP_JEQ_K, a.socketpair, 'socketpair', null);
  emit(BPF_JMP_JEQ_K, a.setsockopt, 'setsockopt', null);
  emit(BPF_JMP_JEQ_K, a.prctl, 'prctl', null);
  emit(BPF_JMP_JEQ_K, a.seccomp, 'seccomp', null);
  emit(BPF_JMP_JEQ_K, a.fcntl, 'fcntl', null);
  for (const nr of a.recvFlagsArg2) emit(BPF_JMP_JEQ_K, nr, 'flags2', null);
  for (const nr of a.recvFlagsArg3) emit(BPF_JMP_JEQ_K, nr, 'flags3', null);
  emit(BPF_RET_K, SECCOMP_RET_ALLOW, null, null, 'allow');
  // recvmsg: flags are args[2]; recvfrom, recvmmsg: args[3]. MSG_PEEK set, whatever else is: refused.
  emit(BPF_LD_W_ABS, OFF_ARG2_LO, null, null, 'flags2');
  emit(BPF_JMP_JSET_K, MSG_PEEK, 'deny', 'ok');
  emit(BPF_LD_W_ABS, OFF_ARG3_LO, null, null, 'flags3');
  emit(BPF_JMP_JSET_K, MSG_PEEK, 'deny', 'ok');
  emit(BPF_LD_W_ABS, OFF_ARG0_LO, null, null, 'socket');
  for (const family of Object.values(ALLOWED_SOCKET_FAMILIES)) emit(BPF_JMP_JEQ_K, family, family === AF_NETLINK ? 'netlink' : 'ok', null);
  emit(BPF_JMP_JEQ_K, AF_UNIX, 'deny', 'nofamily');
  emit(BPF_LD_W_ABS, OFF_ARG0_LO, null, null, 'socketpair');
  emit(BPF_JMP_JEQ_K, AF_UNIX, null, 'nofamily');
  emit(BPF_LD_W_ABS, OFF_ARG1_LO);
  emit(BPF_ALU_AND_K, SOCK_TYPE_MASK);
  emit(BPF_JMP_JEQ_K, SOCK_STREAM, 'ok', null);
  emit(BPF_JMP_JEQ_K, SOCK_SEQPACKET, 'ok', 'deny');
  // setsockopt(fd, level, optname, ...): level and optname are ints, so their low words are all the kernel reads.
  emit(BPF_LD_W_ABS, OFF_ARG1_LO, null, null, 'setsockopt');
  emit(BPF_JMP_JEQ_K, SOL_SOCKET, null, 'ok');
  emit(BPF_LD_W_ABS, OFF_ARG2_LO);
  const options = Object.values(BPF_SOCKET_OPTIONS);
  options.forEach((o, i) => emit(BPF_JMP_JEQ_K, o, 'deny', i === options.length - 1 ? 'ok' : null));
  // prctl(option, arg2, ...): option is an int; arg2 an unsigned long the kernel compares whole, so a
  // low word of 2 with high bits set is refused here where the kernel would say EINVAL: the same answer.
  emit(BPF_LD_W_ABS, OFF_ARG0_LO, null, null, 'prctl');
  emit(BPF_JMP_JEQ_K, PR_SET_SECCOMP, null, 'ok');
  emit(BPF_LD_W_ABS, OFF_ARG1_LO);
  emit(BPF_JMP_JEQ_K, SECCOMP_MODE_FILTER, 'inval', 'ok');
  // seccomp(op, flags, args): op is an unsigned int.
  emit(BPF_LD_W_ABS, OFF_ARG0_LO, null, null, 'seccomp');
  emit(BPF_JMP_JEQ_K, SECCOMP_SET_MODE_FILTER, 'inval', 'ok');
  // fcntl(fd, cmd, arg): cmd is an unsigned int. From the highest range down: at or above a range's end, refused;
  // at or above its start, allowed; below, on to the next range.
  emit(BPF_LD_W_ABS, OFF_ARG1_LO, null, null, 'fcntl');
  for (let i = FCNTL_COMMANDS.length - 1; i >= 0; i--) {
    const [from, to] = FCNTL_COMMANDS[i]!;
    emit(BPF_JMP_JGE_K, to + 1, 'inval', null);
    emit(BPF_JMP_JGE_K, from, 'ok', i === 0 ? 'inval' : null);
  }
  emit(BPF_LD_W_ABS, OFF_ARG2_LO, null, null, 'netlink');
  const protocols = Object.values(ALLOWED_NETLINK_PROTOCOLS);
  protocols.forEach((p, i) => emit(BPF_JMP_JEQ_K, p, 'ok', i === protocols.length - 1 ? 'noprotocol' : null));
  // Jumps go forward only: the argument checks' own allow.
  emit(BPF_RET_K, SECCOMP_RET_ALLOW, null, null, 'ok');
  emit(BPF_RET_K, SECCOMP_RET_ERRNO | EPERM, null, null, 'deny');
  emit(BPF_RET_K, SECCOMP_RET_ERRNO | EAFNOSUPPORT, null, null, 'nofamily');
  emit(BPF_RET_K, SECCOMP_RET_ERRNO | EPROTONOSUPPORT, null, null, 'noprotocol');
  emit(BPF_RET_K, SECCOMP_RET_ERRNO | ENOSYS, null, null, 'nosys');
  emit(BPF_RET_K, SECCOMP_RET_ERRNO | EINVAL, null, null, 'inval');
  const at = (l: Label, from: number): number => {
    if (l === null) return 0;
    const i = prog.findIndex((p) => p.label === l);
    if (i <= from) throw new Error(`seccomp: label ${l} is not ahead of instruction ${from}`);
    return i - from - 1;
  };
  const insns: Insn[] = prog.map((p, i) => [p.code, at(p.jt, i), at(p.jf, i), p.k]);
  return encodeFilter(insns);
}

/**
 * The whole filter a session's processes run under: memory.ts's prefix (memfd_create and new user
 * namespaces refused), then {@link seccompProgram}; null on an architecture without a filter.
 */
export function seccompFilterBytes(): Buffer | null {
  const program = seccompProgram();
  if (!program) return null;
  return Buffer.concat([seccompPrefix() ?? Buffer.alloc(0), program]);
}

/**
 * Writes {@link seccompFilterBytes} to `file` (0600, the worker's; bwrap reads it as fd 3, or the
 * seccomp launcher in mode `none`, see sandbox.ts launchArgs) and returns
 * `file`, or undefined on an architecture without a filter. Put in the
 * session's private directory, so it goes with it (and the orphan reaper
 * removes it with the directory).
 */
export function writeSeccompFilter(file: string): string | undefined {
  const bytes = seccompFilterBytes();
  if (!bytes) return undefined;
  fs.writeFileSync(file, bytes, { mode: 0o600 });
  return file;
}
