/**
 * A page screenshot through the Chrome DevTools protocol on a pipe
 * (`--remote-debugging-pipe`): open the page, wait until its text holds
 * what it must show, let it settle, capture a PNG. Nothing but Node: the
 * protocol is JSON messages ended by a NUL byte on fds 3 (to Chromium) and
 * 4 (from it).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Readable, Writable } from 'node:stream';
import { chromiumArgs, type PageOptions } from './chromium';

/** Options of {@link capturePage}. */
export interface CaptureOptions extends PageOptions {
  /** Texts the page's visible text (`document.body.innerText`) must all hold before the capture. */
  expect: string[];
  /** How long to wait for them, in ms. @default 60000 */
  timeoutMs?: number;
  /** Wait after they appeared, in ms, for the rest of the page (lists, badges, timeline) to draw. @default 2000 */
  settleMs?: number;
  /** Texts the page must not show when it is captured (after the settle wait): plaintext a shot without the codec must not hold. @default none */
  absent?: string[];
  /**
   * A JavaScript expression, evaluated in the page after the settle wait,
   * whose value is the region to capture, `{x, y, width, height}` in CSS
   * pixels (= PNG pixels) within the viewport. @default the whole viewport
   */
  clip?: string;
}

/** A region of the page, CSS pixels. */
interface Rect {
  x: number;
  y: number;
  width: number;
  height: number;
}

/** What {@link capturePage} saw. */
export interface Capture {
  png: Buffer;
  /** Size of the PNG, pixels: the viewport's, or the clip's. */
  width: number;
  height: number;
  /** ms from the navigation until the expected texts were there. */
  shownAfterMs: number;
}

/** One DevTools protocol connection over Chromium's pipe. */
class CdpPipe {
  private nextId = 1;
  private buffer = '';
  private readonly waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; method: string }>();
  /** Why the connection is gone (Chromium exited), once it is. */
  private closed: string | null = null;

  constructor(
    private readonly out: Writable,
    input: Readable,
  ) {
    // A write after Chromium exited fails with EPIPE: the command is failed by failAll instead.
    out.on('error', () => undefined);
    input.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8');
      for (let end = this.buffer.indexOf('\0'); end >= 0; end = this.buffer.indexOf('\0')) {
        const message = JSON.parse(this.buffer.slice(0, end)) as { id?: number; result?: unknown; error?: { message: string } };
        this.buffer = this.buffer.slice(end + 1);
        const call = message.id === undefined ? undefined : this.waiting.get(message.id);
        if (!call) continue; // an event: none is needed here
        this.waiting.delete(message.id!);
        if (message.error) call.reject(new Error(`${call.method}: ${message.error.message}`));
        else call.resolve(message.result);
      }
    });
  }

  /** Sends one command (to a page when `sessionId` is given) and resolves with its result. */
  send<T>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    const id = this.nextId++;
    if (this.closed) return Promise.reject(new Error(`${method}: ${this.closed}`));
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject, method });
      this.out.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  /** Fails every command still waiting (Chromium exited). */
  failAll(why: string): void {
    this.closed = why;
    for (const call of this.waiting.values()) call.reject(new Error(`${call.method}: ${why}`));
    this.waiting.clear();
  }
}

/** Spawns Chromium with the DevTools pipe on fds 3 and 4. */
function launch(chromium: string, o: PageOptions): { child: ChildProcess; cdp: CdpPipe; stderr: () => string } {
  const child = spawn(chromium, chromiumArgs(o), { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err = (err + d.toString()).slice(-4_000)));
  const cdp = new CdpPipe(child.stdio[3] as Writable, child.stdio[4] as Readable);
  child.once('exit', (code, signal) => cdp.failAll(`chromium exited (${signal ?? `code ${code}`})`));
  return { child, cdp, stderr: () => err };
}

