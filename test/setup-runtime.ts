import { DefaultLogger, Runtime } from '@temporalio/worker';

// Replay workers created in the test process log at WARN: the INFO state
// changes of every replay would bury the test output.
try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  /* already installed in this jest worker process */
}
