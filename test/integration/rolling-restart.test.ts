/**
 * A rolling restart of three workers under load (src/dev/testing/rolling-restart.ts,
 * also `npm run rolling-restart` against any server): every run completes, no
 * command is killed mid-way without Claude being told, none runs twice, no
 * process of a session is left, each worker is gone within grace + force.
 * On a dev server of its own, so no other test file's worker takes its runs. A slow suite (test/slow-suites.js;
 * `.ci/run` runs it after `npm test`).
 */
import { startDevServerOnFreePort } from '../../src/dev/devserver';
import { rollingRestart } from '../../src/dev/testing/rolling-restart';

test('rolling restart of 3 workers under load (8 runs × 25 commands of ~1 s): every run completes, nothing lost', async () => {
  const server = await startDevServerOnFreePort({ headless: true });
  try {
    const report = await rollingRestart({ address: server.address, runs: 8, turns: 25, workers: 3, graceMs: 30_000 });
    console.log(`rolling restart: ${JSON.stringify(report)}`);
    expect(report.problems).toEqual([]);
    expect(report).toMatchObject({
      runs: 8,
      completed: 8,
      commandsRunTwice: 0,
      commandsUnreported: 0,
      commandsLostReported: 0,
      orphans: [],
    });
    expect(report.restarts).toHaveLength(3);
    // Each worker held work when it was told to stop, and the runs were told their sessions moved.
    expect(report.movedNotices).toBeGreaterThan(0);
    expect(report.commandsCompleted + report.commandsKilledReported).toBe(200);
  } finally {
    await server.stop();
  }
}, 600_000);
