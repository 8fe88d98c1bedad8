/**
 * One bash process: spawned detached (setsid: its own session and process
 * group, no controlling terminal, so nothing can open /dev/tty to prompt),
 * through `setpriv --pdeathsig KILL` where available (see orphans.ts),
 * watched by a sentinel that kills its processes if the worker dies,
 * put under a {@link ProcessGuard}, given the protocol functions and the
 * limits, and killed with everything it started. A session restart replaces
 * the whole ShellProcess.
 */
import { createSessionUserns, findNsenter, type SessionUserns } from './userns';
import { execFileSync, spawn, type ChildProcess, type ChildProcessWithoutNullStreams } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { SessionStartError } from './errors';
import { launchStdio } from './fds';
import { CgroupUnavailableError, ProcessGuard, type ProcessGuardMode, type Watchdog } from './guard';
import { MINIMAL_ENV } from './identity';
import { limitIpcNamespace } from './memory';
import { listProcesses, signalGroup, signalPid, type ProcInfo } from './procs';
import { attachNetwork } from './network';
import { launchArgs, type SandboxOptions } from './sandbox';
import {
  initScript,
  LOADER_DROPPED_ENV,
  newCommandTokens,
  newMarker,
  parseExitRecord,
  RecordScanner,
  type CommandRecords,
  type CommandTokens,
  type EndRecord,
  type Marker,
} from './protocol';
import { setTimeout as sleep } from 'node:timers/promises';
import { raceTimeout } from './timing';

/** How bash ended: exit code, or the signal that killed it. */
export interface ShellExit {
  code: number | null;
  signal: string | null;
}

/** bash's exit record (see {@link ShellProcess.exitRecord}). */
export interface ExitRecord {
  /** The status bash's EXIT trap saw (`$?`): what it exits with. */
  status: number;
  /** Bytes bash's own thread had read when the worker saw the record (`rchar`). */
  rchar: number;
}

/** What a shell needs to start. */
export interface ShellStartOptions {
  sessionId: string;
  /** Name unique per shell (session id + generation); names the cgroup. */
  name: string;
  cwd: string;
  env: Record<string, string>;
  bashPath: string;
  ulimitArgs: string;
  oomScoreAdj: number;
  maxProcesses: number;
  /** All the shell's memory, kernel memory included, in bytes (limits.ts `maxSessionMemoryBytes`); Infinity: none. */
  maxSessionMemoryBytes: number;
  guardMode: ProcessGuardMode;
  /** Checks the guard (one per process: `SessionHost`). */
  watchdog: Watchdog;
  /** setpriv with `--pdeathsig` ({@link findSetpriv}), or null. */
  setpriv: string | null;
  /** How long bash may take to report ready, ms. */
  startTimeoutMs: number;
  /** Sandbox and identity (see sandbox.ts); `setpriv` is filled in from {@link setpriv}. @default no sandbox, the worker's own user */
  sandbox?: Omit<SandboxOptions, 'setpriv'>;
  /**
   * Two FIFOs of this shell alone where bash runs (the session's FIFO directory): `record`, which bash
   * can open for writing, and `ack`, which it can open for reading; its EXIT trap writes the exit
   * record in the first and waits on the second (protocol.ts `exitTrapText`). The shell owns them
   * from then on (unlinked when bash has exited). @default none: no exit record, an exit's status is unknown
   */
  exitFifos?: { record: string; ack: string };
}

/** Number of the read(2) system call, as /proc/<pid>/syscall shows it, per architecture. */
const READ_SYSCALL: Partial<Record<string, number>> = { x64: 0, arm64: 63 };

/** One look at where bash is blocked: process state and the fields of /proc/<pid>/syscall (hex strings as shown there). */
interface ReaderWait {
  state: string;
  nr: string;
  fd: string;
  buf: string;
  count: string;
  sp: string;
  pc: string;
}

/** Where bash's own command reader waits for the next control line, recorded at start (see {@link ShellProcess.waitIdle}). */
interface IdleSignature {
  sp: string;
  pc: string;
  count: string;
  /** /proc/<pid>/auxv at start: a new program image (exec) has another. */
  auxv: Buffer;
}

/**
 * A read buffer this close to the stack pointer is on the stack (bash's
 * command reader reads into a heap buffer; the `read` builtin and readline
 * into a local variable), bytes.
 */
const STACK_BUFFER_DISTANCE = 64 * 1024 * 1024;

