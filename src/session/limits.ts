/**
 * Resource limits of a session: what each one means, its unit and default,
 * and how it is applied.
 *
 * Per-process limits are applied with bash's `ulimit -S -H` when the shell
 * starts, and re-applied after every command (a command that lowered them,
 * e.g. `ulimit -v 1000`, would otherwise break every later command; lowered
 * hard limits cannot be raised again, so then the shell is restarted).
 *
 * The process count is NOT a ulimit: `RLIMIT_NPROC` (`ulimit -u`) is not
 * enforced for uid 0, so it does nothing when the worker runs as root (as in
 * CI and most containers), and for other users it counts every process of
 * the user on the machine, not the session's. See `guard.ts` for what
 * enforces `maxProcesses` instead.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { InvalidSessionOptionError } from './errors';

/**
 * Limits on what a session's processes may use. Every field is optional;
 * omitted ones take the defaults in {@link DEFAULT_LIMITS} (or are left as
 * the worker's own limits where the default is "inherited").
 * `Infinity` means unlimited.
 */
export interface ResourceLimits {
  /**
   * Processes and threads (kernel tasks) that may exist in the session at
   * once, bash included. Enforced by the process guard (a pids cgroup where
   * one can be created, else a watchdog), which kills the session's process
   * group when it is exceeded, so a fork bomb ends the command instead of
   * the machine. @default 1024
   */
  maxProcesses?: number;
  /**
   * Virtual address space of each process, in bytes (`ulimit -v`, rounded
   * down to KiB). This is address space, not resident memory: V8 reserves
   * about 10 GiB for each WebAssembly memory (Node's `fetch` uses one) and
   * the JVM reserves its heap up front, so low values break those tools.
   * @default 32 GiB (34359738368), or the worker's own hard limit if lower
   */
  maxMemoryBytes?: number;
  /**
   * All the memory the session's processes hold together, in bytes, kernel memory included: their
   * pages, the page cache they fill, its `/tmp`, `/dev/shm` and shared memory, and the kernel's
   * objects made for them (epoll watches, pipe buffers, sockets; none of which `maxMemoryBytes`
   * counts). The `memory.limit_in_bytes` of the shell's cgroup v1 memory cgroup (guard.ts), which
   * exact runs join too. Past it the kernel reclaims the session's page cache, then its OOM killer
   * kills a process of the session (SIGKILL) and of no one else; the result says so. Not applied
   * without a writable cgroup v1 memory hierarchy (docs/security.md). Infinity: no total.
   * @default half the machine's memory (`os.totalmem() / 2`)
   */
  maxSessionMemoryBytes?: number;
  /**
   * Largest file a process may write, in bytes (`ulimit -f`, rounded down to
   * KiB). This also caps the capture of one command's output; a command
   * that writes past it gets SIGXFSZ (exit code 153).
   * @default 8 GiB (8589934592), or the worker's own hard limit if lower
   */
  maxFileSizeBytes?: number;
  /** Open file descriptors per process (`ulimit -n`). @default inherited from the worker */
  maxOpenFiles?: number;
  /**
   * CPU time of each process, in seconds (`ulimit -t`). Counts the
   * long-lived shell too, which uses little. @default inherited (normally unlimited)
   */
  maxCpuSeconds?: number;
  /**
   * `oom_score_adj` of the shell, inherited by every process it starts
   * (-1000..1000). The default makes the kernel's OOM killer pick a session
   * process before the worker when memory runs out, which is the real
   * defence against a memory hog below `maxMemoryBytes`. @default 1000
   */
  oomScoreAdj?: number;
}

/** Defaults of {@link ResourceLimits}; `undefined` means inherited from the worker. */
export const DEFAULT_LIMITS = Object.freeze({
  maxProcesses: 1024,
  maxMemoryBytes: 32 * 1024 ** 3,
  maxFileSizeBytes: 8 * 1024 ** 3,
  maxOpenFiles: undefined as number | undefined,
  maxCpuSeconds: undefined as number | undefined,
  oomScoreAdj: 1000,
});

/** Limits after defaults, validated. Byte values stay in bytes; conversion happens in {@link ulimitArguments}. */
export interface ResolvedLimits {
  maxProcesses: number;
  maxMemoryBytes: number;
  maxSessionMemoryBytes: number;
  maxFileSizeBytes: number;
  maxOpenFiles: number | undefined;
  maxCpuSeconds: number | undefined;
  oomScoreAdj: number;
}

/** Hard limits of this (worker) process from /proc/self/limits, by resource; Infinity = unlimited. */
export function readOwnHardLimits(): Map<string, number> {
  const out = new Map<string, number>();
  let text: string;
  try {
    text = fs.readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return out;
  }
  for (const line of text.split('\n').slice(1)) {
    const m = /^(.+?)\s{2,}(\S+)\s+(\S+)/.exec(line);
    if (!m) continue;
    const hard = m[3] === 'unlimited' ? Infinity : Number(m[3]);
    if (!Number.isNaN(hard)) out.set(m[1]!.trim(), hard);
  }
  return out;
}

function check(name: string, value: number | undefined, min: number, integer: boolean): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value < min || (integer && Number.isFinite(value) && !Number.isInteger(value))) {
    throw new InvalidSessionOptionError(
      `limits.${name}`,
      `expected ${integer ? 'an integer' : 'a number'} >= ${min} or Infinity, got ${String(value)}`,
    );
  }
}

/**
 * Applies defaults and validates. Defaults (not explicit values) are lowered
 * to the worker's own hard limits, which an unprivileged shell could not
 * exceed anyway. Throws {@link InvalidSessionOptionError} for a value out of
 * range.
 */
