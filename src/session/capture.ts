/**
 * Capturing one command's output through a named pipe (FIFO).
 *
 * Why a FIFO per command, and not a file or the shell's own stdout:
 * - Background jobs inherit the command's stdout. With one shared pipe their
 *   later output would land in the next command's result; with a pipe per
 *   command it stays in its own pipe, which the worker drains and discards
 *   once the command has ended (so a chatty `server &` neither blocks on a
 *   full pipe nor dies of SIGPIPE).
 * - A regular capture file breaks the common `echo error > /dev/stderr`:
 *   reopening /dev/stderr with O_TRUNC truncates the file and loses what was
 *   already written. A FIFO ignores O_TRUNC, like a terminal.
 * - Nothing goes to disk, so a command printing gigabytes costs CPU, not
 *   disk space, and the worker keeps only a head and a tail in memory.
 *
 * The worker opens each FIFO read-write and non-blocking (so neither side
 * waits for the other and no EOF is seen before bash opens it), and reads it
 * with a libuv pipe handle. Once the command's end is proven, the worker
 * writes a fence (a marker bash never sees) into the FIFO through that
 * descriptor; everything before the fence is the command's output (bash
 * printed the status record after the command's processes had written it).
 * Afterwards the worker reopens the FIFO read-only through /proc/self/fd,
 * closes its read-write descriptor (so EOF arrives when the last background
 * writer is gone) and unlinks the FIFO. A FIFO serves one command only and
 * its name is never handed out again: a background job that learned its own
 * FIFO's name (a program's fd 1 names it in /proc/self/fd) and opens it by
 * path later finds nothing there, so it cannot write into a later command's
 * output.
 *
 * The lock (adversary round 8, kind 1): opening `/proc/<pid>/fd/1` of a
 * running command's process reopens its FIFO wherever it lies, with the
 * FIFO's own permissions checked, and a job of an earlier command runs as the
 * same user. So each FIFO is made root's, mode 0600, once bash holds it open
 * and before the command runs: bash's eval first prints a gate record into
 * the FIFO (`/proc/<gate token>.gate.`, a failed bare redirection on its
 * stderr) and then waits, opening the session's gate FIFO for reading (a
 * FIFO open blocks until a writer comes); the worker reads the gate record,
 * chowns the FIFO to root through its own descriptor and opens the gate
 * (read-write: never blocks). Descriptors opened before stay valid (bash's,
 * then the command's and its jobs'); any open after, by path, `/proc/*\/fd`
 * or an `O_PATH` descriptor, fails with EACCES for every process of the
 * session, which cannot chmod or chown back what it does not own. Before the
 * lock only bash holds the FIFO, and bash is non-dumpable (sandbox.ts
 * `sealShell`): no job can name its descriptors. The gate FIFO is root's,
 * readable by the session's group: no job can open it for writing to let bash
 * through early. Only when the worker is root and bash runs as another user
 * (`FifoPool` owner): otherwise bash is the worker's own user and the lock is
 * skipped (docs/security.md, known limits).
 */
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { MINIMAL_ENV } from './identity';
import type { OutputCollector } from './output';
import { raceTimeout } from './timing';

/** FIFOs created per `mkfifo` call. */
const FIFO_BATCH = 32;

/** FIFOs of one session, in its private directory. */
export class FifoPool {
  private readonly free: string[] = [];
  private counter = 0;
  /** The gate FIFO, made with the first batch. */
  private gateFifo: string | undefined;

  /**
   * @param owner uid and gid to give the FIFOs (the session user, who must
   *   open them for writing), or undefined to leave them the worker's
   */
  constructor(
    private readonly dir: string,
    private readonly owner?: { uid: number; gid: number },
  ) {}

  /** True when FIFOs are locked once bash holds them: bash runs as {@link owner}, and the worker is root (it chowns to the owner). */
  get locks(): boolean {
    return this.owner !== undefined;
  }

  /**
   * The session's gate FIFO (see the module comment): bash opens it for
   * reading and waits there until the worker opens it. Root's, mode 0640,
   * group the session's when {@link locks}. Creates it (and a batch) when
   * none exists. Throws when mkfifo fails.
   */
  gate(): string {
    if (this.gateFifo === undefined) this.free.push(this.take());
    return this.gateFifo!;
  }

  /**
   * Makes the FIFO open as `fd` root's, mode 0600 (no-op unless {@link locks}):
   * descriptors already open keep working, no process of the session can
   * open it again. Throws when fchown fails.
   */
  lock(fd: number): void {
    if (!this.locks) return;
    fs.fchownSync(fd, 0, 0);
    fs.fchmodSync(fd, 0o600);
  }

