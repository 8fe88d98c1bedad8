import {
  applyDelta,
  emptyConversation,
  foldCallInputs,
  type Message,
  type ToolUseBlock,
  type TranscriptDelta,
} from '../../../src/contract';
import { ConversationLog } from '../../../src/workflows/conversation';
import { pairingProblem, toolResult } from '../../../src/workflows/transcript';
import { TranscriptCache } from '../../../src/activities/transcript-cache';

const use = (id: string): ToolUseBlock => ({ type: 'tool_use', id, name: 'bash', input: { command: 'true' } });
const big = 'x'.repeat(20_000);

/** One tool turn: Claude's tool_use, then its result. */
function turn(log: ConversationLog, i: number): void {
  log.push({ role: 'assistant', content: [use(`t${i}`)] });
  log.push({ role: 'user', content: [toolResult(`t${i}`, big)] });
}

describe('ConversationLog: each call sends only what changed (linear history, C13)', () => {
  test('300 turns of 20 KB outputs: every change holds at most the turn it adds, and the worker copy equals the log', () => {
    const log = new ConversationLog('task');
    const worker = emptyConversation();
    let largest = 0;
    for (let i = 0; i < 300; i++) {
      const delta = log.takeDelta();
      largest = Math.max(largest, JSON.stringify(delta).length);
      expect(applyDelta(worker, delta)).toBeNull();
      turn(log, i);
    }
    expect(largest).toBeLessThan(2 * big.length + 1_000);
    expect(applyDelta(worker, log.takeDelta())).toBeNull();
    expect(worker.messages).toEqual(log.messages);
  });

  test('a message changed in place is sent again from that message; an unchanged call sends nothing', () => {
    const log = new ConversationLog('task');
    const worker = emptyConversation();
    applyDelta(worker, log.takeDelta());
    log.appendUserBlocks([{ type: 'text', text: 'a queued message' }]);
    const delta = log.takeDelta();
    expect(delta.from).toBe(0);
    expect(applyDelta(worker, delta)).toBeNull();
    expect(worker.messages).toEqual(log.messages);
    expect(log.takeDelta()).toMatchObject({ from: 1, messages: [] });
  });

  test('a change whose digest does not match the worker copy is refused, and the copy is left as it was', () => {
    const log = new ConversationLog('task');
    const worker = emptyConversation();
    applyDelta(worker, log.takeDelta());
    turn(log, 0);
    const delta = log.takeDelta();
    const forged: TranscriptDelta = { ...delta, digestBefore: delta.digestBefore.replace(/^./, (c) => (c === '0' ? '1' : '0')) };
    expect(applyDelta(worker, forged)).toMatch(/differ/);
    expect(applyDelta(worker, { ...delta, from: 5 })).toMatch(/starts at message 5/);
    expect(worker.messages).toEqual([{ role: 'user', content: 'task' }]);
    // A copy that differs in an earlier message (another conversation under the same id) is refused too.
    const other = emptyConversation();
    applyDelta(other, new ConversationLog('another task').takeDelta());
    expect(applyDelta(other, delta)).toMatch(/differ/);
  });

  test('continue-as-new carries the tail only; the next change chains onto the worker copy', () => {
    const log = new ConversationLog('task');
    const worker = emptyConversation();
    for (let i = 0; i < 50; i++) {
      applyDelta(worker, log.takeDelta());
      turn(log, i);
    }
    const carried = log.carry();
    expect(carried.base).toBe(99);
    expect(carried.messages).toHaveLength(2);
    expect(JSON.stringify(carried).length).toBeLessThan(2 * big.length + 1_000);
    expect(carried.toolUsesBefore).toBe(49);
    const next = new ConversationLog('task', carried);
    expect(next.length).toBe(log.length);
    expect(pairingProblem(next.messages, false, next.base > 0)).toBeNull();
    expect(next.toolUseOrdinal('t49')).toBe(50);
    expect(next.toolUseOrdinal('t3')).toBeNull();
    const delta = next.takeDelta();
    expect(delta.from).toBe(99);
    expect(applyDelta(worker, delta)).toBeNull();
    expect(worker.messages.slice(99)).toEqual(next.messages);
  });

  test('a legacy carried transcript is sent whole once, then as changes', () => {
    const transcript: Message[] = [
      { role: 'user', content: 'task' },
      { role: 'assistant', content: [use('a')] },
      { role: 'user', content: [toolResult('a', 'ok')] },
    ];
    const log = new ConversationLog('ignored', { legacyTranscript: transcript });
    expect(log.takeDelta()).toMatchObject({ from: 0, messages: transcript });
    expect(log.toolUseOrdinal('a')).toBe(1);
  });
});

describe('foldCallInputs: the conversation rebuilt from callClaude inputs in history order', () => {
  test('legacy whole-transcript inputs, then changes, rebuild what the workflow holds', () => {
    const legacy: Message[] = [{ role: 'user', content: 'task' }];
    const log = new ConversationLog('x', { legacyTranscript: [...legacy] });
    const inputs = [{ messages: legacy }];
    for (let i = 0; i < 5; i++) {
      turn(log, i);
      inputs.push({ transcript: log.takeDelta() } as never);
    }
    const folded = foldCallInputs(inputs);
    expect(folded.ok && folded.conversation.messages).toEqual(log.messages);
  });

  test('a change that does not chain is reported with the call it came in', () => {
    const log = new ConversationLog('task');
    const first = log.takeDelta();
    turn(log, 0);
    const second = log.takeDelta();
    expect(foldCallInputs([{ transcript: second }])).toEqual({ ok: false, problem: expect.stringMatching(/^model call 1: /) });
    expect(foldCallInputs([{ transcript: first }, { transcript: second }]).ok).toBe(true);
  });
});

describe('TranscriptCache', () => {
  test('drops the least recently used runs past its bound, never the one in use', () => {
    const cache = new TranscriptCache(50_000);
    for (const id of ['a', 'b', 'c']) {
      const log = new ConversationLog(`task ${id}`);
      cache.set(id, emptyConversation());
      expect(cache.apply(id, log.takeDelta())).not.toBeNull();
      turn(log, 0);
      expect(cache.apply(id, log.takeDelta())).not.toBeNull();
    }
    expect(cache.stats().runs).toBe(2);
    expect(cache.stats().chars).toBeLessThanOrEqual(50_000);
    expect(cache.apply('a', { from: 0, digestBefore: 'x', messages: [] })).toBeNull();
  });
});

describe('ConversationLog.rewindTo (rewind: docs/rewind.md)', () => {
  test("a rewind sends the change from the message it edits; the worker's copy keeps the prefix byte for byte", () => {
    const log = new ConversationLog('task');
    const worker = emptyConversation();
    for (let i = 0; i < 4; i++) {
      expect(applyDelta(worker, log.takeDelta())).toBeNull();
      turn(log, i);
    }
    expect(applyDelta(worker, log.takeDelta())).toBeNull();
    const prefix = JSON.stringify(worker.messages.slice(0, 2));
    // Back to just before turn 2's answer (index 3): [task, a0, u0], a note on u0.
    log.rewindTo(3);
    log.appendUserBlocks([{ type: 'text', text: 'rewound' }]);
    const delta = log.takeDelta();
    expect(delta.from).toBe(2);
    expect(applyDelta(worker, delta)).toBeNull();
    expect(worker.messages).toEqual(log.messages);
    expect(JSON.stringify(worker.messages.slice(0, 2))).toBe(prefix);
    expect(pairingProblem(log.messages, false, false)).toBeNull();
    expect(() => log.rewindTo(99)).toThrow('cannot rewind');
  });
});
