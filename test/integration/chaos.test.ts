/**
 * The chaos run's short form, a slow suite (test/slow-suites.js; `.ci/run`
 * runs it after `npm test`): runs under random worker SIGKILLs and a server
 * restart all complete, no command runs twice, no
 * recorded model step is asked for again, and every hit run recovers
 * (C11: no run waits for a workflow timeout). The recovery-time target
 * (≤ 10 s) is a figure `npm run chaos`, the full form, measures and prints;
 * here the bound only catches a run that hangs.
 */
import { runChaos } from '../../src/dev/bench/chaos';

test('chaos, short form: 4 runs, 2 worker kills, 1 server restart', async () => {
  const report = await runChaos({ runs: 4, kills: 2, serverRestarts: 1, verbose: false });
  expect(report).toMatchObject({
    runsStarted: 4,
    runsCompleted: 4,
    commandsRunTwice: 0,
    completedStepsRequestedAgain: 0,
    kills: 2,
    failures: [],
  });
  expect(report.recoverySeconds.length).toBeGreaterThan(0);
  expect(report.maxRecoverySeconds).toBeLessThan(30);
  // Every live worker polled again after the restart (else `failures` says which did not).
  expect(report.workerReturnSeconds).toHaveLength(1);
  expect(report.serverRecoverySeconds.length).toBeGreaterThan(0);
}, 300_000);
