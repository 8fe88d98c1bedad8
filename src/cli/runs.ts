/**
 * Reading a run's state from the CLI. Queries need a worker (it answers
 * them, for open and closed runs alike); the CLI checks that one is polling
 * before it asks, so it fails at once with a hint instead of waiting for the
 * query to time out. A closed run's status is read from its result when no
 * worker is up.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { isGrpcServiceError, ServiceError, WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SHARED_TASK_QUEUE } from '../config';
import { pendingApproval } from '../contract/display';
import { NO_USAGE, normalizeUsage, statusQuery, transcriptQuery } from '../contract';
import { conversationFromHistory } from '../conversation-history';
import type { AgentRunResult, StatusView, TranscriptView } from '../contract';
import type { agentRun } from '../workflows';
import { CliError } from './errors';

/** The CLI's view of a run: the status query's answer plus Temporal's own execution status. */
export interface RunView extends StatusView {
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, CONTINUED_AS_NEW. */
  executionStatus: string;
  runId: string;
}

export function runHandle(client: Client, workflowId: string): WorkflowHandle<typeof agentRun> {
  return client.workflow.getHandle<typeof agentRun>(workflowId);
}

/**
 * How long a poller counts as live after its last poll, in ms: 90 s.
 * Temporal lists every poller it saw in the last 5 minutes, and a live
 * worker polls again at least once a minute (the server's long-poll
 * expiry), so a poller older than this has stopped.
 */
const LIVE_POLLER_MS = 90_000;

/** How long the CLI waits for a worker to answer a query, in ms: 10 s. */
export const QUERY_DEADLINE_MS = 10_000;

/**
 * Whether a worker recently polled the shared queue for workflow tasks (and
 * so can answer queries). A worker that stopped within the last ~90 s may
 * still count; {@link askRun}'s deadline covers that case.
 */
export async function workerPolling(client: Client): Promise<boolean> {
  const r = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: SHARED_TASK_QUEUE, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const now = Date.now();
  return (r.pollers ?? []).some((p) => {
    const seconds = Number(String(p.lastAccessTime?.seconds ?? 0)); // a number or a Long
    return seconds === 0 || now - seconds * 1000 < LIVE_POLLER_MS;
  });
}

/**
 * Waits until a worker polls the shared queue (a worker just started takes
 * a second or two to show up), polling every 250 ms.
 * @returns false when none did within `timeoutMs` (default 20 s)
 */
export async function waitForWorker(client: Client, timeoutMs = 20_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await workerPolling(client)) return true;
    if (Date.now() >= deadline) return false;
    await sleep(250);
  }
}

/** @throws CliError with a hint when no worker polls the shared queue */
export async function requireWorker(client: Client, what: string): Promise<void> {
  if (!(await workerPolling(client))) {
    throw new CliError(
      `no worker is polling the ${SHARED_TASK_QUEUE} task queue, so nothing can answer ${what}`,
      'start one with `agent-jobs worker`',
    );
  }
}

/** gRPC status code DEADLINE_EXCEEDED (grpc/status.proto). */
const GRPC_DEADLINE_EXCEEDED = 4;

/** gRPC status code FAILED_PRECONDITION: the server's "no poller seen for task queue recently". */
const GRPC_FAILED_PRECONDITION = 9;

/** Why a query got no answer, when it is that no worker answered: 'deadline' | 'no-poller' | null. */
function noAnswer(err: unknown): 'deadline' | 'no-poller' | null {
  const cause = err instanceof ServiceError ? err.cause : err;
  if (!isGrpcServiceError(cause)) return null;
  // grpc-js types `code` as its Status enum; the constants above are the same wire numbers.
  const code: number = cause.code;
  if (code === GRPC_DEADLINE_EXCEEDED) return 'deadline';
  if (code === GRPC_FAILED_PRECONDITION && /no poller/i.test(cause.details ?? '')) return 'no-poller';
  return null;
}

/**
 * Asks a run something through a query: checks that a worker polls, then
 * waits at most {@link QUERY_DEADLINE_MS} for the answer.
 * @param what what is asked, for the error (e.g. "the status of run-1")
 * @throws CliError when no worker polls, or none answered in time (a worker
 *   that stopped moments ago can still be listed as polling)
 */
export async function askRun<T>(client: Client, what: string, ask: () => Promise<T>): Promise<T> {
  await requireWorker(client, what);
  try {
    return await client.withDeadline(Date.now() + QUERY_DEADLINE_MS, ask);
  } catch (err) {
    const why = noAnswer(err);
    if (why === 'deadline') {
      throw new CliError(
        `no worker answered ${what} within ${QUERY_DEADLINE_MS / 1000} s`,
        'is a worker running against this server? start one with `agent-jobs worker`',
      );
    }
    if (why === 'no-poller') {
      throw new CliError(`no worker answered ${what}: the server has seen no poller recently`, 'start one with `agent-jobs worker`');
    }
    // A worker that stopped while it held the run: the server reports the query failed.
    const message = err instanceof Error ? err.message : String(err);
    if (/failed to query/i.test(message)) {
      throw new CliError(
        `no worker answered ${what}: the query failed (${message})`,
        'is a worker running against this server? start one with `agent-jobs worker`',
      );
    }
    throw err;
  }
}

