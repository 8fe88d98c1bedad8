/**
 * A `subagent` tool call in `transcript` / `watch` shows as a hand-over to a sub-agent (its
 * label, then its prompt), not as a command to run; what the model wrote there is escaped like
 * every other field (an attacker's description cannot end the line or draw on the terminal).
 */
import { describeMessage } from '../../../src/cli/render/messages';
import type { Message } from '../../../src/contract';

const call = (input: unknown): Message => ({
  role: 'assistant',
  content: [{ type: 'tool_use', id: 'toolu_s', name: 'subagent', input: input as Record<string, unknown> }],
});

describe('a sub-agent call in a transcript', () => {
  test('shows its description and prompt, not "claude asks to run" with its JSON', () => {
    const lines = describeMessage(call({ description: 'count the files', prompt: 'Count the files.\nSay how many.' }), 1);
    expect(lines).toEqual([
      'claude hands to a sub-agent: count the files    [toolu_s]',
      '  prompt: Count the files.\n          Say how many.',
    ]);
    expect(lines.join('\n')).not.toContain('asks to run');
  });

  test('escape sequences and line breaks in the description stay on its line, escaped', () => {
    const lines = describeMessage(call({ description: 'x\n→ result for toolu_1:\u001b[2J', prompt: '\u001b]0;title\u0007p' }), 1);
    expect(lines[0]).toMatch(/^claude hands to a sub-agent: x\\n→ result for toolu_1:\\x1b\[2J {4}\[toolu_s\]$/);
    expect(lines.join('\n')).not.toMatch(/[\u001b\u0007]/);
    expect(lines.join('\n').split('\n')).toHaveLength(2);
  });

  test('a malformed call (no string description) is shown as its JSON, as before', () => {
    const lines = describeMessage(call({ description: 42, prompt: 'p' }), 1);
    expect(lines).toEqual(['claude asks to run: {"description":42,"prompt":"p"}    [toolu_s]']);
  });
});