/** Whether `w` is bash's command reader waiting, as recorded in `sig`: same stack pointer, code address and count, and a buffer off the stack. */
function isReaderWait(w: ReaderWait, sig: IdleSignature): boolean {
  if (w.sp !== sig.sp || w.pc !== sig.pc || w.count !== sig.count) return false;
  try {
    const distance = BigInt(w.buf) - BigInt(w.sp);
    return distance > BigInt(STACK_BUFFER_DISTANCE) || distance < -BigInt(STACK_BUFFER_DISTANCE);
  } catch {
    return false;
  }
}

/** The auxiliary vector of a process (/proc/<pid>/auxv), or undefined when unreadable. */
function readAuxv(pid: number): Buffer | undefined {
  try {
    return fs.readFileSync(`/proc/${pid}/auxv`);
  } catch {
    return undefined;
  }
}

/** Characters of the exit FIFO kept while looking for the exit record (its last; a job may write there too). */
const EXIT_RECORD_TEXT_MAX = 4096;
/** How long the worker tries to end bash's wait in its EXIT trap, ms (bash is in its open within microseconds). */
const EXIT_RELEASE_MS = 2000;

/** Event-loop turns {@link ShellProcess.recordsSettled} waits for bash's records already in the pipe. */
const RECORD_SETTLE_TURNS = 3;

/** Bytes of bash's own stderr kept for error messages. */
const STDERR_TAIL_BYTES = 4096;
/** Poll interval while waiting for killed processes to go, ms. */
const KILL_POLL_MS = 10;
/** Give up killing after this long (something unkillable, e.g. stuck in D state), ms. */
const KILL_MAX_MS = 5000;

/**
 * The sentinel's script: it blocks reading its stdin, a pipe whose only
 * writer is the worker. The worker never writes to it, so `read` returns
 * only when the worker is gone (the kernel closes the pipe on any exit,
 * SIGKILL included); the sentinel then SIGKILLs the shell's process group
 * and every process of its cgroup. On a normal kill the worker SIGKILLs the
 * sentinel first, so it never acts on a group id that may have been reused.
 * `$1` = process group id, `$2` = cgroup directory or ''.
 */
const SENTINEL_SCRIPT =
  'read -r _; kill -KILL -- "-$1" 2>/dev/null; ' +
  'if [ -n "$2" ]; then for p in $(cat "$2/cgroup.procs" 2>/dev/null); do kill -KILL "$p" 2>/dev/null; done; fi';

/**
 * Starts the sentinel that kills a shell's processes when the worker dies
 * (pdeathsig only reaches bash itself; the commands it started would live
 * on). Its own process group, so a timeout kill of the shell's group does
 * not reach it. Returns null when it cannot be started (the orphan reaper
 * at the next worker start still cleans up).
 */
function startSentinel(pgid: number, cgroupDir: string | undefined): ChildProcess | null {
  try {
    const sentinel = spawn('/bin/sh', ['-c', SENTINEL_SCRIPT, 'agent-jobs-sentinel', String(pgid), cgroupDir ?? ''], {
      // Never process.env: the worker's environment holds the API key, readable in /proc/<pid>/environ.
      env: MINIMAL_ENV,
      detached: true,
      stdio: ['pipe', 'ignore', 'ignore'],
    });
    sentinel.on('error', () => undefined);
    sentinel.stdin?.on('error', () => undefined);
    sentinel.unref();
    (sentinel.stdin as unknown as { unref?: () => void } | null)?.unref?.();
    return sentinel;
  } catch {
    return null;
  }
}

const NO_SANDBOX: Omit<SandboxOptions, 'setpriv'> = { mode: 'none', identity: null, network: true, writable: [], readable: [], hide: [] };

/** bwrap exits with 128 + N when bash was killed by signal N (bwrap cannot die of it itself): report it as the signal. */
function decodeSandboxExit(code: number | null, signal: NodeJS.Signals | null): ShellExit {
  if (signal === null && code !== null && code > 128 && code < 128 + 32) {
    const name = Object.entries(os.constants.signals).find(([, n]) => n === code - 128)?.[0];
    if (name) return { code: null, signal: name };
  }
  return { code, signal };
}

/** Interval while looking for bash inside a new sandbox, ms. */
const FIND_BASH_POLL_MS = 2;

/**
 * The processes from the spawned bwrap down to bash (outer pids, bash
 * last), once bash has been exec'd: bwrap, its pid-1 reaper, then the
 * process whose command name is bash's (after setpriv exec'd it). Empty
 * when the sandbox exits first or it takes longer than `timeoutMs`.
 */
