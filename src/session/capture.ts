/**
 * Capturing one command's output through a named pipe (FIFO) of its own, so a background
 * job's later output stays out of later results, `echo err > /dev/stderr` (O_TRUNC) loses
 * nothing, and nothing goes to disk (why not a file or the shell's stdout: src/session/README.md,
 * "Output through a FIFO per command").
 *
 * The worker opens each FIFO read-write and non-blocking (so neither side
 * waits for the other and no EOF is seen before bash opens it), and reads it
 * with a libuv pipe handle. Once the command's end is proven, the worker
 * writes a fence (a marker bash never sees) into the FIFO through that
 * descriptor; everything before the fence is the command's output (bash
 * printed the status record only after the command's processes had written
 * theirs). Afterwards the worker reopens the FIFO read-only through
 * /proc/self/fd, closes its read-write descriptor (so EOF arrives when the
 * last background writer is gone) and unlinks the FIFO. A FIFO serves one
 * command only and its name is never handed out again: a background job that
 * learned its own FIFO's name (a program's fd 1 names it in /proc/self/fd)
 * and opens it by path later finds nothing there, so it cannot write into a
 * later command's output.
 *
 * Nothing of the session can read a FIFO: each is root's, mode 0620, group
 * the session's (bash opens it for writing, as the command's programs do
 * when they reopen `/dev/stdout` or `/dev/stderr`). Opening
 * `/proc/<pid>/fd/1` of a running command's process reopens its FIFO
 * wherever it lies, with the FIFO's own permissions checked, and a job of an
 * earlier command runs as the same user; so the read end, also through an
 * `O_PATH` descriptor or a hard link, is the worker's alone (test/unit/attack/
 * adversary-round8.test.ts), and chmod or chown back fails for a process
 * that does not own the FIFO. The same reopen for writing is not refused: it
 * is the same open as a command's own `echo x > /dev/stderr` (docs/security.md,
 * known limits). Only when bash runs as another user than the worker (root);
 * otherwise the FIFOs are the worker's own user's, as bash is.
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

  /**
   * @param owner the session user, whose group gets the FIFOs (root's, mode 0620: bash opens them for
   *   writing, nothing of the session for reading), or undefined to leave them the worker's (mode 0600)
   */
  constructor(
    private readonly dir: string,
    private readonly owner?: { uid: number; gid: number },
  ) {}

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
    execFileSync('mkfifo', ['-m', '600', '--', ...batch], { env: MINIMAL_ENV, stdio: 'ignore' });
    if (this.owner)
      for (const f of batch) {
        // Group first, then the mode: no moment where another group could write.
        fs.chownSync(f, process.getuid?.() ?? 0, this.owner.gid);
        fs.chmodSync(f, 0o620);
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

/**
 * What a result says when the worker closed this or an earlier command's output ({@link FifoCapture.onCut}): `dropped`, the bytes
 * its background jobs wrote after it ended.
 */
export function drainCutText(dropped: number): string {
  return `background jobs of this or an earlier command kept writing to its output after it ended (${dropped} bytes dropped, past ${DRAIN_BURST_BYTES} bytes and then ${DRAIN_BYTES_PER_SECOND} per second): the worker closed that output, so their next write there fails (EPIPE, SIGPIPE by default); redirect a background job's output to a file (\`job > log 2>&1 &\`)`;
}

/** State of a {@link FifoCapture}. */
type Mode = 'collect' | 'drain' | 'closed';

/** How long {@link FifoCapture.writeFence} retries a pipe kept full by background writers, ms. */
const FENCE_WRITE_MS = 1000;

/**
 * What background jobs may write into a command's FIFO once the command has ended, drained and dropped by the worker:
 * a burst of {@link DRAIN_BURST_BYTES} and then {@link DRAIN_BYTES_PER_SECOND} on average (a token bucket). Past it the
 * worker closes its reader, so their next write gets EPIPE (SIGPIPE): `(cat /dev/zero &)` kept a third of a core
 * draining for the session's life; a job logging a line now and then stays within it, and so does a chatty one that
 * prints a few MB and ends (100,000 log lines, 1.6 MB: `test/unit/session/processes.test.ts`), which must neither block
 * nor die of SIGPIPE. 16 MiB: what `cat /dev/zero` writes in a few milliseconds.
 */
export const DRAIN_BURST_BYTES = 16 << 20;
/** See {@link DRAIN_BURST_BYTES}: bytes per second. */
export const DRAIN_BYTES_PER_SECOND = 64 << 10;

/**
 * Reads one command's FIFO: bytes before the fence go to the collector;
 * after {@link detach}, the rest is drained and dropped until EOF, or until background
 * writers pass the drain's bound ({@link DRAIN_BURST_BYTES}), when the FIFO is closed.
 */
export class FifoCapture {
  /** Resolves when the fence has been read. */
  readonly fenced: Promise<void>;
  private mode: Mode = 'collect';
  private readonly fd: number;
  private socket: net.Socket;
  private readonly fence: Buffer;
  private carry: Buffer = Buffer.alloc(0);
  private resolveFence!: () => void;
  private onEnd: (() => void) | undefined;
  /** Called once when the capture is fully closed (EOF after detach, or destroy). */
  onClosed: (() => void) | undefined;
  /** Called once, at the first bytes read from the FIFO (the session takes bash's read count then). */
  onFirstData: (() => void) | undefined;
  /**
   * Called once when the worker closed the FIFO because background jobs wrote past the drain's bound after the command
   * ended ({@link DRAIN_BURST_BYTES}), with the bytes dropped by then; {@link onClosed} is called too.
   */
  onCut: ((droppedBytes: number) => void) | undefined;
  /** Bytes dropped since the command ended, and the drain's token bucket (bytes left, when last refilled in ms). */
  private dropped = 0;
  private allowance = DRAIN_BURST_BYTES;
  private refilled = 0;

  /**
   * Opens `fifo` for a command. `fence` is the marker the worker writes after
   * the command's output ({@link writeFence}). Throws when the FIFO cannot be opened.
   */
  constructor(
    readonly fifo: string,
    fence: string,
    private readonly collector: OutputCollector,
    private readonly pool: FifoPool,
  ) {
    this.fence = Buffer.from(fence);
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
    if (this.mode === 'drain') return this.dropDrained(chunk.length);
    if (this.mode !== 'collect') return;
    const first = this.onFirstData;
    this.onFirstData = undefined;
    first?.();
    const data = this.carry.length > 0 ? Buffer.concat([this.carry, chunk]) : chunk;
    const at = data.indexOf(this.fence);
    if (at >= 0) {
      this.collector.push(data.subarray(0, at));
      this.carry = Buffer.alloc(0);
      this.startDrain();
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
    const stillCollecting = this.mode === 'collect' && collectMs > 0;
    let reader: number;
    try {
      reader = fs.openSync(`/proc/self/fd/${this.fd}`, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    } catch {
      // No /proc: keep the read-write descriptor draining until the session
      // closes.
      this.flushCarry();
      this.startDrain();
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
      this.startDrain();
    }
  }

  /** From here on what is read is dropped, within the drain's bound ({@link DRAIN_BURST_BYTES}). */
  private startDrain(): void {
    this.mode = 'drain';
    this.refilled = Date.now();
  }

  /** Counts `bytes` dropped after the command ended against the drain's bound, and closes the FIFO past it. */
  private dropDrained(bytes: number): void {
    const now = Date.now();
    this.allowance = Math.min(DRAIN_BURST_BYTES, this.allowance + ((now - this.refilled) * DRAIN_BYTES_PER_SECOND) / 1000);
    this.refilled = now;
    this.allowance -= bytes;
    this.dropped += bytes;
    if (this.allowance >= 0) return;
    const cut = this.onCut;
    this.onCut = undefined;
    // The worker's reader is the last one: closing it gives the writers EPIPE (SIGPIPE) at their next write.
    this.destroy();
    cut?.(this.dropped);
  }

  /**
   * Writes the fence through the worker's own descriptor (bash cannot reopen the FIFO read-write; nothing
   * reopens it by path). Call once the command's end is proven: everything the command wrote is in the pipe
   * before it. Retries while the pipe is full (background writers) for up to {@link FENCE_WRITE_MS}, then gives
   * up (the fence wait then ends what is collected).
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

  /** Bytes held back while looking for a fence that never came belong to the output. */
  private flushCarry(): void {
    if (this.mode === 'collect' && this.carry.length > 0) this.collector.push(this.carry);
    this.carry = Buffer.alloc(0);
  }

  /** Closes everything now (session closing). */
  destroy(): void {
    if (this.mode === 'closed') return;
    this.mode = 'closed';
    this.socket.destroy();
    this.pool.discard(this.fifo);
    this.onClosed?.();
  }
}