export function resolveLimits(limits: ResourceLimits = {}): ResolvedLimits {
  check('maxProcesses', limits.maxProcesses, 2, true);
  check('maxMemoryBytes', limits.maxMemoryBytes, 1024 * 1024, false);
  check('maxSessionMemoryBytes', limits.maxSessionMemoryBytes, 16 * 1024 * 1024, false);
  check('maxFileSizeBytes', limits.maxFileSizeBytes, 1024, false);
  check('maxOpenFiles', limits.maxOpenFiles, 16, true);
  check('maxCpuSeconds', limits.maxCpuSeconds, 1, true);
  if (
    limits.oomScoreAdj !== undefined &&
    (!Number.isInteger(limits.oomScoreAdj) || limits.oomScoreAdj < -1000 || limits.oomScoreAdj > 1000)
  ) {
    throw new InvalidSessionOptionError('limits.oomScoreAdj', `expected an integer in -1000..1000, got ${String(limits.oomScoreAdj)}`);
  }
  const own = readOwnHardLimits();
  const clamp = (dflt: number, resource: string) => Math.min(dflt, own.get(resource) ?? Infinity);
  return {
    maxProcesses: limits.maxProcesses ?? DEFAULT_LIMITS.maxProcesses,
    maxMemoryBytes: limits.maxMemoryBytes ?? clamp(DEFAULT_LIMITS.maxMemoryBytes, 'Max address space'),
    maxSessionMemoryBytes: limits.maxSessionMemoryBytes ?? Math.floor(os.totalmem() / 2),
    maxFileSizeBytes: limits.maxFileSizeBytes ?? clamp(DEFAULT_LIMITS.maxFileSizeBytes, 'Max file size'),
    maxOpenFiles: limits.maxOpenFiles ?? DEFAULT_LIMITS.maxOpenFiles,
    maxCpuSeconds: limits.maxCpuSeconds ?? DEFAULT_LIMITS.maxCpuSeconds,
    oomScoreAdj: limits.oomScoreAdj ?? DEFAULT_LIMITS.oomScoreAdj,
  };
}

function kib(bytes: number): string {
  return Number.isFinite(bytes) ? String(Math.floor(bytes / 1024)) : 'unlimited';
}

function plain(n: number): string {
  return Number.isFinite(n) ? String(n) : 'unlimited';
}

/**
 * Arguments for `ulimit -S -H` in bash's default (non-POSIX) mode, where
 * `-v` and `-f` count KiB: core dumps off (`-c 0`, a crashing test must not
 * drop gigabytes of core files into the workspace), then address space, file
 * size, and open files / CPU seconds when set.
 */
export function ulimitArguments(limits: ResolvedLimits): string {
  const args = ['-c 0', `-v ${kib(limits.maxMemoryBytes)}`, `-f ${kib(limits.maxFileSizeBytes)}`];
  if (limits.maxOpenFiles !== undefined) args.push(`-n ${plain(limits.maxOpenFiles)}`);
  if (limits.maxCpuSeconds !== undefined) args.push(`-t ${plain(limits.maxCpuSeconds)}`);
  return args.join(' ');
}

/** util-linux programs that apply limits to a program they exec, looked up here (the exact run's sandbox shows /usr). */
const PRLIMIT_PATHS = ['/usr/bin/prlimit', '/bin/prlimit'];
const CHOOM_PATHS = ['/usr/bin/choom', '/bin/choom'];

function firstExecutable(paths: readonly string[]): string | undefined {
  return paths.find((p) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * `argv` wrapped so that it runs under the same per-process limits as the
 * session's shell ({@link ulimitArguments}: core 0, address space, file
 * size, open files, CPU seconds; soft = hard, so the program cannot raise
 * them) and the shell's `oom_score_adj` (so the kernel's OOM killer takes
 * this program before the worker, as it would the shell's commands):
 * `prlimit ... -- choom -n <adj> -- argv`. For processes the worker starts
 * outside the shell (exact runs, exact.ts), which bash's `ulimit` never
 * reaches. choom is left out when the score is not above the worker's own
 * (lowering it needs a privilege the session user does not have).
 * @throws Error when prlimit (util-linux) is not installed: nothing may run without the limits
 */
export function limitedArgv(limits: ResolvedLimits, argv: readonly string[]): string[] {
  const prlimit = firstExecutable(PRLIMIT_PATHS);
  if (!prlimit) throw new Error("prlimit (util-linux) is not installed, so the session's limits cannot be applied");
  const both = (v: number): string => (Number.isFinite(v) ? `${Math.floor(v)}:${Math.floor(v)}` : 'unlimited:unlimited');
  // The same values bash's ulimit gets, which counts KiB for -v and -f: round down to whole KiB alike.
  const kibBytes = (v: number): number => (Number.isFinite(v) ? Math.floor(v / 1024) * 1024 : v);
  const args = [
    prlimit,
    '--core=0:0',
    `--as=${both(kibBytes(limits.maxMemoryBytes))}`,
    `--fsize=${both(kibBytes(limits.maxFileSizeBytes))}`,
  ];
  if (limits.maxOpenFiles !== undefined) args.push(`--nofile=${both(limits.maxOpenFiles)}`);
  if (limits.maxCpuSeconds !== undefined) args.push(`--cpu=${both(limits.maxCpuSeconds)}`);
  args.push('--');
  const choom = firstExecutable(CHOOM_PATHS);
  let own = 0;
  try {
    own = Number(fs.readFileSync('/proc/self/oom_score_adj', 'utf8').trim());
  } catch {
    /* not Linux: no OOM score */
  }
  if (choom && limits.oomScoreAdj > own) args.push(choom, '-n', String(limits.oomScoreAdj), '--');
  return [...args, ...argv];
}
