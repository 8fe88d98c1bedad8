/**
 * The run's budgets: turns, cost, tokens and duration, checked at the turn
 * boundary (before each model call); what a spent one does (`onBudget`:
 * pause until `extend`, or end the run), and the `extend` Update that
 * raises them. Deterministic (workflow code).
 *
 * A budget pause is a durable wait (`condition`, no timer, no activity): no
 * worker slot is held and the session is kept. Only `extend` (enough more
 * budget), `cancel`, and `end` of a chat run leave it; `resume` refuses,
 * since the run would stop again at once.
 */
import { condition, log, patched, setHandler } from '@temporalio/workflow';
import {
  BUDGET_KINDS,
  MAX_EXTEND,
  extendUpdate,
  totalTokens,
  type BudgetKind,
  type BudgetLimits,
  type ExtendAnswer,
  type ExtendRequest,
  type FinalStatus,
  type PauseState,
} from '../contract';
import type { RunState } from './run-state';
import { describeSpent, msSince, type SpentBudget } from './limits';
import { RejectedRequest, checkBy, checkObject, steeringHandler, steeringValidator } from './steering';

/**
 * patched() id: a spent budget under `onBudget: 'pause'` pauses the run
 * (status `paused`, a durable wait) instead of ending it. Runs without
 * `onBudget: 'pause'` never reach it, so older histories (which end at
 * `max_turns`) replay unchanged.
 */
export const BUDGET_PAUSE_PATCH = 'budget-pauses-run';

/** The final status a spent budget ends a run with under `onBudget: 'end'`. */
export const BUDGET_END_STATUS: Record<BudgetKind, FinalStatus> = {
  turns: 'max_turns',
  cost: 'max_cost',
  tokens: 'max_tokens_total',
  duration: 'max_duration',
};

/** The `extend` field, and the `extend` flag, of each budget. */
const EXTEND_FIELD = { turns: 'turns', cost: 'costUsd', tokens: 'tokens', duration: 'durationMs' } as const;
const EXTEND_FLAG: Record<BudgetKind, string> = { turns: '--turns N', cost: '--cost USD', tokens: '--tokens N', duration: '--duration D' };

/** The first spent budget, in the order turns, cost, tokens, duration; null while every one has room. */
export function spentBudget(state: RunState): SpentBudget | null {
  const { limits } = state;
  if (state.turns >= limits.maxTurns) return { budget: 'turns', limit: limits.maxTurns, used: state.turns };
  const cost = state.costUsd();
  if (limits.maxCostUsd !== undefined && cost !== null && cost >= limits.maxCostUsd)
    return { budget: 'cost', limit: limits.maxCostUsd, used: cost };
  const tokens = totalTokens(state.usage);
  if (limits.maxTokensTotal !== undefined && tokens >= limits.maxTokensTotal)
    return { budget: 'tokens', limit: limits.maxTokensTotal, used: tokens };
  if (limits.maxDurationMs !== undefined) {
    const elapsed = msSince(state.startedAt);
    if (elapsed >= limits.maxDurationMs) return { budget: 'duration', limit: limits.maxDurationMs, used: elapsed };
  }
  return null;
}

/**
 * The budget check at the turn boundary. Under `onBudget: 'pause'` (runs
 * that recorded {@link BUDGET_PAUSE_PATCH}) a spent budget pauses the run
 * here until `extend` gives enough; otherwise it ends the run.
 * @returns how the run ends (a budget's final status; `completed` when a
 *   chat run is ended while paused), or null to go on with the model call
 */
export async function checkBudgets(state: RunState): Promise<{ status: FinalStatus; error?: string; text?: string } | null> {
  let spent = spentBudget(state);
  if (spent === null) return null;
  if (state.input.onBudget !== 'pause' || !patched(BUDGET_PAUSE_PATCH))
    return { status: BUDGET_END_STATUS[spent.budget], error: describeSpent(spent) };
  const before = state.status;
  while (spent !== null) {
    await waitForMoreBudget(state, spent);
    if (state.endRequestedBy !== null) return { status: 'completed', text: state.lastAnswer ?? '' };
    spent = spentBudget(state);
  }
  state.setStatus(before);
  state.setDetails('budget extended; going on');
  return null;
}

