/**
 * Every timeout and retry policy of the workflow and its activities, every
 * task queue name, default and search attribute of agent-jobs, named once,
 * with the reason for its value. (Timeouts local to one client-side
 * operation, such as a CLI's query deadline or a connect timeout, are named
 * in their own module.)
 *
 * This module is imported by workflow code, so it must stay deterministic:
 * constants only, no `process.env`, no Node modules. Values that come from
 * the environment are read in `src/settings.ts` (worker and CLI side).
 */
import {
  ActivityCancellationType,
  defineSearchAttributeKey,
  SearchAttributeType,
  type ActivityOptions,
  type RetryPolicy,
} from '@temporalio/common';

/** Task queue of the agentRun workflow, `callClaude` and `openSession`. Any worker serves it. */
export const SHARED_TASK_QUEUE = 'agent-jobs';

/**
 * Task queue of one worker process's bash sessions (session affinity).
 * Every `runCommand` / `restartSession` / `closeSession` of a session goes to
 * the queue of the process that holds that session's bash process.
 * @param workerId the id a worker process picks at start (unique per process)
 */
export function sessionTaskQueue(workerId: string): string {
  return `${SHARED_TASK_QUEUE}.session.${workerId}`;
}

/** Workflow type name, as the client and the UI see it. */
export const AGENT_RUN_WORKFLOW = 'agentRun';

// ---------------------------------------------------------------------------
// Model calls (shared queue)

/**
 * `callClaude` activity timeouts.
 * - startToClose 10 min: a long streamed answer with a large `max_tokens`
 *   can legitimately take minutes; the SDK itself warns past 10 minutes.
 * - heartbeat 5 s: the call heartbeats every second while it waits, so a
 *   worker that dies mid-call is noticed within 5 s and the call runs again
 *   on another worker.
 */
export const CLAUDE_CALL_TIMEOUTS = {
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '5 seconds',
} as const;

/**
 * A model call that receives nothing from the API (no headers, no stream
 * event or ping) for this long is abandoned and retried, in ms: 90 s.
 * Without it a connection that hangs holds the run until Node's 300 s
 * headers timeout. Streamed answers send events (and pings) far more often.
 */
export const CLAUDE_IDLE_TIMEOUT_MS = 90_000;

/**
 * Time limit of one Claude HTTP request in ms when
 * `AGENT_JOBS_CLAUDE_TIMEOUT_MS` is unset: 600000 (10 min, the SDK's own
 * default), after which the SDK aborts it and the call is retried.
 */
export const DEFAULT_CLAUDE_TIMEOUT_MS = 600_000;

/** How often `callClaude` heartbeats while waiting on the API, in ms. */
export const CLAUDE_HEARTBEAT_INTERVAL_MS = 1_000;

/**
 * The single retry layer for model calls (the SDK's own retries are off:
 * `maxRetries: 0`). HTTP errors (429, 529, 5xx, ...) and connection errors
 * are retried with exponential backoff; a `retry-after` header overrides the
 * next delay through `ApplicationFailure.nextRetryDelay`. What is never
 * retried (`NON_RETRYABLE_STATUSES`, and `x-should-retry: false`) is decided
 * in one place: `isRetryable` in `src/activities/claude-errors.ts`.
 * 10 attempts (1, 2, 4, ... s, capped at 60 s) ride out about 4 minutes of
 * overload before the run fails with the API's message; the first retry
 * after a worker died mid-call comes 1 s after the heartbeat timeout.
 */
export const CLAUDE_RETRY_POLICY: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '60 seconds',
  maximumAttempts: 10,
};

/** Every option of `callClaude` (the workflow's one proxy for it; call sites add only `summary`). */
export const CLAUDE_ACTIVITY_OPTIONS: ActivityOptions = { ...CLAUDE_CALL_TIMEOUTS, retry: CLAUDE_RETRY_POLICY };

/**
 * Bound of a worker's conversation cache, in characters of JSON (about that many
 * bytes of memory, twice for non-ASCII): 256 M. Past it the least recently used runs'
 * copies are dropped; their next call rebuilds the copy from the workflow history.
 */
export const DEFAULT_TRANSCRIPT_CACHE_CHARS = 256 * 1024 * 1024;

