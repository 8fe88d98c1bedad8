/**
 * Steering a run: the Updates a person sends to a running agentRun
 * (decide, say, pause, resume, end, remove a rule, extend a budget), their answers, and the
 * state they leave (rules, queued messages, the pause). Shared by the CLI
 * and the workflow; deterministic (types, constants and `define…` only).
 *
 * Every Update has a validator in the workflow: a request that cannot apply
 * now is rejected before it enters the history, with a reason the caller
 * reads from the `WorkflowUpdateFailedError`. An accepted Update answers
 * once the workflow has applied it (Temporal's "completed" stage).
 */
import { defineUpdate } from '@temporalio/workflow';

/** What a person did with a pending command. */
export type DecisionKind = 'approved' | 'edited' | 'denied';

/**
 * An approval rule: later commands that match run without asking, for the
 * rest of the run (carried across continue-as-new).
 * - `exact`: the command's bytes equal `text`.
 * - `prefix`: the command's words (after quote removal) start with the words of `text`.
 * Either way the command must pass the policy's literal-word test (one
 * simple command of plain words: no operator, redirection, expansion, glob
 * or assignment; src/policy, rules (a)–(d)), judged on the session's worker.
 */
export interface ApprovalRule {
  /** Stable number of the rule in its run (1, 2, …; never reused), for `rules --remove`. */
  id: number;
  kind: 'exact' | 'prefix';
  /** The command (`exact`) or the leading words (`prefix`), as the person gave them. */
  text: string;
  /** Who added it. */
  by: string;
  /** ISO-8601 workflow time. */
  at: string;
  /** The `tool_use` whose approval added it. */
  toolUseId: string;
}

/** A rule as the session's worker matches it (RunCommandInput.rules). */
export type RuleToMatch = Pick<ApprovalRule, 'id' | 'kind' | 'text'>;

/** A user message queued by `say`, sent to Claude at the next turn boundary. */
export interface QueuedMessage {
  text: string;
  by: string;
  /** ISO-8601 workflow time it was queued. */
  at: string;
}

/**
 * Why a run is paused. `human`: `pause`; `approval_timeout`: the approval
 * wait ran out under `--approval-timeout-action pause`; `budget`: a budget
 * is spent under `onBudget: 'pause'` (only `extend` or `cancel` goes on).
 */
export type PauseReason = 'human' | 'approval_timeout' | 'budget';

/** The budgets a run has: turns always, the others when the input sets them. */
export const BUDGET_KINDS = ['turns', 'cost', 'tokens', 'duration'] as const;
export type BudgetKind = (typeof BUDGET_KINDS)[number];

/** The pause of a paused run (status `paused`). */
export interface PauseState {
  reason: PauseReason;
  /** Who paused it (for `human`). */
  by?: string;
  /** ISO-8601 workflow time. */
  at: string;
  /** For `budget`: which budget is spent. */
  budget?: BudgetKind;
  /** For `budget`: its limit (turns, USD, tokens or ms). */
  limit?: number;
  /** For `budget`: how much of it was used when the run paused (same unit). */
  used?: number;
}

/** The limits of a run's budgets; `extend` raises them, and they are carried across continue-as-new. */
export interface BudgetLimits {
  /** Model calls. */
  maxTurns: number;
  /** USD; absent: no cost budget. */
  maxCostUsd?: number;
  /** Every token of the usage (input, output, cache writes, cache reads); absent: none. */
  maxTokensTotal?: number;
  /** ms of workflow time since the chain started; absent: none. */
  maxDurationMs?: number;
}

/** What a spent budget does: pause the run (until `extend`) or end it. */
export const ON_BUDGET_ACTIONS = ['pause', 'end'] as const;
export type OnBudget = (typeof ON_BUDGET_ACTIONS)[number];
/** @default of the input field `onBudget`: `end`, the behaviour of runs started before budgets paused (they replay the same). */
export const DEFAULT_ON_BUDGET: OnBudget = 'end';
/** What `start` sends when `--on-budget` is not given: a run started from the CLI pauses on its budgets. */
export const CLI_DEFAULT_ON_BUDGET: OnBudget = 'pause';

