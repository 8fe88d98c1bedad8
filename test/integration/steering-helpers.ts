/** Helpers of the steering tests: script entries, the decide Update with its hash, and a validator's refusal read back. */
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { approveSignal, decideUpdate, statusQuery, type DecideRequest, type PendingApproval } from '../../src/contract';
import { sha256 } from '../../src/shared/sha256';
import type { agentRun } from '../../src/workflows';
import { toolUse } from './harness';

export type Run = WorkflowHandle<typeof agentRun>;

/** A scripted answer that ends the turn with `text`. */
export const end = (text: string) => ({ content: [{ type: 'text' as const, text }], stop_reason: 'end_turn' as const });

/** A scripted answer asking for bash commands, as `[tool_use id, command]` pairs. */
export const asks = (...uses: Array<[string, string]>) => ({
  content: uses.map(([id, c]) => toolUse(id, c)),
  stop_reason: 'tool_use' as const,
});

/** The rejection message of an Update the run's validator refused (fails the test when it was accepted). */
export async function rejected(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) return err.cause?.message ?? err.message;
    throw err;
  }
  throw new Error('the Update was accepted');
}

/**
 * Approves `toolUseId` (or, with `more`, denies it with a reason) by the `approve` signal, naming what an encrypted run requires of a signal (the pending
 * command's hash, its run and wait, read from status; docs/security.md, "Encryption"); `by` when given.
 */
export async function approveBySignal(
  handle: Run,
  toolUseId: string,
  by?: string,
  more: { approved?: boolean; reason?: string } = {},
): Promise<void> {
  const bound = boundTo((await handle.query(statusQuery)).pendingApproval);
  await handle.signal(approveSignal, { toolUseId, approved: true, ...(by !== undefined ? { by } : {}), ...bound, ...more });
}

/**
 * The fields of a decision that bind it to `pending` as status showed it (the command's hash, the run and, when numbered,
 * the wait), which an encrypted run requires of a signal; none when nothing was pending. For a signal sent while no worker
 * can answer a status query (a stopped or killed worker), from a status read before.
 */
export function boundTo(pending: PendingApproval | null | undefined): { commandSha256?: string; runId?: string; wait?: number } {
  if (!pending) return {};
  return {
    commandSha256: pending.commandSha256,
    ...(pending.runId !== undefined ? { runId: pending.runId } : {}),
    ...(pending.wait !== undefined ? { wait: pending.wait } : {}),
  };
}

/** Sends the decide Update: approved by alice unless `req` says otherwise, with the sha256 of `command` when given. */
export async function decide(handle: Run, req: Partial<DecideRequest> & { toolUseId: string }, command?: string): Promise<unknown> {
  // The run and wait of what is pending, as the client names them (an encrypted run requires both); `req` may override them.
  const pending = (await handle.query(statusQuery)).pendingApproval;
  const bound = pending
    ? { ...(pending.runId !== undefined ? { runId: pending.runId } : {}), ...(pending.wait !== undefined ? { wait: pending.wait } : {}) }
    : {};
  const full = { approved: true, by: 'alice', ...bound, ...(command !== undefined ? { commandSha256: sha256(command) } : {}), ...req };
  return handle.executeUpdate(decideUpdate, { args: [full as DecideRequest] });
}
