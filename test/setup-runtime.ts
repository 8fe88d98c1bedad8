import { DefaultLogger, Runtime } from '@temporalio/worker';

// Replay workers created in the test process log errors only: the INFO
// state changes of every replay, and the WARN lines of the replays that
// patching.test.ts expects to fail, would bury the test output.
try {
  // Core logs go straight to the console (forwarding them would keep a timer
  // alive in the jest process, which then never exits).
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, console: {} } },
  });
} catch {
  /* already installed in this jest worker process */
}
