/**
 * C13: big outputs and long conversations. A 3 MB command output is capped
 * far below the payload limit; a long run continues as new (the server
 * suggests it early here) instead of growing its history, carries the
 * conversation's tail, turns and session across (the rest stays in the
 * earlier runs' histories, where a new worker reads it), and completes; its
 * status, once closed, finds its workspace through the chain.
 */
import path from 'node:path';
import { workspaceFolderName } from '../../src/activities/session';
import { startDevServerOnFreePort, devServerArgs, type DevServer } from '../../src/dev/devserver';
import type { ScriptEntry } from '../../src/dev/model-server';
import { decideUpdate, extendUpdate, type ToolResultBlock } from '../../src/contract';
import { pairingProblem } from '../../src/workflows/transcript';
import { runChain, TestBed, toolUse, waitFor } from './harness';

const TURNS = 40;

describe('long runs', () => {
  let server: DevServer;
  let bed: TestBed;
  beforeAll(async () => {
    server = await startDevServerOnFreePort({
      headless: true,
      dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 },
    });
  });
  afterAll(async () => server?.stop());
  afterEach(async () => bed?.close());

  test('the dev server flag is passed as documented', () => {
    expect(devServerArgs({ dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 } })).toEqual(
      expect.arrayContaining(['--dynamic-config-value', 'limit.historyCount.suggestContinueAsNew=60']),
    );
  });

  test(`${TURNS} turns and one 3 MB output: continues as new carrying only the tail; a new worker rebuilds the conversation from the chain's histories`, async () => {
    const responses: ScriptEntry[] = [
      { content: [toolUse('toolu_big', 'head -c 3000000 /dev/zero | tr "\\0" y; echo; export MARK=kept')], stop_reason: 'tool_use' },
    ];
    for (let i = 1; i < TURNS; i++) {
      responses.push({
        content: [toolUse(`toolu_${i}`, `head -c 5000 /dev/zero | tr "\\0" x; echo " turn ${i} MARK=$MARK"`)],
        stop_reason: 'tool_use',
      });
    }
    responses.push({ content: [{ type: 'text', text: 'long run done' }], stop_reason: 'end_turn' });
    bed = await TestBed.create({ address: server.address, script: { responses } });
    const first = bed.workers[0]!;

    const handle = await bed.start({ task: 'a long run', approval: 'auto', maxTurns: TURNS + 5 });
    // Read from the histories (consistent), not the visibility list, which lags behind a run that just ended.
    const continued = async (): Promise<number> =>
      (await runChain(bed.client, handle.workflowId)).filter((r) => r.status === 'CONTINUED_AS_NEW').length;
    // Once the run has continued as new twice, its worker dies: the next one has no copy of the conversation.
    await waitFor('two continue-as-new', async () => (await continued()) >= 2, 120_000);
    const second = await bed.startWorker();
    await first.kill();
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'long run done', turns: TURNS + 1 });
    expect(await continued()).toBeGreaterThanOrEqual(3);

    // The 3 MB output came back capped; the session (and its variables) survived continue-as-new.
    const sent = bed.sentMessages();
    const big = (sent[1]![2]!.content as ToolResultBlock[])[0]!;
    expect(big.content.length).toBeLessThan(40_000);
    expect(big.content).toMatch(/cut|truncat|omitted/i);
    // Each command that ran in the first session saw MARK, and so did at least one after a continue-as-new
    // (a command of a later run than the first); commands after the kill run in a new session without it.
    const chain = await runChain(bed.client, handle.workflowId);
    const firstRunEvents = (await bed.client.workflow.getHandle(handle.workflowId, chain[0]!.runId).fetchHistory()).events ?? [];
    const firstRunCalls = firstRunEvents.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callClaude').length;
    const audit = bed.audit();
    const inFirstSession = audit.flatMap((a, i) => (i > 0 && a.sessionId === audit[0]!.sessionId ? [i] : []));
    expect(Math.max(...inFirstSession)).toBeGreaterThanOrEqual(firstRunCalls);
    for (const i of inFirstSession) {
      // Command i answers step i; its result is the last message of the first request for step i + 1.
      const request = bed.requests().find((r) => r.step === i + 1 && r.response.status === 200)!;
      const last = (request.body as { messages: Array<{ content: ToolResultBlock[] }> }).messages.at(-1)!;
      // The kill may cut the first session's last command short: Claude is told its session was lost.
      if (i === Math.max(...inFirstSession) && /^The bash session was lost/.test(last.content[0]!.content)) continue;
      expect(last.content[0]!.content).toMatch(new RegExp(`turn ${i} MARK=kept$`));
    }

    // Every request held the whole conversation so far, as the workflow holds it: the
    // worker's copy, the copy rebuilt from history after the kill, and the CLI's reader agree.
    const whole = (await bed.jobs().run(handle.workflowId).transcript()).messages;
    expect(whole.length).toBe(2 * TURNS + 2);
    for (const messages of sent) {
      expect(pairingProblem(messages)).toBeNull();
      expect(messages).toEqual(whole.slice(0, messages.length));
    }
    // Where the closed run's files are: the folder its first session opened in, in the chain's first run (later runs opened only
    // the replacement, which starts where the lost session was), on the worker that opened the last session (the second).
    expect((await bed.jobs().run(handle.workflowId).status()).workspace).toEqual({
      path: path.join(bed.workspaces, workspaceFolderName(handle.workflowId)),
      workerId: second.workerId,
      // Both workers run in this machine's one mode: said once.
      sandboxes: [expect.stringMatching(/^(bwrap|none)$/)],
    });
    // What continues as new is small: the tail and counts, not the conversation.
    const runs = (await runChain(bed.client, handle.workflowId)).map((r) => r.runId);
    for (const runId of runs) {
      const events = (await bed.client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events ?? [];
      const input = events[0]!.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
      expect(input.reduce((n, p) => n + (p.data?.length ?? 0), 0)).toBeLessThan(60_000);
    }
  });

  test('approval rules are carried across continue-as-new', async () => {
    const responses: ScriptEntry[] = [{ content: [toolUse('toolu_r0', 'touch kept.txt')], stop_reason: 'tool_use' }];
    for (let i = 1; i <= 24; i++) responses.push({ content: [toolUse(`toolu_r${i}`, 'touch kept.txt')], stop_reason: 'tool_use' });
    responses.push({ content: [{ type: 'text', text: 'rules done' }], stop_reason: 'end_turn' });
    bed = await TestBed.create({ address: server.address, script: { responses } });
    const handle = await bed.start({ task: 'rules across generations', approval: 'always', maxTurns: 40 }, 'continue-as-new-rules');
    const pending = await bed.pendingApproval(handle);
    await handle.executeUpdate(decideUpdate, {
      args: [
        {
          toolUseId: pending.toolUseId,
          approved: true,
          by: 'rita',
          always: true,
          commandSha256: pending.commandSha256,
          runId: pending.runId,
          wait: pending.wait,
        },
      ],
    });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'rules done' });
    const runs = (await runChain(bed.client, handle.workflowId)).map((r) => r.status);
    expect(runs.filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(2);
    // Every later command ran by the rule, in every generation: none asked again.
    expect(bed.audit()).toHaveLength(25);
    const status = await bed.status(handle);
    expect(status.rules).toEqual([expect.objectContaining({ id: 1, kind: 'exact', text: 'touch kept.txt', by: 'rita' })]);
    expect(status.decisions.at(-1)).toMatchObject({ toolUseId: 'toolu_r24', source: 'rule', rule: 1, by: 'rita' });
  });

  test('budgets, what was used of them and the start time are carried across continue-as-new', async () => {
    const u = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 20, cache_read_input_tokens: 40 };
    const responses: ScriptEntry[] = [];
    for (let i = 0; i < 24; i++) responses.push({ content: [toolUse(`toolu_b${i}`, 'true')], stop_reason: 'tool_use', usage: u });
    responses.push({ content: [{ type: 'text', text: 'budgets done' }], stop_reason: 'end_turn', usage: u });
    bed = await TestBed.create({ address: server.address, script: { responses } });
    const handle = await bed.start(
      {
        task: 'budgets across generations',
        approval: 'auto',
        maxTurns: 12,
        maxTokensTotal: 100_000,
        maxDuration: '1 hour',
        onBudget: 'pause',
      },
      'continue-as-new-budgets',
    );
    const firstStart = (await handle.describe()).startTime.getTime();
    const paused = await waitFor(
      'the turn budget pause',
      async () => {
        const s = await bed.status(handle);
        return s.status === 'paused' && s.pause?.reason === 'budget' ? s : null;
      },
      60_000,
    );
    const runs = async (): Promise<string[]> => (await runChain(bed.client, handle.workflowId)).map((r) => r.status);
    // It continued as new before the budget was spent, and still counts the whole chain's turns, tokens and time.
    expect((await runs()).filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(1);
    expect(paused.pause).toMatchObject({ budget: 'turns', limit: 12, used: 12 });
    expect(paused.budget!.used.tokens).toBe(12 * 75);
    expect(paused.budget!.used.durationMs).toBeGreaterThanOrEqual(Date.now() - firstStart - 2_000);
    expect(paused.usage).toEqual({ inputTokens: 120, outputTokens: 60, cacheCreationInputTokens: 240, cacheReadInputTokens: 480 });

    // The raised limit is carried too: the run does not stop at 12 again in a later generation.
    await handle.executeUpdate(extendUpdate, { args: [{ by: 'rita', turns: 20 }] });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'budgets done', turns: 25 });
    expect(result.usage).toEqual({ inputTokens: 250, outputTokens: 125, cacheCreationInputTokens: 500, cacheReadInputTokens: 1_000 });
    expect((await runs()).filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(2);
    const status = await bed.status(handle);
    expect(status.budget?.limits).toEqual({ maxTurns: 32, maxTokensTotal: 100_000, maxDurationMs: 3_600_000 });
  });
});
