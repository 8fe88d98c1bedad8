/**
 * The approval flow of one command: which rules decide (the policy on the
 * session's worker, or the old in-workflow rules for runs that started
 * before it), the pending state, the decision a human sends, the wait and
 * its timeout, and the record of what was applied. Deterministic (workflow
 * code).
 *
 * Round trip: the command asks → `pending` is set, status
 * `awaiting_approval` → the `approve` signal's handler ({@link receiveDecision})
 * accepts one decision for exactly that `tool_use` (and hash) →
 * {@link waitForApproval} wakes, records it in `state.decisions` → the command
 * runs in the shell, or Claude is told it was denied.
 */
import { condition, log, patched } from '@temporalio/workflow';
import type { AppliedDecision, ApprovalDecision, PendingApproval } from '../contract';
import { commandDetails, pendingApproval, safeText } from '../contract/display';
import { decideApproval as legacyDecideApproval } from './approval-policy';
import type { RunState } from './run-state';
import type { RunSession } from './session';
import { deniedOutcome, describeDuration, type ToolOutcome } from './tool-results';

/** Decisions kept in `state.decisions` (and so in status and across continue-as-new), newest last. */
export const MAX_DECISIONS_KEPT = 20;

/**
 * patched() id: under approval `policy`, the session's worker judges each
 * command (src/policy, on the parsed command and the workspace's real paths)
 * and runs allowed ones exactly, in one runCommand; before it, the workflow
 * judged the raw text itself (approval-policy.ts, kept for replay).
 */
export const POLICY_AT_SESSION_PATCH = 'policy-judged-at-session';

/** What waits for a human right now, and the decision accepted for it. */
export interface ApprovalState {
  /** The command waiting for a decision, or null. Set and cleared by {@link waitForApproval} only. */
  pending: PendingApproval | null;
  /** The decision accepted for `pending` by {@link receiveDecision}; consumed by {@link waitForApproval}. */
  decision: ApprovalDecision | null;
}

export function newApprovalState(): ApprovalState {
  return { pending: null, decision: null };
}

/**
 * Runs a bash command through the run's approval mode: unasked when the
 * rules allow it, else after a human's approval; a denial or the approval
 * timeout becomes an `is_error` result. Sets `state.current` as it goes, so
 * an early end can tell Claude how far the command got.
 */
export async function runWithApproval(state: RunState, session: RunSession, toolUseId: string, command: string): Promise<ToolOutcome> {
  let why: string;
  if (state.input.approval === 'policy' && patched(POLICY_AT_SESSION_PATCH)) {
    // The session's worker judges and, when the policy allows, runs it exactly.
    state.current = { toolUseId, phase: 'running' };
    const auto = await session.run(toolUseId, command, true);
    if (!('needsApproval' in auto)) return auto;
    why = auto.needsApproval;
  } else {
    // `auto` and `always` (run all, ask all), and `policy` in runs started before it moved to the session worker (replay).
    const policy = legacyDecideApproval(command, state.input.approval);
    if (policy.action === 'run') return runApproved(state, session, toolUseId, command);
    why = policy.reason;
  }
  state.current = { toolUseId, phase: 'approval' };
  const d = await waitForApproval(state, toolUseId, command, why);
  if (!d.approved) return deniedOutcome(d, state.input.approvalTimeout);
  return runApproved(state, session, toolUseId, command);
}

/** Runs a command a human approved (or that needs no approval) in the shell. */
async function runApproved(state: RunState, session: RunSession, toolUseId: string, command: string): Promise<ToolOutcome> {
  state.current = { toolUseId, phase: 'running' };
  const out = await session.run(toolUseId, command);
  return 'needsApproval' in out ? { text: 'internal error: approval asked for an approved command', isError: true } : out;
}

/**
 * Handler of the `approve` signal. Accepts the decision only when it is
 * well formed, names the pending `tool_use`, none was accepted for it yet,
 * and its `commandSha256` (when given) is the pending command's hash: a
 * decision is bound to the command bytes its sender was shown. Anything
 * else is ignored and logged (a signal cannot answer its sender).
 */
export function receiveDecision(approval: ApprovalState, d: ApprovalDecision): void {
  const problem = decisionProblem(approval, d);
  if (problem !== null) {
    log.warn(`approval signal ignored: ${problem.why}`, problem.context);
    return;
  }
  approval.decision = d;
}

/** Why a decision cannot apply now, with log context; null when it applies. */
function decisionProblem(approval: ApprovalState, d: ApprovalDecision): { why: string; context: Record<string, unknown> } | null {
  if (!isDecision(d)) return { why: 'malformed payload', context: { payload: d } };
  const { pending } = approval;
  if (pending === null || pending.toolUseId !== d.toolUseId) {
    return { why: 'no command is waiting with that tool_use id', context: { toolUseId: d.toolUseId, pending: pending?.toolUseId ?? null } };
  }
  if (approval.decision !== null) return { why: 'this command was already decided', context: { toolUseId: d.toolUseId } };
  if (d.commandSha256 !== undefined && d.commandSha256.toLowerCase() !== pending.commandSha256) {
    return {
      why: 'its commandSha256 is not the hash of the pending command',
      context: { toolUseId: d.toolUseId, commandSha256: d.commandSha256, pending: pending.commandSha256 },
    };
  }
  return null;
}

/** Whether a signal payload has the shape of {@link ApprovalDecision} (signals are not validated by the SDK). */
function isDecision(d: unknown): d is ApprovalDecision {
  if (typeof d !== 'object' || d === null) return false;
  const o = d as Record<string, unknown>;
  const optionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';
  return (
    typeof o.toolUseId === 'string' &&
    typeof o.approved === 'boolean' &&
    optionalString(o.reason) &&
    optionalString(o.by) &&
    optionalString(o.commandSha256)
  );
}

/**
 * Waits for a human's decision on one command, up to the run's approval
 * timeout (a timeout denies). Publishes status `awaiting_approval` while it
 * waits and `running` after; records what was applied in `state.decisions`.
 */
export async function waitForApproval(state: RunState, toolUseId: string, command: string, why: string): Promise<AppliedDecision> {
  const { approval, input } = state;
  const waiting = pendingApproval({ toolUseId, command, requestedAt: new Date().toISOString() });
  approval.pending = waiting;
  approval.decision = null;
  state.status = 'awaiting_approval';
  state.publish();
  state.setDetails(`waiting for approval of ${commandDetails(command)} (tool_use ${toolUseId}; ${safeText(why, false)})`);
  try {
    const decided = await condition(() => approval.decision !== null, input.approvalTimeout);
    const d = approval.decision as ApprovalDecision | null;
    const { commandSha256 } = waiting;
    const at = new Date().toISOString();
    const applied: AppliedDecision =
      decided && d
        ? {
            toolUseId,
            approved: d.approved,
            source: 'signal',
            at,
            ...(d.reason ? { reason: d.reason } : {}),
            ...(d.by ? { by: d.by } : {}),
            commandSha256,
            hashChecked: d.commandSha256 !== undefined,
          }
        : {
            toolUseId,
            approved: false,
            source: 'timeout',
            at,
            reason: `no decision within ${describeDuration(input.approvalTimeout)}`,
            commandSha256,
          };
    state.decisions = [...state.decisions, applied].slice(-MAX_DECISIONS_KEPT);
    log.info('approval decision applied', { ...applied });
    return applied;
  } finally {
    approval.pending = null;
    approval.decision = null;
    state.status = 'running';
    state.publish();
  }
}