/**
 * The results of one answer's `tool_use`s together hold at most this many bytes of JSON
 * (UTF-8, 400,000; later ones are cut with a note). A command's output is capped on its own
 * (30 KB), but an answer may ask for any number of commands; this keeps the user message
 * of results, carried by the next `callClaude`, under about 400 KB, so that even sent twice
 * (a message changed in place is sent again with the next change) it stays far below the
 * 2 MiB payload limit (C13). Runs recorded before `turn-results-in-json-bytes` count UTF-16
 * code units.
 */
export const MAX_TURN_RESULT_CHARS = 400_000;

/**
 * How far past {@link MAX_TURN_RESULT_CHARS} the system's notes at the end of a turn's cut
 * results may take the turn (bytes of JSON, UTF-8; 100,000): a result cut by the budget keeps
 * its notes whole after the cut note (src/workflows/tool-use.ts `withinTurnBudget`), and notes
 * are short (a note names at most 5 paths), so this is reached only by notes made long on
 * purpose (deep paths); past it they are cut with the output, for Claude only (people are shown
 * the notes the run publishes). 500 KB sent twice stays far below the 2 MiB payload limit.
 */
export const MAX_TURN_NOTES_OVERDRAFT_BYTES = 100_000;

/**
 * The claim check (src/codec/claim-check.ts): a payload whose encoded bytes (compressed,
 * encrypted, serialized) are over this many goes to the blob store and history keeps a
 * reference of about 250 bytes. 128 KiB by default (`AGENT_JOBS_BLOB_THRESHOLD`): a quarter of
 * the server's 512 KiB warning, so a workflow task's payloads stay far below its 4 MB message
 * limit and the 2 MiB payload limit, while the usual turn (a 30 KB output, a short answer) stays
 * inline and costs no store round trip. Allowed: 1 KiB to 512 KiB (past the warning, the server
 * logs every such payload).
 */
export const DEFAULT_BLOB_THRESHOLD_BYTES = 128 * 1024;
export const MIN_BLOB_THRESHOLD_BYTES = 1024;
export const MAX_BLOB_THRESHOLD_BYTES = 512 * 1024;

/**
 * Bound of the payload bytes one workflow task of `agentRun` may command, in bytes of JSON (UTF-8,
 * as the payload converter writes them, before the codec): 1,966,080 (2 MiB less 128 KiB). The
 * server refuses a command whose payloads pass 2 MiB (`limit.blobSize.error`; for a
 * continue-as-new it fails the run) and a task completion over its 4 MB gRPC message limit (it
 * terminates the run); gzip, encryption and metadata add at most a few hundred bytes a payload,
 * so a task under this bound is under both. Past it, with the claim check off, the run fails itself
 * first, saying why (src/workflows/task-payloads.ts, C30); with it on, every payload over
 * {@link DEFAULT_BLOB_THRESHOLD_BYTES} goes to the store and the task stays small whatever its raw size.
 */
export const MAX_TASK_PAYLOAD_BYTES = 2 * 1024 * 1024 - 128 * 1024;

/**
 * `payloadOffload`, a local activity of the worker running the workflow task (it only reads the
 * worker's codec settings): 10 s start-to-close, 3 attempts.
 */
export const PAYLOAD_OFFLOAD_OPTIONS = {
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3 },
} as const;

/** Default model; overridden by `AGENT_JOBS_MODEL` (at start) or the run's `model` input. */
export const DEFAULT_MODEL = 'claude-opus-5-5';

/** Default `max_tokens` of one model call (the Messages API's per-response cap). */
export const DEFAULT_MAX_TOKENS = 4096;

/**
 * Upper bound for the one retry after `stop_reason: max_tokens`: the
 * request is sent again with `max_tokens` doubled, up to this value.
 */
export const MAX_TOKENS_RETRY_CAP = 32_000;

// ---------------------------------------------------------------------------
// Bash sessions (worker-specific queues)

