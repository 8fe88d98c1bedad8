/**
 * Reading a run's state from the CLI. Queries need a worker (it answers
 * them, for open and closed runs alike); the CLI checks that one is polling
 * before it asks, so it fails at once with a hint instead of waiting for the
 * query to time out. A closed run's status is read from its result when no
 * worker is up.
 */
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { SHARED_TASK_QUEUE } from '../config';
import { statusQuery, transcriptQuery } from '../workflows/messages';
import type { AgentRunResult, StatusView, TranscriptView } from '../workflows/types';
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

/** Whether any worker polls the shared queue for workflow tasks (and so can answer queries). */
export async function workerPolling(client: Client): Promise<boolean> {
  const r = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: SHARED_TASK_QUEUE, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  return (r.pollers?.length ?? 0) > 0;
}

/** @throws CliError with a hint when no worker polls the shared queue */
export async function requireWorker(client: Client, what: string): Promise<void> {
  if (!(await workerPolling(client))) {
    throw new CliError(`no worker is polling the ${SHARED_TASK_QUEUE} task queue, so nothing can answer ${what}`, 'start one with `agent-jobs worker`');
  }
}

/** The `status` query, after checking that a worker can answer it. */
export async function queryStatus(client: Client, workflowId: string): Promise<StatusView> {
  await requireWorker(client, `the status of ${workflowId}`);
  return runHandle(client, workflowId).query(statusQuery);
}

/** The `transcript` query from message `from`, after checking that a worker can answer it. */
export async function queryTranscript(client: Client, workflowId: string, from = 0): Promise<TranscriptView> {
  await requireWorker(client, `the transcript of ${workflowId}`);
  return runHandle(client, workflowId).query(transcriptQuery, from);
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
  if (executionStatus === 'RUNNING') return { ...(await queryStatus(client, workflowId)), ...base };
  let result: AgentRunResult;
  try {
    result = await handle.result();
  } catch (err) {
    const cause = err instanceof WorkflowFailedError ? (err.cause?.message ?? err.message) : err instanceof Error ? err.message : String(err);
    const status = executionStatus === 'CANCELLED' ? 'cancelled' : 'failed';
    const failed: AgentRunResult = { status, turns: 0, usage: { inputTokens: 0, outputTokens: 0 }, error: `${executionStatus.toLowerCase()}: ${cause}` };
    return { workflowId, status, turns: 0, pendingApproval: null, usage: failed.usage, result: failed, details: failed.error!, decisions: [], session: null, ...base };
  }
  if (await workerPolling(client)) {
    const view = await handle.query(statusQuery).catch(() => null);
    if (view) return { ...view, ...base };
  }
  return { workflowId, status: result.status, turns: result.turns, pendingApproval: null, usage: result.usage, result, details: result.error ?? 'finished', decisions: [], session: null, ...base };
}

/** The JSON shape of `status --json` (issue 2, item 8). */
export function statusJson(view: RunView): Record<string, unknown> {
  return {
    workflowId: view.workflowId,
    status: view.status,
    turns: view.turns,
    pendingApproval: view.pendingApproval,
    usage: view.usage,
    result: view.result,
    runId: view.runId,
    executionStatus: view.executionStatus,
    details: view.details,
    decisions: view.decisions,
  };
}