async function waitForBash(rootPid: number, bashName: string, timeoutMs: number, gone: () => boolean): Promise<number[]> {
  const comm = bashName.slice(0, 15);
  const end = Date.now() + timeoutMs;
  while (Date.now() < end && !gone()) {
    const procs = listProcesses();
    const children = new Map<number, ProcInfo[]>();
    for (const p of procs) {
      if (p.sid !== rootPid) continue;
      const list = children.get(p.ppid) ?? [];
      list.push(p);
      children.set(p.ppid, list);
    }
    const chain = [rootPid];
    for (let pid = rootPid; ;) {
      const next = children.get(pid)?.[0];
      if (!next) break;
      chain.push(next.pid);
      if (next.comm === comm && next.state !== 'Z') return chain;
      pid = next.pid;
    }
    await sleep(FIND_BASH_POLL_MS);
  }
  return [];
}

/**
 * util-linux's setpriv, if installed and supporting --pdeathsig: bash is
 * started through it so the kernel kills bash when the worker dies. Looks
 * (and runs it) every call: `SessionHost.setpriv()` keeps the answer.
 */
export function findSetpriv(): string | null {
  for (const dir of (process.env.PATH ?? '/usr/bin:/bin').split(':')) {
    const candidate = path.join(dir || '.', 'setpriv');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      execFileSync(candidate, ['--pdeathsig', 'KILL', '--', 'true'], { env: MINIMAL_ENV, stdio: 'ignore', timeout: 5000 });
      return candidate;
    } catch {
      /* not here, or too old for --pdeathsig */
    }
  }
  return null;
}

/**
 * The shell's process guard in the mode asked for.
 * @throws SessionStartError when mode `cgroup` was asked for and no pids cgroup can be created
 */
function createGuard(o: ShellStartOptions): ProcessGuard {
  try {
    return ProcessGuard.create(o.guardMode, o.maxProcesses, o.name, o.watchdog, o.maxSessionMemoryBytes);
  } catch (err) {
    if (err instanceof CgroupUnavailableError)
      throw new SessionStartError(`cannot start bash session: ${err.message}`, { sessionId: o.sessionId, cause: err });
    throw err;
  }
}

/**
 * The user namespace of the session's own that bash runs in (userns.ts): as root, with an identity
 * and mode `bwrap`, where nsenter and setpriv are installed; undefined elsewhere, or when it cannot
 * be made (bash then runs in the host's user namespace, as before it existed, and the worker warns).
 */
async function shellUserns(sandbox: Omit<SandboxOptions, 'setpriv'>, setpriv: string | null): Promise<SessionUserns | undefined> {
  if (sandbox.mode !== 'bwrap' || !sandbox.identity || !setpriv || process.getuid?.() !== 0 || !findNsenter()) return undefined;
  try {
    return await createSessionUserns(sandbox.identity, setpriv);
  } catch (err) {
    // Said once per shell, in the worker's log: the session then shares its owner's per-user kernel counts.
    process.emitWarning(
      `no user namespace of its own for the session's bash (its owner's inotify and fanotify counts are not bounded): ${(err as Error).message}`,
      {
        type: 'AgentJobsSandboxWarning',
      },
    );
    return undefined;
  }
}

/**
 * Spawns bash (in its sandbox, through setpriv) detached, and waits until it is spawned.
 * @throws SessionStartError when it cannot be (the guard is disposed first)
 */
async function spawnShell(o: ShellStartOptions, guard: ProcessGuard): Promise<ChildProcessWithoutNullStreams> {
  let userns: SessionUserns | undefined;
  try {
    const base = o.sandbox ?? NO_SANDBOX;
    userns = await shellUserns(base, o.setpriv);
    const sandbox: SandboxOptions = {
      ...base,
      setpriv: o.setpriv,
      sealShell: true,
      ...(userns ? { userns, nsenter: findNsenter()! } : {}),
    };
    const launch = launchArgs(sandbox, [o.bashPath, '--noprofile', '--norc']);
    let child: ChildProcessWithoutNullStreams;
    try {
      child = spawn(launch.file, launch.args, {
        cwd: o.cwd,
        env: o.env,
        detached: true,
        stdio: launchStdio(launch, ['pipe', 'pipe', 'pipe']),
      }) as ChildProcessWithoutNullStreams;
    } finally {
      // The spawn has dup'ed it; the sandbox's processes keep the namespace.
      userns?.close();
    }
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    return child;
  } catch (err) {
    await guard.dispose();
    throw new SessionStartError(`cannot start ${o.bashPath} in ${o.cwd}: ${(err as Error).message}`, {
      sessionId: o.sessionId,
      cause: err,
    });
  }
}

