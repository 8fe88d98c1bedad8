/**
 * Approvals through the real signal: a non-allowlisted command waits;
 * approve runs it; deny sends is_error with the reason; the approval
 * timeout denies; early, unknown and duplicate decisions change nothing
 * (C02, C14).
 */
import { approveSignal } from '../../src/contract';
import { approveBySignal } from './steering-helpers';
import type { ToolResultBlock } from '../../src/contract';
import { signalsHandled, TestBed, toolUse, waitFor } from './harness';

describe('approvals', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('policy: read-only commands run unasked; others wait; approve runs, deny and timeout answer is_error', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_ls', 'ls'), toolUse('toolu_write', 'echo hi > note.txt')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_rm', 'rm -rf note.txt'), toolUse('toolu_late', 'touch late.txt')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'approvals please', approval: 'policy', approvalTimeout: '3s' }, 'approve-deny-timeout');

    // C14: a decision sent before anything is pending is ignored...
    await handle.signal(approveSignal, { toolUseId: 'toolu_write', approved: true, by: 'too-early' });
    const first = await bed.pendingApproval(handle);
    expect(first).toMatchObject({ toolUseId: 'toolu_write', command: 'echo hi > note.txt' });
    expect((await bed.status(handle)).status).toBe('awaiting_approval');
    // ...the command still waits (the early approval did not apply), and an unknown id changes nothing.
    await handle.signal(approveSignal, { toolUseId: 'toolu_unknown', approved: true });
    // The run has handled both signals (a workflow task completed after them): what they changed is in its state now.
    await signalsHandled(handle);
    expect((await bed.status(handle)).pendingApproval?.toolUseId).toBe('toolu_write');
    expect(bed.audit().map((a) => a.command)).toEqual(['ls']);

    // The matching decision applies exactly once; the duplicate is ignored.
    await approveBySignal(handle, 'toolu_write', 'alice');
    await handle.signal(approveSignal, { toolUseId: 'toolu_write', approved: false, reason: 'duplicate', by: 'mallory' });

    // Next turn: deny the rm; let touch time out (3 s).
    const second = await waitFor('rm pending', async () => {
      const p = (await bed.status(handle)).pendingApproval;
      return p?.toolUseId === 'toolu_rm' ? p : null;
    });
    expect(second.command).toBe('rm -rf note.txt');
    await approveBySignal(handle, 'toolu_rm', 'bob', { approved: false, reason: 'keep the note' });
    const result = await handle.result();
    expect(result.status).toBe('completed');

    const resultsOf = (i: number): ToolResultBlock[] => bed.resultsSentIn(i);
    expect(resultsOf(1)).toEqual([
      expect.objectContaining({ tool_use_id: 'toolu_ls' }),
      { type: 'tool_result', tool_use_id: 'toolu_write', content: '(no output)' },
    ]);
    expect(resultsOf(2)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_rm', content: 'Command not run: denied by bob. Reason: keep the note.', is_error: true },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_late',
        content: 'Command not run: no approval decision came within 3s, so it was denied.',
        is_error: true,
      },
    ]);
    // Exactly the approved commands ran, once each.
    expect(bed.audit().map((a) => a.command)).toEqual(['ls', 'echo hi > note.txt']);
    const decisions = (await bed.status(handle)).decisions;
    expect(decisions.map((d) => [d.toolUseId, d.approved, d.source, d.by ?? null])).toEqual([
      ['toolu_write', true, 'signal', 'alice'],
      ['toolu_rm', false, 'signal', 'bob'],
      ['toolu_late', false, 'timeout', null],
    ]);
  });

  test('always: even ls waits; auto: nothing waits', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_ls', 'ls')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const always = await bed.start({ task: 'always ask', approval: 'always' }, 'approval-always');
    expect((await bed.pendingApproval(always)).command).toBe('ls');
    await approveBySignal(always, 'toolu_ls');
    expect((await always.result()).status).toBe('completed');

    const auto = await bed.start({ task: 'never ask', approval: 'auto' });
    expect((await auto.result()).status).toBe('completed');
  });

  test('approve signals an attacker would send: malformed, wrong-typed, another hash, a hash in another case; none applies but the exact one', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_rm', 'rm -rf build')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'attack the approve signal', approval: 'always' }, 'approve-signal-attacks');
    const pending = await bed.pendingApproval(handle);
    // Payloads the SDK does not check: each must be ignored, and the run must keep waiting (not fail its workflow task).
    const send = (payload: unknown): Promise<void> => handle.signal(approveSignal, payload as never);
    const attacks: unknown[] = [
      null,
      'approve',
      [],
      { toolUseId: 'toolu_rm' },
      { toolUseId: 'toolu_rm', approved: 'true' },
      { toolUseId: 'toolu_rm', approved: 1 },
      { toolUseId: ['toolu_rm'], approved: true },
      { toolUseId: 'toolu_rm', approved: true, by: { name: 'admin' } },
      { toolUseId: 'toolu_rm', approved: true, reason: 42 },
      { toolUseId: 'toolu_rm', approved: true, commandSha256: 7 },
      { toolUseId: 'toolu_rm', approved: true, commandSha256: '0'.repeat(64) },
      { toolUseId: 'toolu_rm', approved: true, commandSha256: pending.commandSha256.slice(0, 12) },
      { toolUseId: 'TOOLU_RM', approved: true },
    ];
    for (const payload of attacks) await send(payload);
    // Every attack signal handled (a workflow task completed after the last): the state below is after all of them.
    await signalsHandled(handle);
    const waiting = await bed.status(handle);
    expect(waiting.status).toBe('awaiting_approval');
    expect(waiting.pendingApproval?.toolUseId).toBe('toolu_rm');
    expect(waiting.decisions).toEqual([]);
    expect(bed.audit()).toEqual([]);
    // The hash compares without regard to case (hex), and the exact decision applies.
    await send({
      toolUseId: 'toolu_rm',
      approved: false,
      reason: 'checked',
      by: 'alice',
      commandSha256: pending.commandSha256.toUpperCase(),
      // The run and wait an encrypted run requires (sealed-decisions.test.ts).
      runId: pending.runId,
      wait: pending.wait,
    });
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    expect(bed.resultsSentIn(1)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_rm', content: 'Command not run: denied by alice. Reason: checked.', is_error: true },
    ]);
  });
});