/** What the run does when no decision comes within the approval timeout. */
export const APPROVAL_TIMEOUT_ACTIONS = ['deny', 'end', 'pause'] as const;
export type ApprovalTimeoutAction = (typeof APPROVAL_TIMEOUT_ACTIONS)[number];
/** @default for a run whose input names none (the behaviour of runs before the option existed). */
export const DEFAULT_APPROVAL_TIMEOUT_ACTION: ApprovalTimeoutAction = 'deny';

/** Longest text accepted by `say`, in characters (UTF-16 units): 100,000. */
export const MAX_MESSAGE_CHARS = 100_000;
/**
 * Most characters queued at once, all messages together: 200,000 (two
 * messages of the longest). The queue is part of every `status` answer and
 * of the next user message; a hundred long messages would make the status
 * query too large for gRPC, and so the run impossible to inspect or decide
 * on from the CLI.
 */
export const MAX_QUEUED_CHARS = 2 * MAX_MESSAGE_CHARS;
/** Most messages queued at once; `say` is rejected past it: 100. */
export const MAX_QUEUED_MESSAGES = 100;
/** Most rules a run holds; `--always` / `--always-prefix` are rejected past it: 100. */
export const MAX_RULES = 100;
/** Longest `by` accepted, in characters: 200. */
export const MAX_BY_CHARS = 200;

/** Payload of the `decide` Update (`approve` / `deny`). */
export interface DecideRequest {
  /** The pending `tool_use` id. */
  toolUseId: string;
  approved: boolean;
  /** SHA-256 (64 lowercase hex digits) of the command the person reviewed; required: a decision is bound to those bytes. */
  commandSha256: string;
  /** Why (shown to Claude on a denial). */
  reason?: string;
  by: string;
  /** Run this command instead of Claude's (approve only). Claude is told it was edited, and what ran. */
  edit?: string;
  /** Also approve the identical command for the rest of the run (approve only; not with `edit`). */
  always?: boolean;
  /** Also approve later commands starting with these literal words (approve only; not with `edit`). */
  alwaysPrefix?: string;
  /**
   * The wait this decision answers (the pending approval's `wait`); given, the run rejects it
   * for any other wait. The client always sends it when the run publishes one; an encrypted run
   * requires it.
   */
  wait?: number;
  /**
   * The workflow run of the pending approval (its `runId`). An encrypted run requires it, and a
   * decision that came through the codec keys (docs/security.md, "Encryption"): a decision copied
   * from another run's history, or sent without the keys, does not apply. The client sends it
   * when the run publishes one.
   */
  runId?: string;
}

/** Answer of an accepted `decide` Update: what the run applied. */
export interface DecideAnswer {
  applied: true;
  toolUseId: string;
  /** The wait the decision was applied to (absent from older workers); the client checks it is the one it named. */
  wait?: number;
  decision: DecisionKind;
  by: string;
  /** The rule the decision added (`always` / `alwaysPrefix`). */
  rule?: ApprovalRule;
  /** The command that will run (the edit, when edited). */
  command: string;
}

/** The steering Updates whose requests carry a {@link RequestBinding} (its `update`). */
export const STEERING_UPDATES = ['say', 'pause', 'resume', 'end', 'extend', 'removeRule', 'rewind'] as const;
export type SteeringUpdate = (typeof STEERING_UPDATES)[number];

/**
 * Binds a steering request to one Update of one run, once (docs/security.md, "Encryption"). The
 * product's client adds it to every steering request (src/request-binding.ts); an encrypted run
 * refuses a request without it, and every run refuses one that names another Update or run, was
 * already applied, or was issued outside {@link REQUEST_WINDOW_MS}. So a sealed request copied
 * out of a history does not apply again, to this run or another.
 */
export interface RequestBinding {
  /** The Update it is for (`say`, `extend`, …): a sealed `pause` is not an `end`. */
  update: SteeringUpdate;
  /** The workflow id of the run it is for. */
  workflowId: string;
  /** The first execution's run id of that run's chain (the same across continue-as-new; a new run under the same id has another). */
  firstRunId: string;
  /** Single-use id: a run applies a request id at most once. The product's client sends the Update id (random unless the sender chose its request id). At most {@link MAX_REQUEST_ID_CHARS} characters. */
  requestId: string;
  /** When the sender made it: ISO-8601 (its clock; the run judges it by workflow time). */
  issuedAt: string;
}