/**
 * Session activities (`runCommand`, `restartSession`, `closeSession`) on a
 * worker's own queue.
 * - scheduleToStart 4 s: a live worker polls its queue continuously (its
 *   session worker has a slot for every session it may hold:
 *   {@link sessionActivitySlots}), so a task that waits 4 s means the
 *   worker is gone; nothing can have run. Below the heartbeat timeout,
 *   so that a kill that also strands a workflow task (4 s workflow task
 *   timeout) is still recovered within 2 × 5 s.
 * - heartbeat 5 s: commands heartbeat every second; a worker killed mid
 *   command is noticed within 5 s.
 * - maximumAttempts 1: commands are at-most-once. A retry could run a
 *   command twice; the workflow tells Claude instead.
 */
export const SESSION_SCHEDULE_TO_START_TIMEOUT = '4 seconds';
export const SESSION_HEARTBEAT_TIMEOUT = '5 seconds';
export const SESSION_RETRY_POLICY: RetryPolicy = { maximumAttempts: 1 };

/** How often session activities heartbeat, in ms (well inside the 5 s timeout). */
export const SESSION_HEARTBEAT_INTERVAL_MS = 1_000;

/**
 * Longest the SDK holds a session activity's heartbeats before it sends
 * them to the server: 1 s (the session worker's
 * `maxHeartbeatThrottleInterval`). Without it the SDK throttles to 0.8 ×
 * the heartbeat timeout (4 s), which left 1 s of slack before the 5 s
 * timeout: a machine slow by a second made a running command look lost.
 */
export const SESSION_HEARTBEAT_THROTTLE = '1 second';

/**
 * How often every worker process tells the server it is alive (the SDK's
 * worker heartbeat, `Runtime` `workerHeartbeatInterval`; the server lists
 * them with `ListWorkers`): 1 s, the shortest the SDK accepts. The SDK's
 * own threads send it, so a busy JavaScript thread does not stop it; a
 * process that is killed (or stopped) does.
 */
export const WORKER_HEARTBEAT_INTERVAL = '1 second';

/**
 * A session's worker that gave no sign of life (worker heartbeat, or a poll
 * of its session queue, as the server reports them) for this long is gone,
 * in ms: 8 s. A live worker gives one every second
 * ({@link WORKER_HEARTBEAT_INTERVAL}), so this tolerates a stall of about
 * 6 s (a machine starved, a process stopped and continued), while a worker
 * that was killed is still declared lost within 10 s of the kill.
 */
export const WORKER_SILENCE_MS = 8_000;

/**
 * Before declaring a worker gone, the liveness check watches it at least
 * this long, in ms: 1.5 s, more than one {@link WORKER_HEARTBEAT_INTERVAL},
 * so a clock that runs ahead of the worker's cannot make a live worker look
 * silent (a heartbeat that arrives meanwhile proves it alive).
 */
export const WORKER_LIVENESS_MIN_WATCH_MS = 1_500;

/** How often the liveness check reads the server's view of a worker, in ms. */
export const WORKER_LIVENESS_POLL_MS = 500;

/**
 * `sessionWorkerLiveness` (shared queue, any worker): it watches for up to
 * {@link WORKER_SILENCE_MS}, heartbeating as it reads, so 30 s start-to-close
 * and a 5 s heartbeat timeout; 3 attempts. When it cannot answer at all the
 * session counts as lost (as before the check existed).
 */
export const WORKER_LIVENESS_ACTIVITY_OPTIONS: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '5 seconds',
  retry: { initialInterval: '500 milliseconds', maximumAttempts: 3 },
};

/**
 * How many times a run waits again for a session's worker that timed out a
 * command (schedule-to-start or heartbeat) but is alive by the liveness
 * check: 24. Each wait takes at least the 4 s schedule-to-start timeout, so
 * a worker alive but unable to take the command for about 2 minutes is
 * then declared lost, with what was waited for.
 */
export const SLOW_WORKER_MAX_WAITS = 24;

/**
 * A command whose activity the server forgot (it timed out while the
 * worker was slow) keeps running for the run to collect by `commandOutcome`;
 * if no run asks within this long, in ms (60 s), its process group is
 * killed, as a command of a run that ended is.
 */
export const ORPHAN_COMMAND_CLAIM_MS = 60_000;

/** Default per-command timeout in ms (the session kills the process group past it). */
export const DEFAULT_COMMAND_TIMEOUT_MS = 120_000;

/**
 * Slack added to a command's own timeout for the activity's
 * startToCloseTimeout, in ms: the session needs time to kill the process
 * group and restart bash before it reports the timeout.
 */
