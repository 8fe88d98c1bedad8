/**
 * Helpers for the session tests: real bash, real processes, no mocks.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { BashSession, type BashSessionOptions } from '../../../src/session';

const open: BashSession[] = [];

/** Starts a session that is closed after the test (short grace so kills are quick). */
export async function startSession(options: BashSessionOptions = {}): Promise<BashSession> {
  // The default cwd is this process's; in a checkout under /tmp the sandbox's private /tmp would hide it, and
  // BashSession refuses a cwd it cannot honour: start such sessions in a temp workspace of their own.
  const tmp = os.tmpdir();
  if (options.cwd === undefined && options.workspace === undefined && (process.cwd() === tmp || process.cwd().startsWith(tmp + path.sep))) {
    options = { ...options, cwd: tempDir('aj-cwd-') };
  }
  // A cwd inside one of this file's temp dirs makes that dir the session's workspace (writable, given to the session user).
  const workspace =
    options.workspace ?? (options.cwd ? dirs.find((d) => options.cwd === d || options.cwd!.startsWith(d + path.sep)) : undefined);
  const s = await BashSession.start({ killGraceMs: 200, timeoutMs: 10_000, ...(workspace ? { workspace } : {}), ...options });
  open.push(s);
  return s;
}

/** Closes every session started with {@link startSession}; call in afterEach. */
export async function closeSessions(): Promise<void> {
  const all = open.splice(0);
  await Promise.all(all.map((s) => s.close()));
}

/** A fresh temporary directory, removed by {@link removeTempDirs}. */
const dirs: string[] = [];
export function tempDir(prefix = 'aj-test-'): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  dirs.push(d);
  return d;
}
export function removeTempDirs(): void {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
}

/** A process as seen in /proc. */
export interface Proc {
  pid: number;
  ppid: number;
  sid: number;
  state: string;
  cmdline: string;
}

/** Every process on the machine, with its command line. */
export function processes(): Proc[] {
  const out: Proc[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      let cmdline = '';
      try {
        cmdline = fs.readFileSync(`/proc/${name}/cmdline`, 'utf8').split('\0').join(' ').trim();
      } catch {
        /* zombie or gone */
      }
      out.push({ pid: Number(name), state: f[0] ?? '?', ppid: Number(f[1]), sid: Number(f[3]), cmdline });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** Processes whose command line contains `token`, or whose session id is `sid`. */
export function findProcesses(match: { token?: string; sid?: number }): Proc[] {
  return processes().filter(
    (p) =>
      p.pid !== process.pid &&
      ((match.token !== undefined && p.cmdline.includes(match.token)) || (match.sid !== undefined && p.sid === match.sid)),
  );
}

/** Live (non-zombie) processes matching, see {@link findProcesses}. */
export function liveProcesses(match: { token?: string; sid?: number }): Proc[] {
  return findProcesses(match).filter((p) => p.state !== 'Z');
}

/**
 * Waits until no process matches (zombies included): orphans' zombies are
 * reaped by init, which here polls about once a second.
 */
export async function waitGone(match: { token?: string; sid?: number }, timeoutMs = 5000): Promise<Proc[]> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const left = findProcesses(match);
    if (left.length === 0 || Date.now() > end) return left;
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Polls `done` every 50 ms until it returns true, for at most `timeoutMs`: how a test waits for
 * something a background job or the kernel does, instead of a fixed pause a loaded machine outlasts.
 * @throws Error naming `what`, when it did not happen in time
 */
export async function waitUntil(what: string, done: () => boolean, timeoutMs = 30_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A unique token to put in a command line (e.g. as a sleep argument) and find later: `seconds` (default 1000) and a
 * random fraction, so `Number(token) * 1000` is how long a `sleep` of it runs, ms.
 */
export function uniqueSleepSeconds(seconds = 1000): string {
  // sleep accepts fractional seconds; the fraction makes the cmdline unique.
  return `${seconds}.${Math.floor(Math.random() * 1e9)}`;
}

/** Measures how long `fn` takes, ms. */
export async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t = Date.now();
  const v = await fn();
  return [v, Date.now() - t];
}

/**
 * Hands a command the tokens in its bash's heap, as the strongest attacker
 * would have them: no process of the session can read bash's memory any
 * more (its bash is non-dumpable: test/unit/attack/reach-into-bash.test.ts),
 * so this test process (root, outside) reads `/proc/<bashPid>/mem` while the
 * command runs and writes the tokens to `file`: status tokens
 * (`AJ<32 hex>.noposix`) one per line, then housekeeping ones prefixed `hk:`.
 * For the tests of what the worker does with a forged record that carries a
 * real token. Resolves once written (or after `timeoutMs`).
 */
export async function handOverTokens(bashPid: number, file: string, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    try {
      const heap = /^([0-9a-f]+)-([0-9a-f]+) .*\[heap\]$/m.exec(fs.readFileSync(`/proc/${bashPid}/maps`, 'utf8'));
      if (heap) {
        const start = parseInt(heap[1]!, 16);
        const buf = Buffer.alloc(parseInt(heap[2]!, 16) - start);
        const fd = fs.openSync(`/proc/${bashPid}/mem`, 'r');
        try {
          fs.readSync(fd, buf, 0, buf.length, start);
        } finally {
          fs.closeSync(fd);
        }
        const text = buf.toString('latin1');
        const status = [...new Set(text.match(/AJ[0-9a-f]{32}[.]noposix/g) ?? [])];
        const hk = [...new Set([...text.matchAll(/__aj_e (AJ[0-9a-f]{32})/g)].map((m) => `hk:${m[1]}`))];
        if (status.length > 0) {
          fs.writeFileSync(`${file}.part`, [...status, ...hk].join('\n') + '\n');
          fs.renameSync(`${file}.part`, file);
          return;
        }
      }
    } catch {
      /* bash not there yet */
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}
