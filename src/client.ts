/**
 * The typed client of agent-jobs: everything a program (the CLI, a test, a
 * service of yours) needs to drive agent runs on Temporal, and the only
 * module of the CLI that talks to Temporal (docs/client.md is its reference).
 *
 * - {@link connect} reads Temporal's envconfig (TOML profile, then
 *   `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, TLS
 *   variables over it) and returns an {@link AgentJobsClient}.
 * - {@link AgentJobsClient.start} starts a run; {@link AgentJobsClient.run}
 *   gives the {@link RunHandle} of an existing one: status, transcript,
 *   decisions (approve / deny), messages (say), pause / resume / end,
 *   extend, rules, cancel, result.
 * - {@link AgentJobsClient.list} and {@link AgentJobsClient.pending} read
 *   the visibility store (search attributes; no worker needed).
 * - {@link conversationFromHistory} rebuilds a conversation from the
 *   workflow history (activities use it too, with their own client).
 *
 * Who answers what: queries and Updates are answered by a worker, so an
 * open run's status needs one (checked first, so a missing worker fails at
 * once instead of after a timeout); a closed run is read from its history,
 * with no worker and no query. Every Update carries an Update id derived
 * from what was asked (see {@link updateIdOf}): Temporal applies an Update
 * id once per workflow run, so a request sent again with the same id gets
 * the first one's answer instead of being applied twice.
 */
import { connect as netConnect } from 'node:net';
import { userInfo } from 'node:os';
import { randomBytes } from 'node:crypto';
import {
  Client,
  Connection,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowFailedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  isGrpcServiceError,
  type WorkflowHandle,
  type WorkflowHandleWithFirstExecutionRunId,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  AGENT_AWAITING,
  AGENT_AWAITING_SINCE,
  AGENT_COST_USD,
  AGENT_RUN_WORKFLOW,
  AGENT_STATUS,
  AGENT_TOKENS,
  AGENT_TURNS,
  DEFAULT_MAX_TURNS,
  SEARCH_ATTRIBUTES,
  QUERY_DEADLINE_MS,
  SHARED_TASK_QUEUE,
  UPDATE_DEADLINE_MS,
  WORKFLOW_TASK_TIMEOUT,
} from './config';
import {
  NO_USAGE,
  WAITING_STATUSES,
  decideUpdate,
  endUpdate,
  extendUpdate,
  foldCallInputs,
  applyDelta,
  emptyConversation,
  normalizeUsage,
  pauseUpdate,
  removeRuleUpdate,
  resumeUpdate,
  sayUpdate,
  statusQuery,
  transcriptQuery,
  type AgentRunInput,
  type AgentRunResult,
  type AppliedDecision,
  type ApprovalRule,
  type ConversationPart,
  type DecideAnswer,
  type DecideRequest,
  type ExtendAnswer,
  type ExtendRequest,
  type Message,
  type PendingApproval,
  type RunStatus,
  type SayAnswer,
  type StatusView,
  type SteerAnswer,
  type TranscriptView,
} from './contract';
import {
  displayCommand,
  markdownBackslashes,
  oneLineSummary,
  pendingApproval,
  safeText,
  shortHash,
  type CommandDisplay,
} from './shared/display';
import { capabilitiesOf, contextStrategyOf, contextWindowOf } from './contract/models';
import { fromSearchText } from './shared/search-text';
import { sha256 } from './shared/sha256';
import { rewindUpdate, type RewindAnswer, type RewindRequest } from './contract/checkpoint';
import { derivedLocalUiPort, temporalSettings, temporalUiUrl, workflowUiUrl, type TemporalSettings } from './settings';
import { dataConverterFromEnv } from './codec';
import { requestBindingInterceptor } from './request-binding';
import type { agentRun } from './workflows';
import {
  HistoryUnreadableError,
  closedConversation,
  conversationFromHistory,
  msOf,
  readHistory,
  readTimeline,
  workspaceOf,
  type EditOutcome,
  type RunWorkspace,
  type TimelineEntry,
} from './history';

export { HistoryUnreadableError, conversationFromHistory, type EditOutcome, type RunWorkspace, type TimelineEntry };

export { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError };

// ---------------------------------------------------------------------------
// Timeouts of one client-side call (docs/architecture.md, "Timeouts")

/** How long {@link connect} tries to reach the server, in ms: 5 s. */
export const CONNECT_TIMEOUT_MS = 5_000;

export { QUERY_DEADLINE_MS, UPDATE_DEADLINE_MS };

/** How long the check of a timed-out Update's stage waits, in ms: 3 s. */
const UPDATE_STAGE_DEADLINE_MS = 3_000;

/**
 * How long a poller counts as live after its last poll, in ms: 90 s.
 * Temporal lists every poller it saw in the last 5 minutes, and a live
 * worker polls again at least once a minute (the server's long-poll
 * expiry), so a poller older than this has stopped.
 */
const LIVE_POLLER_MS = 90_000;

// ---------------------------------------------------------------------------
// Errors

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

/** No worker polls the shared task queue, so nothing can answer a query or apply an Update; nothing was sent. */
export class NoWorkerError extends Error {
  constructor(
    /** What was asked, e.g. "the status of run-1". */
    readonly what: string,
  ) {
    super(`no worker is polling the ${SHARED_TASK_QUEUE} task queue, so nothing can answer ${what}`);
    this.name = 'NoWorkerError';
  }
}

/**
 * A worker was listed as polling but no answer to a query came: `deadline`
 * (none within {@link QUERY_DEADLINE_MS}: a slow or stopped worker),
 * `no-poller` (the server saw none recently) or `query-failed` (the worker
 * that held the run went away mid-query).
 */
export class NoAnswerError extends Error {
  constructor(
    readonly what: string,
    /** `task-failing`: the deadline passed and the run's last workflow task failed on a worker (`failure` says why: keys it cannot decode, a determinism error). */
    readonly reason: 'deadline' | 'no-poller' | 'query-failed' | 'task-failing',
    cause?: unknown,
    /** The message of the workflow task's failure, for `task-failing`. */
    readonly failure?: string,
  ) {
    super(
      reason === 'deadline'
        ? `no worker answered ${what} within ${QUERY_DEADLINE_MS / 1000} s`
        : reason === 'no-poller'
          ? `no worker answered ${what}: the worker the server still listed has stopped polling (a stopped worker stays listed for up to 90 s)`
          : reason === 'task-failing'
            ? `no worker can answer ${what}: its workflow task fails on the worker: ${failure ?? '?'}`
            : `no worker answered ${what}: the query failed (${cause instanceof Error ? cause.message : String(cause)})`,
      { cause },
    );
    this.name = 'NoAnswerError';
  }
}

/** The run rejected an Update (its validator threw): nothing was applied; `reason` is the run's. */
export class UpdateRejectedError extends Error {
  constructor(
    readonly workflowId: string,
    readonly what: string,
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`${workflowId} rejected ${what}: ${reason}`, { cause });
    this.name = 'UpdateRejectedError';
  }
}

/** An Update went to a run that has ended: nothing was applied. */
export class RunClosedError extends Error {
  constructor(
    readonly workflowId: string,
    readonly what: string,
  ) {
    super(`${workflowId} is not open: ${what} cannot apply to a run that ended`);
    this.name = 'RunClosedError';
  }
}

/**
 * Where a timed-out Update stands, from the server (PollWorkflowExecutionUpdate):
 * `admitted` (the server holds it until a worker picks up the run: it may
 * still be applied), `accepted` (the run took it and is applying it),
 * `completed` (applied; the answer came late), `unknown` (the server has no
 * record of it: not applied, and it will not be), `unreadable` (the check
 * itself failed).
 */
export type UpdateStage = 'admitted' | 'accepted' | 'completed' | 'unknown' | 'unreadable';

