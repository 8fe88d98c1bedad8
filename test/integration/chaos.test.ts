/**
 * The chaos run's short form (issue 4, item 7): runs under random worker
 * SIGKILLs and a server restart all complete, no command runs twice, no
 * recorded model step is asked for again, and runs recover within twice
 * the session heartbeat timeout. `npm run chaos` is the full form.
 */
import { runChaos } from '../../src/bench/chaos';

test('chaos, short form: 4 runs, 2 worker kills, 1 server restart', async () => {
  const report = await runChaos({ runs: 4, kills: 2, serverRestarts: 1, verbose: false });
  expect(report).toMatchObject({ runsStarted: 4, runsCompleted: 4, commandsRunTwice: 0, completedStepsRequestedAgain: 0, kills: 2, failures: [] });
  expect(report.recoverySeconds.length).toBeGreaterThan(0);
  expect(report.maxRecoverySeconds).toBeLessThanOrEqual(10);
}, 300_000);
