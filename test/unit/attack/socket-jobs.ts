/**
 * What the attack tests on a session's socket memory share (rounds 18 and 20): the machine-pool lock
 * held for the whole file, the wait for a background job that fills kernel memory, the host-side
 * measures, and the note of a session killed for its sockets.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs } from '../session/helpers';
import { holdMachinePool, releaseMachinePool } from './machine-pool';

/**
 * Registers the hooks of a test file that fills or measures the machine's kernel memory: its
 * sessions closed after each test, the machine-pool lock ({@link holdMachinePool}) held from the
 * first test to the last (no other test file fills or measures the pools meanwhile), its temporary
 * folders removed at the end. Call once, at the top level of the file.
 */
export function holdMachinePoolForFile(): void {
  afterEach(closeSessions);
  beforeAll(() => holdMachinePool());
  afterAll(releaseMachinePool);
  afterAll(removeTempDirs);
}

/** The note of a session whose jobs were killed for their sockets' kernel memory (session.ts), in the command's result or the next one's. */
export const KILLED_FOR_SOCKETS = /sockets held more kernel memory than (its|the session's) socket budget/;

/** The host's available memory, bytes (`/proc/meminfo` MemAvailable). */
export const available = (): number => Number(/^MemAvailable:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;

/** The host's unreclaimable kernel slab memory, bytes (`/proc/meminfo` SUnreclaim). */
export const unreclaimable = (): number => Number(/^SUnreclaim:\s+(\d+) kB/m.exec(fs.readFileSync('/proc/meminfo', 'utf8'))![1]) * 1024;

/** The machine-wide count of TCP buffer pages (`/proc/net/sockstat` "TCP: mem", the host's view). */
export const tcpPages = (): number => Number(/TCP:.* mem (\d+)/.exec(fs.readFileSync('/proc/net/sockstat', 'utf8'))![1]);

/** Whether a process whose cwd is `ws` and whose command line names `script` is running. */
function jobAlive(ws: string, script: string): boolean {
  return fs.readdirSync('/proc').some((pid) => {
    try {
      return (
        /^\d+$/.test(pid) && fs.readlinkSync(`/proc/${pid}/cwd`) === ws && fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(script)
      );
    } catch {
      return false;
    }
  });
}

/**
 * Waits (60 s at most) until the job of `script` started in `ws` has written ./held or, once it
 * has written ./started, is gone (no process whose cwd is `ws` and whose command line names
 * `script`), sampling `measure` every 50 ms, and once more 300 ms after ./held (what the job's last
 * socket queued by then).
 * @returns the lowest and highest samples, what the job wrote to ./held ('' when it wrote nothing), and
 *   whether the job still ran at the end (`running`: it wrote nothing in 60 s yet was not killed, on a slow machine)
 */
export async function watchJob(
  ws: string,
  script: string,
  measure: () => number,
): Promise<{ low: number; peak: number; held: string; running: boolean }> {
  const file = path.join(ws, 'held');
  let low = measure();
  let peak = low;
  const sample = (): void => {
    const v = measure();
    low = Math.min(low, v);
    peak = Math.max(peak, v);
  };
  const until = Date.now() + 60_000;
  while (!fs.existsSync(file) && Date.now() < until) {
    sample();
    if (fs.existsSync(path.join(ws, 'started')) && !jobAlive(ws, script)) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (fs.existsSync(file)) await new Promise((r) => setTimeout(r, 300));
  sample();
  const held = fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : '';
  return { low, peak, held, running: held === '' && jobAlive(ws, script) };
}
