/** `agent-jobs worker`: runs a worker process (the same as `node dist/worker.js`). */
import type { Command } from 'commander';
import { SHARED_TASK_QUEUE } from '../../config';
import type * as WorkerModule from '../../worker';
import type { RunningWorker } from '../../worker';
import { reportError } from '../errors';
import { jsonText } from '../render/text';

/** What `worker --json` prints once both workers run. */
export interface WorkerInfo {
  workerId: string;
  pid: number;
  namespace: string;
  address: string;
  /** The queue every worker serves (runs, model calls, session starts). */
  sharedTaskQueue: string;
  /** This process's own queue (the commands of the bash sessions it holds). */
  sessionTaskQueue: string;
}

/** The data `worker --json` prints, from a started worker. */
export function workerInfo(
  worker: Pick<RunningWorker, 'workerId' | 'namespace' | 'address' | 'sessionTaskQueue'>,
  pid = process.pid,
): WorkerInfo {
  return {
    workerId: worker.workerId,
    pid,
    namespace: worker.namespace,
    address: worker.address,
    sharedTaskQueue: SHARED_TASK_QUEUE,
    sessionTaskQueue: worker.sessionTaskQueue,
  };
}

/**
 * Prints a started worker: with `json`, {@link WorkerInfo} as one JSON line
 * on stdout (a script can read one line and go on); the text form is the
 * worker's own `polling` log line on stderr, so nothing more is printed.
 */
export function renderWorkerInfo(info: WorkerInfo, json: boolean): void {
  if (json) process.stdout.write(`${jsonText(info)}\n`);
}

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description(
      "run a worker: the agentRun workflow, Claude calls, and this machine's bash sessions (Ctrl-C, SIGTERM or SIGHUP drains it: running commands finish, up to AGENT_JOBS_SHUTDOWN_GRACE; a second Ctrl-C or SIGTERM exits at once)",
    )
    .option(
      '--json',
      'once started, print {"workerId","pid","namespace","address","sharedTaskQueue","sessionTaskQueue"} as one line on stdout (logs go to stderr)',
    )
    .action(async (opts: { json?: boolean }) => {
      // Loaded here, not at the top: the worker's modules (the SDK's worker, the Anthropic SDK, the
      // session) take about 0.3 s to load, which every other command of the CLI would pay at start.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { installRuntime, startWorker, stopOnSignals } = require('../../worker') as typeof WorkerModule;
      let worker: RunningWorker;
      try {
        installRuntime();
        worker = await startWorker();
      } catch (err) {
        // Once installed, the SDK runtime (its log forwarding) keeps the event
        // loop alive: without an exit here a worker that cannot start would
        // print its error and hang.
        reportError(err);
        process.exit(process.exitCode ?? 1);
      }
      stopOnSignals(worker);
      renderWorkerInfo(workerInfo(worker), opts.json === true);
      await worker.done;
    });
}
