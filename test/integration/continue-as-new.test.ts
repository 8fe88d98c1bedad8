/**
 * C13: big outputs and long conversations. A 3 MB command output is capped
 * far below the payload limit; a long run with 20 KB outputs continues as
 * new (the server suggests it early here) instead of growing its history,
 * carries its transcript, turns and session across, and completes.
 */
import { devServerArgs, freePort, startDevServer, type DevServer } from '../../src/devserver';
import type { ScriptEntry } from '../../src/model-server';
import { decideUpdate, extendUpdate, type ToolResultBlock } from '../../src/contract';
import { pairingProblem } from '../../src/workflows/transcript';
import { TestBed, toolUse, waitFor } from './harness';

const TURNS = 40;

describe('long runs', () => {
  let server: DevServer;
  let bed: TestBed;
  beforeAll(async () => {
    server = await startDevServer({
      port: await freePort(),
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

  test(`${TURNS} turns of 20 KB outputs and one 3 MB output: continues as new, stays bounded, completes`, async () => {
    const responses: ScriptEntry[] = [
      { content: [toolUse('toolu_big', 'head -c 3000000 /dev/zero | tr "\\0" y; echo; export MARK=kept')], stop_reason: 'tool_use' },
    ];
    for (let i = 1; i < TURNS; i++) {
      responses.push({
        content: [toolUse(`toolu_${i}`, `head -c 20000 /dev/zero | tr "\\0" x; echo " turn ${i} MARK=$MARK"`)],
        stop_reason: 'tool_use',
      });
    }
    responses.push({ content: [{ type: 'text', text: 'long run done' }], stop_reason: 'end_turn' });
    bed = await TestBed.create({ address: server.address, script: { responses } });

    const handle = await bed.start(
      { task: 'a long run', approval: 'auto', transcriptBudgetChars: 100_000, maxTurns: TURNS + 5 },
      'continue-as-new',
    );
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'long run done', turns: TURNS + 1 });

    // It continued as new several times; every run of the chain stayed small.
    const runs: string[] = [];
    for await (const w of bed.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) runs.push(w.status.name);
    expect(runs.filter((s) => s === 'CONTINUED_AS_NEW').length).toBeGreaterThanOrEqual(3);

    // The 3 MB output came back capped; the session (and its variables) survived continue-as-new.
    const sent = bed.sentMessages();
    const big = (sent[1]![2]!.content as ToolResultBlock[])[0]!;
    expect(big.content.length).toBeLessThan(40_000);
    expect(big.content).toMatch(/cut|truncat|omitted/i);
    const lastResult = bed.resultsSentIn(TURNS)[0]!;
    expect(lastResult.content).toMatch(new RegExp(`turn ${TURNS - 1} MARK=kept$`));

    // Every request stayed within the transcript budget (plus the newest turn) and well formed.
    for (const messages of sent) {
      expect(JSON.stringify(messages).length).toBeLessThan(150_000);
      expect(pairingProblem(messages)).toBeNull();
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
      args: [{ toolUseId: pending.toolUseId, approved: true, by: 'rita', always: true, commandSha256: pending.commandSha256 }],
    });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'rules done' });
    const runs: string[] = [];
    for await (const w of bed.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) runs.push(w.status.name);
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
    const runs = async (): Promise<string[]> => {
      const names: string[] = [];
      for await (const w of bed.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` })) names.push(w.status.name);
      return names;
    };
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