/**
 * How long a bound steering request stays valid after its `issuedAt`, in workflow time: 1 hour. A
 * run refuses an older one and remembers the request ids it applied only that long (carried across
 * continue-as-new), so what it remembers stays bounded. An hour covers a client clock that is off
 * by minutes and an Update that waits while no worker runs; past it the sender sends it again.
 */
export const REQUEST_WINDOW_MS = 60 * 60_000;
/** How far past the run's workflow time a request's `issuedAt` may be (a client clock ahead): 5 minutes. */
export const REQUEST_CLOCK_SKEW_MS = 5 * 60_000;
/** Most request ids a run remembers within {@link REQUEST_WINDOW_MS}; a request past it is refused until older ones expire: 1000. */
export const MAX_REMEMBERED_REQUESTS = 1000;
/** Longest request id accepted, in characters: 200. */
export const MAX_REQUEST_ID_CHARS = 200;

/** A request id a run applied, and when it was issued (carried across continue-as-new until {@link REQUEST_WINDOW_MS} after it). */
export interface UsedRequest {
  requestId: string;
  issuedAt: string;
}

/** What every steering request may carry: its {@link RequestBinding} (required in an encrypted run). */
export interface BoundRequest {
  binding?: RequestBinding;
}

/** Payload of the `say` Update. */
export interface SayRequest extends BoundRequest {
  text: string;
  by: string;
}

/** Answer of an accepted `say` Update. */
export interface SayAnswer {
  queued: true;
  /** Messages queued now, this one included. */
  queuedMessages: number;
  at: string;
}

/** Payload of `pause`, `resume` and `end`. */
export interface ByRequest extends BoundRequest {
  by: string;
}

/** Answer of `pause` / `resume` / `end`: the status right after. */
export interface SteerAnswer {
  /** The run's status once the request was applied (`paused`, `running`, …). For `pause` during a model call or command: `running` until it reaches the safe point. */
  status: string;
  by: string;
  at: string;
}

/** Payload of the `removeRule` Update. */
export interface RemoveRuleRequest extends BoundRequest {
  id: number;
  by: string;
}

/** Largest amount one `extend` adds, per budget: 10,000 turns, 1,000,000 USD, 10^12 tokens, 365 days (a typo guard; the sums stay exact numbers). */
export const MAX_EXTEND = { turns: 10_000, costUsd: 1_000_000, tokens: 1_000_000_000_000, durationMs: 365 * 86_400_000 } as const;

/** Payload of the `extend` Update: how much to add to each budget (at least one; each a positive number). */
export interface ExtendRequest extends BoundRequest {
  by: string;
  /** More model calls (an integer). */
  turns?: number;
  /** More USD. */
  costUsd?: number;
  /** More tokens (an integer). */
  tokens?: number;
  /** More ms of run time (an integer). */
  durationMs?: number;
}

/** Answer of an accepted `extend` Update: the limits now, and the run's status once they applied. */
export interface ExtendAnswer {
  /** `running` when the run was paused on a budget and is now within all of them; `paused` when one is still spent (`pause` says which); else the status it had. */
  status: string;
  limits: BudgetLimits;
  /** The pause left, when the run is still paused. */
  pause: PauseState | null;
  by: string;
  at: string;
}

/** `decide` Update: approve, edit or deny the pending command (see {@link DecideRequest}). */
export const decideUpdate = defineUpdate<DecideAnswer, [DecideRequest]>('decide');
/** `say` Update: queue a user message for the next turn boundary (or continue a chat run waiting for one). */
export const sayUpdate = defineUpdate<SayAnswer, [SayRequest]>('say');
/** `pause` Update: stop at the next safe point (before the next model call or command; never mid-command). */
export const pauseUpdate = defineUpdate<SteerAnswer, [ByRequest]>('pause');
/** `resume` Update: go on after a pause. */
export const resumeUpdate = defineUpdate<SteerAnswer, [ByRequest]>('resume');
/** `end` Update: complete a `--chat` run with its last answer as the result. */
export const endUpdate = defineUpdate<SteerAnswer, [ByRequest]>('end');
/** `extend` Update: raise the run's budgets (any time the run is open); a run paused on a budget goes on once it is within all of them. */
export const extendUpdate = defineUpdate<ExtendAnswer, [ExtendRequest]>('extend');
/** `removeRule` Update: remove an approval rule by id; answers with the rules left. */
export const removeRuleUpdate = defineUpdate<ApprovalRule[], [RemoveRuleRequest]>('removeRule');
