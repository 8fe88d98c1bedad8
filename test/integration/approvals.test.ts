/**
 * Approvals through the real signal: a non-allowlisted command waits;
 * approve runs it; deny sends is_error with the reason; the approval
 * timeout denies; early, unknown and duplicate decisions change nothing
 * (C02, C14).
 */
import { approveSignal } from '../../src/contract';
import type { ToolResultBlock } from '../../src/contract';
import { TestBed, toolUse, waitFor } from './harness';

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
    await new Promise((r) => setTimeout(r, 500));
    expect((await bed.status(handle)).pendingApproval?.toolUseId).toBe('toolu_write');
    expect(bed.audit().map((a) => a.command)).toEqual(['ls']);

    // The matching decision applies exactly once; the duplicate is ignored.
    await handle.signal(approveSignal, { toolUseId: 'toolu_write', approved: true, by: 'alice' });
    await handle.signal(approveSignal, { toolUseId: 'toolu_write', approved: false, reason: 'duplicate', by: 'mallory' });

    // Next turn: deny the rm; let touch time out (3 s).
    const second = await waitFor('rm pending', async () => {
      const p = (await bed.status(handle)).pendingApproval;
      return p?.toolUseId === 'toolu_rm' ? p : null;
    });
    expect(second.command).toBe('rm -rf note.txt');
    await handle.signal(approveSignal, { toolUseId: 'toolu_rm', approved: false, reason: 'keep the note', by: 'bob' });
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
    await always.signal(approveSignal, { toolUseId: 'toolu_ls', approved: true });
    expect((await always.result()).status).toBe('completed');

    const auto = await bed.start({ task: 'never ask', approval: 'auto' });
    expect((await auto.result()).status).toBe('completed');
  });
});