/** Pauses on `spent` (status `paused`, `pause.reason: 'budget'`) until `extend` clears the pause, or a chat run is ended. */
async function waitForMoreBudget(state: RunState, spent: SpentBudget): Promise<void> {
  const pause: PauseState = { reason: 'budget', budget: spent.budget, limit: spent.limit, used: spent.used, at: new Date().toISOString() };
  state.askPause(pause);
  state.setStatus('paused');
  state.setDetails(
    `paused: ${describeSpent(spent)}; agent-jobs extend ${state.workflowId} ${EXTEND_FLAG[spent.budget]} to go on, or agent-jobs cancel ${state.workflowId}`,
  );
  log.info('budget spent; run paused', { ...spent });
  await condition(() => state.pause !== pause || state.endRequestedBy !== null);
  state.clearPause(pause);
}

/**
 * Registers the `extend` Update on `state`; an encrypted run (`sealed`) takes it only through its codec
 * (`checkSealed`, steering.ts), bound to this run,
 * once (`checkBinding`).
 */
export function setBudgetHandler(state: RunState, sealed = false): void {
  setHandler(extendUpdate, steeringHandler(state, extend), { validator: steeringValidator(state, 'extend', sealed, validateExtend) });
}

/**
 * Validator of `extend`: rejects a malformed request, one that names no
 * budget or an unknown field, an amount that is not a positive finite
 * number (an integer for turns, tokens and ms) or is above
 * {@link MAX_EXTEND}, a budget the run does not have, and an ended run.
 * Accepted any time the run is open (raising a budget before it is spent
 * is fine).
 * @throws RejectedRequest
 */
function validateExtend(state: RunState, req: ExtendRequest): void {
  checkObject(req);
  checkBy(req.by);
  if (state.result !== null) throw new RejectedRequest(`the run has ended (${state.result.status}); there is nothing to extend`);
  const fields = Object.values(EXTEND_FIELD) as string[];
  const unknown = Object.keys(req).filter((k) => k !== 'by' && k !== 'binding' && !fields.includes(k));
  if (unknown.length > 0) throw new RejectedRequest(`unknown field ${unknown[0]}; extend takes ${fields.join(', ')}`);
  const given = BUDGET_KINDS.filter((k) => req[EXTEND_FIELD[k]] !== undefined);
  if (given.length === 0) throw new RejectedRequest(`name at least one budget to extend: ${fields.join(', ')}`);
  for (const kind of given) {
    const field = EXTEND_FIELD[kind];
    const v: unknown = req[field];
    const integer = kind !== 'cost';
    if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || (integer && !Number.isInteger(v))) {
      throw new RejectedRequest(`${field} must be a positive ${integer ? 'integer' : 'number'}, not ${JSON.stringify(v) ?? String(v)}`);
    }
    if (v > MAX_EXTEND[field]) throw new RejectedRequest(`${field} adds more than ${MAX_EXTEND[field]} at once`);
    if (kind !== 'turns' && limitOf(state.limits, kind) === undefined) {
      throw new RejectedRequest(
        `the run has no ${kind} budget (start --max-${kind === 'tokens' ? 'tokens-total' : kind}); there is none to extend`,
      );
    }
  }
}

/** The limit of `kind` in `limits` (undefined: the run has no such budget). */
function limitOf(limits: BudgetLimits, kind: BudgetKind): number | undefined {
  return { turns: limits.maxTurns, cost: limits.maxCostUsd, tokens: limits.maxTokensTotal, duration: limits.maxDurationMs }[kind];
}

/**
 * Handler of `extend`: adds the amounts to the limits. A run paused on a
 * budget checks its budgets again: it goes on when it is within every one
 * now (the answer says `running`), else it stays paused on the first spent
 * one (`paused`, with that pause and its new limit).
 */
async function extend(state: RunState, req: ExtendRequest): Promise<ExtendAnswer> {
  const at = new Date().toISOString();
  state.extendLimits(req);
  log.info('budgets extended', { by: req.by, limits: state.limits });
  if (state.pause?.reason === 'budget') {
    // The wait ends; the loop checks the budgets again and goes on, or pauses on the one still spent.
    state.clearPause();
    await condition(() => state.pause !== null || state.status !== 'paused' || state.result !== null);
  }
  return { status: state.result?.status ?? state.status, limits: state.limits, pause: state.pause, by: req.by, at };
}