export const COMMAND_TIMEOUT_SLACK_MS = 30_000;

/**
 * How long a worker told to stop (SIGTERM / SIGINT / SIGHUP) lets its running
 * commands finish, in ms, when `AGENT_JOBS_SHUTDOWN_GRACE` is unset: the
 * default command timeout plus its slack, so a command started with the
 * default timeout always ends (done or timed out) inside the grace. A
 * command still running when it ends is killed and reported to Claude.
 */
export const DEFAULT_SHUTDOWN_GRACE_MS = DEFAULT_COMMAND_TIMEOUT_MS + COMMAND_TIMEOUT_SLACK_MS;

/**
 * What a stopping worker may take past its grace, in ms: killing the
 * commands still running (SIGTERM, then SIGKILL after the session's kill
 * grace), reporting them, and the SDK workers' own shutdown. The process
 * exits at grace + this at the latest, whatever is still pending; a deploy
 * should wait that long before it SIGKILLs.
 */
export const SHUTDOWN_FORCE_TIME_MS = 10_000;

/**
 * The longest `AGENT_JOBS_SHUTDOWN_GRACE`, in ms: 2^31 - 1 (the longest
 * delay Node's timers keep; a longer one fires after 1 ms, see Node's
 * `setTimeout` docs) less {@link SHUTDOWN_FORCE_TIME_MS}, since the exit
 * deadline is a timer of grace + force. About 596 hours.
 */
export const MAX_SHUTDOWN_GRACE_MS = 2 ** 31 - 1 - SHUTDOWN_FORCE_TIME_MS;

/**
 * The session-queue worker's `shutdownGraceTime`: it is shut down only after
 * the drain (every command done or killed), so what is left is a
 * `closeSession` or a refusal in flight.
 */
export const SESSION_WORKER_SHUTDOWN_GRACE_MS = 2_000;

/** `restartSession` / `closeSession`: quick operations, 30 s start-to-close. */
export const SESSION_CONTROL_START_TO_CLOSE = '30 seconds';

/**
 * `openSession` runs on the shared queue (any worker): 30 s start-to-close, a 5 s heartbeat
 * timeout so a worker killed mid-open is noticed in 5 s. Retried 1 s to 10 s apart without limit
 * while every worker is full (`WorkerFull`), so the run waits for room; a real failure ends after
 * {@link OPEN_SESSION_FAILED_ATTEMPTS} attempts (docs/decisions.md, "openSession waits for room").
 */
export const OPEN_SESSION_TIMEOUTS = { startToCloseTimeout: '30 seconds', heartbeatTimeout: '5 seconds' } as const;
export const OPEN_SESSION_RETRY_POLICY: RetryPolicy = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
};

/** The attempt of `openSession` from which a failure other than `WorkerFull` is not retried: 3 (see {@link OPEN_SESSION_RETRY_POLICY}). */
export const OPEN_SESSION_FAILED_ATTEMPTS = 3;

/** Every option of `openSession` (shared queue; call sites add only `summary`). */
export const OPEN_SESSION_ACTIVITY_OPTIONS: ActivityOptions = { ...OPEN_SESSION_TIMEOUTS, retry: OPEN_SESSION_RETRY_POLICY };

/**
 * Memory set aside for one bash session when the session cap is sized to
 * the machine (`AGENT_JOBS_MAX_SESSIONS` unset), in bytes: 256 MiB. An idle
 * session's bash takes about 2 MB and the worker's own share about 5 MB
 * (measured by `node dist/dev/bench/many.js`), but the commands an agent runs
 * are what count: a `node`, `tsc` or `pytest` run takes 100–500 MB while it
 * runs, and not every session runs one at the same moment.
 */
export const SESSION_MEMORY_ALLOWANCE_BYTES = 256 * 1024 * 1024;

/**
 * Fewest sessions a worker holds when sized to the machine: 4. A small
 * container (1 GiB) still serves a few runs; a memory hog there is killed
 * before the worker (sessions run with `oom_score_adj` 1000).
 */
export const MIN_DEFAULT_MAX_SESSIONS = 4;

