/**
 * Running one program exactly as approved, outside the session's shell.
 *
 * A command the approval policy let through unasked (src/policy) must run
 * the very program and arguments the policy judged, whatever an earlier
 * command did to the shell (functions, aliases, `PATH`, `hash`, exported
 * `LD_PRELOAD`). So it does not go through bash at all: the program is
 * looked up on a fixed PATH ({@link TRUSTED_PATH}), spawned with the
 * session's scrubbed starting environment (not the shell's current one), in
 * the shell's working directory as the kernel reports it, stdin
 * `/dev/null`, in a process group of its own that a timeout kills whole.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Readable } from 'node:stream';
import { launchStdio, type Launch } from './fds';

/**
 * Directories an exact run's sandbox covers with an empty tmpfs (besides
 * what every session hides), the workspace excepted: a read-only program
 * needs /usr, /bin and /lib, not the places secrets live. So a symlink a
 * background job swaps in after the realpath check (a race no check can
 * close) points at nothing. Costs: `ls -l` shows numeric owners.
 */
export const EXACT_RUN_HIDDEN: readonly string[] = [
  '/etc',
  '/home',
  '/root',
  '/var',
  '/run',
  '/srv',
  '/opt',
  '/mnt',
  '/media',
  '/boot',
  '/work',
];

/** Where programs of auto-approved commands are looked up, in order (the `command -p` default path). */
export const TRUSTED_PATH: readonly string[] = ['/usr/bin', '/bin'];

/**
 * Absolute path of `program` on {@link TRUSTED_PATH}, or undefined when it
 * is not there or names a path (`./ls`, `/tmp/ls`).
 */
