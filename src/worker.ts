/**
 * Worker entry: one process runs two Temporal workers.
 *
 * - Worker A on the shared queue `agent-jobs`: the agentRun workflow,
 *   `callClaude` and `openSession`.
 * - Worker B on this process's own queue `agent-jobs.session.<workerId>`:
 *   `runCommand`, `restartSession`, `closeSession` over the bash sessions
 *   this process holds (session affinity).
 *
 * Run it with `agent-jobs worker` or `node dist/worker.js`. It stops on
 * SIGINT / SIGTERM, closing every bash session (killing their process
 * groups) on the way out.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { createAnthropicClient, createClaudeActivities } from './activities/claude';
import { createSessionActivities, SessionRegistry } from './activities/session';
import {
  ensureSessionUser,
  isSecretEnvName,
  makeNonDumpable,
  reapOrphanedSessions,
  resolveSandbox,
  sessionUserName,
  workerIsRoot,
} from './session';
import { hideFromProcEnviron } from './proc-environ';
import {
  SHARED_TASK_QUEUE,
  STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT,
  sessionActivitySlots,
  sessionTaskQueue,
  sharedActivitySlots,
} from './config';
import {
  auditLogPath,
  claudeIdleTimeoutMs,
  claudeTimeoutMs,
  dataDir,
  extraSecretEnvNames,
  logLevel,
  maxSessions as readMaxSessions,
  prebuiltWorkflowBundle,
  PROJECT_ROOT,
  sandboxHiddenPaths,
  workerId as pickWorkerId,
  workspaceRoot,
} from './settings';
import { connectClient, ensureSearchAttributes } from './temporal';

/** Where `npm run build` writes the pre-bundled workflow code (saves seconds at every worker start). */
export const WORKFLOW_BUNDLE_PATH = path.join(__dirname, 'workflow-bundle.js');

/**
 * Workflow code for Worker A: the pre-built bundle when running compiled
 * code and it exists, else the sources (bundled at start).
 */
export function workflowSource(): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (__filename.endsWith('.js') && existsSync(WORKFLOW_BUNDLE_PATH) && prebuiltWorkflowBundle()) {
    return { workflowBundle: { codePath: WORKFLOW_BUNDLE_PATH } };
  }
  return { workflowsPath: require.resolve('./workflows') };
}

/** A running worker process's two workers. */
export interface RunningWorker {
  workerId: string;
  sessionTaskQueue: string;
  /** Bash sessions this process holds at most (`AGENT_JOBS_MAX_SESSIONS`, or sized to the machine). */
  maxSessions: number;
  /** The Temporal namespace it polls in, and the server's address as configured. */
  namespace: string;
  address: string;
  /** Resolves when both workers have stopped and every session is closed. */
  done: Promise<void>;
  /** Starts a graceful shutdown. */
  shutdown(): void;
}

/**
 * Connects, checks the search attributes, creates both workers and starts
 * them.
 * @throws Error when `AGENT_JOBS_MAX_SESSIONS` is not a positive integer (before anything else is done)
 * @throws TemporalUnreachableError when the server does not answer; Error when search attributes are missing and cannot be added
 */