/**
 * Most sessions a worker holds when sized to the machine: 200, the load
 * measured on one worker process (200 runs × 10 turns, `node
 * dist/dev/bench/many.js`). Every session's output parsing and heartbeats share
 * the one JavaScript thread of the process; past this, run more worker
 * processes (or set `AGENT_JOBS_MAX_SESSIONS` after measuring).
 */
export const MAX_DEFAULT_MAX_SESSIONS = 200;

/**
 * Activity slots of a worker's session-queue worker for a cap of
 * `maxSessions`: the cap + 10. Each session runs one activity at a time (the
 * workflow awaits each command), and a command that waits for a slot longer
 * than `SESSION_SCHEDULE_TO_START_TIMEOUT` is taken for a lost worker, so
 * there must be a slot for every session; the 10 spare are for
 * `closeSession` of sessions this worker no longer holds.
 */
export function sessionActivitySlots(maxSessions: number): number {
  return maxSessions + 10;
}

/**
 * Activity slots of a worker's shared-queue worker (`callClaude`,
 * `openSession`) for a cap of `maxSessions`: at least the SDK's default
 * 100, else the cap. A run makes one model call at a time, and each run
 * here holds a session here, so the cap bounds the calls this worker's runs
 * make at once; a task that waits for a slot only waits (no
 * schedule-to-start timeout), but a full worker must still take
 * `openSession` tasks quickly to refuse them.
 */
export function sharedActivitySlots(maxSessions: number): number {
  return Math.max(100, maxSessions);
}

/**
 * Every option of the activities on one session's queue (`runCommand`,
 * `restartSession`, `closeSession`): the timeouts and at-most-once retry
 * above, and `WAIT_CANCELLATION_COMPLETED`, so the workflow waits until a
 * cancelled command's process group is really gone before it moves on.
 * startToClose is `SESSION_CONTROL_START_TO_CLOSE`; `runCommand` call sites
 * raise it to the command's own timeout + `COMMAND_TIMEOUT_SLACK_MS`.
 * @param taskQueue the session's worker queue ({@link sessionTaskQueue})
 */
