/**
 * Kind 3 (adversary round 30, noticed): background jobs left writing to an ended command's output FIFO
 * (`(cat /dev/zero &)`) kept the worker draining and dropping their bytes for the session's life, a third of a core
 * per session. The drain is bounded (capture.ts `DRAIN_BURST_BYTES`): past it the worker closes its reader, the writers
 * get EPIPE (SIGPIPE), the worker's CPU falls back and the next result says so; a job that logs now and then is left.
 */
import * as os from 'node:os';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** The worker's (this process's) CPU over `fn`, as a share of one core, and its wall time in ms. */
async function cpuOver<T>(fn: () => Promise<T>): Promise<{ share: number; ms: number; value: T }> {
  const cpu = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  const value = await fn();
  const used = process.cpuUsage(cpu);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  return { share: (used.user + used.system) / 1000 / ms, ms, value };
}

describe("kind 3: what background jobs write into an ended command's output", () => {
  test('four `cat /dev/zero` jobs: the worker closes the output, they die of SIGPIPE, its CPU falls back, the next result says so', async () => {
    const s = await startSession({ cwd: tempDir() });
    // Their bytes fill this command's own output too (cut from the middle); the drain starts once it has ended.
    const r = await s.run('for i in 1 2 3 4; do (cat /dev/zero &); done');
    // A window of the session's own (a command that sleeps), over which the worker's CPU is measured.
    const { share, ms, value } = await cpuOver(() => s.run('sleep 2; echo cats: $(pgrep -c -x cat)'));
    console.log(
      `worker CPU over ${Math.round(ms)} ms with the jobs: ${(share * 100).toFixed(1)}% of a core (load ${os
        .loadavg()
        .map((l: number) => l.toFixed(1))
        .join(' ')})`,
    );
    // Said in the result of the command it ended after, or of the next one when it came later.
    expect(r.output + value.output).toMatch(/kept writing to its output after it ended \(\d+ bytes dropped/);
    expect(value.output).toContain('cats: 0');
    expect(share).toBeLessThan(0.15);
  });

  test('a job that logs a line now and then to the output keeps running, and nothing is said', async () => {
    const s = await startSession({ cwd: tempDir() });
    await s.run('(while :; do echo tick; date +%s%N > alive; sleep 0.1; done &); echo started');
    const r = await s.run('sleep 2; a=$(cat alive); sleep 0.5; [ "$(cat alive)" != "$a" ] && echo still-alive');
    expect(r.output).toContain('still-alive');
    expect(r.output).not.toMatch(/kept writing/);
  });
});
