/**
 * One test file at a time for the tests that fill or measure a machine-wide kernel pool (TCP and
 * UDP buffer memory, unreclaimable slab): two of them at once, in jest's two workers, read each
 * other's use as their own, or push the pool into pressure so that the other's job holds nothing.
 * The lock is a folder in the temporary directory holding the owner's pid; one whose owner is gone
 * is taken over.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const LOCK = path.join(os.tmpdir(), 'agent-jobs-machine-pool.lock');

function ownerAlive(): boolean {
  try {
    process.kill(Number(fs.readFileSync(path.join(LOCK, 'pid'), 'utf8')), 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Waits until this process holds the machine-pool lock (polling every 100 ms).
 * @throws Error when another live process held it for `timeoutMs` (default 5 minutes)
 */
export async function holdMachinePool(timeoutMs = 300_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      fs.writeFileSync(path.join(LOCK, 'pid'), String(process.pid));
      return;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    // A lock without a pid file is one being made (or left by a process killed in between): gone after a while.
    const stat = fs.statSync(LOCK, { throwIfNoEntry: false });
    const stale = stat !== undefined && (fs.existsSync(path.join(LOCK, 'pid')) ? !ownerAlive() : Date.now() - stat.mtimeMs > 10_000);
    if (stale) fs.rmSync(LOCK, { recursive: true, force: true });
    else if (Date.now() > until) throw new Error(`another test process held ${LOCK} for ${timeoutMs} ms`);
    else await new Promise((r) => setTimeout(r, 100));
  }
}

/** Gives the lock up, if this process holds it. */
export function releaseMachinePool(): void {
  try {
    if (Number(fs.readFileSync(path.join(LOCK, 'pid'), 'utf8')) === process.pid) fs.rmSync(LOCK, { recursive: true, force: true });
  } catch {
    /* not held */
  }
}