  /**
   * A FIFO for one command, never handed out before. Creates a batch with
   * one `mkfifo` process when none is left (once per {@link FIFO_BATCH}
   * commands). Throws when mkfifo fails.
   */
  take(): string {
    for (;;) {
      const p = this.free.pop();
      if (p === undefined) break;
      try {
        if (fs.lstatSync(p).isFIFO()) return p;
      } catch {
        /* deleted by a command: skip */
      }
    }
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    // Unguessable names in a directory the session user cannot list: a background job cannot find a later command's FIFO by name.
    const batch = Array.from({ length: FIFO_BATCH }, () => path.join(this.dir, `pipe.${++this.counter}.${randomBytes(8).toString('hex')}`));
    const gate = this.gateFifo === undefined ? path.join(this.dir, `gate.${randomBytes(8).toString('hex')}`) : undefined;
    execFileSync('mkfifo', ['-m', '600', '--', ...batch, ...(gate ? [gate] : [])], { env: MINIMAL_ENV, stdio: 'ignore' });
    if (this.owner) for (const f of batch) fs.chownSync(f, this.owner.uid, this.owner.gid);
    if (gate) {
      // Unlocked, the gate is bash's own (the same user as the worker); locked, only the worker may open it for writing.
      if (this.owner) {
        fs.chownSync(gate, 0, this.owner.gid);
        fs.chmodSync(gate, 0o640);
      }
      this.gateFifo = gate;
    }
    const first = batch.shift()!;
    this.free.push(...batch.reverse());
    return first;
  }

  /** Removes a FIFO whose command has ended (background jobs may still hold it open; its name is never used again). */
  discard(fifo: string): void {
    try {
      fs.unlinkSync(fifo);
    } catch {
      /* gone */
    }
  }
}

/** State of a {@link FifoCapture}: `gate` until bash's gate record, then `collect` until the fence. */
type Mode = 'gate' | 'collect' | 'drain' | 'closed';

/** Longest a gate record may be (bash's `bash: line 1: /proc/<token>.gate.: No such file or directory`). */
const MAX_GATE_RECORD = 4096;
/** How long {@link FifoCapture.writeFence} retries a full pipe, ms. */
const FENCE_WRITE_MS = 1000;

/**
 * Reads one command's FIFO: bash's gate record (dropped; the FIFO is locked
 * and the gate opened), then bytes before the fence go to the collector;
 * after {@link detach}, the rest is drained and dropped until EOF.
 */
export class FifoCapture {
  /** Resolves when the fence has been read. */
  readonly fenced: Promise<void>;
  private mode: Mode = 'gate';
  private readonly fd: number;
  private socket: net.Socket;
  private readonly fence: Buffer;
  private readonly gateMark: Buffer;
  /** The worker's write end of the gate, open from the gate record until the capture stops. */
  private gateFd: number | undefined;
  private carry: Buffer = Buffer.alloc(0);
  /** The FIFO was made root's before the command ran (see the module comment). */
  locked = false;
  private resolveFence!: () => void;
  private onEnd: (() => void) | undefined;
  /** Called once when the capture is fully closed (EOF after detach, or destroy). */
  onClosed: (() => void) | undefined;

  /**
   * Opens `fifo` for a command. `tokens.fence` is the marker the worker
   * writes after the command's output ({@link writeFence}); `tokens.gate`
   * the one of bash's gate record. Throws when the FIFO cannot be opened.
   */
  constructor(
    readonly fifo: string,
    tokens: { fence: string; gate: string },
    private readonly collector: OutputCollector,
    private readonly pool: FifoPool,
  ) {
    this.fence = Buffer.from(tokens.fence);
    this.gateMark = Buffer.from(`/proc/${tokens.gate}.gate.`);
    this.fenced = new Promise((r) => (this.resolveFence = r));
    this.fd = fs.openSync(fifo, fs.constants.O_RDWR | fs.constants.O_NONBLOCK);
    this.socket = this.readSocket(this.fd, (chunk) => this.onData(chunk));
  }

  private readSocket(fd: number, onData: (b: Buffer) => void): net.Socket {
    const socket = new net.Socket({ fd, readable: true, writable: false });
    socket.on('data', onData);
    socket.on('error', () => socket.destroy());
    // A background job may hold the pipe for hours: that must not keep the worker alive.
    socket.unref();
    return socket;
  }

  private onData(chunk: Buffer): void {
    if (this.mode === 'gate') {
      this.onGateData(chunk);
      return;
    }
    if (this.mode !== 'collect') return;
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const at = data.indexOf(this.fence);
    if (at >= 0) {
      this.collector.push(data.subarray(0, at));
      this.carry = Buffer.alloc(0);
      this.mode = 'drain';
      this.resolveFence();
      return;
    }
    // Hold back what could be the start of a fence split across chunks.
    const keep = Math.min(data.length, this.fence.length - 1);
    this.collector.push(data.subarray(0, data.length - keep));
    this.carry = Buffer.from(data.subarray(data.length - keep));
  }

