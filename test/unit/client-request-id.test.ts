/**
 * The default request id of a decision (src/client.ts `decideRequestId`): Temporal deduplicates Update ids within a
 * run and hands back the earlier answer, so two waits for the same `tool_use` id (Claude asking again after a rewind)
 * must never share one, with a wait number (today's workers) or without (a run of an older worker).
 */
import { decideRequestId } from '../../src/client';
import type { AppliedDecision, PendingApproval } from '../../src/contract';

function pending(wait?: number): PendingApproval {
  return {
    toolUseId: 'toolu_1',
    command: 'make',
    requestedAt: '2026-12-07T08:00:00.000Z',
    display: 'make',
    warnings: [],
    commandSha256: 'a'.repeat(64),
    ...(wait !== undefined ? { wait } : {}),
  };
}

function decided(toolUseId: string): AppliedDecision {
  return { toolUseId, approved: true, source: 'update', at: '2026-12-07T08:00:01.000Z' };
}

test('a numbered wait names the wait, whatever decisions the run holds', () => {
  expect(decideRequestId(pending(3), [])).toBe('toolu_1.w3');
  expect(decideRequestId(pending(4), [decided('toolu_1')])).toBe('toolu_1.w4');
});

test("an older worker's wait (no number) counts the decisions already applied to that tool_use id, others not", () => {
  const first = decideRequestId(pending(), []);
  const again = decideRequestId(pending(), [decided('toolu_1'), decided('toolu_2')]);
  expect(first).toBe('toolu_1.d0');
  expect(again).toBe('toolu_1.d1');
  expect(decideRequestId(pending(), [decided('toolu_1'), decided('toolu_1')])).toBe('toolu_1.d2');
});