/** No answer to an Update within its deadline; `stage` says whether it may still be applied. */
export class UpdateTimeoutError extends Error {
  constructor(
    readonly workflowId: string,
    readonly what: string,
    /** The Update id sent: {@link RunHandle.update} with the same request id and arguments waits for this one instead of sending another. */
    readonly updateId: string,
    /** The request id the Update id was derived from (`--request-id` of the CLI). */
    readonly requestId: string,
    readonly stage: UpdateStage,
    readonly timeoutMs: number,
  ) {
    const where =
      stage === 'admitted'
        ? 'it may still be applied: the server holds it until a worker picks up the run'
        : stage === 'accepted'
          ? 'the run accepted it and is applying it'
          : stage === 'completed'
            ? 'it was applied (its answer came late)'
            : stage === 'unknown'
              ? 'it was not applied: the server has no record of it'
              : 'it may or may not be applied (its stage could not be read)';
    super(`no answer to ${what} from ${workflowId} within ${timeoutMs / 1000} s; ${where} (request id ${requestId})`);
    this.name = 'UpdateTimeoutError';
  }

  /** Whether the request may take effect later (or did): every stage but `unknown`. */
  get mayStillApply(): boolean {
    return this.stage !== 'unknown';
  }
}

/** A decision found no pending command to decide on. */
export class NothingPendingError extends Error {
  constructor(
    readonly workflowId: string,
    readonly status: string,
  ) {
    super(`nothing in ${workflowId} is awaiting approval (status: ${status})`);
    this.name = 'NothingPendingError';
  }
}

/** The pending command is not the one the decision names (`toolUseId` or `sha` given and different); nothing was decided. */
export class PendingMismatchError extends Error {
  constructor(
    readonly workflowId: string,
    readonly field: 'toolUseId' | 'sha',
    message: string,
  ) {
    super(message);
    this.name = 'PendingMismatchError';
  }
}

/**
 * The run answered a decision with what it applied to another approval wait: Temporal handed
 * back an earlier answer for the same Update id. Nothing was applied to the wait the decision
 * named; it still waits (read it again and decide).
 */
export class DecisionNotAppliedError extends Error {
  constructor(
    readonly workflowId: string,
    readonly toolUseId: string,
    /** The wait the decision named ({@link PendingApproval.wait}). */
    readonly wait: number,
    /** The wait the answer is about (undefined when it names none). */
    readonly answeredWait: number | undefined,
  ) {
    super(
      `${workflowId} answered the decision on tool_use ${toolUseId} (approval wait ${wait}) with the answer of ${answeredWait === undefined ? 'an earlier wait' : `approval wait ${answeredWait}`}; nothing was applied to this wait`,
    );
    this.name = 'DecisionNotAppliedError';
  }
}

// ---------------------------------------------------------------------------
// Connecting

/** Options of {@link connect}. */
export interface ConnectOptions {
  /** Environment envconfig reads (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`, `TEMPORAL_API_KEY`, TLS). @default process.env */
  env?: NodeJS.ProcessEnv;
  /** envconfig profile. @default `TEMPORAL_PROFILE`, else "default" */
  profile?: string;
  /** Server address `host:port`, over what envconfig says. */
  address?: string;
  /** Namespace, over what envconfig says. */
  namespace?: string;
  /** How long to try to reach the server, in ms. @default {@link CONNECT_TIMEOUT_MS} (5000) */
  connectTimeoutMs?: number;
  /** Update deadline of this client's handles, in ms. @default {@link UPDATE_DEADLINE_MS} (30000) */
  updateTimeoutMs?: number;
}

/**
 * Connects to Temporal with Temporal's envconfig (src/settings.ts) and the
 * overrides given. Close the client ({@link AgentJobsClient.close}) when done.
 * @throws TemporalUnreachableError when no server answers at the address within `connectTimeoutMs`
 * @throws Error when the envconfig file cannot be read or parsed
 */
export async function connect(options: ConnectOptions = {}): Promise<AgentJobsClient> {
  const loaded = temporalSettings({
    ...(options.env ? { env: options.env } : {}),
    ...(options.profile ? { profile: options.profile } : {}),
  });
  const address = options.address ?? loaded.address;
  const settings: TemporalSettings = {
    ...loaded,
    address,
    namespace: options.namespace ?? loaded.namespace,
    connectionOptions: { ...loaded.connectionOptions, address },
    nativeConnectionOptions: { ...loaded.nativeConnectionOptions, address },
  };
  let connection: Connection;
  try {
    connection = await Connection.connect({
      ...settings.connectionOptions,
      connectTimeout: options.connectTimeoutMs ?? CONNECT_TIMEOUT_MS,
    });
  } catch (err) {
    throw new TemporalUnreachableError(settings.address, err);
  }
  return new AgentJobsClient(connection, settings, { updateTimeoutMs: options.updateTimeoutMs ?? UPDATE_DEADLINE_MS });
}

// ---------------------------------------------------------------------------
// Starting

/** Options of {@link AgentJobsClient.start}. */
export interface StartOptions {
  /** Workflow id of the run; an id names one run for good (a finished run's id is refused). @default {@link newWorkflowId}() */
  workflowId?: string;
}

/** A readable, sortable workflow id: `run-YYYYMMDD-HHMMSS-xxxx` (UTC, 4 random hex digits). */
export function newWorkflowId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
  return `run-${stamp}-${randomBytes(2).toString('hex')}`;
}

/**
 * Starts an agentRun on the shared queue, the way every client of this
 * project does: the task as the UI's static summary (200 characters), the
 * settings as its static details, the short workflow task timeout, the
 * `AgentStatus` search attribute set to `running`. For programs that hold a
 * raw Temporal `Client` (benches, tests); others use {@link AgentJobsClient.start}.
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
    // Every invisible character of the task escaped (safeText), in the UI as in the CLI; the backslashes
    // of those escapes kept through the UI's markdown.
    staticSummary: markdownBackslashes(oneLineSummary(safeText(input.task, false), 200)),
    staticDetails: `**Task**\n\n${markdownBackslashes(safeText(input.task))}\n\napproval: ${input.approval ?? 'policy'} · model: ${input.model ?? 'default'} · max turns: ${input.maxTurns ?? DEFAULT_MAX_TURNS}`,
  });
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

// ---------------------------------------------------------------------------
// Listing

/** One run as {@link AgentJobsClient.list} returns it (the search attributes of its newest execution). */
export interface RunSummary {
  workflowId: string;
  runId: string;
  /** `AgentStatus`, else Temporal's execution status in lower case. */
  status: string;
  /** `AgentTurns`; null before the run published it. */
  turns: number | null;
  /** `AgentTokens` (every token, {@link totalTokens}); null before the run published it. */
  tokens: number | null;
  /** `AgentCostUsd`; null when unknown. */
  costUsd: number | null;
  /** ISO-8601 start time. */
  startTime: string;
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELED, TERMINATED, TIMED_OUT. */
  executionStatus: string;
}

/** Options of {@link AgentJobsClient.list}. */
export interface ListOptions {
  /** Only runs with this `AgentStatus`. @default any */
  status?: RunStatus;
  /** At most this many runs, >= 1. @default 20 */
  limit?: number;
}

/** What {@link newestByStart} needs of a listed execution. */
export interface Listed {
  startTime: Date;
  /** Unset while the execution is open. */
  closeTime?: Date | undefined;
}

/**
 * The `limit` executions that started last, newest start first.
 *
 * Temporal's visibility lists open executions first (newest start first),
 * then closed ones by close time, latest first (the default order of SQL and
 * Elasticsearch visibility; custom ORDER BY needs Elasticsearch). An
 * execution closes after it starts, so once `limit` are kept, a closed one
 * that closed before the oldest kept start, and every one listed after it,
 * started earlier: reading stops there.
 * @param executions a listing in that order (any order gives the right runs, only later)
 * @param limit how many to keep, >= 1
 */
