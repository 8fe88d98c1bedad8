/**
 * Steering a run through its Updates, on the real dev server with real
 * workers and the scripted model: decisions that answer (and every way one
 * is rejected), edits, both rule kinds, messages, pause and resume,
 * approval-timeout actions, a three-message conversation, `pending` across
 * runs, and the `approve` signal sent with `temporal workflow signal`.
 */
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import path from 'node:path';
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import {
  decideUpdate,
  endUpdate,
  pauseUpdate,
  removeRuleUpdate,
  resumeUpdate,
  sayUpdate,
  type DecideRequest,
  type Message,
  type TextBlock,
  type ToolResultBlock,
} from '../../src/contract';
import { AGENT_AWAITING, AGENT_AWAITING_SINCE, AGENT_STATUS } from '../../src/config';
import { sha256 } from '../../src/shared/sha256';
import { findTemporalCli } from '../../src/dev/devserver';
import { workspaceFolderName } from '../../src/activities/session';
import { cli } from './cli-process';
import { chainCodecs, startCodecServer } from '../../src/codec';
import { codecClientOptions } from '../../src/dev/testing/worker-process';
import { release, sleepUntil, TestBed, UNTIL_GO, waitFor } from './harness';
import { asks, decide, end, rejected } from './steering-helpers';

/** Activity types the run scheduled after its last completed Update, read from its history (consistent). */
async function scheduledAfterLastUpdate(handle: {
  fetchHistory(): ReturnType<import('@temporalio/client').WorkflowHandle['fetchHistory']>;
}): Promise<string[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  let last = -1;
  events.forEach((e, i) => {
    if (e.workflowExecutionUpdateCompletedEventAttributes) last = i;
  });
  return events
    .slice(last + 1)
    .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
    .filter((name): name is string => !!name);
}

/** The text blocks of the last user message of answered request `i`. */
function textsSentIn(bed: TestBed, i: number): string[] {
  const messages = bed.sentMessages()[i]!;
  const last = messages[messages.length - 1] as Message;
  return typeof last.content === 'string'
    ? [last.content]
    : last.content.filter((b): b is TextBlock => b.type === 'text').map((b) => b.text);
}