/**
 * The `status` query, after checking that a worker can answer it. The
 * pending approval's `display`, `warnings` and `commandSha256` are computed
 * here from its command, so what the CLI shows and hashes is its own view of
 * the bytes that will run (and runs on older workers, which lack them, get them).
 */
export async function queryStatus(client: Client, workflowId: string): Promise<StatusView> {
  const view = await askRun(client, `the status of ${workflowId}`, () => runHandle(client, workflowId).query(statusQuery));
  return { ...view, pendingApproval: view.pendingApproval && pendingApproval(view.pendingApproval) };
}

/**
 * The conversation from message `from` on, after checking that a worker can answer: the
 * `transcript` query, page after page, and, for the messages a continued run no longer
 * holds (before the answer's `base`), the histories of the chain's earlier runs.
 * @throws CliError when the run is open and no worker is polling; the client's error when a history cannot be read
 */
export async function queryTranscript(client: Client, workflowId: string, from = 0): Promise<TranscriptView> {
  const ask = (at: number): Promise<TranscriptView> =>
    askRun(client, `the transcript of ${workflowId}`, () => runHandle(client, workflowId).query(transcriptQuery, at));
  const first = await ask(from);
  const view: TranscriptView = { ...first, messages: [...first.messages] };
  while (view.from + view.messages.length < view.total) {
    const page = await ask(view.from + view.messages.length);
    if (page.messages.length === 0) break;
    view.messages.push(...page.messages);
  }
  const base = first.base ?? 0;
  if (from < base) {
    const { runId } = await runHandle(client, workflowId).describe();
    const earlier = await conversationFromHistory(client, workflowId, runId);
    if (!earlier.ok) throw new CliError(`the transcript of ${workflowId} cannot be rebuilt from its history: ${earlier.problem}`);
    view.messages.unshift(...earlier.conversation.messages.slice(Math.max(0, from), base));
    view.from = Math.max(0, from);
  }
  return view;
}

/**
 * Reads a run's state. Open runs are asked through the `status` query;
 * closed runs too when a worker is up (it has the decisions), else they are
 * read from their result.
 * @throws WorkflowNotFoundError for an unknown id; CliError when the run is open and no worker is polling
 */
export async function readRun(client: Client, workflowId: string): Promise<RunView> {
  const handle = runHandle(client, workflowId);
  const description = await handle.describe();
  const executionStatus = description.status.name;
  const base = { executionStatus, runId: description.runId };
  if (executionStatus === 'RUNNING') {
    try {
      return { ...(await queryStatus(client, workflowId)), ...base };
    } catch (err) {
      // The run may have ended while it was asked (a closed run is answered after a replay, or read from its result).
      if (await stillRunning(handle)) throw err;
      return readRun(client, workflowId);
    }
  }
  let result: AgentRunResult;
  try {
    result = await handle.result();
  } catch (err) {
    const cause =
      err instanceof WorkflowFailedError ? (err.cause?.message ?? err.message) : err instanceof Error ? err.message : String(err);
    const status = executionStatus === 'CANCELLED' ? 'cancelled' : 'failed';
    const failed: AgentRunResult = {
      status,
      turns: 0,
      usage: { ...NO_USAGE },
      costUsd: null,
      error: `${executionStatus.toLowerCase()}: ${cause}`,
    };
    return {
      workflowId,
      status,
      turns: 0,
      pendingApproval: null,
      usage: failed.usage,
      costUsd: null,
      result: failed,
      details: failed.error!,
      decisions: [],
      session: null,
      ...base,
    };
  }
  // With a worker, the query also gives the decisions; without one (queryStatus fails at once), the result alone.
  const view = await queryStatus(client, workflowId).catch(() => null);
  if (view) return { ...view, ...base };
  return {
    workflowId,
    status: result.status,
    turns: result.turns,
    pendingApproval: null,
    // Results of older workers have only input and output tokens, and no cost.
    usage: normalizeUsage(result.usage),
    costUsd: result.costUsd ?? null,
    result,
    details: result.error ?? 'finished',
    decisions: [],
    session: null,
    ...base,
  };
}

/** Whether the run's latest execution is still open. */
export async function stillRunning(handle: WorkflowHandle): Promise<boolean> {
  return (await handle.describe()).status.name === 'RUNNING';
}

/** The JSON shape of `status --json`, as the README's CLI table documents it. */
export function statusJson(view: RunView): Record<string, unknown> {
  return {
    workflowId: view.workflowId,
    status: view.status,
    turns: view.turns,
    pendingApproval: view.pendingApproval,
    usage: normalizeUsage(view.usage),
    costUsd: view.costUsd ?? null,
    budget: view.budget ?? null,
    result: view.result,
    runId: view.runId,
    executionStatus: view.executionStatus,
    details: view.details,
    decisions: view.decisions,
    session: view.session,
    rules: view.rules ?? [],
    queuedMessages: view.queuedMessages ?? [],
    pause: view.pause ?? null,
    chat: view.chat ?? false,
    model: view.model ?? null,
    contextWindow: view.contextWindow ?? null,
    contextStrategy: view.contextStrategy ?? null,
  };
}
