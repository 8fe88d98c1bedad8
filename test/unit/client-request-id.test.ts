/**
 * The default request id of a decision (src/client.ts `decideRequestId`): Temporal deduplicates Update ids within a
 * run and hands back the earlier answer, so two waits for the same `tool_use` id (Claude asking again after a rewind)
 * must never share one, with a wait number (today's workers) or without (a run of an older worker). The id is stored in
 * plaintext in history, so it is a hash that names neither the tool_use id nor the wait.
 */
import { decideRequestId } from '../../src/client';
import type { AppliedDecision, PendingApproval } from '../../src/contract';
import { sha256 } from '../../src/shared/sha256';

function pending(wait?: number): PendingApproval {
  return {
    toolUseId: 'toolu_1',
    command: 'make',
    requestedAt: '2026-12-07T08:00:00.000Z',
    display: 'make',
    warnings: [],
    commandSha256: 'a'.repeat(64),
    ...(wait !== undefined ? { wait, runId: 'run-1' } : {}),
  };
}

function decided(toolUseId: string): AppliedDecision {
  return { toolUseId, approved: true, source: 'update', at: '2026-12-07T08:00:01.000Z' };
}

test('a numbered wait names the wait, whatever decisions the run holds', () => {
  expect(decideRequestId(pending(3), [])).toBe(sha256('run-1.toolu_1.w3').slice(0, 24));
  expect(decideRequestId(pending(4), [decided('toolu_1')])).toBe(sha256('run-1.toolu_1.w4').slice(0, 24));
  expect(decideRequestId({ ...pending(4), runId: 'run-2' }, [])).not.toBe(decideRequestId(pending(4), []));
  expect(decideRequestId(pending(3), [])).not.toContain('toolu_1');
});

test("an older worker's wait (no number) counts the decisions already applied to that tool_use id, others not", () => {
  const first = decideRequestId(pending(), []);
  const again = decideRequestId(pending(), [decided('toolu_1'), decided('toolu_2')]);
  expect(first).toBe(sha256('toolu_1.d0').slice(0, 24));
  expect(again).toBe(sha256('toolu_1.d1').slice(0, 24));
  expect(decideRequestId(pending(), [decided('toolu_1'), decided('toolu_1')])).toBe(sha256('toolu_1.d2').slice(0, 24));
});