export function resolveTrustedProgram(program: string): string | undefined {
  if (program === '' || program.includes('/')) return undefined;
  for (const dir of TRUSTED_PATH) {
    const candidate = path.join(dir, program);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

/**
 * Whether a path looked at while resolving is something else in the view of the process that will
 * use it (the sandbox): the reason (a mount covers it) or undefined when it is the real one.
 */
export type ViewCheck = (abs: string) => string | undefined;

/** Symlinks followed at most while resolving one path (the kernel's limit, path_resolution(7)). */
const MAX_SYMLINKS = 40;

/**
 * Resolves `target` component by component as the kernel would, following symlinks, and tells
 * where it lands, or why it cannot be trusted to land anywhere: a symlink whose target does not
 * exist (dangling on the host: it may exist in the sandbox, or be created there later), a loop
 * or more than 40 symlinks, a component that is not a directory, an error other than "missing",
 * or (with `view`) a path on the way that the sandbox shows as something else (its private /tmp,
 * a hidden directory). A missing component that no symlink named ends the walk: the rest is
 * missing too, and a program that creates it creates it there.
 * @returns `{ path }` (absolute, symlinks resolved) or `{ why }`
 */
export function resolveInView(target: string, view?: ViewCheck): { path: string } | { why: string } {
  let pending = path.resolve(target).split('/').filter(Boolean);
  /** How many of `pending`'s first components come from a symlink's target (they must exist). */
  let fromLink = 0;
  let cur = '/';
  let links = 0;
  while (pending.length > 0) {
    const part = pending.shift()!;
    const linked = fromLink > 0;
    if (linked) fromLink--;
    if (part === '.') continue;
    if (part === '..') {
      cur = path.dirname(cur);
      continue;
    }
    const next = path.join(cur, part);
    const covered = view?.(next);
    if (covered) return { why: `${next} is not the same in the sandbox (${covered})` };
    let st: fs.Stats;
    try {
      st = fs.lstatSync(next);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !linked) return { path: path.join(next, ...pending) };
      if (code === 'ENOENT') return { why: `a symlink points to ${path.join(next, ...pending.slice(0, fromLink))}, which does not exist` };
      return { why: `${next}: ${code ?? (err as Error).message}` };
    }
    if (st.isSymbolicLink()) {
      if (++links > MAX_SYMLINKS) return { why: `more than ${MAX_SYMLINKS} symlinks (a loop?) at ${next}` };
      let link: string;
      try {
        link = fs.readlinkSync(next);
      } catch (err) {
        return { why: `${next}: ${(err as Error).message}` };
      }
      const parts = link.split('/').filter(Boolean);
      if (link.startsWith('/')) cur = '/';
      pending = [...parts, ...pending];
      fromLink += parts.length;
      continue;
    }
    if (pending.length > 0 && !st.isDirectory()) return { why: `${next} is not a directory` };
    cur = next;
  }
  return { path: cur };
}

/**
 * Whether `target` stays inside `root` once symlinks are resolved ({@link resolveInView}, with
 * `view` when the program runs in a sandbox): it resolves to `root`'s realpath or below it, and
 * nothing on the way is refused (a dangling symlink, a loop, a path the sandbox covers).
 * @param root an existing directory
 */
export function staysInside(target: string, root: string, view?: ViewCheck): boolean {
  return outsideWhy(target, root, view) === undefined;
}

/** Why `target` does not stay inside `root` (see {@link staysInside}), or undefined when it does. */
export function outsideWhy(target: string, root: string, view?: ViewCheck): string | undefined {
  let realRoot: string;
  try {
    realRoot = fs.realpathSync(root);
  } catch {
    return `the workspace ${root} does not exist`;
  }
  const r = resolveInView(target, view);
  if ('why' in r) return r.why;
  const inside = r.path === realRoot || r.path.startsWith(realRoot.endsWith('/') ? realRoot : `${realRoot}/`);
  return inside ? undefined : `it resolves to ${r.path}, outside the workspace`;
}

/** How to start the program: the launcher may wrap it (sandbox, identity). */
export type ExactLauncher = (file: string, args: readonly string[], cwd: string) => { file: string; args: string[] };

/** What {@link runExactProgram} saw. */
export interface ExactRun {
  exitCode: number | null;
  signal: string | null;
  timedOut: boolean;
  cancelled: boolean;
  /** Milliseconds from spawn to exit. */
  durationMs: number;
  /**
   * Set when the run was killed because one of its processes was opening or holding a named FIFO, or
   * waiting on a file lease ({@link blockerInUse}): what was seen, e.g. `cat (pid 123) was opening a FIFO`.
   */
  stoppedOnFifo?: string;
  /**
   * Set when the run was killed because one of its processes held a terminal or a character device other than
   * {@link HARMLESS_DEVICES} ({@link blockerInUse}): what was seen, e.g. `cat (pid 123) had the terminal /dev/pts/ptmx (5:2) open`.
   */
  stoppedOnDevice?: string;
  /** Set when the run was killed because its output passed {@link EXACT_MAX_OUTPUT_BYTES}: the bytes it had printed by then. */
  stoppedOnOutput?: number;
  /** Set when the run was killed because its processes read more than {@link EXACT_MAX_READ_BYTES}: the bytes read by then. */
  stoppedOnRead?: number;
  /** Set when the run was killed because its processes used more than {@link EXACT_MAX_CPU_MS} of CPU: the ms used by then. */
  stoppedOnCpu?: number;
  /** Set when the run was killed because it ran longer than {@link EXACT_MAX_WALL_MS}: the ms it had run by then. */
  stoppedOnWall?: number;
}

/**
 * Most bytes a program run unasked may print before it is killed: 64 MiB. A person reads at most
 * the session's output cap of it (its start and end), so past this the run only costs the worker's
 * CPU and holds the session until its timeout: a sparse file of 8 GiB that takes no disk
 * (`truncate -s 8G`, within the file-size limit), or `/dev/zero` swapped in for a path after the
 * check (adversary round 31: 2.6 GB in 20 s through the worker). A read-only command that prints
 * more is named so in its result (what is shown then comes from what it printed before it was stopped).
 */
export const EXACT_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

/**
 * Most bytes the processes of a program run unasked may read (their `rchar`: every `read(2)`, from files, devices
 * and pipes) before it is killed: 4 GiB. The output bound misses a program that prints nothing until a file ends
 * (`wc -w` on 40 names of a sparse 8 GiB file held its session 20 s to the timeout with a core, adversary round 32).
 * `grep -r` over a repository of 1.1 GB with its node_modules and .git read 1.12 GB (2.7 s of CPU).
 */
export const EXACT_MAX_READ_BYTES = 4 * 1024 * 1024 * 1024;

/**
 * Most CPU time (user and system, of all its processes, the reaped included) a program run unasked may use before it
 * is killed, ms: 5 s. It bounds what {@link EXACT_MAX_READ_BYTES} does not: `wc -w` over zeros used 14 s of CPU a
 * GiB, and git reads its packs by `mmap`, which `rchar` does not count. `grep -r` over 1.1 GB used 2.7 s, `git log -p`
 * of this repository 0.8 s. Small, since on a loaded machine (2 cores, load 10) a program gets a fifth of a core: 5 s
 * of CPU then is 25 s held; an unasked run is meant to be a quick read, a heavier one is asked for.
 */
export const EXACT_MAX_CPU_MS = 5_000;

/**
 * Most time a program run unasked may run, ms, whatever it does: 30 s. It bounds what no other bound sees, a program
 * that waits without reading or computing (a pty's master, `/dev/ptmx`, swapped in for a path after the check: `cat`
 * waited to the command's timeout, forever with none, adversary round 33), whose cheaper, earlier stop is the watch of
 * its descriptors ({@link blockerInUse}). Chosen from measurements of `grep -rc` on 2 cores at load 20: this
 * repository with its `node_modules` and `.git` (574 MB) 2.4 to 3.8 s; 3.7 GB of `/usr/lib` (4.3 s of CPU, about the
 * most {@link EXACT_MAX_CPU_MS} and {@link EXACT_MAX_READ_BYTES} let through) 18 s; 2.2 GB not in the page cache
 * 57 s, but with 9.3 s of CPU, which the CPU bound stops first. So 30 s stops little the other bounds let run, and
 * is a quarter of the default command timeout; a run that needs longer is asked for.
 */
export const EXACT_MAX_WALL_MS = 30_000;

/** The bounds of one exact run ({@link runExactProgram}); tests may lower them. */
export interface ExactBounds {
  /** Bytes printed at most. @default {@link EXACT_MAX_OUTPUT_BYTES} */
  readonly outputBytes: number;
  /** Bytes read at most. @default {@link EXACT_MAX_READ_BYTES} */
  readonly readBytes: number;
  /** CPU ms used at most. @default {@link EXACT_MAX_CPU_MS} */
  readonly cpuMs: number;
  /** Ms run at most. @default {@link EXACT_MAX_WALL_MS} */
  readonly wallMs: number;
}

/** The default {@link ExactBounds}. */
export const EXACT_BOUNDS: ExactBounds = {
  outputBytes: EXACT_MAX_OUTPUT_BYTES,
  readBytes: EXACT_MAX_READ_BYTES,
  cpuMs: EXACT_MAX_CPU_MS,
  wallMs: EXACT_MAX_WALL_MS,
};

/** Whether a bound of {@link ExactBounds} (its output, reads, CPU or time) or a device it held stopped `run`. */
export const exactStopped = (run: ExactRun): boolean =>
  run.stoppedOnOutput !== undefined ||
  run.stoppedOnRead !== undefined ||
  run.stoppedOnCpu !== undefined ||
  run.stoppedOnWall !== undefined ||
  run.stoppedOnDevice !== undefined;

/**
 * What a result says of a run its reads, CPU or time stopped ({@link EXACT_MAX_READ_BYTES}, {@link EXACT_MAX_CPU_MS},
 * {@link EXACT_MAX_WALL_MS}) or a device it held ({@link blockerInUse}); none otherwise.
 */
export function exactStopNotes(run: ExactRun): string[] {
  const notes: string[] = [];
  if (run.stoppedOnDevice !== undefined)
    notes.push(
      `stopped: ${run.stoppedOnDevice}; a program run unasked never reads a terminal or a device other than ${HARMLESS_DEVICES.map((d) => d.name).join(', ')} (something put one at a path after the check), so it was killed; ask for approval to run it in the session's shell`,
    );
  if (run.stoppedOnRead !== undefined)
    notes.push(
      `stopped: it read ${run.stoppedOnRead} bytes, more than the ${EXACT_MAX_READ_BYTES} a program run unasked may read (a sparse file, or a device swapped in for a path after the check), so it was killed; ask for approval to run it in the session's shell`,
    );
  if (run.stoppedOnCpu !== undefined)
    notes.push(
      `stopped: it used ${Math.round(run.stoppedOnCpu)} ms of CPU, more than the ${EXACT_MAX_CPU_MS} ms a program run unasked may use, so it was killed; ask for approval to run it in the session's shell`,
    );
  if (run.stoppedOnWall !== undefined)
    notes.push(
      `stopped: it ran ${run.stoppedOnWall} ms, longer than the ${EXACT_MAX_WALL_MS} ms a program run unasked may run (it may have waited on something that never came), so it was killed; ask for approval to run it in the session's shell`,
    );
  return notes;
}

/** How often {@link runExactProgram} looks at what the run's processes wait on, read and use, ms. */
export const FIFO_WATCH_MS = 50;

/**
 * The character devices a program run unasked may hold (major 1, the kernel's memory devices): they never wait, and
 * what reads them endlessly is bounded by its reads or CPU. The run's stdin is `/dev/null`.
 */
export const HARMLESS_DEVICES: readonly { name: string; major: number; minor: number }[] = [
  { name: '/dev/null', major: 1, minor: 3 },
  { name: '/dev/zero', major: 1, minor: 5 },
  { name: '/dev/full', major: 1, minor: 7 },
  { name: '/dev/random', major: 1, minor: 8 },
  { name: '/dev/urandom', major: 1, minor: 9 },
];

/** Majors of terminals (`Documentation/admin-guide/devices.txt`): virtual consoles, `/dev/tty` and `/dev/ptmx`, pty slaves. */
const TERMINAL_MAJORS = new Set([4, 5, 136, 137, 138, 139, 140, 141, 142, 143]);

/** Major and minor of a device number as Linux encodes `dev_t` (glibc `gnu_dev_major`, `gnu_dev_minor`). */
export function deviceNumbers(rdev: number): { major: number; minor: number } {
  const big = BigInt(rdev);
  return {
    major: Number(((big >> 8n) & 0xfffn) | ((big >> 32n) & ~0xfffn)),
    minor: Number((big & 0xffn) | ((big >> 12n) & ~0xffn)),
  };
}

/**
 * What a descriptor of character device `rdev` (named `link` in its process's view) is, when a program run unasked
 * must not hold it: a terminal (a pty's master or slave, `/dev/tty`, a console) or any device but {@link HARMLESS_DEVICES},
 * whose read may wait forever without reading or computing (no bound of its reads or CPU sees it); undefined when harmless.
 */
export function refusedDevice(link: string, rdev: number): string | undefined {
  const { major, minor } = deviceNumbers(rdev);
  if (HARMLESS_DEVICES.some((d) => d.major === major && d.minor === minor)) return undefined;
  return `${TERMINAL_MAJORS.has(major) ? 'the terminal' : 'the character device'} ${link} (${major}:${minor})`;
}

/** Clock ticks a second in `/proc/<pid>/stat` (`USER_HZ`, 100 on every Linux this runs on). */
const USER_HZ = 100;

/** Most processes of one run {@link runTree} lists (an exact run is one program; a runaway tree is not walked whole). */
const MAX_TREE = 64;

/** The names in a folder of `/proc/<pid>/` (its tasks, its descriptors); none when the process is gone. */
function procEntries(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}

/** `pid` and its descendants (host pids, from `/proc/<pid>/task/<tid>/children`), at most {@link MAX_TREE}. */
function runTree(pid: number): number[] {
  const out: number[] = [];
  const todo = [pid];
  while (todo.length > 0 && out.length < MAX_TREE) {
    const p = todo.shift()!;
    out.push(p);
    for (const t of procEntries(`/proc/${p}/task`)) {
      try {
        for (const c of fs.readFileSync(`/proc/${p}/task/${t}/children`, 'utf8').split(' ')) if (c.trim()) todo.push(Number(c));
      } catch {
        /* gone */
      }
    }
  }
  return out;
}

/** What {@link blockerInUse} found: a FIFO or a lease (the run's `stoppedOnFifo`), or a device (`stoppedOnDevice`). */
export type Blocker = { stoppedOnFifo: string } | { stoppedOnDevice: string };

/**
 * What in the process tree of `pid` uses a named FIFO, waits on a file lease or holds a terminal or a device that may
 * wait forever ({@link refusedDevice}), or undefined: a process
 * blocked opening a FIFO (its `wchan` is the kernel's `wait_for_partner`, where `open(2)` of a FIFO
 * waits for the other end), one holding a descriptor of a FIFO that has a name (a FIFO in the
 * filesystem, not an anonymous pipe such as the run's own stdout), or one whose `open(2)` waits for
 * another process's lease on the file to be given up (`wchan` `__break_lease`: up to
 * `fs.lease-break-time`, 45 s, each time; adversary round 23). A read-only program auto-approved on
 * a path never needs either (the check before launch refuses a FIFO; the session's seccomp filter
 * refuses leases, seccomp.ts `FCNTL_COMMANDS`, so a lease is met only where no filter runs), so one
 * found now was put there after the check (a job swapping the path) and would block the run until
 * its timeout. The same holds of a descriptor of a terminal or a device other than {@link HARMLESS_DEVICES} (the
 * check refuses devices; `/dev/ptmx` swapped in makes `cat` wait without reading or computing, adversary round 33):
 * the same `stat` of each descriptor tells it. Reads `/proc` (the worker's view: host pids); a process that is gone
 * meanwhile is skipped.
 */
export function blockerInUse(pid: number): Blocker | undefined {
  for (const p of runTree(pid)) {
    let name: string;
    try {
      name = `${fs.readFileSync(`/proc/${p}/comm`, 'utf8').trim()} (pid ${p})`;
      const wchan = fs.readFileSync(`/proc/${p}/wchan`, 'utf8').trim();
      if (wchan === 'wait_for_partner') return { stoppedOnFifo: `${name} was opening a FIFO` };
      if (wchan === '__break_lease') return { stoppedOnFifo: `${name} was waiting for another process to give up its lease on a file` };
    } catch {
      continue;
    }
    for (const fd of procEntries(`/proc/${p}/fd`)) {
      try {
        const link = fs.readlinkSync(`/proc/${p}/fd/${fd}`);
        if (link.startsWith('pipe:') || !link.startsWith('/')) continue;
        const st = fs.statSync(`/proc/${p}/fd/${fd}`);
        if (st.isFIFO()) return { stoppedOnFifo: `${name} had the FIFO ${link} open` };
        const device = st.isCharacterDevice() ? refusedDevice(link, st.rdev) : undefined;
        if (device) return { stoppedOnDevice: `${name} had ${device} open` };
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return undefined;
}

/**
 * What the processes `pids` have read (`rchar` of `/proc/<pid>/io`, which counts the reaped children of each too) and
 * the CPU they used, ms (`utime + stime + cutime + cstime` of `/proc/<pid>/stat`); a process gone meanwhile counts nothing.
 */
export function runUsage(pids: readonly number[]): { readBytes: number; cpuMs: number } {
  let readBytes = 0;
  let ticks = 0;
  for (const p of pids) {
    try {
      readBytes += Number(/^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${p}/io`, 'utf8'))?.[1] ?? 0);
      // Fields after the command name (which may hold spaces and parentheses): state is field 3, utime 14 … cstime 17.
      const stat = fs.readFileSync(`/proc/${p}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks += Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14]);
    } catch {
      /* gone */
    }
  }
  return { readBytes, cpuMs: (ticks * 1000) / USER_HZ };
}

/** What stopped a run, as {@link ExactRun} gives it. */
type Stopped = Pick<ExactRun, 'stoppedOnFifo' | 'stoppedOnDevice' | 'stoppedOnRead' | 'stoppedOnCpu' | 'stoppedOnWall'>;

/**
 * Looks every {@link FIFO_WATCH_MS} ms at what `child`'s processes wait on and hold ({@link blockerInUse}), read and
 * used ({@link runUsage}), and how long it has run since `started` (epoch ms), and calls `kill` once one uses a FIFO or
 * a device or they pass `bounds`; `stop()` of the result ends the watch and gives what was seen.
 */
function watchRun(child: { pid?: number }, kill: () => void, bounds: ExactBounds, started: number): { stop: () => Stopped } {
  let seen: Stopped = {};
  const watch = setInterval(() => {
    if (!child.pid || Object.keys(seen).length > 0) return;
    const blocker = blockerInUse(child.pid);
    const used = runUsage(runTree(child.pid));
    const ran = Date.now() - started;
    if (blocker) seen = blocker;
    else if (used.readBytes > bounds.readBytes) seen = { stoppedOnRead: used.readBytes };
    else if (used.cpuMs > bounds.cpuMs) seen = { stoppedOnCpu: used.cpuMs };
    else if (ran > bounds.wallMs) seen = { stoppedOnWall: ran };
    if (Object.keys(seen).length > 0) kill();
  }, FIFO_WATCH_MS);
  return {
    stop: () => {
      clearInterval(watch);
      return seen;
    },
  };
}

/** Passes chunks to `onOutput` until more than `max` bytes came, then calls `stop` once and drops the rest; `stoppedAt` gives the bytes seen then. */
function boundedOutput(
  onOutput: (chunk: Buffer) => void,
  max: number,
  stop: () => void,
): { take: (chunk: Buffer) => void; stoppedAt: () => number | undefined } {
  let printed = 0;
  let stoppedAt: number | undefined;
  return {
    take: (chunk) => {
      if (stoppedAt !== undefined) return;
      printed += chunk.length;
      onOutput(chunk);
      if (printed > max) {
        stoppedAt = printed;
        stop();
      }
    },
    stoppedAt: () => stoppedAt,
  };
}

/**
 * Spawns `file args` in `cwd` with `env`, feeds stdout and stderr (as they
 * come) to `onOutput`, kills the process group at `timeoutMs` or on abort, as
 * soon as one of its processes opens or holds a named FIFO ({@link blockerInUse},
 * looked at every {@link FIFO_WATCH_MS} ms; `stoppedOnFifo` says what was seen) or a terminal or device
 * that may wait forever (`stoppedOnDevice`), or once it has printed more than `bounds.outputBytes`
 * (`stoppedOnOutput`), its processes read more than `bounds.readBytes` (`stoppedOnRead`) or used more than
 * `bounds.cpuMs` of CPU (`stoppedOnCpu`), or it ran longer than `bounds.wallMs` (`stoppedOnWall`, within a look).
 * Resolves when the process has exited and its pipes are closed (at most
 * 300 ms after exit, for pipes held by a child that outlives it).
 */
export function runExactProgram(
  launch: Launch,
  cwd: string,
  env: Record<string, string>,
  timeoutMs: number,
  onOutput: (chunk: Buffer) => void,
  signal?: AbortSignal,
  bounds: ExactBounds = EXACT_BOUNDS,
): Promise<ExactRun> {
  const started = Date.now();
  return new Promise((resolve) => {
    let stdio: ReturnType<typeof launchStdio<'ignore' | 'pipe'>>;
    try {
      stdio = launchStdio(launch, ['ignore', 'pipe', 'pipe']);
    } catch (err) {
      // Its session closed meanwhile: nothing is spawned.
      onOutput(Buffer.from(`${launch.file}: ${(err as Error).message}\n`));
      return resolve({ exitCode: 127, signal: null, timedOut: false, cancelled: false, durationMs: Date.now() - started });
    }
    const child = spawn(launch.file, launch.args, { cwd, env, stdio, detached: true }) as ChildProcessByStdio<null, Readable, Readable>;
    let timedOut = false;
    let cancelled = false;
    const killGroup = (): void => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    };
    const timer = Number.isFinite(timeoutMs) ? setTimeout(() => ((timedOut = true), killGroup()), timeoutMs) : undefined;
    // A path swapped for a FIFO or a pty after the check, or a sparse file read to no end, would hold the run until its timeout: stopped within a tick instead.
    const watch = watchRun(child, killGroup, bounds, started);
    const onAbort = (): void => {
      cancelled = true;
      killGroup();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const output = boundedOutput(onOutput, bounds.outputBytes, killGroup);
    child.stdout.on('data', output.take);
    child.stderr.on('data', output.take);
    let settled = false;
    const done = (exitCode: number | null, sig: string | null): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const stopped = watch.stop();
      signal?.removeEventListener('abort', onAbort);
      killGroup();
      const past = output.stoppedAt();
      const why = { ...stopped, ...(past ? { stoppedOnOutput: past } : {}) };
      resolve({ exitCode, signal: sig, timedOut, cancelled, durationMs: Date.now() - started, ...why });
    };
    child.on('error', (err) => {
      onOutput(Buffer.from(`${launch.file}: ${err.message}\n`));
      done(127, null);
    });
    // Pipes closed so far, counted from the start: both may close before 'exit' is emitted.
    let closed = 0;
    let exited: [number | null, string | null] | undefined;
    const close = (): void => {
      if (++closed === 2 && exited) done(...exited);
    };
    child.stdout.once('close', close);
    child.stderr.once('close', close);
    child.on('exit', (code, sig) => {
      exited = [code, sig];
      if (closed === 2) return done(code, sig);
      // Let the pipes drain; a grandchild holding them does not hold us up.
      setTimeout(() => done(code, sig), 300).unref();
    });
  });
}
