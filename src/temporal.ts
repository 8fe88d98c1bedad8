/**
 * Temporal plumbing shared by the worker and the CLI: connecting, and
 * making sure this project's search attributes exist.
 */
import { Client, Connection, type WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { AGENT_RUN_WORKFLOW, AGENT_STATUS, DEFAULT_MAX_TURNS, SEARCH_ATTRIBUTES, SHARED_TASK_QUEUE, WORKFLOW_TASK_TIMEOUT } from './config';
import type { agentRun } from './workflows';
import type { AgentRunInput } from './contract';
import { temporalSettings, type TemporalSettings } from './settings';

/** A connected client and the settings it came from. Close `connection` when done. */
export interface ConnectedClient {
  client: Client;
  connection: Connection;
  settings: TemporalSettings;
}

/**
 * Connects to Temporal with the environment's settings (`TEMPORAL_ADDRESS`,
 * `TEMPORAL_NAMESPACE`, ...).
 * @param timeoutMs how long to try, in ms (default 5000)
 * @throws TemporalUnreachableError when no server answers at the address in time
 */
export async function connectClient(timeoutMs = 5_000): Promise<ConnectedClient> {
  const settings = temporalSettings();
  let connection: Connection;
  try {
    connection = await Connection.connect({ ...settings.connectionOptions, connectTimeout: timeoutMs });
  } catch (err) {
    throw new TemporalUnreachableError(settings.address, err);
  }
  return { client: new Client({ connection, namespace: settings.namespace }), connection, settings };
}

/** No Temporal server answered at the configured address. */
export class TemporalUnreachableError extends Error {
  constructor(
    readonly address: string,
    cause: unknown,
  ) {
    super(`no Temporal server answers at ${address} (${cause instanceof Error ? cause.message : String(cause)})`, { cause });
    this.name = 'TemporalUnreachableError';
  }
}

/** The server's indexed value type of each type SEARCH_ATTRIBUTES uses (a type missing here fails the typecheck). */
const INDEXED_TYPES: Record<(typeof SEARCH_ATTRIBUTES)[number]['type'], temporal.api.enums.v1.IndexedValueType> = {
  Keyword: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Text: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Datetime: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
};

/**
 * Registers the search attributes of `SEARCH_ATTRIBUTES` that the namespace
 * lacks (the workflow upserts them every turn; an unregistered one would
 * fail its workflow tasks). Works on a dev server and a self-hosted cluster;
 * on Temporal Cloud add them with `tcld` or the Cloud UI first.
 * @returns the names it added (empty when all were there)
 * @throws Error naming the missing attributes when they cannot be added
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const have = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = SEARCH_ATTRIBUTES.filter((a) => !have.has(a.name));
  if (missing.length === 0) return [];
  const searchAttributes: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const a of missing) searchAttributes[a.name] = INDEXED_TYPES[a.type];
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (err) {
    const list = missing.map((a) => `${a.name}=${a.type}`).join(', ');
    throw new Error(
      `search attributes ${list} are missing in namespace ${namespace} and could not be added (${err instanceof Error ? err.message : String(err)}); ` +
        `add them with: temporal operator search-attribute create --namespace ${namespace} ${missing.map((a) => `--name ${a.name} --type ${a.type}`).join(' ')}`,
      { cause: err },
    );
  }
  return missing.map((a) => a.name);
}

/** One line of at most `max` characters (whitespace collapsed, `…` where cut), for summaries and tables. */
export function oneLineSummary(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * Starts an agentRun on the shared queue, the way every client of this
 * project does: the task as the UI's static summary (200 characters), the
 * settings as its static details, the short workflow task timeout.
 * @throws WorkflowExecutionAlreadyStartedError when `workflowId` is taken
 */
export async function startAgentRun(
  client: Client,
  input: AgentRunInput,
  workflowId: string,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof agentRun>> {
  return client.workflow.start<typeof agentRun>(AGENT_RUN_WORKFLOW, {
    taskQueue: SHARED_TASK_QUEUE,
    workflowId,
    args: [input],
    workflowTaskTimeout: WORKFLOW_TASK_TIMEOUT,
    // An id names one run for good: reusing a finished run's id is an error, not a second run.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [{ key: AGENT_STATUS, value: 'running' }],
    staticSummary: oneLineSummary(input.task, 200),
    staticDetails: `**Task**\n\n${input.task}\n\napproval: ${input.approval ?? 'policy'} · model: ${input.model ?? 'default'} · max turns: ${input.maxTurns ?? DEFAULT_MAX_TURNS}`,
  });
}