export async function newestByStart<T extends Listed>(executions: AsyncIterable<T>, limit: number): Promise<T[]> {
  const kept: T[] = [];
  for await (const e of executions) {
    const oldestKept = kept.length >= limit ? kept[kept.length - 1]! : undefined;
    if (oldestKept && e.closeTime && e.closeTime.getTime() < oldestKept.startTime.getTime()) break;
    if (oldestKept && e.startTime.getTime() <= oldestKept.startTime.getTime()) continue;
    kept.push(e);
    kept.sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
    if (kept.length > limit) kept.pop();
  }
  return kept;
}

/** One run that waits for a person, as {@link AgentJobsClient.pending} returns it. */
export interface PendingRun {
  workflowId: string;
  runId: string;
  /** `awaiting_approval`, `paused` or `awaiting_message`. */
  status: string;
  /** What it waits for: the command awaiting approval, who paused it, or the chat (the `AgentAwaiting` search attribute). */
  awaiting: string;
  /** ISO-8601 time it started waiting (`AgentAwaitingSince`), or null when the run did not publish it. */
  since: string | null;
  /** The parent run's workflow id, for a sub-agent (a child workflow: docs/subagents.md); absent for a top-level run. */
  parentId?: string;
}

/** The visibility query of {@link AgentJobsClient.pending}. */
export const PENDING_QUERY = `WorkflowType = '${AGENT_RUN_WORKFLOW}' AND ExecutionStatus = 'Running' AND AgentStatus IN (${WAITING_STATUSES.map((s) => `'${s}'`).join(', ')})`;

// ---------------------------------------------------------------------------
// The client

/** A connected agent-jobs client: runs, listings, workers. Close it when done. */
export class AgentJobsClient {
  /** The Temporal client underneath (for what this client does not wrap). */
  readonly temporal: Client;
  /** Update deadline of this client's handles, in ms. */
  readonly updateTimeoutMs: number;

  /** Use {@link connect}; this constructor is for callers that hold a connection already (tests, the demo). */
  constructor(
    readonly connection: Connection,
    /** Where it is connected: the address (for UI links) and the namespace. */
    readonly settings: Pick<TemporalSettings, 'address' | 'namespace'>,
    options: { updateTimeoutMs?: number } = {},
  ) {
    const dataConverter = dataConverterFromEnv();
    this.temporal = new Client({
      connection,
      namespace: settings.namespace,
      ...(dataConverter ? { dataConverter } : {}),
      // Every steering Update it sends is bound to its run, once (an encrypted run refuses one that is not).
      interceptors: { workflow: [requestBindingInterceptor(connection, settings.namespace)] },
    });
    this.updateTimeoutMs = options.updateTimeoutMs ?? UPDATE_DEADLINE_MS;
  }

  /** The namespace runs are started and read in. */
  get namespace(): string {
    return this.settings.namespace;
  }

  /** Link to a run's page in the Temporal UI (`TEMPORAL_UI_URL`, else derived from the address: src/settings.ts). */
  uiUrl(workflowId: string, runId?: string): string {
    return workflowUiUrl(temporalUiUrl(this.settings.address), this.settings.namespace, workflowId, runId);
  }

  /**
   * {@link uiUrl}, or null when the server serves no web UI there: for a local address whose UI link is derived from
   * the port (no `TEMPORAL_UI_URL`), when nothing takes a connection on the UI port within 500 ms, as for a dev server
   * started `--headless`. Any other link is given as it is (a remote UI is not probed).
   */
  async servedUiUrl(workflowId: string, runId?: string): Promise<string | null> {
    const port = derivedLocalUiPort(this.settings.address);
    if (port !== null && !(await portTakesConnection(port, 500))) return null;
    return this.uiUrl(workflowId, runId);
  }

  /** Closes the connection; calls in flight fail. */
  async close(): Promise<void> {
    await this.connection.close();
  }

  /**
   * Starts a run (see {@link startAgentRun}) after registering any search
   * attribute the namespace lacks (best effort: on Temporal Cloud they must
   * exist already). The input is sent as it is: validate it first with
   * `resolveInput` (src/contract/input.ts) to get every problem at once.
   * @returns the run's handle; `firstRunId` is its first execution's run id
   * @throws WorkflowExecutionAlreadyStartedError when `workflowId` is taken
   */
  async start(input: AgentRunInput, options: StartOptions = {}): Promise<RunHandle & { firstRunId: string }> {
    await ensureSearchAttributes(this.connection, this.namespace).catch(() => undefined);
    const workflowId = options.workflowId ?? newWorkflowId();
    const handle = await startAgentRun(this.temporal, input, workflowId);
    return Object.assign(this.run(workflowId), { firstRunId: handle.firstExecutionRunId });
  }

  /** The handle of run `workflowId` (its latest execution); nothing is asked until a method is called. */
  run(workflowId: string): RunHandle {
    return new RunHandle(this, workflowId);
  }

  /**
   * Recent runs, newest start first (open and closed alike; a run that
   * continued as new is listed once, by its newest execution), from the
   * visibility store: no worker needed, and it may lag a second behind.
   */
  async list(options: ListOptions = {}): Promise<RunSummary[]> {
    const query = `WorkflowType = '${AGENT_RUN_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'${options.status ? ` AND AgentStatus = '${options.status}'` : ''}`;
    const listed = await newestByStart(this.temporal.workflow.list({ query }), options.limit ?? 20);
    return listed.map((w) => {
      const attrs = w.typedSearchAttributes;
      return {
        workflowId: w.workflowId,
        runId: w.runId,
        status: attrs.get(AGENT_STATUS) ?? w.status.name.toLowerCase(),
        turns: attrs.get(AGENT_TURNS) ?? null,
        tokens: attrs.get(AGENT_TOKENS) ?? null,
        costUsd: attrs.get(AGENT_COST_USD) ?? null,
        startTime: w.startTime.toISOString(),
        executionStatus: w.status.name,
      };
    });
  }

  /**
   * The open runs whose `AgentStatus` says they wait for a person, newest
   * wait first (sorted here: SQL visibility has no custom ORDER BY).
   * Visibility is eventually consistent: a run that started waiting a moment
   * ago may show up a second later.
   */
  async pending(): Promise<PendingRun[]> {
    const rows: PendingRun[] = [];
    for await (const w of this.temporal.workflow.list({ query: PENDING_QUERY })) {
      const attrs = w.typedSearchAttributes;
      const since = attrs.get(AGENT_AWAITING_SINCE);
      rows.push({
        workflowId: w.workflowId,
        runId: w.runId,
        status: attrs.get(AGENT_STATUS) ?? '',
        awaiting: fromSearchText(attrs.get(AGENT_AWAITING) ?? ''),
        since: since ? since.toISOString() : null,
        ...(w.parentExecution?.workflowId ? { parentId: w.parentExecution.workflowId } : {}),
      });
    }
    return rows.sort((a, b) => (b.since ?? '').localeCompare(a.since ?? ''));
  }