/**
 * Puts the spawned process under `guard`. When the cgroup refuses the pid, falls back to the
 * watchdog unless cgroup was required.
 * @returns the guard in use
 * @throws SessionStartError (after killing the process group) when the cgroup was required and refused it
 */
async function adoptShell(o: ShellStartOptions, guard: ProcessGuard, pid: number, onExceeded: () => void): Promise<ProcessGuard> {
  try {
    guard.adopt(pid, onExceeded);
    return guard;
  } catch (err) {
    await guard.dispose();
    if (o.guardMode === 'cgroup') {
      signalGroup(pid, 'SIGKILL');
      throw new SessionStartError(`cannot put bash into its pids cgroup: ${(err as Error).message}`, {
        sessionId: o.sessionId,
        cause: err,
      });
    }
    const fallback = ProcessGuard.create('watchdog', o.maxProcesses, o.name, o.watchdog, o.maxSessionMemoryBytes);
    fallback.adopt(pid, onExceeded);
    return fallback;
  }
}

export class ShellProcess {
  /** Pid of the process the worker spawned: bash itself, or (sandboxed) the outer bwrap; leader of the process group and session. */
  readonly pid: number;
  /**
   * Pid of the bash process itself as the worker sees it (outside the
   * sandbox's pid namespace), for reading `/proc/<bashPid>/cwd` and `fd`.
   * Equal to {@link pid} without a sandbox. Paths inside the sandbox are
   * the same as outside, so `readlink /proc/<bashPid>/cwd` names bash's `$PWD`.
   */
  bashPid = 0;
  /** Whether bash runs in a bwrap sandbox (its exit arrives through bwrap as a status). */
  private sandboxed = false;
  readonly guard: ProcessGuard;
  /** Set once bash has exited. */
  exit: ShellExit | undefined;
  /** Resolves when bash has exited (and been reaped). */
  readonly exited: Promise<ShellExit>;
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly scanner = new RecordScanner();
  private stderrBuf = Buffer.alloc(0);
  /** Bytes bash has written on its own stderr so far (see {@link stderrBytes}). */
  private stderrTotal = 0;
  /** Resolves when bash's stderr pipe has ended (every writer gone: a background job may keep it open). */
  readonly stderrEnded: Promise<void>;
  private killing: Promise<void> | undefined;
  private linesSent = 0;
  /** slirp4netns serving the sandbox's network namespace (network.ts), killed with the shell. */
  network: ChildProcess | undefined;
  /** Kills this shell's processes if the worker dies; see {@link startSentinel}. */
  private readonly sentinel: ChildProcess | null;
  /** The exit FIFOs ({@link ShellStartOptions.exitFifos}), the worker's reader of the first, what it read, and the token. */
  private exitChannel: { record: string; ack: string; socket: net.Socket; token: string; text: string; ackFd?: number } | undefined;
  /**
   * bash's exit record: the status its EXIT trap wrote and `rchar`, the bytes its own thread had read,
   * read by the worker while bash waited in its trap, alive; undefined when none came.
   */
  exitRecord: ExitRecord | undefined;

