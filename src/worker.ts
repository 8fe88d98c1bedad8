/**
 * Worker entry: one process runs two Temporal workers.
 *
 * - Worker A on the shared queue `agent-jobs`: the agentRun workflow,
 *   `callClaude` and `openSession`.
 * - Worker B on this process's own queue `agent-jobs.session.<workerId>`:
 *   `runCommand`, `runEdit`, `restartSession`, `closeSession` over the bash sessions
 *   this process holds (session affinity).
 *
 * Run it with `agent-jobs worker` or `node dist/worker.js`. The first
 * SIGTERM, SIGINT or SIGHUP drains it ({@link RunningWorker.drain}): no new sessions
 * or commands here, running commands finish (up to
 * `AGENT_JOBS_SHUTDOWN_GRACE`), the runs are told their sessions are
 * closing, then it exits. A second SIGTERM or SIGINT exits at once, killing
 * every bash process group ({@link stopOnSignals}).
 */
import { existsSync, writeSync } from 'node:fs';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DefaultLogger, NativeConnection, Runtime, Worker, type LogLevel, type LogMetadata, type WorkerOptions } from '@temporalio/worker';
import { createAnthropicClient, createClaudeActivities } from './activities/claude';
import { createPayloadActivities } from './activities/payloads';
import { createLivenessActivities } from './activities/liveness';
import { writePresence } from './activities/presence';
import { createSessionActivities, SessionRegistry } from './activities/session';
import {
  ensureSessionUser,
  isSecretEnvName,
  isSecretEnvValue,
  makeNonDumpable,
  reapOrphanedSessions,
  resolveSandbox,
  containerSandboxProblem,
  seccompLauncherNote,
  SessionHost,
  type SandboxMode,
  sessionUserName,
  workerIsRoot,
} from './session';
import { hideFromProcEnviron } from './proc-environ';
import { ClaimCheckCodec, codecKeysSource, createdKeysMessage, dataConverterFromEnv } from './codec';
import {
  SESSION_HEARTBEAT_THROTTLE,
  SESSION_WORKER_SHUTDOWN_GRACE_MS,
  SHARED_TASK_QUEUE,
  SHUTDOWN_FORCE_TIME_MS,
  STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT,
  WORKER_HEARTBEAT_INTERVAL,
  WORKFLOW_TASK_SLOTS,
  sessionActivitySlots,
  sessionTaskQueue,
  sharedActivitySlots,
} from './config';
import {
  auditLogPath,
  claudeIdleTimeoutMs,
  claudeTimeoutMs,
  extraSecretEnvNames,
  LOG_LEVELS,
  logLevel,
  maxSessions as readMaxSessions,
  prebuiltWorkflowBundle,
  sessionHiddenPaths,
  shutdownGraceMs,
  temporalSettings,
  workerId as pickWorkerId,
  workspaceRoot,
  checkpointRoot,
} from './settings';
import { connect, ensureSearchAttributes, type AgentJobsClient } from './client';
import { sessionClosingSignal } from './contract';
import { workerShutDownReason } from './shared/notes';

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
  /** How long {@link drain} lets running commands finish, in ms (`AGENT_JOBS_SHUTDOWN_GRACE`). */
  shutdownGraceMs: number;
  /** Resolves when both workers have stopped and every session is closed. */
  done: Promise<void>;
  /** Starts a graceful shutdown: {@link drain} without waiting for it. */
  shutdown(): void;
  /**
   * Drains the worker, then stops it: from now on it takes no new session
   * (`openSession` refuses, retryably: the session opens on another worker)
   * and no new command (`runCommand` refuses before running anything); it
   * stops polling the shared queue (workflow tasks and model calls move to
   * other workers; model calls in flight get the grace to finish); it
   * signals `sessionClosing` to every run whose session it holds; it lets
   * the running commands finish for up to {@link shutdownGraceMs} and then
   * kills those still running (each answers with what it printed, marked
   * as killed at shutdown); then it stops its session queue and closes every
   * session. Resolves once {@link done} did. Idempotent. The process exits by
   * itself at grace + `SHUTDOWN_FORCE_TIME_MS` if something hangs.
   * @param why what asked for it, for the logs and Claude (`SIGTERM`)
   */
  drain(why: string): Promise<void>;
  /**
   * Exits the process now, with `code`: SIGKILLs every bash session's
   * processes first (no orphans; the sentinels kill what is forked after).
   */
  exitNow(code: number): never;
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
  const graceMs = shutdownGraceMs();
  // First, before other work (for an instant this process has another euid):
  // non-dumpable, so even a process of our own uid needs CAP_SYS_PTRACE to read our memory.
  const dumpable = makeNonDumpable();
  if (!dumpable.done) logger.debug(`worker stays dumpable: ${dumpable.why}`);
  // What this process's sessions share: the process guard's watchdog, and setpriv, bwrap and the session user looked up once.
  const sessionHost = new SessionHost();
  // Who bash runs as, and in what sandbox: decided (and the user created) before any session.
  const sessionUser = workerIsRoot() ? ensureSessionUser(sessionUserName(), sessionHost.users).user : null;
  let sandboxMode: string;
  try {
    sandboxMode = resolveSandbox(undefined, undefined, sessionHost.bwrapProbes).mode;
    if (sandboxMode === 'none') {
      logger.warn('sandbox none (AGENT_JOBS_SANDBOX=none, or no working bwrap): commands see the whole machine as their user may');
      // Whether the seccomp filter still holds without bwrap (a python3 launcher loads it), said once here.
      const launcher = sessionHost.seccompLauncher(false);
      if (launcher.python) logger.info(seccompLauncherNote(launcher));
      else logger.warn(seccompLauncherNote(launcher));
    }
  } catch (err) {
    // Every session start will fail with this message: a sandbox asked for is never dropped.
    sandboxMode = 'unavailable';
    logger.error(`${(err as Error).message}; no bash session can start on this worker`);
  }
  const inContainer = containerSandboxProblem(sandboxMode as SandboxMode | 'unavailable');
  if (inContainer) throw new Error(inContainer);
  if (sessionUser)
    logger.info(
      sandboxMode === 'bwrap'
        ? `bash sessions run (no capabilities) as their workspace's owner, or as user ${sessionUser} where root owns it (granted by ACL entries), sandbox bwrap`
        : `bash sessions run (no capabilities) as user ${sessionUser}, granted each workspace by ACL entries, sandbox ${sandboxMode}`,
    );
  else
    logger.warn(
      `the worker is not root: bash sessions run as the worker's own user, which can read this process's memory and environment; sandbox ${sandboxMode}`,
    );
  // Before any bash starts: secrets out of /proc/<this pid>/environ (see src/proc-environ.ts).
  const secretNames = extraSecretEnvNames();
  const environ = hideFromProcEnviron((name) => isSecretEnvName(name, secretNames) || isSecretEnvValue(process.env[name] ?? ''));
  if (environ.skipped) Runtime.instance().logger.warn(`secrets stay readable in /proc/${process.pid}/environ: ${environ.skipped}`);
  else if (environ.hidden.length > 0) Runtime.instance().logger.debug(`hid ${environ.hidden.join(', ')} in /proc/${process.pid}/environ`);
  // Encryption of every payload (src/codec), on unless AGENT_JOBS_CODEC_KEYS=none, for both workers like the client;
  // read before the first connection, so bad keys stop the worker in one line.
  const dataConverter = dataConverterFromEnv(process.env, (file) => {
    logger.warn(createdKeysMessage(file));
  });
  const workerDataConverter = dataConverter ? { dataConverter } : {};
  // The workflow asks for it (payloadOffload) before a workflow task over its bound (C30).
  const claimCheck = dataConverter?.payloadCodecs?.find((c): c is ClaimCheckCodec => c instanceof ClaimCheckCodec);
  if (dataConverter) {
    logger.info(`payloads encrypted with the codec keys at ${codecKeysSource()}`);
    logger.info(
      claimCheck
        ? `payloads over ${claimCheck.options.thresholdBytes} bytes (encrypted) go to the blob store ${claimCheck.options.store.description}, history keeps a reference`
        : 'no claim check (AGENT_JOBS_BLOB_STORE=none): every payload stays in history',
    );
  } else
    logger.warn(
      'payloads in plaintext (AGENT_JOBS_CODEC_KEYS=none): the server, its backups and the UI see every task, command and output',
    );
  const settings = temporalSettings();
  const jobs = await connect({ connectTimeoutMs: 10_000 });
  try {
    const added = await ensureSearchAttributes(jobs.connection, jobs.namespace);
    if (added.length > 0) Runtime.instance().logger.info(`registered search attributes ${added.join(', ')}`);
  } finally {
    await jobs.close();
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
    checkpointRoot: checkpointRoot(),
    sessionOptions: {
      auditLog: auditLogPath(),
      secretEnvNames: secretNames,
      // What no session may see: every run's data, the audit log, this project's files, the codec keys.
      hidePaths: sessionHiddenPaths(),
      host: sessionHost,
    },
  });
  const { openSession, runCommand, runEdit, restartSession, closeSession, commandOutcome, createWorktree } = sessionActivities;
  const identity = `${id}@agent-jobs`;

  const shared = await Worker.create({
    ...workerDataConverter,
    connection,
    namespace: settings.namespace,
    taskQueue: SHARED_TASK_QUEUE,
    identity,
    ...workflowSource(),
    activities: {
      ...createClaudeActivities(createAnthropicClient({ timeoutMs: claudeTimeoutMs() }), { idleTimeoutMs: claudeIdleTimeoutMs() }),
      openSession,
      ...createLivenessActivities(),
      ...createPayloadActivities(claimCheck?.options.thresholdBytes ?? null),
    },
    // A dead worker's cached workflows move to a live worker after this long (default 10 s).
    stickyQueueScheduleToStartTimeout: STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT,
    maxConcurrentActivityTaskExecutions: sharedActivitySlots(cap.max),
    // Few at once, so a task a starved machine starts still ends inside the workflow task timeout (default 40).
    maxConcurrentWorkflowTaskExecutions: WORKFLOW_TASK_SLOTS,
    // Shut down first in a drain: model calls and session opens in flight get the grace, then are cancelled (and retried elsewhere).
    shutdownGraceTime: graceMs,
    shutdownForceTime: graceMs + SHUTDOWN_FORCE_TIME_MS,
    // The workflow cache keeps the SDK's default, sized to the heap (about 2,300 runs at a 4 GiB heap), far above any cap.
  });
  const sessions = await Worker.create({
    ...workerDataConverter,
    connection,
    namespace: settings.namespace,
    taskQueue: queue,
    identity,
    activities: { runCommand, runEdit, restartSession, closeSession, commandOutcome, createWorktree },
    // Heartbeats reach the server every second, not every 4 s (0.8 × the timeout), so a second of slowness is not a lost worker.
    maxHeartbeatThrottleInterval: SESSION_HEARTBEAT_THROTTLE,
    // A slot for every session: a command that waits for one past the schedule-to-start timeout counts as a lost worker.
    maxConcurrentActivityTaskExecutions: sessionActivitySlots(cap.max),
    // Shut down once the drain let every command finish or killed it (see drain below).
    shutdownGraceTime: SESSION_WORKER_SHUTDOWN_GRACE_MS,
    shutdownForceTime: SHUTDOWN_FORCE_TIME_MS,
  });

  // This machine's liveness checks see at once when this process is gone (src/activities/presence.ts).
  const removePresence = writePresence(id);
  const done = Promise.all([shared.run(), sessions.run()])
    .then(() => undefined)
    .finally(async () => {
      removePresence?.();
      await registry.closeAll();
      await connection.close();
    });
  let draining: Promise<void> | undefined;
  const exitNow = (code: number): never => {
    const killed = registry.killAllNow();
    lastLogLine('WARN', `exiting now: killed every process of ${killed} bash sessions`);
    process.exit(code);
  };
  const drain = (why: string): Promise<void> => {
    draining ??= drainWorker({ why, graceMs, registry, workerId: id, shared, sessions, done, exitNow, logger });
    return draining;
  };
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
    shutdownGraceMs: graceMs,
    done,
    shutdown: () => void drain('shutdown asked'),
    drain,
    exitNow,
  };
}