export function sessionActivityOptions(taskQueue: string): ActivityOptions {
  return {
    taskQueue,
    scheduleToStartTimeout: SESSION_SCHEDULE_TO_START_TIMEOUT,
    heartbeatTimeout: SESSION_HEARTBEAT_TIMEOUT,
    startToCloseTimeout: SESSION_CONTROL_START_TO_CLOSE,
    retry: SESSION_RETRY_POLICY,
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
}

/**
 * Workflow task timeout of every run: 4 s (Temporal's default is 10 s). A
 * workflow task here takes milliseconds (a cold worker replaying a long
 * history: well under a second); when the worker processing one dies, the
 * task is retried elsewhere only after this timeout, so it bounds recovery
 * from a kill that lands mid-task.
 */
export const WORKFLOW_TASK_TIMEOUT = '4 seconds';

/**
 * How long a workflow task waits on a worker's sticky queue before it goes
 * to the shared queue: 1 s (the SDK's default is 10 s). A live worker polls
 * its sticky queue all the time, so this only delays runs whose cached
 * worker died; a busy worker that misses it costs a replay elsewhere, not
 * correctness (docs/decisions.md, "Timeouts chosen by the chaos run").
 */
export const STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT = '1 second';

/**
 * Workflow tasks one worker processes at once: 8 (the SDK's default is 40).
 * A worker's workflows share one workflow thread (`workflowThreadPoolSize`
 * is 1 with `reuseV8Context`), so more slots add no CPU, only a queue inside
 * the worker whose tail runs past {@link WORKFLOW_TASK_TIMEOUT} on a starved
 * machine; a task that waits for a slot waits on the server instead
 * (docs/decisions.md, "Eight workflow task slots").
 */
export const WORKFLOW_TASK_SLOTS = 8;

// ---------------------------------------------------------------------------
// Approvals and budgets

/** Default approval wait before a pending command is denied: 24 h. */
export const DEFAULT_APPROVAL_TIMEOUT = '24 hours';

/** How long a `--chat` run waits for the next message before it completes (Temporal duration string). */
export const DEFAULT_CHAT_IDLE_TIMEOUT = '24 hours';

/** Default turn budget (model calls) of one run. */
export const DEFAULT_MAX_TURNS = 50;

/**
 * Default of the `transcriptBudgetChars` input, which is accepted (older runs and clients
 * send it) and ignored: requests are fitted to the model's context window instead
 * (src/activities/context-window.ts), and each `callClaude` input holds only the
 * conversation's change, far below the 2 MiB payload limit (C13).
 */
export const DEFAULT_TRANSCRIPT_BUDGET_CHARS = 200_000;

/**
 * Continue-as-new thresholds: 4 MiB or 4,096 events, checked after each
 * model turn, besides the server's own suggestion (`continueAsNewSuggested`).
 * They are the server's default suggestion (`limit.historySize.suggestContinueAsNew`,
 * `limit.historyCount.suggestContinueAsNew`), named here so a server configured
 * higher does not let a history grow past them; the hard limits are 50 MiB /
 * 51,200 events. A run of 20 KB outputs continues as new about every 90 turns.
 * Not higher, because a dead worker's runs are replayed from their histories
 * on a survivor (docs/decisions.md, "Bounded history, then continue-as-new").
 */
export const CONTINUE_AS_NEW_HISTORY_BYTES = 4 * 1024 * 1024;
export const CONTINUE_AS_NEW_HISTORY_EVENTS = 4_096;

/**
 * The thresholds of runs recorded before each call sent only the conversation's
 * change (then every call carried the whole transcript, so history grew with
 * the square of the turns): 2 MiB or 2,000 events. Kept for their replay
 * (patched() id `linear-history`).
 */
export const LEGACY_CONTINUE_AS_NEW_HISTORY_BYTES = 2 * 1024 * 1024;
export const LEGACY_CONTINUE_AS_NEW_HISTORY_EVENTS = 2_000;

// ---------------------------------------------------------------------------
// Visibility

/** Keyword: an open status (`running`, `awaiting_approval`, `paused`, `awaiting_message`) or a final status of the result. */
export const AGENT_STATUS = defineSearchAttributeKey('AgentStatus', SearchAttributeType.KEYWORD);
/** Int: model calls made so far. */
export const AGENT_TURNS = defineSearchAttributeKey('AgentTurns', SearchAttributeType.INT);
/** Int: tokens used so far, every kind (input, output, cache writes, cache reads: `totalTokens` in src/contract/messages.ts). */
export const AGENT_TOKENS = defineSearchAttributeKey('AgentTokens', SearchAttributeType.INT);
/** Double: what the run cost so far, in USD (unset while the model's prices are unknown, and in runs started before it was published). */
export const AGENT_COST_USD = defineSearchAttributeKey('AgentCostUsd', SearchAttributeType.DOUBLE);

/** Text: what the run waits for a person for (the command awaiting approval, the pause, the chat), empty when it waits for nobody. */
export const AGENT_AWAITING = defineSearchAttributeKey('AgentAwaiting', SearchAttributeType.TEXT);
/** Datetime: since when the run waits for a person (`pending` lists newest first by it). */
export const AGENT_AWAITING_SINCE = defineSearchAttributeKey('AgentAwaitingSince', SearchAttributeType.DATETIME);

/** Search attributes this project registers (`temporal server start-dev --search-attribute`, the worker's startup check). */
export const SEARCH_ATTRIBUTES = [
  { name: 'AgentStatus', type: 'Keyword' },
  { name: 'AgentTurns', type: 'Int' },
  { name: 'AgentTokens', type: 'Int' },
  { name: 'AgentCostUsd', type: 'Double' },
  { name: 'AgentAwaiting', type: 'Text' },
  { name: 'AgentAwaitingSince', type: 'Datetime' },
] as const;

/**
 * How long a client waits for a run's answer to an Update, in ms: 30 s. A
 * worker applies an Update within one workflow task, so a longer wait means
 * no worker holds the run; the client then says whether it may still apply
 * (src/client.ts `UpdateTimeoutError`). `AGENT_JOBS_UPDATE_TIMEOUT` sets the CLI's.
 */
export const UPDATE_DEADLINE_MS = 30_000;

/** How long a client waits for a worker's answer to a query, in ms: 10 s (a worker answers within one workflow task). */
export const QUERY_DEADLINE_MS = 10_000;