export async function startWorker(): Promise<RunningWorker> {
  const logger = Runtime.instance().logger;
  // A bad value stops the worker before it changes anything.
  const cap = readMaxSessions();
  // First, before other work (for an instant this process has another euid):
  // non-dumpable, so even a process of our own uid needs CAP_SYS_PTRACE to read our memory.
  const dumpable = makeNonDumpable();
  if (!dumpable.done) logger.debug(`worker stays dumpable: ${dumpable.why}`);
  // Who bash runs as, and in what sandbox: decided (and the user created) before any session.
  const sessionUser = workerIsRoot() ? ensureSessionUser(sessionUserName()).user : null;
  let sandboxMode: string;
  try {
    sandboxMode = resolveSandbox().mode;
    if (sandboxMode === 'none')
      logger.warn('sandbox none (AGENT_JOBS_SANDBOX=none, or no working bwrap): commands see the whole machine as their user may');
  } catch (err) {
    // Every session start will fail with this message: a sandbox asked for is never dropped.
    sandboxMode = 'unavailable';
    logger.error(`${(err as Error).message}; no bash session can start on this worker`);
  }
  if (sessionUser) logger.info(`bash sessions run as user ${sessionUser} (no capabilities), sandbox ${sandboxMode}`);
  else
    logger.warn(
      `the worker is not root: bash sessions run as the worker's own user, which can read this process's memory and environment; sandbox ${sandboxMode}`,
    );
  // Before any bash starts: secrets out of /proc/<this pid>/environ (see src/proc-environ.ts).
  const secretNames = extraSecretEnvNames();
  const environ = hideFromProcEnviron((name) => isSecretEnvName(name, secretNames));
  if (environ.skipped) Runtime.instance().logger.warn(`secrets stay readable in /proc/${process.pid}/environ: ${environ.skipped}`);
  else if (environ.hidden.length > 0) Runtime.instance().logger.debug(`hid ${environ.hidden.join(', ')} in /proc/${process.pid}/environ`);
  const { connection: clientConnection, settings } = await connectClient(10_000);
  try {
    const added = await ensureSearchAttributes(clientConnection, settings.namespace);
    if (added.length > 0) Runtime.instance().logger.info(`registered search attributes ${added.join(', ')}`);
  } finally {
    await clientConnection.close();
  }

  // Sessions left behind by a worker that died (SIGKILL, OOM) on this machine.
  const reaped = await reapOrphanedSessions();
  if (reaped.sessions.length > 0) {
    Runtime.instance().logger.warn(
      `cleaned up ${reaped.sessions.length} bash sessions left by dead workers (${reaped.killed} processes killed)`,
    );
  }

  const connection = await NativeConnection.connect(settings.nativeConnectionOptions);
  const id = pickWorkerId();
  const queue = sessionTaskQueue(id);
  const registry = new SessionRegistry(cap.max);
  const sessionActivities = createSessionActivities({
    registry,
    workerId: id,
    taskQueue: queue,
    workspaceRoot: workspaceRoot(),
    sessionOptions: {
      auditLog: auditLogPath(),
      secretEnvNames: secretNames,
      // What no session may see: every run's data, the audit log, this project's files.
      hidePaths: [dataDir(), workspaceRoot(), auditLogPath(), PROJECT_ROOT, ...sandboxHiddenPaths()],
    },
  });
  const { openSession, runCommand, restartSession, closeSession } = sessionActivities;
  const identity = `${id}@agent-jobs`;

  const shared = await Worker.create({
    connection,
    namespace: settings.namespace,
    taskQueue: SHARED_TASK_QUEUE,
    identity,
    ...workflowSource(),
    activities: {
      ...createClaudeActivities(createAnthropicClient({ timeoutMs: claudeTimeoutMs() }), { idleTimeoutMs: claudeIdleTimeoutMs() }),
      openSession,
    },
    // A dead worker's cached workflows move to a live worker after this long (default 10 s).
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT,
    maxConcurrentActivityTaskExecutions: sharedActivitySlots(cap.max),
    // The workflow cache keeps the SDK's default, sized to the heap (about 2,300 runs at a 4 GiB heap), far above any cap.
  });
  const sessions = await Worker.create({
    connection,
    namespace: settings.namespace,
    taskQueue: queue,
    identity,
    activities: { runCommand, restartSession, closeSession },
    // A slot for every session: a command that waits for one past the schedule-to-start timeout counts as a lost worker.
    maxConcurrentActivityTaskExecutions: sessionActivitySlots(cap.max),
    // Commands are cancelled (their process groups killed) when the worker stops.
    shutdownGraceTime: '2 seconds',
  });

  const done = Promise.all([shared.run(), sessions.run()])
    .then(() => undefined)
    .finally(async () => {
      await registry.closeAll();
      await connection.close();
    });
  Runtime.instance().logger.info(`worker ${id} polling ${SHARED_TASK_QUEUE} and ${queue}`, {
    namespace: settings.namespace,
    address: settings.address,
  });
  Runtime.instance().logger.info(`worker ${id} holds at most ${cap.max} bash sessions (${cap.from})`);
  return {
    workerId: id,
    sessionTaskQueue: queue,
    maxSessions: cap.max,
    namespace: settings.namespace,
    address: settings.address,
    done,
    shutdown: () => {
      shared.shutdown();
      sessions.shutdown();
    },
  };
}

/**
 * Installs the SDK runtime logger (and the core's logs, forwarded to it) at
 * `AGENT_JOBS_LOG_LEVEL` (default INFO). Call once, before any worker.
 * @throws Error when `AGENT_JOBS_LOG_LEVEL` is not a log level (see `logLevel` in settings.ts)
 */
export function installRuntime(): void {
  const level = logLevel();
  // The SDK core's own logs go through the same logger and level.
  Runtime.install({
    logger: new DefaultLogger(level),
    telemetryOptions: { logging: { filter: { core: level, other: level }, forward: {} } },
  });
}

if (require.main === module) {
  // installRuntime inside the chain: a bad AGENT_JOBS_LOG_LEVEL is reported like any startup error, in one line.
  Promise.resolve()
    .then(() => installRuntime())
    .then(() => startWorker())
    .then((w) => w.done)
    .catch((err: unknown) => {
      console.error(`agent-jobs worker: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    });
}
