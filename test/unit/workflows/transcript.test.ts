import { completeResults, pairingProblem, toolResult, withoutEmptyText } from '../../../src/workflows/transcript';
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
});
