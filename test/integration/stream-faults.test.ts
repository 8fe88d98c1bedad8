/**
 * C27 end to end: the first answer's stream breaks inside a large `tool_use`
 * (the socket closed, or an `event: error` overloaded) twice, then the step
 * is answered whole. The run completes, the command runs exactly once, the
 * model server saw three requests for that step, the transcript holds only
 * the whole answer, and `watch --json` says the partial answer was dropped.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { workspaceFolderName } from '../../src/activities/session';
import type { ContentBlock } from '../../src/contract';
import { cli } from './cli-process';
import { TestBed, toolUse } from './harness';

/** A command whose JSON input is large (about 3 KB: some 190 input_json_delta events); it appends one line to ran.log. */
const COMMAND = `echo ran >> ran.log # ${'padding-'.repeat(370)}`;
const TEXT = 'I will append to ran.log now; the command is long because of its padding comment.';
const ANSWER = { content: [{ type: 'text' as const, text: TEXT }, toolUse('toolu_big', COMMAND)], stop_reason: 'tool_use' };
const END = { content: [{ type: 'text' as const, text: 'appended once' }], stop_reason: 'end_turn' };

function ranLines(bed: TestBed, workflowId: string): string[] {
  const file = path.join(bed.workspaces, workspaceFolderName(workflowId), 'ran.log');
  return existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];
}

describe('a broken answer stream is never a turn (C27)', () => {
  let bed: TestBed | undefined;
  afterEach(async () => {
    await bed?.close();
    bed = undefined;
  });

  /**
   * Runs the script `[fault x2, ANSWER, END]` and checks everything C27 asks.
   * `after_events` 40: message_start, ping, the text block (7 events) and some 30 events into the tool_use.
   */
  async function brokenTwiceThenAnswered(
    fault: { error: { kind: 'stream_cut' | 'stream_error'; after_events: number; times: number } },
    name: string,
  ): Promise<{ workflowId: string; watched: string }> {
    bed = await TestBed.create({ script: { responses: [fault, { ...ANSWER, delta_delay_ms: 40 }, END] } });
    const workflowId = `it-stream-${name}-${process.pid}-${Date.now()}`;
    const handle = await bed.start({ task: 'append to ran.log once', approval: 'auto' }, undefined, workflowId);
    const watched = cli(bed.address, 'watch', workflowId, '--json');
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'appended once', turns: 2 });

    // The command ran once: the partial tool_use of the broken attempts never ran.
    expect(ranLines(bed, workflowId)).toEqual(['ran']);
    expect(bed.audit().map((a) => a.command)).toEqual([COMMAND]);
    // Three requests for step 0: two broken, the third answered.
    const step0 = bed.requests().filter((r) => r.path === '/v1/messages' && r.step === 0);
    expect(step0.map((r) => [r.response.kind, r.attempt])).toEqual([
      [fault.error.kind, 1],
      [fault.error.kind, 2],
      ['message', 3],
    ]);
    // The transcript holds the whole answer and nothing of the broken ones.
    const transcript = await bed.transcript(handle);
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant']);
    expect(transcript[1]!.content).toEqual([
      { type: 'text', text: TEXT },
      { type: 'tool_use', id: 'toolu_big', name: 'bash', input: { command: COMMAND } },
    ] satisfies ContentBlock[]);
    // What the second request sent back as Claude's answer is that whole answer too.
    const sentBack = bed.sentMessages().at(-1)!;
    expect(sentBack[1]!.content).toEqual(transcript[1]!.content);
    // Temporal ran the call three times in one activity: the history's started event says attempt 3, after the broken attempt's failure.
    const events = (await handle.fetchHistory()).events ?? [];
    const firstCall = events.find((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callClaude')!;
    const started = events.find((e) => String(e.activityTaskStartedEventAttributes?.scheduledEventId) === String(firstCall.eventId));
    expect(started?.activityTaskStartedEventAttributes?.attempt).toBe(3);
    expect(started?.activityTaskStartedEventAttributes?.lastFailure?.applicationFailureInfo?.type).toBe(
      fault.error.kind === 'stream_cut' ? 'ClaudeStreamBroken' : 'ClaudeApiUnavailable',
    );
    return { workflowId, watched: (await watched).stdout };
  }

  test('the socket closes inside a large tool_use, twice: the call is retried, the command runs once, watch marks the partial answer dropped', async () => {
    const { watched } = await brokenTwiceThenAnswered({ error: { kind: 'stream_cut', after_events: 40, times: 2 } }, 'cut');
    const events = watched
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; attempt?: number; outputChars?: number; reason?: string; index?: number });
    const dropped = events.filter((e) => e.event === 'partial_dropped');
    expect(dropped.length).toBeGreaterThanOrEqual(1);
    for (const d of dropped) {
      expect([1, 2]).toContain(d.attempt);
      expect(d.outputChars).toBeGreaterThan(0);
    }
    // Every drop is announced before the whole answer's message.
    const answer = events.findIndex((e) => e.event === 'message' && e.index === 1);
    expect(events.findIndex((e) => e.event === 'partial_dropped')).toBeLessThan(answer);
  }, 90_000);

  test('an `event: error` overloaded mid-stream, twice: the same', async () => {
    await brokenTwiceThenAnswered({ error: { kind: 'stream_error', after_events: 40, times: 2 } }, 'overloaded');
  }, 90_000);
});