  /**
   * The workers that recently polled the shared queue for workflow tasks:
   * each one's identity (the SDK's default is `<pid>@<host>`) and when it
   * last polled (ms since the epoch; 0 while a poll is open). A worker that
   * stopped within the last ~90 s may still be listed.
   */
  async pollers(): Promise<Array<{ identity: string; lastAccessMs: number }>> {
    const r = await this.temporal.workflowService.describeTaskQueue({
      namespace: this.namespace,
      taskQueue: { name: SHARED_TASK_QUEUE, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const now = Date.now();
    return (r.pollers ?? [])
      .map((p) => ({ identity: p.identity ?? '', lastAccessMs: Number(String(p.lastAccessTime?.seconds ?? 0)) * 1000 })) // a number or a Long
      .filter((p) => p.lastAccessMs === 0 || now - p.lastAccessMs < LIVE_POLLER_MS);
  }

  /**
   * Whether a worker recently polled the shared queue for workflow tasks
   * (and so can answer queries). A worker that stopped within the last ~90 s
   * may still count; the query deadline covers that case.
   */
  async workerPolling(): Promise<boolean> {
    return (await this.pollers()).length > 0;
  }

  /**
   * Waits until a worker polls the shared queue (a worker just started takes
   * a second or two to show up), checking every 250 ms.
   * @param timeoutMs how long to wait, in ms @default 20000
   * @returns false when none did in time
   */
  async waitForWorker(timeoutMs = 20_000): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (await this.workerPolling()) return true;
      if (Date.now() >= deadline) return false;
      await sleep(250);
    }
  }

  /** @throws NoWorkerError when no worker polls the shared queue (`what` names what could not be answered) */
  async requireWorker(what: string): Promise<void> {
    if (!(await this.workerPolling())) throw new NoWorkerError(what);
  }
}

// ---------------------------------------------------------------------------
// One run

/** A run's state: the status query's answer (or, for a closed run, what its history holds) plus Temporal's own execution status. */
export interface RunView extends StatusView {
  /** Temporal's execution status: RUNNING, COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, CONTINUED_AS_NEW. */
  executionStatus: string;
  runId: string;
  /** Where the view comes from: `query` (a worker answered) or `history` (a closed run, read without a worker). */
  source: 'query' | 'history';
  /**
   * A closed run's workspace, from its histories (src/history.ts `workspaceOf`): the folder and the
   * worker that opened its last session. Absent for an open run (its `session` says where bash is)
   * and for a run that opened no session (no tool ran).
   */
  workspace?: RunWorkspace;
  /**
   * A closed run's git audit at the close of its sessions (src/history.ts `RunHistory.gitAtClose`): what was moved to
   * the quarantine or named, one line per session whose audit found something. Absent for an open run.
   */
  gitAtClose?: string[];
  /** {@link gitAtClose} line by line, per session (src/history.ts `RunHistory.gitAtCloseLines`). Absent for an open run. */
  gitAtCloseLines?: string[][];
  /**
   * A closed run's reasons a matching approval rule did not apply, by `tool_use` id (src/history.ts
   * `RunHistory.ruleNotApplied`; an open run says it in `details` while the command waits). Absent for an open run.
   */
  ruleNotApplied?: Record<string, string>;
}

/** A transcript page with where it came from. */
export interface RunTranscript extends TranscriptView {
  /** `query` (an open run: the worker's copy) or `history` (a closed run, rebuilt from its history without a worker). */
  source: 'query' | 'history';
  /** A closed run's git audit at the close of its sessions, as {@link RunView.gitAtClose}. */
  gitAtClose?: string[];
  /** The same line by line, as {@link RunView.gitAtCloseLines}. */
  gitAtCloseLines?: string[][];
}

/** How a request is sent: who sends it and the id that makes a resend apply once. */
export interface SendOptions {
  /** Who sends it (shown in status and to Claude). @default {@link defaultBy}() (the OS user, else `cli`) */
  by?: string;
  /**
   * The request id the Update id is derived from ({@link updateIdOf}). Send
   * a request again with the same id and the same arguments and the run
   * applies it once (within one workflow run). @default a fresh random id
   * (a `decide` uses a hash of the pending run, `tool_use` id and the
   * number of its approval wait ({@link decideRequestId}): each wait is decided once)
   */
  requestId?: string;
  /** How long to wait for the run's answer, in ms. @default the client's `updateTimeoutMs` (30000) */
  timeoutMs?: number;
}

/** Options of {@link RunHandle.approve} and {@link RunHandle.deny}. */
export interface DecideOptions extends SendOptions {
  /** The pending `tool_use` id the person means; given, it must be the pending one. @default whatever is pending */
  toolUseId?: string;
  /** Lowercase hex prefix of the sha256 of the command the person reviewed; given, the pending command's hash must start with it. */
  sha?: string;
  /** Why (sent to Claude on a denial; required by {@link RunHandle.deny}). */
  reason?: string;
  /** Run this command instead (approve only). */
  edit?: string;
  /** Also approve the identical command for the rest of the run (approve only). */
  always?: boolean;
  /** Also approve later commands starting with these literal words (approve only). */
  alwaysPrefix?: string;
}

/** What a decision did: the run's answer, and the pending command as the client showed and hashed it. */
export interface Decided {
  answer: DecideAnswer;
  command: CommandDisplay;
  /** What was pending when the decision was sent (for a text editor change, its `edit` and diff `display`). */
  pending: PendingApproval;
  /** The run was paused when the decision was sent: an approved command runs only after `resume`. */
  paused: boolean;
}

/** One pending activity of a run, from `describe()` (Temporal's record: no worker needed). */
export interface PendingActivityInfo {
  /** The activity type (`callClaude`, `runCommand`, `openSession`, …). */
  type: string;
  /** The current attempt, 1-based. */
  attempt: number;
  /** When the current attempt started, ms since the epoch (server clock); 0 when not started. */
  startedMs: number;
  /** When it was scheduled, ms since the epoch; 0 when unknown. */
  scheduledMs: number;
  /** When its last heartbeat reached the server, ms since the epoch; 0 when none. */
  heartbeatMs: number;
  /** The last failure's message ('' when none). */
  lastFailure: string;
  /** The last heartbeat's first detail, decoded with the client's data converter; undefined when none. */
  details: unknown;
}

/** Whether something on this machine takes a TCP connection on `port` (127.0.0.1) within `timeoutMs`. */
function portTakesConnection(port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect({ host: '127.0.0.1', port });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** Who sends a request when nobody is named: the OS user running this, else `cli`. */
export function defaultBy(): string {
  try {
    return userInfo().username;
  } catch {
    return 'cli';
  }
}

/**
 * The Update id of a request: `<kind>.<requestId>.<16 hex digits of the
 * sha256 of the JSON arguments>`. The same request (same kind, request id
 * and arguments) gets the same id, so Temporal applies it once per
 * workflow run; a different message under the same request id is another
 * request. Across continue-as-new the server no longer knows the id (it
 * deduplicates within one run; https://docs.temporal.io/handling-messages).
 */
export function updateIdOf(kind: string, requestId: string, arg: unknown): string {
  return `${kind}.${requestId}.${sha256(JSON.stringify(arg)).slice(0, 16)}`;
}

/** A fresh request id: 12 random hex digits. */
export function newRequestId(): string {
  return randomBytes(6).toString('hex');
}

/** gRPC status codes (grpc/status.proto) the client tells apart. */
const GRPC = { CANCELLED: 1, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, RESOURCE_EXHAUSTED: 8, FAILED_PRECONDITION: 9, UNAVAILABLE: 14 } as const;

/** First pause before an Update the server shed is sent again, in ms: 200, doubling per resend up to {@link UPDATE_RESEND_MAX_MS}. */
const UPDATE_RESEND_FIRST_MS = 200;
/** Longest pause between resends of a shed Update, in ms: 2 s. */
const UPDATE_RESEND_MAX_MS = 2_000;

/**
 * Whether `err` is the Temporal server shedding an Update before the run
 * saw it, so that sending it again (same Update id) is safe and nothing
 * was applied: RESOURCE_EXHAUSTED "limit on number of concurrent in-flight
 * updates" (10 per run by default, `history.maxInFlightUpdates`), or
 * UNAVAILABLE "workflow update was aborted" (the server dropped the run's
 * in-memory Update registry, which it does on any error touching the run,
 * and aborts every Update it had not yet recorded as accepted:
 * temporalio/temporal docs/architecture/workflow-update.md, "Update
 * Registry Lifecycle"). Under many concurrent Updates to one run on a
 * starved worker both come back for tens of seconds, past the SDK's own
 * retries (10 attempts, about 20 s for UNAVAILABLE).
 */
export function isShedUpdate(err: unknown): boolean {
  const g = grpcCause(err);
  if (g === null) return false;
  if (g.code === GRPC.RESOURCE_EXHAUSTED) return /in-flight updates/i.test(g.details);
  return g.code === GRPC.UNAVAILABLE && /update was aborted/i.test(g.details) && !/closing workflow/i.test(g.details);
}

/** The gRPC error under a client error, if any. */
function grpcCause(err: unknown): { code: number; details: string } | null {
  const cause = err instanceof ServiceError ? err.cause : err;
  if (!isGrpcServiceError(cause)) return null;
  // grpc-js types `code` as its Status enum: the same wire numbers as the constants above.
  return { code: cause.code, details: cause.details ?? '' };
}

/**
 * Whether `err` says the Temporal server is not reachable right now (gRPC
 * UNAVAILABLE: restarting, a network blip). The connection reconnects by
 * itself; a caller that polls can wait and ask again.
 */
export function isServerUnavailable(err: unknown): boolean {
  return grpcCause(err)?.code === GRPC.UNAVAILABLE || (err instanceof Error && /UNAVAILABLE|ECONNREFUSED/.test(err.message));
}

/**
 * A handle on one run (its latest execution). Reads: {@link status},
 * {@link transcript}, {@link result}. Requests (Updates, each with a stable
 * Update id): {@link approve}, {@link deny}, {@link say}, {@link pause},
 * {@link resume}, {@link end}, {@link extend}, {@link removeRule}. And {@link cancel}.
 */
export class RunHandle {
  constructor(
    private readonly jobs: AgentJobsClient,
    readonly workflowId: string,
  ) {}

  /** The Temporal workflow handle (latest execution). */
  get temporal(): WorkflowHandle<typeof agentRun> {
    return this.jobs.temporal.workflow.getHandle<typeof agentRun>(this.workflowId);
  }

  /**
   * Temporal's record of the latest execution.
   * @returns `executionStatus` (RUNNING, COMPLETED, ...), `runId` and `open`
   * @throws WorkflowNotFoundError for an unknown id
   */
  async describe(): Promise<{ executionStatus: string; runId: string; open: boolean }> {
    const d = await this.temporal.describe();
    return { executionStatus: d.status.name, runId: d.runId, open: d.status.name === 'RUNNING' };
  }

  /** Whether the latest execution is still open. @throws WorkflowNotFoundError for an unknown id */
  async isOpen(): Promise<boolean> {
    return (await this.describe()).open;
  }

  /**
   * Asks the run through a query: checks that a worker polls, then waits at
   * most {@link QUERY_DEADLINE_MS} for the answer.
   * @param what what is asked, for errors (e.g. "the status of run-1")
   * @throws NoWorkerError when no worker polls; NoAnswerError when none answered
   */
  private async ask<T>(what: string, ask: () => Promise<T>): Promise<T> {
    await this.jobs.requireWorker(what);
    try {
      return await this.jobs.temporal.withDeadline(Date.now() + QUERY_DEADLINE_MS, ask);
    } catch (err) {
      const g = grpcCause(err);
      if (g?.code === GRPC.DEADLINE_EXCEEDED) {
        // A worker that cannot run the workflow task (other codec keys, a determinism error) never answers: say why.
        const failure = await this.failingWorkflowTask().catch(() => null);
        throw failure ? new NoAnswerError(what, 'task-failing', err, failure) : new NoAnswerError(what, 'deadline', err);
      }
      if (g?.code === GRPC.FAILED_PRECONDITION && /no poller/i.test(g.details)) throw new NoAnswerError(what, 'no-poller', err);
      // A worker that stopped while it held the run: the server reports the query failed. So does a worker that cannot
      // replay the run (a claim-check blob it cannot read): then the failed workflow task says why.
      if (/failed to query/i.test(err instanceof Error ? err.message : String(err))) {
        const failure = await this.failingWorkflowTask().catch(() => null);
        throw failure ? new NoAnswerError(what, 'task-failing', err, failure) : new NoAnswerError(what, 'query-failed', err);
      }
      throw err;
    }
  }

  /**
   * Why the run's workflow tasks fail, when they do: the failure message of
   * the last workflow task of the latest execution, if it failed and no
   * workflow task completed after it; else null. Reads the newest events
   * only (one page of the history in reverse).
   */
  private async failingWorkflowTask(): Promise<string | null> {
    const E = temporal.api.enums.v1.EventType;
    const page = await this.jobs.temporal.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: this.jobs.namespace,
      execution: { workflowId: this.workflowId },
      maximumPageSize: 50,
    });
    for (const e of page.history?.events ?? []) {
      if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) return null;
      if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_FAILED) return e.workflowTaskFailedEventAttributes?.failure?.message || null;
    }
    return null;
  }

  /**
   * The `status` query of an open run, after checking that a worker can
   * answer it. The pending approval's `display`, `warnings` and
   * `commandSha256` are computed here from its command, so what a client
   * shows and hashes is its own view of the bytes that will run.
   * @throws NoWorkerError, NoAnswerError (see {@link RunHandle.status})
   */
  async queryStatus(): Promise<StatusView> {
    const view = await this.ask(`the status of ${this.workflowId}`, () => this.temporal.query(statusQuery));
    return { ...view, pendingApproval: view.pendingApproval && pendingApproval(view.pendingApproval) };
  }

  /**
   * The run's state. An open run is asked through the `status` query (a
   * worker answers); a closed run is read from its history (its result, its
   * input, the decisions sent through the `decide` Update): no worker, no query.
   * @throws WorkflowNotFoundError for an unknown id
   * @throws NoWorkerError when the run is open and no worker polls
   * @throws NoAnswerError when the run is open and no worker answered within {@link QUERY_DEADLINE_MS}
   */
  async status(): Promise<RunView> {
    const { executionStatus, runId, open } = await this.describe();
    if (open) {
      try {
        return { ...(await this.queryStatus()), executionStatus, runId, source: 'query' };
      } catch (err) {
        // The run may have ended while it was asked: then it is read from its history.
        if (await this.isOpen()) throw err;
        return this.status();
      }
    }
    return this.statusFromHistory(executionStatus, runId);
  }

  /** A closed run's view, from the history of its last execution and its result. */
  private async statusFromHistory(executionStatus: string, runId: string): Promise<RunView> {
    const history = await readHistory(this.jobs.temporal, this.workflowId, runId);
    let result: AgentRunResult;
    try {
      result = await this.jobs.temporal.workflow.getHandle<typeof agentRun>(this.workflowId, runId).result();
    } catch (err) {
      const cause =
        err instanceof WorkflowFailedError ? (err.cause?.message ?? err.message) : err instanceof Error ? err.message : String(err);
      const status = executionStatus === 'CANCELLED' ? 'cancelled' : 'failed';
      result = { status, turns: 0, usage: { ...NO_USAGE }, costUsd: null, error: `${executionStatus.toLowerCase()}: ${cause}` };
    }
    const input = history.input;
    const workspace = await workspaceOf(this.jobs.temporal, this.workflowId, runId);
    return {
      workflowId: this.workflowId,
      status: result.status,
      turns: result.turns,
      pendingApproval: null,
      // Results of older workers have only input and output tokens, and no cost.
      usage: normalizeUsage(result.usage),
      costUsd: result.costUsd ?? null,
      result,
      details: result.error ?? 'finished',
      decisions: history.decisions,
      rules: history.rules,
      session: null,
      ...(input?.model ? { model: input.model } : {}),
      // As the run's own status query reports them (the strategy its model's table row gives).
      ...(input?.model
        ? {
            contextWindow: contextWindowOf({ ...input, model: input.model }),
            contextStrategy: contextStrategyOf(capabilitiesOf({ ...input, model: input.model })),
          }
        : {}),
      ...(input?.chat ? { chat: true } : {}),
      ...(workspace ? { workspace } : {}),
      gitAtClose: history.gitAtClose,
      gitAtCloseLines: history.gitAtCloseLines,
      ruleNotApplied: history.ruleNotApplied,
      executionStatus,
      runId,
      source: 'history',
    };
  }

  /**
   * The conversation from message `from` on. An open run: the `transcript`
   * query, page after page, and, for the messages a continued run no longer
   * holds (before the answer's `base`), the histories of the chain's earlier
   * runs. A closed run: rebuilt from the histories alone (no worker): the
   * `callClaude` inputs and the last call's answer, `durationsMs`, `exitCodes` and `notes` from the
   * `runCommand` answers of its last execution; tool results added after the last model call (a run cancelled or
   * ended on a budget mid-turn) are not in the history, so such a
   * transcript ends at the last answer (`incomplete` says why).
   * @param from index of the first message, >= 0 @default 0
   * @throws WorkflowNotFoundError; NoWorkerError / NoAnswerError (open run);
   *   HistoryUnreadableError when the histories do not chain
   */
  async transcript(from = 0): Promise<RunTranscript & { incomplete?: string }> {
    const { runId, open } = await this.describe();
    if (!open) return this.transcriptFromHistory(runId, from);
    const ask = (at: number): Promise<TranscriptView> =>
      this.ask(`the transcript of ${this.workflowId}`, () => this.temporal.query(transcriptQuery, at));
    let first: TranscriptView;
    try {
      first = await ask(from);
    } catch (err) {
      if (await this.isOpen()) throw err;
      return this.transcript(from);
    }
    const view: TranscriptView = { ...first, messages: [...first.messages] };
    while (view.from + view.messages.length < view.total) {
      const page = await ask(view.from + view.messages.length);
      if (page.messages.length === 0) break;
      view.messages.push(...page.messages);
    }
    const base = first.base ?? 0;
    if (from < base) {
      const earlier = await conversationFromHistory(this.jobs.temporal, this.workflowId, runId);
      if (!earlier.ok) throw new HistoryUnreadableError(this.workflowId, earlier.problem);
      view.messages.unshift(...earlier.conversation.messages.slice(Math.max(0, from), base));
      view.from = Math.max(0, from);
    }
    return { ...view, source: 'query' };
  }

  private async transcriptFromHistory(runId: string, from: number): Promise<RunTranscript & { incomplete?: string }> {
    const { messages, durationsMs, exitCodes, notes, gitAtClose, gitAtCloseLines, incomplete } = await closedConversation(
      this.jobs.temporal,
      this.workflowId,
      runId,
    );
    const start = Math.min(Math.max(0, from), messages.length);
    return {
      from: start,
      total: messages.length,
      messages: messages.slice(start),
      durationsMs,
      exitCodes,
      notes,
      source: 'history',
      gitAtClose,
      gitAtCloseLines,
      ...(incomplete ? { incomplete } : {}),
    };
  }

  /**
   * The run's pending activities, from `describe()` (Temporal's record, no
   * query: no worker needed), heartbeat details decoded with the client's
   * data converter (its codecs included).
   * @throws WorkflowNotFoundError for an unknown id
   */
  async pendingActivities(): Promise<PendingActivityInfo[]> {
    const { raw } = await this.temporal.describe();
    const out: PendingActivityInfo[] = [];
    for (const a of raw.pendingActivities ?? []) {
      const payloads = a.heartbeatDetails?.payloads ?? [];
      const [details] = payloads.length
        ? await decodeArrayFromPayloads(this.jobs.temporal.options.loadedDataConverter, payloads).catch(() => [])
        : [];
      out.push({
        type: a.activityType?.name ?? '',
        attempt: a.attempt || 1,
        startedMs: msOf(a.lastStartedTime),
        scheduledMs: msOf(a.scheduledTime),
        heartbeatMs: msOf(a.lastHeartbeatTime),
        lastFailure: a.lastFailure?.message ?? '',
        details,
      });
    }
    return out;
  }

  /**
   * Sends Update `def(arg)` and waits for its answer. The Update id is
   * {@link updateIdOf}(kind, requestId, arg): sent again with the same
   * request id and arguments (a retry after a timeout, by this process or
   * another), the run applies it once and answers with the first one's answer.
   * @param what what is asked, for errors (e.g. "the decision on toolu_1")
   * @throws NoWorkerError when no worker polls (nothing was sent)
   * @throws UpdateRejectedError when the run rejected it (nothing applied)
   * @throws RunClosedError when the run has ended (nothing applied)
   * @throws UpdateTimeoutError when no answer came within the deadline; its `stage` says whether it may still apply.
   *   An Update the server sheds before the run sees it ({@link isShedUpdate}: too many in flight, or aborted)
   *   is sent again with the same id until then, so a busy server or a starved worker means a late answer, not an error.
   */
  async update<Ret, Arg>(
    def: UpdateDefinition<Ret, [Arg]>,
    arg: Arg,
    what: string,
    options: { requestId?: string; timeoutMs?: number } = {},
  ): Promise<Ret> {
    const requestId = options.requestId ?? newRequestId();
    const updateId = updateIdOf(def.name, requestId, arg);
    const timeoutMs = options.timeoutMs ?? this.jobs.updateTimeoutMs;
    await this.jobs.requireWorker(what);
    const deadline = Date.now() + timeoutMs;
    try {
      for (let attempt = 0; ; attempt++) {
        try {
          return await this.jobs.temporal.withDeadline(deadline, () => this.temporal.executeUpdate(def, { args: [arg], updateId }));
        } catch (err) {
          // The server shed it before the run saw it: sent again with the same Update id until the deadline.
          const pause = Math.min(UPDATE_RESEND_MAX_MS, UPDATE_RESEND_FIRST_MS * 2 ** attempt);
          if (!isShedUpdate(err) || Date.now() + pause >= deadline) throw err;
          await new Promise((r) => setTimeout(r, pause));
        }
      }
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError)
        throw new UpdateRejectedError(this.workflowId, what, err.cause?.message ?? err.message, err);
      if (err instanceof WorkflowNotFoundError && /completed|closed/i.test(err.message)) throw new RunClosedError(this.workflowId, what);
      const g = grpcCause(err);
      if (g?.code === GRPC.NOT_FOUND && /completed|closed|not found/i.test(g.details)) throw new RunClosedError(this.workflowId, what);
      // Past the deadline the SDK may end its long poll as "Call cancelled" rather than DEADLINE_EXCEEDED: the same timeout.
      const message = err instanceof Error ? err.message : String(err);
      const pastDeadline = Date.now() >= deadline && (g?.code === GRPC.CANCELLED || /cancel/i.test(message));
      if (g?.code === GRPC.DEADLINE_EXCEEDED || /deadline/i.test(message) || pastDeadline || isShedUpdate(err)) {
        throw new UpdateTimeoutError(this.workflowId, what, updateId, requestId, await this.updateStage(updateId), timeoutMs);
      }
      throw err;
    }
  }

  /** Where Update `updateId` stands on the server (see {@link UpdateStage}); never throws. */
  async updateStage(updateId: string): Promise<UpdateStage> {
    const { Stage } = { Stage: temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage };
    try {
      const r = await this.jobs.temporal.withDeadline(Date.now() + UPDATE_STAGE_DEADLINE_MS, () =>
        this.jobs.temporal.workflowService.pollWorkflowExecutionUpdate({
          namespace: this.jobs.namespace,
          updateRef: { workflowExecution: { workflowId: this.workflowId }, updateId },
          identity: this.jobs.temporal.options.identity,
          waitPolicy: { lifecycleStage: Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ADMITTED },
        }),
      );
      if (r.outcome || r.stage === Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED) return 'completed';
      if (r.stage === Stage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_ACCEPTED) return 'accepted';
      return 'admitted';
    } catch (err) {
      return grpcCause(err)?.code === GRPC.NOT_FOUND ? 'unknown' : 'unreadable';
    }
  }

  /**
   * Waits until the run waits for a decision, polling its status every
   * `intervalMs` (a worker answers), and returns the pending command.
   * @param options.timeoutMs how long to wait, in ms @default 60000
   * @param options.intervalMs time between polls, in ms @default 500
   * @returns the pending approval; null when the run ended first
   * @throws Error when nothing waits within `timeoutMs`; NoWorkerError / NoAnswerError as {@link status}
   *   when no worker answered by the deadline (before it, they are waited out)
   */
  async waitForApproval(options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<PendingApproval | null> {
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      let view: RunView;
      try {
        view = await this.status();
      } catch (err) {
        // A worker that is starting (or slow) is not an answer yet: wait for it within the deadline.
        if (!(err instanceof NoWorkerError || err instanceof NoAnswerError) || Date.now() >= deadline) throw err;
        await sleep(options.intervalMs ?? 500);
        continue;
      }
      if (view.pendingApproval) return view.pendingApproval;
      if (view.executionStatus !== 'RUNNING') return null;
      if (Date.now() >= deadline)
        throw new Error(`${this.workflowId} is not awaiting approval after ${options.timeoutMs ?? 60_000} ms (status ${view.status})`);
      await sleep(options.intervalMs ?? 500);
    }
  }

  /**
   * Decides on the command the run waits on: reads the pending command,
   * checks it is the one meant (`toolUseId`, `sha`), and sends the `decide`
   * Update carrying its full sha256 (the run applies it only to those exact
   * bytes). Returns once the run applied it. The request id defaults to the
   * `tool_use` id: a command is decided once, so a resent decision is the same request.
   * @throws NothingPendingError; PendingMismatchError; and what {@link update} throws
   *   (UpdateRejectedError: already decided, timed out meanwhile, an edit with a denial, ...)
   */
  async decide(approved: boolean, options: DecideOptions = {}): Promise<Decided> {
    const status = await this.queryStatus();
    const pending = status.pendingApproval;
    if (!pending) throw new NothingPendingError(this.workflowId, status.status);
    const command = displayCommand(pending.command);
    if (options.toolUseId && options.toolUseId !== pending.toolUseId) {
      throw new PendingMismatchError(
        this.workflowId,
        'toolUseId',
        `tool_use ${options.toolUseId} is not awaiting approval; ${pending.toolUseId} is (${command.text})`,
      );
    }
    if (options.sha !== undefined && !command.sha256.startsWith(options.sha)) {
      throw new PendingMismatchError(
        this.workflowId,
        'sha',
        `the pending command (${pending.toolUseId}, sha256 ${shortHash(command.sha256)}) is not the one you reviewed (sha256 ${options.sha}…); nothing was ${approved ? 'approved' : 'denied'}`,
      );
    }
    // The wait is named in the request (so in the Update id's hash, and the run rejects it for any other wait).
    const wait = pending.wait;
    const request: DecideRequest = {
      toolUseId: pending.toolUseId,
      ...(wait !== undefined ? { wait } : {}),
      // The run it binds to (required by an encrypted run, with the wait).
      ...(pending.runId !== undefined ? { runId: pending.runId } : {}),
      approved,
      by: options.by ?? defaultBy(),
      commandSha256: command.sha256,
      ...(options.reason !== undefined ? { reason: options.reason } : {}),
      ...(options.edit !== undefined ? { edit: options.edit } : {}),
      ...(options.always ? { always: true } : {}),
      ...(options.alwaysPrefix !== undefined ? { alwaysPrefix: options.alwaysPrefix } : {}),
    };
    const answer = await this.update(decideUpdate, request, `the decision on ${pending.toolUseId}`, {
      requestId: options.requestId ?? decideRequestId(pending, status.decisions),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    // An answer about another wait is Temporal's answer to an earlier Update with this id: not applied here.
    if (wait !== undefined && answer.wait !== wait)
      throw new DecisionNotAppliedError(this.workflowId, pending.toolUseId, wait, answer.wait);
    return { answer, command, pending, paused: status.status === 'paused' };
  }

  /**
   * What the text editor command `toolUseId` did once it no longer waited for a person (a decision approved it):
   * read from the latest execution's history (src/history.ts `RunHistory.editOutcomes`: the worker's answer, in the
   * history as soon as the edit is done, before the turn's other tool calls), asked every `intervalMs` until it is
   * there, the run has closed without it, or `timeoutMs` passed (the run paused, or slow).
   * @returns the outcome, or null when it did not come in time
   */
  async editOutcome(toolUseId: string, options: { timeoutMs?: number; intervalMs?: number } = {}): Promise<EditOutcome | null> {
    const deadline = Date.now() + (options.timeoutMs ?? 15_000);
    for (;;) {
      const { runId, open } = await this.describe();
      const outcome = (await readHistory(this.jobs.temporal, this.workflowId, runId)).editOutcomes[toolUseId];
      if (outcome) return outcome;
      if (!open || Date.now() >= deadline) return null;
      await sleep(options.intervalMs ?? 500);
    }
  }

  /** Approves (or, with `edit`, edits) the pending command. See {@link decide}. */
  async approve(options: Omit<DecideOptions, 'reason'> & { reason?: string } = {}): Promise<Decided> {
    return this.decide(true, options);
  }

  /** Denies the pending command; Claude gets `reason`. See {@link decide}. */
  async deny(reason: string, options: Omit<DecideOptions, 'reason' | 'edit' | 'always' | 'alwaysPrefix'> = {}): Promise<Decided> {
    return this.decide(false, { ...options, reason });
  }

  /**
   * Queues a message: Claude reads it at the next turn boundary (a chat
   * run's next turn). The answer says how many wait now.
   * @throws what {@link update} throws (UpdateRejectedError: too long, too many queued, the run is ending)
   */
  async say(text: string, options: SendOptions = {}): Promise<SayAnswer> {
    return this.update(sayUpdate, { text, by: options.by ?? defaultBy() }, 'the message', sendOptions(options));
  }

  /**
   * Pauses the run at the next safe point (before the next model call or
   * command; never mid-command). The answer's `status` is `paused` when it
   * paused at once, `running` when it pauses at the next safe point.
   * @throws what {@link update} throws (UpdateRejectedError: already paused)
   */
  async pause(options: SendOptions = {}): Promise<SteerAnswer> {
    return this.update(pauseUpdate, { by: options.by ?? defaultBy() }, 'pause', sendOptions(options));
  }

  /** Lets a paused run go on. @throws what {@link update} throws (UpdateRejectedError: not paused, or paused on a budget: see {@link extend}) */
  async resume(options: SendOptions = {}): Promise<SteerAnswer> {
    return this.update(resumeUpdate, { by: options.by ?? defaultBy() }, 'resume', sendOptions(options));
  }

  /** Completes a chat run with its last answer. @throws what {@link update} throws (UpdateRejectedError: not a chat run, end already asked) */
  async end(options: SendOptions = {}): Promise<SteerAnswer> {
    return this.update(endUpdate, { by: options.by ?? defaultBy() }, 'end', sendOptions(options));
  }

  /**
   * Raises the run's budgets by the amounts given (turns, USD, tokens, ms);
   * a run paused on a spent budget goes on once it is within all of them.
   * @throws what {@link update} throws (UpdateRejectedError: no such budget, amount out of range)
   */
  async extend(amounts: Omit<ExtendRequest, 'by'>, options: SendOptions = {}): Promise<ExtendAnswer> {
    return this.update(extendUpdate, { by: options.by ?? defaultBy(), ...amounts }, 'the budget extension', sendOptions(options));
  }

  /**
   * Rewinds the run to just before turn `toTurn`'s model call (docs/rewind.md): its workspace is
   * restored to that turn's checkpoint, the conversation cut there, Claude told (with `text`).
   * Applied at the next turn start: the answer comes once it is (a running command is waited for).
   * @throws what {@link update} throws (UpdateRejectedError: no checkpoint for the turn, a decision pending mid-turn)
   */
  async rewind(toTurn: number, text: string | undefined, options: SendOptions = {}): Promise<RewindAnswer> {
    const req: RewindRequest = { toTurn, by: options.by ?? defaultBy(), ...(text !== undefined ? { text } : {}) };
    return this.update(rewindUpdate, req, `the rewind to turn ${toTurn}`, sendOptions(options));
  }

  /**
   * The run's checkpoints and rewinds in the order they happened, read from the histories of
   * its chain (no worker needed; open and closed runs alike).
   * @throws WorkflowNotFoundError for an unknown id
   */
  async timeline(): Promise<TimelineEntry[]> {
    const { runId } = await this.describe();
    const runs: TimelineEntry[][] = [];
    let run: string | null = runId;
    const seen = new Set<string>();
    while (run !== null && !seen.has(run)) {
      seen.add(run);
      const h = await readTimeline(this.jobs.temporal, this.workflowId, run);
      runs.unshift(h.entries);
      run = h.continuedFrom;
    }
    return runs.flat();
  }

  /**
   * The parts of the conversation a rewind dropped, oldest first: for each, the index of its
   * first message and the messages as they were (still in the history: the `callClaude` inputs
   * before the rewind). Read from the chain's histories; no worker needed.
   * @throws HistoryUnreadableError when the histories do not chain
   */
  async rewoundBranches(): Promise<Array<{ from: number; messages: Message[] }>> {
    const { runId } = await this.describe();
    const runs: ConversationPart[][] = [];
    let run: string | null = runId;
    const seen = new Set<string>();
    while (run !== null && !seen.has(run)) {
      seen.add(run);
      const h = await readTimeline(this.jobs.temporal, this.workflowId, run);
      runs.unshift(h.calls);
      run = h.continuedFrom;
    }
    const branches: Array<{ from: number; messages: Message[] }> = [];
    let conversation = emptyConversation();
    for (const call of runs.flat()) {
      if (call.messages !== undefined) {
        const folded = foldCallInputs([call]);
        if (folded.ok) conversation = folded.conversation;
        continue;
      }
      const delta = call.transcript;
      if (!delta) continue;
      // A change that drops an assistant answer is a rewind (an in-place change touches only the last user message).
      const dropped = conversation.messages.slice(delta.from);
      if (dropped.some((m) => m.role === 'assistant')) branches.push({ from: delta.from, messages: dropped });
      const problem = applyDelta(conversation, delta);
      if (problem !== null) throw new HistoryUnreadableError(this.workflowId, problem);
    }
    return branches;
  }

  /**
   * The conversation Claude was sent at turn `turn`'s model call, folded from the chain's
   * `callClaude` inputs (what a fork starts from), and the input of the run's latest execution.
   * @throws HistoryUnreadableError when the histories do not chain or no call had that turn
   */
  async conversationAt(turn: number): Promise<{ messages: Message[]; input: AgentRunInput | null }> {
    const { runId } = await this.describe();
    let input: AgentRunInput | null = null;
    const runs: ConversationPart[][] = [];
    let run: string | null = runId;
    const seen = new Set<string>();
    while (run !== null && !seen.has(run)) {
      seen.add(run);
      const h = await readTimeline(this.jobs.temporal, this.workflowId, run);
      runs.unshift(h.calls);
      input ??= h.input;
      run = h.continuedFrom;
    }
    const calls = runs.flat() as Array<ConversationPart & { turn?: number }>;
    const at = calls.findIndex((c) => c.turn === turn);
    if (at < 0) throw new HistoryUnreadableError(this.workflowId, `no model call of turn ${turn} in its history`);
    const folded = foldCallInputs(calls.slice(0, at + 1));
    if (!folded.ok) throw new HistoryUnreadableError(this.workflowId, folded.problem);
    return { messages: folded.conversation.messages, input };
  }

  /** The run's approval rules, oldest first (the status query: an open run's worker answers). */
  async rules(): Promise<ApprovalRule[]> {
    return (await this.queryStatus()).rules ?? [];
  }

  /** Removes approval rule `id`; answers with the rules left. @throws what {@link update} throws (UpdateRejectedError: no such rule) */
  async removeRule(id: number, options: SendOptions = {}): Promise<ApprovalRule[]> {
    return this.update(removeRuleUpdate, { id, by: options.by ?? defaultBy() }, `the removal of rule ${id}`, sendOptions(options));
  }

  /**
   * Asks Temporal to cancel the run: a running command's process group is
   * killed, the session closed, every `tool_use` answered, and the run ends
   * with status `cancelled` once a worker handles the request (it is
   * recorded even when none runs). Returns once the request is recorded.
   */
  async cancel(): Promise<void> {
    await this.temporal.cancel();
  }

  /**
   * Waits until the run has ended (across continue-as-new).
   * @param timeoutMs how long to wait, in ms @default no limit
   * @returns true once it ended; false when `timeoutMs` passed first
   */
  async waitForEnd(timeoutMs?: number): Promise<boolean> {
    const wait = new AbortController();
    const ended = this.jobs.temporal
      .withAbortSignal(wait.signal, () => this.temporal.result())
      .then(
        () => true,
        () => true,
      );
    try {
      if (timeoutMs === undefined) return await ended;
      return await Promise.race([ended, sleep(timeoutMs, false, { ref: false })]);
    } finally {
      // The wait is aborted either way, so no call is left open on a connection about to close.
      wait.abort();
    }
  }

  /**
   * The run's result, once it ends (across continue-as-new). A cancelled
   * run returns a result too (status `cancelled`).
   * @throws WorkflowFailedError when the workflow itself failed (invalid input) or was terminated
   */
  async result(): Promise<AgentRunResult> {
    return this.temporal.result();
  }
}

/**
 * The default request id of a decision: 24 hex digits of the sha256 of `<runId>.<toolUseId>.w<wait>`
 * for a numbered wait; for a run of an older worker (no wait number), of `<toolUseId>.d<n>` with n
 * the decisions it holds for that `tool_use` (of its last 20), so a `tool_use` id asked again after
 * a rewind gets a new id. Hashed: the Update id is stored in plaintext in history, which must not
 * name the pending `tool_use` id (docs/security.md, "Encryption"). Exported for its test only.
 */
export function decideRequestId(pending: PendingApproval, decisions: readonly AppliedDecision[]): string {
  const name =
    pending.wait !== undefined
      ? `${pending.runId ?? ''}.${pending.toolUseId}.w${pending.wait}`
      : `${pending.toolUseId}.d${decisions.filter((d) => d.toolUseId === pending.toolUseId).length}`;
  return sha256(name).slice(0, 24);
}

/** The update options of a {@link SendOptions}. */
function sendOptions(o: SendOptions): { requestId?: string; timeoutMs?: number } {
  return {
    ...(o.requestId !== undefined ? { requestId: o.requestId } : {}),
    ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
  };
}
