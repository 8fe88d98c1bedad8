/**
 * A run's budget limits from its input, the time since a moment in
 * workflow time, and a spent budget in words: what the run's state needs of
 * the budgets without the budget checks (./budget). Deterministic (workflow
 * code).
 */
import type { BudgetKind, BudgetLimits } from '../contract';
import { durationToMs, type ResolvedInput } from '../contract/input';
import { describeDuration } from './tool-results';

/** A budget that is spent: which, its limit and what was used (turns, USD, tokens or ms). */
export interface SpentBudget {
  budget: BudgetKind;
  limit: number;
  used: number;
}

/** The limits a run starts with, from its input. */
export function initialLimits(input: ResolvedInput): BudgetLimits {
  return {
    maxTurns: input.maxTurns,
    ...(input.maxCostUsd !== undefined ? { maxCostUsd: input.maxCostUsd } : {}),
    ...(input.maxTokensTotal !== undefined ? { maxTokensTotal: input.maxTokensTotal } : {}),
    ...(input.maxDuration !== undefined ? { maxDurationMs: durationToMs(input.maxDuration) } : {}),
  };
}

/**
 * ms of workflow time from `fromIso` to now. Workflow time (`new Date()`
 * in the sandbox) is the workflow task's start, recorded in history, so
 * this is the same on replay; both ends are UTC timestamps.
 */
export function msSince(fromIso: string): number {
  const now = new Date().toISOString();
  return new Date(now).getTime() - new Date(fromIso).getTime();
}

/** A spent budget in words (status details, the result's error). */
export function describeSpent(s: SpentBudget): string {
  switch (s.budget) {
    case 'turns':
      return `the turn budget of ${s.limit} model calls is spent`;
    case 'cost':
      return `the cost budget of $${s.limit} is spent ($${s.used.toFixed(4)} used)`;
    case 'tokens':
      return `the token budget of ${s.limit} tokens is spent (${s.used} used)`;
    case 'duration':
      return `the duration budget of ${describeDuration(s.limit)} is spent (${describeDuration(s.used)} since the run started)`;
  }
}