/**
 * Opens `o.url` in a headless Chromium (`chromium` is its path), waits until
 * the page's visible text holds every `o.expect` text, waits `o.settleMs`
 * more, checks that it shows none of `o.absent`, and captures the viewport
 * (or the `o.clip` region of it) as a PNG.
 * @throws Error naming the texts still missing when `o.timeoutMs` passes, the `o.absent` texts it shows, a clip that is no region, or when Chromium fails
 */
export async function capturePage(chromium: string, o: CaptureOptions): Promise<Capture> {
  const { child, cdp, stderr } = launch(chromium, o);
  try {
    const { targetInfos } = await cdp.send<{ targetInfos: Array<{ targetId: string; type: string }> }>('Target.getTargets');
    const page = targetInfos.find((t) => t.type === 'page');
    const targetId = page?.targetId ?? (await cdp.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' })).targetId;
    const { sessionId } = await cdp.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    const width = o.width ?? 1400;
    const height = o.height ?? 1000;
    await cdp.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false }, sessionId);
    const started = Date.now();
    await cdp.send('Page.navigate', { url: o.url }, sessionId);
    const deadline = started + (o.timeoutMs ?? 60_000);
    let missing = o.expect;
    for (;;) {
      const text = await cdp
        .send<{ result: { value?: unknown } }>(
          'Runtime.evaluate',
          { expression: 'document.body ? document.body.innerText : ""', returnByValue: true },
          sessionId,
        )
        .then((r) => (typeof r.result.value === 'string' ? r.result.value : ''))
        .catch(() => '');
      missing = o.expect.filter((t) => !text.includes(t));
      if (missing.length === 0) break;
      if (Date.now() > deadline)
        throw new Error(
          `the page ${o.url} did not show ${missing.map((t) => JSON.stringify(t)).join(', ')} within ${(o.timeoutMs ?? 60_000) / 1000} s`,
        );
      await sleep(250);
    }
    const shownAfterMs = Date.now() - started;
    await sleep(o.settleMs ?? 2_000);
    await cdp.send('Runtime.evaluate', { expression: 'document.fonts.ready.then(() => true)', awaitPromise: true }, sessionId);
    const evaluate = async <T>(expression: string): Promise<T> =>
      (await cdp.send<{ result: { value?: T } }>('Runtime.evaluate', { expression, returnByValue: true }, sessionId)).result.value as T;
    if (o.absent?.length) {
      const text = await evaluate<string>('document.body.innerText');
      const shown = o.absent.filter((t) => text.includes(t));
      if (shown.length) throw new Error(`the page ${o.url} shows ${shown.map((t) => JSON.stringify(t)).join(', ')}, which it must not`);
    }
    let clip: Rect = { x: 0, y: 0, width, height };
    if (o.clip) {
      const r = await evaluate<Rect | null>(o.clip);
      if (!r || ![r.x, r.y, r.width, r.height].every(Number.isFinite) || r.width < 1 || r.height < 1)
        throw new Error(`the clip of ${o.url} is not a region: ${JSON.stringify(r)}`);
      // Whole pixels inside the viewport, so the PNG has exactly width × height pixels.
      const x = Math.max(0, Math.floor(r.x));
      const y = Math.max(0, Math.floor(r.y));
      clip = { x, y, width: Math.min(width, Math.ceil(r.x + r.width)) - x, height: Math.min(height, Math.ceil(r.y + r.height)) - y };
    }
    const shot = await cdp.send<{ data: string }>(
      'Page.captureScreenshot',
      { format: 'png', captureBeyondViewport: false, ...(o.clip ? { clip: { ...clip, scale: 1 } } : {}) },
      sessionId,
    );
    return { png: Buffer.from(shot.data, 'base64'), width: clip.width, height: clip.height, shownAfterMs };
  } catch (err) {
    const tail = stderr()
      .split('\n')
      .filter((l) => l.trim() && !/dbus|bus\.cc|unexpected operator/.test(l))
      .slice(-2)
      .join(' / ');
    throw tail ? new Error(`${(err as Error).message} (chromium: ${tail})`, { cause: err }) : err;
  } finally {
    await cdp.send('Browser.close').catch(() => undefined);
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    }
  }
}
