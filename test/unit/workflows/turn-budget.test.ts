import type { ToolResultBlock, ToolUseBlock } from '../../../src/contract';
import { ConversationLog } from '../../../src/workflows/conversation';
import { parseBashInput } from '../../../src/workflows/tool-results';
import { jsonBytes, withinTurnBudget } from '../../../src/workflows/tool-use';
import { toolResult } from '../../../src/workflows/transcript';

const PAYLOAD_LIMIT = 2 * 1024 * 1024;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const use = (id: string): ToolUseBlock => ({ type: 'tool_use', id, name: 'bash', input: { command: 'cat page' } });

/** One turn's results as runToolUses builds them: each cut to what is left of the turn's budget. */
function turnResults(outputs: string[], prefix: string): ToolResultBlock[] {
  const used = { bytes: 0 };
  return outputs.map((output, i) => {
    const result = withinTurnBudget(toolResult(`${prefix}${i}`, output), used);
    used.bytes += jsonBytes(result.content);
    return result;
  });
}

function payloadBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value), 'utf8');
}

describe("a turn's results are bounded in payload bytes, cut between code points", () => {
  test('40 commands printing 30 KB of CJK each, then the window notice: the next change stays far below 2 MiB', () => {
    // 30 KB of output is 10,000 CJK characters (3 bytes each): 40 of them are 400,000 characters, 1.2 MB.
    const outputs = Array.from({ length: 40 }, () => '漢'.repeat(10_000));
    const log = new ConversationLog('task');
    log.takeDelta();
    const first = { role: 'assistant' as const, content: outputs.map((_, i) => use(`a${i}`)) };
    log.push(first);
    log.push({ role: 'user', content: turnResults(outputs, 'a') });
    log.takeDelta();
    // The worker cleared older outputs near the window: its notice goes to the last user message, already sent.
    log.appendUserBlocks([{ type: 'text', text: '[agent-jobs: this conversation neared the context window ...]' }]);
    log.push({ role: 'assistant', content: outputs.map((_, i) => use(`b${i}`)) });
    log.push({ role: 'user', content: turnResults(outputs, 'b') });
    const delta = log.takeDelta();
    expect(delta.messages).toHaveLength(3);
    expect(payloadBytes(delta)).toBeLessThan(PAYLOAD_LIMIT / 2);
  });

  test('a cut that falls inside a surrogate pair keeps the pair whole or drops it (no lone surrogate for the API to refuse)', () => {
    // 389,999 bytes of ASCII, then emoji (4 bytes each): 10,001 bytes are left, so the cut falls inside the 2,501st.
    const results = turnResults(['x'.repeat(29_999), ...Array.from({ length: 12 }, () => 'y'.repeat(30_000)), '😀'.repeat(20_000)], 'c');
    const last = results.at(-1)!.content;
    expect(last.startsWith(`${'😀'.repeat(2_500)}\n[output cut: `)).toBe(true);
    expect(last.endsWith('passed 400000 bytes together; 35000 characters of this one were dropped]')).toBe(true);
    for (const r of results) expect(r.content).not.toMatch(LONE_SURROGATE);
    const used = { bytes: 399_996 };
    expect(withinTurnBudget(toolResult('d', '😀😀'), used).content).toMatch(/^😀\n\[output cut/);
  });

  test('an invalid tool input full of emoji is quoted without a lone surrogate', () => {
    const parsed = parseBashInput({ comand: '😀'.repeat(200) });
    expect(parsed.kind).toBe('invalid');
    expect(parsed.kind === 'invalid' && parsed.outcome.text).not.toMatch(LONE_SURROGATE);
  });
});