  private constructor(child: ChildProcessWithoutNullStreams, guard: ProcessGuard) {
    this.child = child;
    this.pid = child.pid!;
    this.guard = guard;
    this.sentinel = startSentinel(this.pid, guard.cgroup?.dir);
    this.exited = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        this.closeExitChannel();
        this.exit = this.sandboxed ? decodeSandboxExit(code, signal) : { code, signal };
        resolve(this.exit);
      });
    });
    child.stdout.on('data', (chunk: Buffer) => this.scanner.push(chunk));
    this.stderrEnded = new Promise((resolve) => {
      child.stderr.once('end', resolve);
      child.stderr.once('close', resolve);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      this.stderrTotal += chunk.length;
      const joined = Buffer.concat([this.stderrBuf, chunk]);
      this.stderrBuf = joined.length > STDERR_TAIL_BYTES ? joined.subarray(joined.length - STDERR_TAIL_BYTES) : joined;
    });
    // Writing to a dead shell: the exit event reports it; don't crash the worker.
    child.stdin.on('error', () => undefined);
  }

  /**
   * Starts bash and waits until it has applied the limits and reported
   * ready. Throws {@link SessionStartError} (after killing what was started)
   * on any failure.
   */
  static async start(o: ShellStartOptions): Promise<ShellProcess> {
    const created = createGuard(o);
    const child = await spawnShell(o, created);
    let shell: ShellProcess | undefined;
    // The guard records that it fired (`guard.exceeded`); the session reads that to explain the exit.
    const guard = await adoptShell(o, created, child.pid!, () => void shell?.kill(0));
    shell = new ShellProcess(child, guard);
    shell.sandboxed = o.sandbox?.mode === 'bwrap';
    const chain = await shell.boundSandbox(o);
    for (const pid of chain) {
      if (pid !== child.pid) guard.include(pid);
      try {
        fs.writeFileSync(`/proc/${pid}/oom_score_adj`, String(o.oomScoreAdj));
      } catch {
        /* best effort: an unprivileged worker cannot lower it */
      }
    }
    await shell.initialize(o);
    return shell;
  }

  /**
   * Sandboxed, bwrap forks (its pid-1 reaper, then bash) maybe before the
   * guard adopted it: finds every process on the way to bash (returned, for
   * the cgroup and the oom score; bash itself forks nothing until the init
   * script arrives, so nothing else can have escaped), then bounds the IPC
   * namespace and attaches the network, before bash reads anything.
   */
  private async boundSandbox(o: ShellStartOptions): Promise<number[]> {
    const chain = this.sandboxed
      ? await waitForBash(this.pid, path.basename(o.bashPath), o.startTimeoutMs, () => this.exit !== undefined)
      : [this.pid];
    this.bashPid = chain[chain.length - 1] ?? 0;
    const asRoot = this.sandboxed && process.getuid?.() === 0 && this.bashPid > 0;
    // bash reads nothing before the init script: the IPC namespace is bounded before any command runs.
    if (asRoot && o.sandbox?.tmpfsBytes !== undefined) {
      const bytes = o.sandbox.tmpfsBytes;
      await this.orFail(o, "cannot bound the sandbox's shared memory (nsenter, /proc/sys/kernel)", () =>
        limitIpcNamespace(this.bashPid, bytes),
      );
    }
    // bash reads nothing before the init script: the namespace is sealed and attached before any command runs.
    if (asRoot && o.sandbox?.network) {
      await this.orFail(o, 'cannot give the sandbox its network (slirp4netns, nft)', async () => {
        this.network = await attachNetwork(this.bashPid);
      });
    }
    return chain;
  }

  /** Runs one start step; when it throws, kills the shell and throws a {@link SessionStartError} saying `what`. */
  private async orFail(o: ShellStartOptions, what: string, step: () => unknown): Promise<void> {
    try {
      await step();
    } catch (err) {
      await this.kill(0);
      throw new SessionStartError(`${what}: ${(err as Error).message}`, { sessionId: o.sessionId, cause: err });
    }
  }

  /**
   * Sends the init script and waits for its end record: ready with the limits applied, then records
   * the control pipes and where bash waits for input (no user code has run yet: its own command reader).
   * Otherwise kills the shell and throws a {@link SessionStartError} with bash's stderr.
   */
  private async initialize(o: ShellStartOptions): Promise<void> {
    const marker = newMarker();
    const dropped = Object.fromEntries(LOADER_DROPPED_ENV.filter((n) => o.env[n] !== undefined).map((n) => [n, o.env[n]!]));
    if (o.exitFifos !== undefined && !this.exit) this.openExitChannel(o.exitFifos);
    const ch = this.exitChannel;
    const exit = ch ? { fifo: ch.record, ack: ch.ack, token: ch.token } : undefined;
    this.send(initScript(o.ulimitArgs, marker, dropped, exit));
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      this.expect(marker).then((r) => ({ kind: 'ready' as const, record: r })),
      this.exited.then((e) => ({ kind: 'exit' as const, exit: e })),
      new Promise<{ kind: 'timeout' }>((r) => {
        timer = setTimeout(() => r({ kind: 'timeout' }), o.startTimeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (outcome.kind === 'ready' && outcome.record.status === 0) {
      this.controlPipes = this.readControlPipes();
      this.idleSignature = await this.sampleReaderWait(o.startTimeoutMs);
      return;
    }
    await this.kill(0);
    const why =
      outcome.kind === 'ready'
        ? `could not apply resource limits (ulimit ${o.ulimitArgs})`
        : outcome.kind === 'exit'
          ? `bash exited during start (code ${outcome.exit.code}, signal ${outcome.exit.signal})`
          : `bash did not report ready within ${o.startTimeoutMs} ms`;
    const stderr = this.stderrTail();
    throw new SessionStartError(`cannot start bash session: ${why}${stderr ? `: ${stderr.trim()}` : ''}`, {
      sessionId: o.sessionId,
      stderr,
    });
  }

  /**
   * Writes control text to bash's stdin. Returns bash's input line number of
   * the first line written (bash numbers eval'd code from there, which is
   * how its error messages say `eval: line N`).
   */
  send(text: string): number {
    const first = this.linesSent + 1;
    for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) this.linesSent++;
    if (!this.exit) this.child.stdin.write(text);
    return first;
  }

  /**
   * Reads the exit FIFO (read-write and non-blocking: bash's open for writing never waits, and the
   * worker never sees end of file). At the exit record of this shell's token, takes bash's read count
   * while bash waits in its trap, then lets it go on ({@link releaseExit}).
   */
  private openExitChannel(fifos: { record: string; ack: string }): void {
    const fd = fs.openSync(fifos.record, fs.constants.O_RDWR | fs.constants.O_NONBLOCK);
    const socket = new net.Socket({ fd, readable: true, writable: false });
    const ch = { ...fifos, socket, token: newCommandTokens().status, text: '' };
    this.exitChannel = ch;
    socket.on('error', () => socket.destroy());
    socket.on('data', (chunk: Buffer) => {
      if (this.exitRecord !== undefined) return;
      // Searched with what came before, then only the tail kept: a job writing there without end neither
      // fills the worker nor hides bash's record.
      const text = ch.text + chunk.toString('latin1');
      ch.text = text.slice(-EXIT_RECORD_TEXT_MAX);
      const status = parseExitRecord(text, ch.token);
      if (status === undefined) return;
      const rchar = this.bytesRead();
      if (rchar !== undefined) this.exitRecord = { status, rchar };
      void this.releaseExit(ch);
    });
    socket.unref();
  }

  /**
   * Opens the ack FIFO for writing and holds it open until bash has exited, which ends bash's wait in
   * its EXIT trap whenever bash comes to its open (a job holding the FIFO open for reading changes
   * nothing); retried while no reader is there yet (ENXIO), for at most {@link EXIT_RELEASE_MS}.
   */
  private async releaseExit(ch: NonNullable<ShellProcess['exitChannel']>): Promise<void> {
    const until = Date.now() + EXIT_RELEASE_MS;
    for (;;) {
      try {
        const fd = fs.openSync(ch.ack, fs.constants.O_WRONLY | fs.constants.O_NONBLOCK);
        if (this.exitChannel === ch) ch.ackFd = fd;
        else fs.closeSync(fd);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENXIO' || this.exit || Date.now() > until) return;
        await sleep(1);
      }
    }
  }

  /** Stops reading the exit FIFO and removes both (bash has exited). */
  private closeExitChannel(): void {
    const ch = this.exitChannel;
    if (!ch) return;
    this.exitChannel = undefined;
    ch.socket.destroy();
    if (ch.ackFd !== undefined) fs.closeSync(ch.ackFd);
    for (const f of [ch.record, ch.ack]) {
      try {
        fs.unlinkSync(f);
      } catch {
        /* gone */
      }
    }
  }

  /** Waits for the end record of `marker` (never settles if bash dies first: race it with {@link exited}). */
  expect(marker: Marker): Promise<EndRecord> {
    return this.scanner.expect(marker);
  }

  /** Stops waiting for a record. */
  cancelExpect(): void {
    this.scanner.cancel();
  }

  /** Watches bash's stdout for one command's records; see {@link RecordScanner.watchCommand}. */
  watchCommand(tokens: CommandTokens, onStatus: () => void, onHousekeeping: () => void): void {
    this.scanner.watchCommand(tokens, onStatus, onHousekeeping);
  }

  /** The records seen so far for the watched command (the live object: it grows until {@link cancelExpect}). */
  commandRecords(): CommandRecords {
    return this.scanner.records();
  }

  /**
   * Resolves once everything bash wrote on its stdout before now has reached the record scanner:
   * called when bash is back in its reader, whose records are then all in the pipe (bash writes
   * them before it reads again). Node reads a pipe in the poll phase of the event loop, which runs
   * between two setImmediate turns; a few turns and a millisecond cover a loop busy with other I/O.
   */
  async recordsSettled(): Promise<void> {
    for (let i = 0; i < RECORD_SETTLE_TURNS; i++) await new Promise((r) => setImmediate(r));
    await sleep(1);
    await new Promise((r) => setImmediate(r));
  }

  /**
   * What bash's stdin and stdout were at start (`pipe:[inode]` links), or
   * undefined when /proc does not tell (then they are not checked).
   */
  controlPipes: { stdin: string; stdout: string } | undefined;
  /** Where bash's own command reader waits (see {@link waitIdle}); undefined when /proc did not tell at start. */
  private idleSignature: IdleSignature | undefined;

  /** Reads bash's fd 0 and 1 links from /proc; undefined when unreadable. */
  readControlPipes(): { stdin: string; stdout: string } | undefined {
    try {
      return { stdin: fs.readlinkSync(`/proc/${this.bashPid}/fd/0`), stdout: fs.readlinkSync(`/proc/${this.bashPid}/fd/1`) };
    } catch {
      return undefined;
    }
  }

  /**
   * Whether bash still reads its commands from, and writes its records to,
   * the pipes it started with (a command can replace them with
   * `exec 10>&-`-style tricks on bash's saved descriptors).
   * @returns true when they are intact or cannot be checked
   */
  controlPipesIntact(): boolean {
    if (!this.controlPipes) return true;
    const now = this.readControlPipes();
    if (!now) return this.exit !== undefined;
    return now.stdin === this.controlPipes.stdin && now.stdout === this.controlPipes.stdout;
  }

  /**
   * Bytes bash's own thread has read so far (`rchar` of
   * /proc/<pid>/task/<pid>/io), or undefined when /proc does not tell. Not
   * /proc/<pid>/io: that total adds the reads of every child bash reaped, so
   * a background job that read the control line in bash's place (and as
   * many bytes again from /dev/zero) and exited would count as bash reading it.
   */
  bytesRead(): number | undefined {
    try {
      const m = /^rchar: (\d+)$/m.exec(fs.readFileSync(`/proc/${this.bashPid}/task/${this.bashPid}/io`, 'utf8'));
      return m ? Number(m[1]) : undefined;
    } catch {
      return undefined;
    }
  }

  /**
   * Waits until bash is blocked reading its stdin (the control pipe) in its
   * own command reader, as it is between commands, for at most `timeoutMs`.
   * "Its own reader" is checked against what was recorded at start, before
   * any user code ran: the same stack pointer and code address of the
   * read(0) (bash's reader sits at the same depth before every line), the
   * same byte count, a buffer off the stack, and the same auxiliary vector.
   * A command or function still running in a loop of `read` (the builtin
   * reads into a local variable, deeper or shallower in the stack), or a
   * program exec'd in bash's place, does not match, whatever it names
   * itself: a function named `builtin` that the bookkeeping calls and that
   * never returns is seen as a command that did not end.
   * @returns true when it is, false when it is not by then (still running
   *   something, or stopped), undefined when /proc cannot tell
   */
  async waitIdle(timeoutMs: number): Promise<boolean | undefined> {
    const readSyscall = READ_SYSCALL[process.arch];
    if (readSyscall === undefined) return undefined;
    const sig = this.idleSignature;
    const deadline = Date.now() + timeoutMs;
    let polls = 0;
    for (;;) {
      const wait = this.readWait();
      if (wait === undefined) return this.exit ? false : undefined;
      if (wait.state === 'S' && wait.nr === String(readSyscall) && wait.fd === '0x0') {
        if (!sig) return true;
        if (isReaderWait(wait, sig)) {
          // Same place in the same program image: exec (even of bash itself) changes the auxiliary vector.
          return readAuxv(this.bashPid)?.equals(sig.auxv) ?? false;
        }
      }
      if (Date.now() >= deadline) return false;
      // bash is normally there within microseconds of its last record: look again at once, then back off.
      if (++polls <= 50) await new Promise((r) => setImmediate(r));
      else await sleep(1);
    }
  }

  /**
   * Where bash is blocked now, from /proc/<pid>/syscall and status, or
   * undefined when /proc does not tell.
   */
  private readWait(): ReaderWait | undefined {
    try {
      const syscall = fs.readFileSync(`/proc/${this.bashPid}/syscall`, 'utf8');
      const state = /^State:\s+(\S)/m.exec(fs.readFileSync(`/proc/${this.bashPid}/status`, 'utf8'))?.[1] ?? '';
      // "nr arg0 .. arg5 sp pc" while in a system call.
      const f = syscall.trim().split(/\s+/);
      return { state, nr: f[0] ?? '', fd: f[1] ?? '', buf: f[2] ?? '', count: f[3] ?? '', sp: f[7] ?? '', pc: f[8] ?? '' };
    } catch {
      return undefined;
    }
  }

  /**
   * Records where bash's own command reader waits for input (called once,
   * before any user code has run): the stack pointer and program counter of
   * its read(0), the byte count it asks for, and the process's auxiliary
   * vector. Undefined when /proc does not tell within `timeoutMs` (the check
   * then falls back to "blocked in read(0)").
   */
  private async sampleReaderWait(timeoutMs: number): Promise<IdleSignature | undefined> {
    const readSyscall = READ_SYSCALL[process.arch];
    if (readSyscall === undefined) return undefined;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const w = this.readWait();
      if (w === undefined) return undefined;
      if (w.state === 'S' && w.nr === String(readSyscall) && w.fd === '0x0' && w.sp.startsWith('0x') && w.pc.startsWith('0x')) {
        const auxv = readAuxv(this.bashPid);
        return auxv ? { sp: w.sp, pc: w.pc, count: w.count, auxv } : undefined;
      }
      if (Date.now() >= deadline) return undefined;
      await sleep(1);
    }
  }

  /**
   * The kernel's idea of bash's working directory (`/proc/<pid>/cwd`),
   * which no variable of the shell can forge, or undefined when /proc does
   * not tell. `deleted` is set when the directory was removed.
   */
  kernelCwd(): { path: string; deleted: boolean } | undefined {
    try {
      const link = fs.readlinkSync(`/proc/${this.bashPid}/cwd`);
      return link.endsWith(' (deleted)') ? { path: link.slice(0, -' (deleted)'.length), deleted: true } : { path: link, deleted: false };
    } catch {
      return undefined;
    }
  }

  /**
   * Bytes bash has printed on its own stderr since it started. A command's
   * own stderr goes to its FIFO; bash prints here when it cannot parse a
   * control line (a syntax error, after which it exits with status 2).
   */
  stderrBytes(): number {
    return this.stderrTotal;
  }

  /** Last bytes bash printed on its own stderr. */
  stderrTail(): string {
    return this.stderrBuf.toString('utf8');
  }

  /** Live (non-zombie) processes of this shell, bash included until it is reaped. */
  liveProcesses(): ProcInfo[] {
    return this.guard.members(this.exit !== undefined).filter((p) => p.state !== 'Z' && p.state !== 'X');
  }

  /**
   * Signals everything of this shell; returns how many live processes there
   * were. The process group is signalled as a whole (one system call reaches
   * a fork bomb's every member at once) only while its id is certainly ours:
   * bash not yet reaped, or a live member still in the group (the kernel
   * does not reuse a pid that is still some process's group id).
   */
  private signalAll(signal: NodeJS.Signals): number {
    if (!this.exit) signalGroup(this.pid, signal);
    const live = this.liveProcesses();
    if (this.exit && live.some((p) => p.pgid === this.pid)) signalGroup(this.pid, signal);
    for (const p of live) signalPid(p.pid, signal);
    return live.length;
  }

  /**
   * Kills bash and everything it started: SIGTERM to the process group, the
   * session and the cgroup, up to `graceMs` for them to exit, then SIGKILL
   * until none is left (at most 5 s). Resolves once bash has been reaped and
   * no live process of the shell remains; the guard is disposed. Idempotent.
   * Zombies of orphaned processes are reaped by init, not by us.
   */
  kill(graceMs: number): Promise<void> {
    this.killing ??= this.doKill(graceMs);
    return this.killing;
  }

  /**
   * SIGKILLs everything of this shell at once, synchronously, for a process
   * about to exit (a worker's second shutdown signal): no waiting, no
   * cleanup. The sentinel, which sees the worker's pipe close, kills what
   * is left after (a process forked meanwhile).
   */
  killNow(): void {
    this.signalAll('SIGKILL');
  }

  private async doKill(graceMs: number): Promise<void> {
    const start = Date.now();
    if (graceMs > 0) {
      this.signalAll('SIGTERM');
      while (Date.now() - start < graceMs) {
        await sleep(KILL_POLL_MS);
        if (this.exit && this.liveProcesses().length === 0) break;
      }
    }
    const killStart = Date.now();
    while (Date.now() - killStart < KILL_MAX_MS) {
      const left = this.signalAll('SIGKILL');
      if (left === 0 && this.exit) break;
      await sleep(KILL_POLL_MS);
    }
    await raceTimeout(this.exited, KILL_MAX_MS);
    // The sentinel goes last and by SIGKILL: closing its pipe would make it act.
    this.sentinel?.kill('SIGKILL');
    this.network?.kill('SIGKILL');
    this.child.stdin.destroy();
    this.child.stdout.destroy();
    this.child.stderr.destroy();
    await this.guard.dispose();
  }
}
