/**
 * Reading a run's state from the CLI: the `status` query while it is open,
 * the workflow result (no worker needed) once it is closed.
 */
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { statusQuery } from '../workflows/messages';
import type { AgentRunResult, StatusView } from '../workflows/types';
import type { agentRun } from '../workflows';

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
 * Reads a run's state. Open runs are asked through the `status` query (a
 * worker must be running); closed runs are read from their result.
 * @throws WorkflowNotFoundError for an unknown id
 */
export async function readRun(client: Client, workflowId: string): Promise<RunView> {
  const handle = runHandle(client, workflowId);
  const description = await handle.describe();
  const executionStatus = description.status.name;
  const base = { executionStatus, runId: description.runId };
  if (executionStatus === 'RUNNING') {
    return { ...(await handle.query(statusQuery)), ...base };
  }
  const empty = { workflowId, turns: 0, pendingApproval: null, usage: { inputTokens: 0, outputTokens: 0 }, details: '', decisions: [], session: null };
  let result: AgentRunResult;
  try {
    result = await handle.result();
  } catch (err) {
    const cause = err instanceof WorkflowFailedError ? (err.cause?.message ?? err.message) : err instanceof Error ? err.message : String(err);
    const status = executionStatus === 'CANCELLED' ? 'cancelled' : 'failed';
    result = { status, turns: 0, usage: empty.usage, error: `${executionStatus.toLowerCase()}: ${cause}` };
  }
  return { ...empty, status: result.status, turns: result.turns, usage: result.usage, result, details: result.error ?? 'finished', ...base };
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