/** The level {@link installRuntime} installed (for {@link lastLogLine}). */
let installedLevel: LogLevel = 'INFO';

/**
 * Writes a log line the way the SDK's `DefaultLogger` does, but
 * synchronously: for the last words of a process that exits right after
 * (an asynchronous write to a pipe would be lost).
 */
function lastLogLine(level: 'INFO' | 'WARN' | 'ERROR', message: string): void {
  if (LOG_LEVELS.indexOf(level) < LOG_LEVELS.indexOf(installedLevel)) return;
  try {
    writeSync(2, `${new Date().toISOString()} [${level}] ${message}\n`);
  } catch {
    /* stderr is gone: nothing to tell */
  }
}

/** What {@link drainWorker} works on: one worker process's parts. */
interface DrainParts {
  why: string;
  graceMs: number;
  registry: SessionRegistry;
  workerId: string;
  shared: Worker;
  sessions: Worker;
  done: Promise<void>;
  exitNow(code: number): never;
  logger: ReturnType<typeof Runtime.instance>['logger'];
}

/** `Worker.shutdown()`, when the worker still runs (it throws in any other state). */
function shutDown(worker: Worker): void {
  if (worker.getState() === 'RUNNING') worker.shutdown();
}

/** The drain of {@link RunningWorker.drain}. */
async function drainWorker(p: DrainParts): Promise<void> {
  const { registry, logger, graceMs } = p;
  const started = Date.now();
  const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(1))}s`;
  // Whatever hangs, the process is gone at grace + force.
  const deadline = setTimeout(() => {
    lastLogLine('ERROR', `not stopped within the grace + ${seconds(SHUTDOWN_FORCE_TIME_MS)}: exiting now`);
    p.exitNow(1);
  }, graceMs + SHUTDOWN_FORCE_TIME_MS);
  deadline.unref();
  registry.startDraining(workerShutDownReason(p.why));
  const holders = registry.holders();
  logger.info(
    `draining (${p.why}): ${registry.runningCommands} commands running, up to ${seconds(graceMs)}; ${holders.length} sessions held; no new sessions or commands here`,
  );
  shutDown(p.shared);
  const told = tellRunsSessionsClose(p.workerId, holders, workerShutDownReason(p.why), logger);
  const graceOver = new AbortController();
  await Promise.race([registry.whenNoCommands(), sleep(graceMs, undefined, { signal: graceOver.signal }).catch(() => undefined)]);
  graceOver.abort();
  if (registry.runningCommands > 0) {
    logger.warn(`shutdown grace of ${seconds(graceMs)} over: killing ${registry.runningCommands} commands still running`);
    registry.killRunning(graceMs);
    await registry.whenNoCommands();
  }
  await told;
  shutDown(p.sessions);
  try {
    await p.done;
  } finally {
    clearTimeout(deadline);
  }
  // The SDK runtime (and its logger) is gone once both workers stopped.
  lastLogLine('INFO', `drained: stopped ${seconds(Date.now() - started)} after ${p.why}`);
}

/**
 * Signals `sessionClosing` to every run holding a session here (best
 * effort: a run that already ended, or a server that does not answer, is
 * logged; the run then learns from its next command's refusal).
 */
async function tellRunsSessionsClose(
  workerId: string,
  holders: { sessionId: string; workflowId: string }[],
  reason: string,
  logger: DrainParts['logger'],
): Promise<void> {
  if (holders.length === 0) return;
  let jobs: AgentJobsClient;
  try {
    jobs = await connect({ connectTimeoutMs: 5_000 });
  } catch (err) {
    logger.warn(`could not tell the runs their sessions are closing: ${(err as Error).message}`);
    return;
  }
  try {
    const results = await Promise.allSettled(
      holders.map(({ sessionId, workflowId }) =>
        jobs.temporal.workflow.getHandle(workflowId).signal(sessionClosingSignal, { sessionId, workerId, reason }),
      ),
    );
    const failed = results.filter((r) => r.status === 'rejected').length;
    logger.info(`told ${holders.length - failed} of ${holders.length} runs their bash sessions are closing`);
  } finally {
    await jobs.close();
  }
}

/** The signals that drain a worker ({@link stopOnSignals}). */
export const DRAIN_SIGNALS = ['SIGTERM', 'SIGINT', 'SIGHUP'] as const;

/**
 * Makes SIGTERM, SIGINT and SIGHUP stop `worker` the way a deploy wants: the
 * first one drains it ({@link RunningWorker.drain}), a second SIGTERM or
 * SIGINT exits at once ({@link RunningWorker.exitNow}: every bash process
 * group killed), with 128 + the signal's number. After a drain the process
 * exits with 0. The SDK's own signal handling is off (`installRuntime`).
 *
 * SIGHUP is among them because Node ends the process on it by default,
 * even under `nohup`: a closed terminal or ssh session would otherwise kill
 * every running command. A hangup often arrives twice (from the shell, then
 * from the kernel to the foreground process group), so a SIGHUP never
 * escalates: after the first signal it is ignored. Writes to a terminal
 * that hung up fail with EIO; those errors on stdout and stderr are
 * ignored, so the drain is not cut short by its own log lines.
 */
export function stopOnSignals(worker: RunningWorker): void {
  for (const stream of [process.stdout, process.stderr])
    stream.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EIO' && err.code !== 'EPIPE') throw err;
    });
  let first: NodeJS.Signals | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (first === undefined) {
      first = signal;
      void worker.drain(signal).then(
        () => process.exit(0),
        (err: unknown) => {
          lastLogLine('ERROR', `worker stopped with an error: ${err instanceof Error ? err.message : String(err)}`);
          worker.exitNow(1);
        },
      );
      return;
    }
    if (signal === 'SIGHUP') {
      lastLogLine('WARN', `SIGHUP after ${first}: ignored, the drain goes on`);
      return;
    }
    lastLogLine('WARN', `second signal (${signal} after ${first}): exiting now`);
    worker.exitNow(128 + osConstants.signals[signal]);
  };
  for (const signal of DRAIN_SIGNALS) process.on(signal, onSignal);
}

/**
 * The SDK's `DefaultLogger`, but the warning each session worker logs at its start ("No workflows
 * registered, not polling for workflow tasks") is a DEBUG line: a session task queue carries
 * activities only, by design, and a newcomer read the warning as a fault.
 */
class WorkerLogger extends DefaultLogger {
  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    super.log(level === 'WARN' && message.startsWith('No workflows registered') ? 'DEBUG' : level, message, meta);
  }
}

/**
 * Installs the SDK runtime logger (and the core's logs, forwarded to it) at
 * `AGENT_JOBS_LOG_LEVEL` (default INFO). Call once, before any worker.
 * @throws Error when `AGENT_JOBS_LOG_LEVEL` is not a log level (see `logLevel` in settings.ts)
 */
export function installRuntime(): void {
  const level = logLevel();
  installedLevel = level;
  // The SDK core's own logs go through the same logger and level.
  Runtime.install({
    logger: new WorkerLogger(level),
    // The worker drains on SIGTERM / SIGINT / SIGHUP itself (stopOnSignals); the SDK's default would stop polling at once.
    shutdownSignals: [],
    // The server's sign that this process lives (the liveness check of a session whose command timed out reads it).
    workerHeartbeatInterval: WORKER_HEARTBEAT_INTERVAL,
    telemetryOptions: { logging: { filter: { core: level, other: level }, forward: {} } },
  });
}

if (require.main === module) {
  // installRuntime inside the chain: a bad AGENT_JOBS_LOG_LEVEL is reported like any startup error, in one line.
  Promise.resolve()
    .then(() => installRuntime())
    .then(() => startWorker())
    .then((w) => {
      stopOnSignals(w);
      return w.done;
    })
    .catch((err: unknown) => {
      console.error(`agent-jobs worker: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    });
}