  /**
   * Stops collecting, optionally after collecting what is still readable
   * until EOF (for a killed command: its processes are dead, so EOF comes as
   * soon as the pipe is empty) for at most `collectMs`. Then drains and
   * drops whatever background jobs still write until EOF; the FIFO is unlinked here.
   */
  async detach(collectMs = 0): Promise<void> {
    if (this.mode === 'closed') return;
    // bash never reached the gate (nothing ran), or is past it: nothing more of it to read or to open.
    if (this.mode === 'gate') {
      this.carry = Buffer.alloc(0);
      this.mode = 'drain';
    }
    this.closeGate();
    const stillCollecting = this.mode === 'collect' && collectMs > 0;
    let reader: number;
    try {
      reader = fs.openSync(`/proc/self/fd/${this.fd}`, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    } catch {
      // No /proc: keep the read-write descriptor draining until the session
      // closes.
      this.flushCarry();
      this.mode = 'drain';
      this.pool.discard(this.fifo);
      return;
    }
    const ended = new Promise<void>((r) => (this.onEnd = r));
    const old = this.socket;
    this.socket = this.readSocket(reader, (chunk) => this.onData(chunk));
    this.socket.on('end', () => {
      this.flushCarry();
      this.mode = 'closed';
      this.socket.destroy();
      this.onEnd?.();
      this.onClosed?.();
    });
    // Nothing opens it by path any more (bash wrote the fence, or gave up): a job that knows the name finds nothing.
    this.pool.discard(this.fifo);
    // The old handle may still hold unread data events; let them through first.
    old.removeAllListeners('data');
    old.on('data', (chunk: Buffer) => this.onData(chunk));
    old.destroy();
    if (stillCollecting) {
      await raceTimeout(ended, collectMs);
    }
    if (this.mode === 'collect') {
      this.flushCarry();
      this.mode = 'drain';
    }
  }

  /**
   * Before the command runs: waits for bash's gate record (nothing else can be in the FIFO yet: only bash
   * holds it), then locks the FIFO and lets bash through the gate; what follows the record is output.
   */
  private onGateData(chunk: Buffer): void {
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const at = data.indexOf(this.gateMark);
    const eol = at >= 0 ? data.indexOf(0x0a, at) : -1;
    if (eol < 0) {
      // Unbounded bytes here would be a bash that is not ours; stop waiting for a record then (the command never runs).
      this.carry = data.length > MAX_GATE_RECORD ? Buffer.alloc(0) : Buffer.from(data);
      if (data.length > MAX_GATE_RECORD) this.mode = 'drain';
      return;
    }
    this.carry = Buffer.alloc(0);
    this.mode = 'collect';
    try {
      this.pool.lock(this.fd);
      this.locked = this.pool.locks;
    } catch {
      // Root's fchown of a FIFO it chowned to the session user at creation does not fail; were it to, the command
      // still runs and is judged as before the lock existed (a session that hangs at the gate would be worse).
    }
    this.gateFd = fs.openSync(this.pool.gate(), fs.constants.O_RDWR | fs.constants.O_NONBLOCK);
    if (eol + 1 < data.length) this.onData(data.subarray(eol + 1));
  }

  /**
   * Writes the fence through the worker's own descriptor (the FIFO may be locked; it is never reopened by path).
   * Call once the command's end is proven: everything the command wrote is in the pipe before it. Retries while
   * the pipe is full (background writers) for up to {@link FENCE_WRITE_MS}; gives up silently after (the fence
   * wait then ends what is collected).
   */
  async writeFence(): Promise<void> {
    const until = Date.now() + FENCE_WRITE_MS;
    while (this.mode === 'collect') {
      try {
        fs.writeSync(this.fd, this.fence);
        return;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > until) return;
        await new Promise((r) => setTimeout(r, 2));
      }
    }
  }

  /** The gate is no longer needed once the command stops: bash passed it, or will not. */
  private closeGate(): void {
    if (this.gateFd === undefined) return;
    try {
      fs.closeSync(this.gateFd);
    } catch {
      /* closed */
    }
    this.gateFd = undefined;
  }

  /** Bytes held back while looking for a fence that never came belong to the output. */
  private flushCarry(): void {
    if (this.mode === 'collect' && this.carry.length > 0) this.collector.push(this.carry);
    this.carry = Buffer.alloc(0);
  }

  /** Closes everything now (session closing). */
  destroy(): void {
    if (this.mode === 'closed') return;
    this.mode = 'closed';
    this.closeGate();
    this.socket.destroy();
    this.pool.discard(this.fifo);
    this.onClosed?.();
  }
}