describe('steering', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  // C22: every decision is applied once or answered with a clear error.
  test('decide: every invalid request is rejected with a reason; an accepted one answers with what was applied', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_w', 'touch w.txt']), end('done')] } });
    const handle = await bed.start({ task: 'write', approval: 'always' }, 'steer-decide-rejections');
    // Nothing pending yet: rejected, not silently dropped.
    // Sent at once (the helper's status read first would give the run time to ask).
    const early = { toolUseId: 'toolu_w', approved: true, by: 'alice', commandSha256: sha256('touch w.txt') };
    expect(await rejected(handle.executeUpdate(decideUpdate, { args: [early] }))).toMatch(/no command is waiting for approval/);
    await bed.pendingApproval(handle);
    const cases: Array<[string, unknown, RegExp]> = [
      [
        'another tool_use',
        { toolUseId: 'toolu_other', approved: true, by: 'a', commandSha256: sha256('touch w.txt') },
        // The reason never names the pending id (rejections travel in plaintext: docs/security.md, "Encryption").
        /^(?!.*toolu_w).*the tool_use named is not pending/,
      ],
      [
        'another hash',
        { toolUseId: 'toolu_w', approved: true, by: 'a', commandSha256: sha256('touch W.txt') },
        /not the hash of the pending command/,
      ],
      ['no hash', { toolUseId: 'toolu_w', approved: true, by: 'a' }, /commandSha256 must be/],
      [
        'a short hash',
        { toolUseId: 'toolu_w', approved: true, by: 'a', commandSha256: sha256('touch w.txt').slice(0, 12) },
        /commandSha256 must be/,
      ],
      [
        'an upper-case hash',
        { toolUseId: 'toolu_w', approved: true, by: 'a', commandSha256: sha256('touch w.txt').toUpperCase() },
        /commandSha256 must be/,
      ],
      [
        'approved as a string',
        { toolUseId: 'toolu_w', approved: 'yes', by: 'a', commandSha256: sha256('touch w.txt') },
        /approved must be/,
      ],
      ['no by', { toolUseId: 'toolu_w', approved: true, commandSha256: sha256('touch w.txt') }, /by must name/],
      ['a huge by', { toolUseId: 'toolu_w', approved: true, by: 'x'.repeat(201), commandSha256: sha256('touch w.txt') }, /by is longer/],
      [
        'an edit with a denial',
        { toolUseId: 'toolu_w', approved: false, by: 'a', edit: 'id', commandSha256: sha256('touch w.txt') },
        /go with an approval/,
      ],
      [
        'an empty edit',
        { toolUseId: 'toolu_w', approved: true, by: 'a', edit: '  ', commandSha256: sha256('touch w.txt') },
        /edit must be a command/,
      ],
      [
        'a rule with an edit',
        { toolUseId: 'toolu_w', approved: true, by: 'a', edit: 'id', always: true, commandSha256: sha256('touch w.txt') },
        /cannot come with an edit/,
      ],
      [
        'both rules',
        { toolUseId: 'toolu_w', approved: true, by: 'a', always: true, alwaysPrefix: 'touch', commandSha256: sha256('touch w.txt') },
        /not both/,
      ],
      [
        'a prefix the command lacks',
        { toolUseId: 'toolu_w', approved: true, by: 'a', alwaysPrefix: 'rm', commandSha256: sha256('touch w.txt') },
        /does not start with the words "rm"/,
      ],
      [
        'a prefix cut inside a word',
        { toolUseId: 'toolu_w', approved: true, by: 'a', alwaysPrefix: 'tou', commandSha256: sha256('touch w.txt') },
        /does not start with the words "tou"/,
      ],
      [
        'a prefix with an expansion',
        { toolUseId: 'toolu_w', approved: true, by: 'a', alwaysPrefix: 'touch $HOME', commandSha256: sha256('touch w.txt') },
        /rules approve only plain words/,
      ],
      ['an array', [], /must be a JSON object/],
    ];
    for (const [what, payload, reason] of cases) {
      const message = await rejected(handle.executeUpdate(decideUpdate, { args: [payload as DecideRequest] }));
      expect({ what, message }).toEqual({ what, message: expect.stringMatching(reason) });
    }
    // Nothing of that entered the history, and the command still waits, unrun.
    const updates = ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(updates).toEqual([]);
    expect(bed.audit()).toEqual([]);
    expect((await bed.status(handle)).pendingApproval?.toolUseId).toBe('toolu_w');

    // Two decisions at once: exactly one applies, the other is rejected.
    const both = await Promise.allSettled([
      decide(handle, { toolUseId: 'toolu_w', by: 'alice' }, 'touch w.txt'),
      decide(handle, { toolUseId: 'toolu_w', by: 'mallory', approved: false, reason: 'no' }, 'touch w.txt'),
    ]);
    const ok = both.filter((r) => r.status === 'fulfilled');
    expect(ok).toHaveLength(1);
    const bad = both.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((bad.reason as WorkflowUpdateFailedError).cause?.message).toMatch(/already decided|not pending|no command is waiting/);
    const answer = (ok[0] as PromiseFulfilledResult<unknown>).value as { by: string };
    expect(answer).toEqual({
      applied: true,
      toolUseId: 'toolu_w',
      wait: 1,
      decision: answer.by === 'alice' ? 'approved' : 'denied',
      by: answer.by,
      command: 'touch w.txt',
    });
    expect((await handle.result()).status).toBe('completed');
    // Too late: the run has ended (the server refuses an Update to a closed run).
    await expect(decide(handle, { toolUseId: 'toolu_w' }, 'touch w.txt')).rejects.toThrow(/already completed/);
  }, 60_000);

  test('edit: the human command runs instead; Claude is told, and status and transcript keep both texts', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_e', 'rm -rf build']), end('ok')] } });
    const handle = await bed.start({ task: 'clean', approval: 'policy' }, 'steer-edit');
    await bed.pendingApproval(handle);
    const answer = await decide(handle, { toolUseId: 'toolu_e', by: 'carol', edit: 'echo kept build' }, 'rm -rf build');
    expect(answer).toEqual({ applied: true, toolUseId: 'toolu_e', wait: 1, decision: 'edited', by: 'carol', command: 'echo kept build' });
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['echo kept build']);
    const [result] = bed.resultsSentIn(1);
    expect(result).toEqual({
      type: 'tool_result',
      tool_use_id: 'toolu_e',
      content:
        '[The command was edited by carol before it ran; this ran instead of your command:]\necho kept build\n[Its output:]\nkept build',
    });
    const s = await bed.status(handle);
    expect(s.decisions).toEqual([
      expect.objectContaining({
        toolUseId: 'toolu_e',
        decision: 'edited',
        command: 'rm -rf build',
        editedCommand: 'echo kept build',
        by: 'carol',
        source: 'update',
      }),
    ]);
    const transcript = await bed.transcript(handle);
    expect(JSON.stringify(transcript)).toContain('"command":"rm -rf build"');
    expect(JSON.stringify(transcript)).toContain('echo kept build');
  }, 60_000);

  // C33: a grant approves only later matching plain commands of this run; listed, removable.
  test('rules: --always and --always-prefix approve later matching plain commands only; listed, removable', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          asks(['toolu_1', 'touch a.txt']),
          asks(['toolu_2', 'touch a.txt'], ['toolu_3', 'mkdir -p d1']),
          asks(
            ['toolu_4', 'mkdir -p d2'],
            ['toolu_7', "mkdir -p 'd5'"],
            ['toolu_5', 'mkdir -p d3; touch pwned'],
            ['toolu_6', 'mkdir -p $(echo d4)'],
          ),
          asks(['toolu_8', 'mkdir -p d6'], ['toolu_9', 'touch a.txt']),
          end('done'),
        ],
      },
    });
    const handle = await bed.start({ task: 'rules', approval: 'always', approvalTimeout: '2s' }, 'steer-rules');
    const pendingIs = (id: string) => async (): Promise<boolean> => (await bed.status(handle)).pendingApproval?.toolUseId === id;
    await bed.pendingApproval(handle);
    const exact = (await decide(handle, { toolUseId: 'toolu_1', by: 'dave', always: true }, 'touch a.txt')) as { rule: unknown };
    expect(exact.rule).toEqual({ id: 1, kind: 'exact', text: 'touch a.txt', by: 'dave', at: expect.any(String), toolUseId: 'toolu_1' });
    // toolu_2 (identical) runs unasked; toolu_3 asks: approve it with a prefix rule.
    await waitFor('toolu_3 pending', pendingIs('toolu_3'));
    await decide(handle, { toolUseId: 'toolu_3', by: 'erin', alwaysPrefix: 'mkdir -p' }, 'mkdir -p d1');
    // toolu_4 and toolu_7 match the prefix (quotes are plain words); toolu_5 (a list) asks: remove the rule meanwhile.
    await waitFor('toolu_5 pending', pendingIs('toolu_5'));
    const s = await bed.status(handle);
    expect(s.rules?.map((r) => [r.id, r.kind, r.text])).toEqual([
      [1, 'exact', 'touch a.txt'],
      [2, 'prefix', 'mkdir -p'],
    ]);
    expect(s.decisions.filter((d) => d.source === 'rule').map((d) => [d.toolUseId, d.rule, d.by])).toEqual([
      ['toolu_2', 1, 'dave'],
      ['toolu_4', 2, 'erin'],
      ['toolu_7', 2, 'erin'],
    ]);
    expect(await rejected(handle.executeUpdate(removeRuleUpdate, { args: [{ id: 7, by: 'erin' }] }))).toMatch(/no rule 7/);
    const left = await handle.executeUpdate(removeRuleUpdate, { args: [{ id: 2, by: 'erin' }] });
    expect(left.map((r) => r.id)).toEqual([1]);
    // toolu_5 and toolu_6 (a substitution) time out; toolu_8 asks now and times out; toolu_9 still runs by rule 1.
    expect((await handle.result()).status).toBe('completed');
    const ran = bed.audit().map((a) => a.command);
    expect(ran).toEqual(['touch a.txt', 'touch a.txt', 'mkdir -p d1', 'mkdir -p d2', "mkdir -p 'd5'", 'touch a.txt']);
    const final = await bed.status(handle);
    expect(final.decisions.filter((d) => d.source === 'timeout').map((d) => d.toolUseId)).toEqual(['toolu_5', 'toolu_6', 'toolu_8']);
    expect(final.decisions.at(-1)).toMatchObject({ toolUseId: 'toolu_9', source: 'rule', rule: 1 });
  }, 90_000);

  test('say: a message sent mid-command reaches Claude after that turn’s tool_result, in the same user message', async () => {
    // The command runs until the test has sent the message and read it back queued.
    bed = await TestBed.create({ script: { responses: [asks(['toolu_s', `${UNTIL_GO}; echo slept`]), end('noted')] } });
    const handle = await bed.start({ task: 'sleep', approval: 'auto' }, 'steer-say-mid-command');
    await waitFor('command running', async () => (await bed.status(handle)).details.startsWith('running'));
    const answer = await handle.executeUpdate(sayUpdate, { args: [{ text: 'also update the changelog', by: 'frank' }] });
    expect(answer).toEqual({ queued: true, queuedMessages: 1, at: expect.any(String) });
    const queued = await bed.status(handle);
    expect(queued.queuedMessages).toEqual([{ text: 'also update the changelog', by: 'frank', at: answer.at }]);
    expect(queued.details).toMatch(/^running/);
    expect(await rejected(handle.executeUpdate(sayUpdate, { args: [{ text: '   ', by: 'frank' }] }))).toMatch(/non-empty/);
    release(path.join(bed.workspaces, workspaceFolderName(handle.workflowId)));
    expect((await handle.result()).status).toBe('completed');
    const last = bed.sentMessages()[1]!.at(-1)!;
    expect(last.role).toBe('user');
    expect(last.content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_s', content: 'slept' },
      { type: 'text', text: '[message from frank] also update the changelog' },
    ]);
    expect((await bed.status(handle)).queuedMessages).toEqual([]);
  }, 60_000);

  test('pause during an approval wait holds the timeout and the command; resume goes on', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_p', 'touch p.txt']), end('done')] } });
    const handle = await bed.start({ task: 'pause', approval: 'always', approvalTimeout: '2s' }, 'steer-pause-approval');
    const requested = Date.parse((await bed.pendingApproval(handle)).requestedAt);
    const paused = await handle.executeUpdate(pauseUpdate, { args: [{ by: 'gina' }] });
    expect(paused).toMatchObject({ by: 'gina', status: 'paused' });
    await waitFor('paused', async () => (await bed.status(handle)).status === 'paused');
    expect(await rejected(handle.executeUpdate(pauseUpdate, { args: [{ by: 'gina' }] }))).toMatch(/already paused \(by gina\)/);
    // Past the approval timeout (2 s from the request, and a second for its timer's workflow task): nothing was denied, the command still waits.
    await sleepUntil(requested + 2_000 + 1_000);
    let s = await bed.status(handle);
    expect(s).toMatchObject({
      status: 'paused',
      pause: { reason: 'human', by: 'gina' },
      pendingApproval: { toolUseId: 'toolu_p' },
      decisions: [],
    });
    // Approved while paused: recorded, but nothing runs until resume.
    await decide(handle, { toolUseId: 'toolu_p', by: 'hal' }, 'touch p.txt');
    // The workflow task that completed the Update carries whatever the run did about it: it scheduled nothing.
    expect(await scheduledAfterLastUpdate(handle)).toEqual([]);
    s = await bed.status(handle);
    expect(s.status).toBe('paused');
    expect(bed.audit()).toEqual([]);
    expect(bed.sentMessages()).toHaveLength(1);
    expect(await handle.executeUpdate(resumeUpdate, { args: [{ by: 'gina' }] })).toMatchObject({ status: 'running', by: 'gina' });
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['touch p.txt']);
    await expect(handle.executeUpdate(resumeUpdate, { args: [{ by: 'gina' }] })).rejects.toThrow(/already completed/);
  }, 60_000);

  test('pause mid-command stops before the next model call, never mid-command; the session is kept', async () => {
    bed = await TestBed.create({
      // The command runs until the test has had the pause answered.
      script: { responses: [asks(['toolu_a', `export KEEP=1; ${UNTIL_GO}`]), asks(['toolu_b', 'echo KEEP=$KEEP']), end('done')] },
    });
    const handle = await bed.start({ task: 'pause', approval: 'auto' }, 'steer-pause-mid-command');
    await waitFor('command running', async () => (await bed.status(handle)).details.startsWith('running'));
    const answer = await handle.executeUpdate(pauseUpdate, { args: [{ by: 'ivy' }] });
    expect(answer.status).toBe('running');
    expect(bed.audit()).toEqual([]);
    release(path.join(bed.workspaces, workspaceFolderName(handle.workflowId)));
    await waitFor('paused', async () => (await bed.status(handle)).status === 'paused', 20_000);
    // The command finished (its result is recorded); Claude was not asked again.
    expect(bed.audit().map((a) => a.exitCode)).toEqual([0]);
    expect(bed.sentMessages()).toHaveLength(1);
    const session = (await bed.status(handle)).session;
    await handle.executeUpdate(resumeUpdate, { args: [{ by: 'ivy' }] });
    expect((await handle.result()).status).toBe('completed');
    expect(bed.resultsSentIn(2)[0]!.content).toBe('KEEP=1');
    expect(bed.audit().map((a) => a.sessionId)).toEqual([session!.sessionId, session!.sessionId]);
  }, 60_000);

  test('approval timeout actions: end ends the run; pause keeps the command pending until a decision', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_x', 'touch x.txt'], ['toolu_y', 'touch y.txt'])] } });
    const ended = await bed.start(
      { task: 'end', approval: 'always', approvalTimeout: '1s', approvalTimeoutAction: 'end' },
      'steer-timeout-end',
    );
    const r = await ended.result();
    expect(r).toMatchObject({
      status: 'approval_timeout',
      error: expect.stringMatching(/no approval decision for tool_use toolu_x within 1s/),
    });
    const t = await bed.transcript(ended);
    expect((t.at(-1)!.content as ToolResultBlock[]).map((b) => [b.tool_use_id, b.is_error])).toEqual([
      ['toolu_x', true],
      ['toolu_y', true],
    ]);
    expect(bed.audit()).toEqual([]);
    await bed.close();

    bed = await TestBed.create({ script: { responses: [asks(['toolu_z', 'touch z.txt']), end('done')] } });
    const paused = await bed.start(
      { task: 'pause', approval: 'always', approvalTimeout: '1s', approvalTimeoutAction: 'pause' },
      'steer-timeout-pause',
    );
    await waitFor('paused by the timeout', async () => (await bed.status(paused)).status === 'paused');
    expect(await bed.status(paused)).toMatchObject({ pause: { reason: 'approval_timeout' }, pendingApproval: { toolUseId: 'toolu_z' } });
    await decide(paused, { toolUseId: 'toolu_z', by: 'jo' }, 'touch z.txt');
    expect((await paused.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['touch z.txt']);
  }, 60_000);

  test('chat: a three-message conversation in one session; end completes it with the last answer', async () => {
    bed = await TestBed.create({
      script: {
        responses: [asks(['toolu_c1', 'echo one > n.txt']), end('first'), end('second'), asks(['toolu_c3', 'cat n.txt']), end('third')],
      },
    });
    const handle = await bed.start({ task: 'talk', approval: 'auto', chat: true }, 'steer-chat');
    const waiting = async (): Promise<boolean> => (await bed.status(handle)).status === 'awaiting_message';
    await waitFor('awaiting the 2nd message', waiting);
    expect((await bed.status(handle)).chat).toBe(true);
    await handle.executeUpdate(sayUpdate, { args: [{ text: 'and now?', by: 'kim' }] });
    await waitFor('answer 2', async () => (await waiting()) && bed.sentMessages().length === 3);
    await handle.executeUpdate(sayUpdate, { args: [{ text: 'read it back', by: 'kim' }] });
    await waitFor('answer 3', async () => (await waiting()) && bed.sentMessages().length === 5);
    expect(await rejected(handle.executeUpdate(endUpdate, { args: [{ by: '' }] }))).toMatch(/by must name/);
    expect(await handle.executeUpdate(endUpdate, { args: [{ by: 'kim' }] })).toMatchObject({ status: 'completed', by: 'kim' });
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'third' });
    // The run ended while it waited for a message: it waits for nobody now (AgentAwaitingSince used to keep the old time).
    await expectWaitsForNobody(handle);
    expect(textsSentIn(bed, 2)).toEqual(['[message from kim] and now?']);
    expect(textsSentIn(bed, 3)).toEqual(['[message from kim] read it back']);
    expect(bed.resultsSentIn(4)[0]!.content).toBe('one');
    expect(new Set(bed.audit().map((a) => a.sessionId)).size).toBe(1);
    // Roles alternate: no two user messages in a row were ever sent.
    for (const messages of bed.sentMessages())
      for (let i = 1; i < messages.length; i++) expect(messages[i]!.role).not.toBe(messages[i - 1]!.role);
  }, 60_000);

  test('chat idle timeout completes with the last answer; end is refused for a run that is not a chat', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_n', 'touch n.txt']), end('only answer')] } });
    const chat = await bed.start({ task: 'idle', approval: 'auto', chat: true, chatIdleTimeout: '1s' }, 'steer-chat-idle');
    expect(await chat.result()).toMatchObject({ status: 'completed', text: 'only answer' });
    // Ended by the idle timeout while it waited for a message: its search attributes say it waits for nobody.
    await expectWaitsForNobody(chat);
    // A pause holds the idle timeout: paused past it, the run waits; after resume the idle wait starts again.
    const held = await bed.start({ task: 'held', approval: 'auto', chat: true, chatIdleTimeout: '3s' });
    await waitFor('waiting for a message', async () => (await bed.status(held)).status === 'awaiting_message');
    const waitingSince = Date.now();
    await held.executeUpdate(pauseUpdate, { args: [{ by: 'max' }] });
    await waitFor('paused', async () => (await bed.status(held)).status === 'paused');
    // Past the idle timeout (3 s from when the run began waiting, and a second for its timer's workflow task).
    await sleepUntil(waitingSince + 3_000 + 1_000);
    expect((await bed.status(held)).status).toBe('paused');
    expect(await held.executeUpdate(resumeUpdate, { args: [{ by: 'max' }] })).toMatchObject({ status: 'awaiting_message' });
    expect((await bed.status(held)).status).toBe('awaiting_message');
    expect(await held.result()).toMatchObject({ status: 'completed', text: 'only answer' });
    await expectWaitsForNobody(held);
    const plain = await bed.start({ task: 'plain', approval: 'always' });
    await bed.pendingApproval(plain);
    expect(await rejected(plain.executeUpdate(endUpdate, { args: [{ by: 'x' }] }))).toMatch(/not a conversation/);
    await plain.cancel();
  }, 60_000);

  test('pending lists an approval, a pause and a chat waiting for a message, newest first; the CLI commands answer', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_q', 'touch q.txt']), end('hello'), end('bye')] } });
    const a = bed.address;
    const approval = await bed.start({ task: 'one', approval: 'always' });
    await bed.pendingApproval(approval);
    const chat = await bed.start({ task: 'two', approval: 'auto', chat: true });
    await waitFor('chat waits', async () => (await bed.status(chat)).status === 'awaiting_message');
    const third = await bed.start({ task: 'three', approval: 'always' });
    await bed.pendingApproval(third);
    const paused = await cli(a, 'pause', third.workflowId, '--by', 'lee', '--json');
    expect(paused.code).toBe(0);
    expect(JSON.parse(paused.stdout)).toMatchObject({ by: 'lee', status: 'paused' });
    await waitFor('paused', async () => (await bed.status(third)).status === 'paused');
    const rows = await waitFor('pending indexed', async () => {
      const r = await cli(a, 'pending', '--json');
      const all = JSON.parse(r.stdout) as Array<{ workflowId: string; status: string; awaiting: string; since: string }>;
      const mine = all.filter((x) => [approval, chat, third].some((h) => h.workflowId === x.workflowId));
      return mine.length === 3 && mine.some((x) => x.status === 'paused') ? mine : null;
    });
    expect(rows.map((r) => [r.workflowId, r.status])).toEqual([
      [third.workflowId, 'paused'],
      [chat.workflowId, 'awaiting_message'],
      [approval.workflowId, 'awaiting_approval'],
    ]);
    // The visibility store holds no command text and no hash of it (no payload codec covers it): the kind names the wait.
    const sha = createHash('sha256').update('touch q.txt').digest('hex').slice(0, 12);
    expect(rows[0]!.awaiting).toBe('paused by lee; approval of bash');
    expect(rows[1]!.awaiting).toBe('the next message (chat, after turn 2)');
    expect(rows[2]!.awaiting).toBe('approval of bash');
    expect(JSON.stringify(rows)).not.toContain('touch q.txt');
    expect(JSON.stringify(rows)).not.toContain(sha);
    const text = await cli(a, 'pending');
    expect(text.stdout).toContain(approval.workflowId);
    const status = await cli(a, 'status', third.workflowId);
    expect(status.stdout).toContain('  paused: by lee at ');

    // The CLI's own Updates, and their refusals with the run's reason (exit 1).
    const said = await cli(a, 'say', chat.workflowId, 'thanks,', 'bye', '--by', 'lee');
    expect(said).toMatchObject({ code: 0, stdout: expect.stringContaining('queued for') });
    const badPrefix = await cli(a, 'approve', approval.workflowId, '--always-prefix', 'rm');
    expect(badPrefix.code).toBe(1);
    expect(badPrefix.stderr).toMatch(
      /^agent-jobs: .* rejected the decision on toolu_q: the pending command does not start with the words "rm"\nhint: /,
    );
    const ok = await cli(a, 'approve', approval.workflowId, '--always', '--json');
    expect(JSON.parse(ok.stdout)).toMatchObject({
      applied: true,
      decision: 'approved',
      rule: { id: 1, kind: 'exact', text: 'touch q.txt' },
    });
    const rules = await cli(a, 'rules', approval.workflowId, '--json');
    expect(JSON.parse(rules.stdout)).toEqual([expect.objectContaining({ id: 1, text: 'touch q.txt' })]);
    const notPaused = await cli(a, 'resume', chat.workflowId);
    expect(notPaused.code).toBe(1);
    expect(notPaused.stderr).toMatch(/rejected resume: the run is not paused/);
    expect((await approval.result()).status).toBe('completed');
    const closed = await cli(a, 'say', approval.workflowId, 'late');
    expect(closed.code).toBe(1);
    expect(closed.stderr).toMatch(/is not open/);
    await waitFor('chat answered the message', () => bed.sentMessages().length >= 5);
    await third.cancel();
    await chat.cancel();
  }, 120_000);

  test('the approve signal still works end to end, sent with `temporal workflow signal`', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_sig', 'touch sig.txt']), end('done')] } });
    const handle = await bed.start({ task: 'signal', approval: 'always' }, 'steer-signal-by-hand');
    await bed.pendingApproval(handle);
    const temporal = await findTemporalCli();
    expect(temporal).not.toBeNull();
    // The run is encrypted (the suite's keys): the signal goes through the codec server, naming the hash, run and wait.
    const pending = await bed.pendingApproval(handle);
    const payload = JSON.stringify({
      toolUseId: 'toolu_sig',
      approved: true,
      by: 'ops',
      commandSha256: sha256('touch sig.txt'),
      runId: pending.runId,
      wait: pending.wait,
    });
    const codecs = codecClientOptions().dataConverter?.payloadCodecs ?? [];
    const server = await startCodecServer({ codec: chainCodecs(codecs), token: 'steering-signal-token', corsOrigins: [] });
    try {
      await promisify(execFile)(temporal!, [
        'workflow',
        'signal',
        '--address',
        bed.address,
        '--workflow-id',
        handle.workflowId,
        '--name',
        'approve',
        '--input',
        payload,
        '--codec-endpoint',
        server.url,
        '--codec-auth',
        'Bearer steering-signal-token',
      ]);
    } finally {
      await server.close();
    }
    expect((await handle.result()).status).toBe('completed');
    expect((await bed.status(handle)).decisions).toEqual([
      expect.objectContaining({ toolUseId: 'toolu_sig', source: 'signal', by: 'ops', decision: 'approved' }),
    ]);
    expect(bed.audit().map((x) => x.command)).toEqual(['touch sig.txt']);
  }, 60_000);
});

/**
 * A closed run's search attributes (describe) say it waits for nobody: status `completed`, no
 * `AgentAwaiting` text and no `AgentAwaitingSince` (a chat run that completed used to keep the time
 * it began waiting for the next message: END_THROUGH_SET_STATUS_PATCH, src/workflows/run-state.ts).
 */
async function expectWaitsForNobody(handle: WorkflowHandle): Promise<void> {
  const attrs = (await handle.describe()).typedSearchAttributes;
  expect(attrs.get(AGENT_STATUS)).toBe('completed');
  expect(attrs.get(AGENT_AWAITING)).toBe('');
  expect(attrs.get(AGENT_AWAITING_SINCE)).toBeUndefined();
}
