// One timeout for every unit test, a hang detector and not a speed claim (a project's `testTimeout` in
// jest.config.js is not applied; only the root's or this): many of them start real bash, bwrap, git and node
// processes, whose time grows with the machine's load (tests of 1 s on a quiet machine passed jest's default
// 5 s, and a loaded one failed them). A test that claims speed measures it and asserts the figure.
jest.setTimeout(120_000);

// Replay workers created in the test process log errors only: the INFO
// state changes of every replay, and the WARN lines of the replays that
// patching.test.ts expects to fail, would bury the test output.
// The SDK's runtime is installed when a test file first loads @temporalio/worker (the real module, nothing
// replaced), not here: loading it took 0.4 to 2.5 s of every test file's start, and most never use it.
jest.mock('@temporalio/worker', () => {
  const worker = jest.requireActual<typeof import('@temporalio/worker')>('@temporalio/worker');
  try {
    // Core logs go straight to the console (forwarding them would keep a timer
    // alive in the jest process, which then never exits).
    worker.Runtime.install({
      logger: new worker.DefaultLogger('ERROR'),
      telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, console: {} } },
    });
  } catch {
    /* already installed in this jest worker process */
  }
  return worker;
});
