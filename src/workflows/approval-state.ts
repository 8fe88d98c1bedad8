/**
 * What waits for a person right now and the decision accepted for it: the
 * state the approval flow (./approval) keeps in the run's state. Apart from
 * the flow so that the run's state can hold it without importing the flow.
 * Deterministic (workflow code).
 */
import type { AppliedDecision, PendingApproval } from '../contract';

/** A decision accepted for the pending command, from the `decide` Update or the `approve` signal. */
export interface Decision {
  approved: boolean;
  reason?: string;
  by?: string;
  /** The hash the sender named (always, for the Update). */
  commandSha256?: string;
  /** The command to run instead (an approved edit). */
  edit?: string;
  /** The rule the decision added. */
  rule?: number;
  source: 'signal' | 'update';
}

/** What waits for a human right now, and the decision accepted for it. */
export interface ApprovalState {
  /** The command waiting for a decision, or null. Set and cleared by {@link waitForApproval} only. */
  pending: PendingApproval | null;
  /** The decision accepted for `pending`; consumed by {@link waitForApproval}. */
  decision: Decision | null;
  /** The last decision applied, so the `decide` Update can answer with it. */
  lastApplied: AppliedDecision | null;
}

export function newApprovalState(): ApprovalState {
  return { pending: null, decision: null, lastApplied: null };
}
