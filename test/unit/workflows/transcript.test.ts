import {
  boundTranscript,
  completeResults,
  pairingProblem,
  toolResult,
  toolUseOrdinal,
  transcriptChars,
  withoutEmptyText,
} from '../../../src/workflows/transcript';
import type { Message, ToolUseBlock } from '../../../src/contract';

const use = (id: string): ToolUseBlock => ({ type: 'tool_use', id, name: 'bash', input: { command: 'x' } });

describe('transcript', () => {
  test('empty and whitespace-only text blocks are dropped, others kept in order (C03)', () => {
    expect(withoutEmptyText([{ type: 'text', text: '' }, use('a'), { type: 'text', text: ' \n' }, { type: 'text', text: 'hi' }])).toEqual([
      use('a'),
      { type: 'text', text: 'hi' },
    ]);
  });

  test('an empty tool output becomes a placeholder; is_error only when true', () => {
    expect(toolResult('a', '')).toEqual({ type: 'tool_result', tool_use_id: 'a', content: '(no output)' });
    expect(toolResult('a', 'x', true)).toEqual({ type: 'tool_result', tool_use_id: 'a', content: 'x', is_error: true });
  });

  test('pairing: each tool_use has exactly one tool_result in the next message, results first', () => {
    const assistant: Message = { role: 'assistant', content: [use('a'), use('b')] };
    const ok: Message[] = [
      { role: 'user', content: 'task' },
      assistant,
      { role: 'user', content: [toolResult('a', '1'), toolResult('b', '2')] },
    ];
    expect(pairingProblem(ok)).toBeNull();
    expect(pairingProblem([ok[0]!, assistant])).toMatch(/tool_use a has no tool_result/);
    expect(pairingProblem([ok[0]!, assistant], true)).toBeNull();
    expect(pairingProblem([ok[0]!, assistant, { role: 'user', content: [toolResult('a', '1')] }])).toMatch(/tool_use b has 0/);
    expect(
      pairingProblem([ok[0]!, assistant, { role: 'user', content: [toolResult('a', '1'), toolResult('a', '1'), toolResult('b', '2')] }]),
    ).toMatch(/tool_use a has 2/);
    expect(
      pairingProblem([
        ok[0]!,
        assistant,
        { role: 'user', content: [{ type: 'text', text: 'x' }, toolResult('a', '1'), toolResult('b', '2')] },
      ]),
    ).toMatch(/must come first/);
    expect(pairingProblem([{ role: 'user', content: [toolResult('zz', '1')] }])).toMatch(/answers no tool_use/);
  });

  test('completeResults pairs every tool_use left open, keeping produced results (C02)', () => {
    const assistant: Message = { role: 'assistant', content: [use('a'), use('b'), use('c')] };
    const out = completeResults(assistant, [toolResult('a', 'done')], 'cancelled');
    expect(out).toEqual([toolResult('a', 'done'), toolResult('b', 'cancelled', true), toolResult('c', 'cancelled', true)]);
  });

  test('boundTranscript elides the oldest tool outputs first and never the last two messages (C13)', () => {
    const big = 'x'.repeat(20_000);
    const messages: Message[] = [{ role: 'user', content: 'task' }];
    for (let i = 0; i < 30; i++) {
      messages.push({ role: 'assistant', content: [use(`t${i}`)] }, { role: 'user', content: [toolResult(`t${i}`, big)] });
    }
    const bounded = boundTranscript(messages, 200_000);
    expect(transcriptChars(bounded)).toBeLessThanOrEqual(200_000);
    expect(pairingProblem(bounded)).toBeNull();
    const lastResult = (bounded[bounded.length - 1]!.content as Array<{ content: string }>)[0]!.content;
    expect(lastResult).toBe(big);
    const firstResult = (bounded[2]!.content as Array<{ content: string }>)[0]!.content;
    expect(firstResult).toMatch(/^\[output elided .* it had 20000 characters\]$/);
    expect(transcriptChars(messages)).toBeGreaterThan(600_000); // the input is left unchanged
  });
});

describe('toolUseOrdinal', () => {
  test('counts every tool_use of the run, in order, for summaries (bash #n)', () => {
    const use = (id: string): ToolUseBlock => ({ type: 'tool_use', id, name: 'bash', input: { command: 'true' } });
    const messages: Message[] = [
      { role: 'user', content: 'task' },
      { role: 'assistant', content: [{ type: 'text', text: 'two' }, use('a'), use('b')] },
      { role: 'user', content: [toolResult('a', 'x'), toolResult('b', 'y')] },
      { role: 'assistant', content: [use('c')] },
    ];
    expect(['a', 'b', 'c', 'nope'].map((id) => toolUseOrdinal(messages, id))).toEqual([1, 2, 3, null]);
  });
});
