/**
 * Budgets on the real dev server, real workers and the scripted model: a
 * spent turn, token, cost or duration budget pauses the run (a durable wait:
 * no activity pending, the session kept) until `extend` gives more, `cancel`
 * ends a paused run, `onBudget: 'end'` ends it with the budget's status, the
 * `extend` Update refuses what cannot apply, and usage and cost add up to
 * the scripted usages at the price table's prices. The CLI as a person
 * runs it: start (pausing by default), status --json, list --json with
 * AgentCostUsd, resume refused, extend.
 */
import { AGENT_AWAITING } from '../../src/config';
import { extendUpdate, resumeUpdate, type ExtendRequest, type Usage } from '../../src/contract';
import { BUILTIN_MODELS, costUsd } from '../../src/contract/models';
import type { ScriptEntry } from '../../src/dev/model-server';
import type { agentRun } from '../../src/workflows';
import { cli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';
import { rejected, type Run } from './steering-helpers';

/** Script usage of one answer: input, output, cache writes, cache reads. */
const usage = (input: number, output: number, write: number, read: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: write,
  cache_read_input_tokens: read,
});
type ScriptUsage = ReturnType<typeof usage>;

/** A scripted answer asking for `command`, with `u` as its usage. */
const ask = (id: string, command: string, u: ScriptUsage): ScriptEntry => ({
  content: [toolUse(id, command)],
  stop_reason: 'tool_use',
  usage: u,
});
/** A scripted final answer with `u` as its usage. */
const done = (text: string, u: ScriptUsage): ScriptEntry => ({ content: [{ type: 'text', text }], stop_reason: 'end_turn', usage: u });

/** The scripted usages added up, as the run reports them. */
function sum(...us: ScriptUsage[]): Usage {
  return {
    inputTokens: us.reduce((n, u) => n + u.input_tokens, 0),
    outputTokens: us.reduce((n, u) => n + u.output_tokens, 0),
    cacheCreationInputTokens: us.reduce((n, u) => n + u.cache_creation_input_tokens, 0),
    cacheReadInputTokens: us.reduce((n, u) => n + u.cache_read_input_tokens, 0),
  };
}

/** The default model's prices (the run's input names no model): $3 / $15 per MTok, cache write $3.75, read $0.30. */
/** The model these runs use: its prices ($3 / $15 / $3.75 / $0.30) make the figures below. */
const MODEL = 'claude-sonnet-4-5';
const PRICES = BUILTIN_MODELS[MODEL]!.prices!;

/** Waits until the run is paused on a budget and returns its status. */
async function budgetPause(bed: TestBed, handle: Run, timeoutMs = 30_000) {
  return waitFor(
    'a budget pause',
    async () => {
      const s = await bed.status(handle);
      return s.status === 'paused' && s.pause?.reason === 'budget' ? s : null;
    },
    timeoutMs,
  );
}

const extend = (handle: Run, req: Partial<ExtendRequest>) => handle.executeUpdate(extendUpdate, { args: [{ by: 'alice', ...req }] });

describe('budgets', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('turns: the run pauses with no activity running, resume refuses, extend goes on in the same session, usage and cost add up', async () => {
    const u = [usage(100, 50, 1_000, 0), usage(120, 60, 0, 1_000), usage(130, 70, 0, 1_100)];
    bed = await TestBed.create({
      script: { responses: [ask('toolu_1', 'export KEPT=yes', u[0]!), ask('toolu_2', 'echo $KEPT', u[1]!), done('all done', u[2]!)] },
    });
    const handle = await bed.start(
      { model: MODEL, task: 'two commands', approval: 'auto', maxTurns: 2, onBudget: 'pause' },
      'budget-turns-extend',
    );
    const paused = await budgetPause(bed, handle);
    expect(paused.pause).toEqual({ reason: 'budget', budget: 'turns', limit: 2, used: 2, at: expect.any(String) });
    expect(paused.turns).toBe(2);
    expect(paused.usage).toEqual(sum(u[0]!, u[1]!));
    expect(paused.costUsd).toBeCloseTo(costUsd(sum(u[0]!, u[1]!), PRICES)!, 12);
    expect(paused.budget).toMatchObject({ limits: { maxTurns: 2 }, used: { turns: 2 }, onBudget: 'pause' });
    // A durable wait: no model call or command is pending; the UI's attribute says which budget.
    const d = await handle.describe();
    expect(d.raw.pendingActivities ?? []).toEqual([]);
    expect(d.typedSearchAttributes.get(AGENT_AWAITING)).toMatch(/turn budget of 2 model calls is spent/);
    const session = paused.session;
    expect(session).not.toBeNull();

    // resume gives no budget, so it is refused, saying what to do instead.
    expect(await rejected(handle.executeUpdate(resumeUpdate, { args: [{ by: 'alice' }] }))).toMatch(
      /turns budget is spent, and resume gives no more: raise it with `agent-jobs extend .* --turns/,
    );

    const answer = await extend(handle, { turns: 3 });
    expect(answer).toEqual({ status: 'running', limits: { maxTurns: 5 }, pause: null, by: 'alice', at: expect.any(String) });
    const result = await handle.result();
    const total = sum(...u);
    expect(result).toEqual({ status: 'completed', text: 'all done', turns: 3, usage: total, costUsd: expect.any(Number) });
    // $3 × 350 + $15 × 180 + $3.75 × 1,000 + $0.30 × 2,100, per million tokens.
    expect(result.costUsd).toBeCloseTo((3 * 350 + 15 * 180 + 3.75 * 1_000 + 0.3 * 2_100) / 1e6, 12);
    // The same bash session before and after the pause: the variable survived.
    expect(bed.resultsSentIn(2)[0]!.content).toBe('yes');
    const final = await bed.status(handle);
    expect(final.usage).toEqual(total);
    expect(new Set(bed.audit().map((a) => a.sessionId))).toEqual(new Set([session!.sessionId]));
  });

  test('tokens: every kind counts; the extend Update refuses what cannot apply, then extends', async () => {
    const u = [usage(100, 100, 200, 200), usage(100, 100, 200, 200), usage(10, 10, 0, 0)];
    bed = await TestBed.create({
      script: { responses: [ask('toolu_1', 'true', u[0]!), ask('toolu_2', 'true', u[1]!), done('tokens done', u[2]!)] },
    });
    // 600 tokens a turn: within 1,000 after one, spent after two.
    const handle = await bed.start(
      { model: MODEL, task: 'count tokens', approval: 'auto', maxTokensTotal: 1_000, onBudget: 'pause' },
      'budget-tokens',
    );
    const paused = await budgetPause(bed, handle);
    expect(paused.pause).toMatchObject({ reason: 'budget', budget: 'tokens', limit: 1_000, used: 1_200 });
    expect(paused.turns).toBe(2);

    const cases: Array<[string, unknown, RegExp]> = [
      ['nothing', { by: 'a' }, /name at least one budget/],
      ['a negative amount', { by: 'a', tokens: -5 }, /tokens must be a positive integer/],
      ['zero', { by: 'a', tokens: 0 }, /tokens must be a positive integer/],
      ['NaN (null on the wire)', { by: 'a', tokens: NaN }, /tokens must be a positive integer, not null/],
      ['Infinity (null on the wire)', { by: 'a', turns: Infinity }, /turns must be a positive integer/],
      ['a fraction of a token', { by: 'a', tokens: 1.5 }, /tokens must be a positive integer/],
      ['a string', { by: 'a', tokens: '1000' }, /tokens must be a positive integer, not "1000"/],
      ['a huge amount', { by: 'a', tokens: 1e15 }, /tokens adds more than/],
      ['a huge cost', { by: 'a', turns: 1, costUsd: 1e300 }, /costUsd adds more than|no cost budget/],
      ['a budget the run does not have', { by: 'a', costUsd: 5 }, /the run has no cost budget/],
      ['an unknown field', { by: 'a', tokens: 10, maxTurns: 1e6 }, /unknown field maxTurns/],
      ['no by', { tokens: 10 }, /by must name/],
      ['an array', [], /must be a JSON object/],
      ['a string payload', 'more', /must be a JSON object/],
    ];
    for (const [what, payload, reason] of cases) {
      const message = await rejected(handle.executeUpdate(extendUpdate, { args: [payload as ExtendRequest] }));
      expect({ what, message }).toEqual({ what, message: expect.stringMatching(reason) });
    }
    // Nothing of that entered the history; the run still waits.
    const updates = ((await handle.fetchHistory()).events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(updates).toEqual([]);
    expect((await bed.status(handle)).status).toBe('paused');

    // Too little to leave the pause: accepted, the answer says it is still paused.
    const little = await extend(handle, { tokens: 100 });
    expect(little).toMatchObject({
      status: 'paused',
      limits: { maxTokensTotal: 1_100 },
      pause: { budget: 'tokens', limit: 1_100, used: 1_200 },
    });
    const enough = await extend(handle, { tokens: 10_000 });
    expect(enough).toMatchObject({ status: 'running', limits: { maxTurns: 50, maxTokensTotal: 11_100 }, pause: null });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'tokens done', turns: 3, usage: sum(...u) });

    // An ended run refuses; so does a run that does not exist.
    await expect(extend(handle, { tokens: 10 })).rejects.toThrow(/completed|closed|not found/i);
    await expect(extend(bed.client.workflow.getHandle<typeof agentRun>(`${handle.workflowId}-nope`), { tokens: 10 })).rejects.toThrow(
      /not found/i,
    );
  });

  test('cost: the run pauses at the price table’s cost; cancel ends the paused run', async () => {
    // $0.0285 a turn at $3 / $15 / $3.75 / $0.30: within $0.05 after one, spent after two.
    const u = usage(1_000, 1_000, 2_000, 10_000);
    bed = await TestBed.create({ script: { responses: [ask('toolu_1', 'true', u), ask('toolu_2', 'true', u), done('never', u)] } });
    const handle = await bed.start(
      { model: MODEL, task: 'spend', approval: 'auto', maxCostUsd: 0.05, onBudget: 'pause' },
      'budget-cost-cancel',
    );
    const paused = await budgetPause(bed, handle);
    expect(paused.pause).toMatchObject({ reason: 'budget', budget: 'cost', limit: 0.05 });
    expect(paused.pause!.used).toBeCloseTo(0.057, 12);
    expect(paused.costUsd).toBeCloseTo(0.057, 12);
    expect(costUsd(sum(u, u), PRICES)).toBeCloseTo(0.057, 12);
    expect((await handle.describe()).raw.pendingActivities ?? []).toEqual([]);

    await handle.cancel();
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'cancelled', turns: 2, usage: sum(u, u) });
    expect(result.costUsd).toBeCloseTo(0.057, 12);
    expect(bed.requests().filter((r) => r.response.status === 200)).toHaveLength(2);
  });

  test('duration: workflow time since the start counts; extend --duration goes on', async () => {
    const u = usage(10, 10, 0, 0);
    bed = await TestBed.create({ script: { responses: [ask('toolu_1', 'sleep 3', u), done('slept', u)] } });
    const handle = await bed.start(
      { model: MODEL, task: 'take time', approval: 'auto', maxDuration: 2_000, onBudget: 'pause' },
      'budget-duration',
    );
    const paused = await budgetPause(bed, handle);
    expect(paused.pause).toMatchObject({ reason: 'budget', budget: 'duration', limit: 2_000 });
    expect(paused.pause!.used).toBeGreaterThanOrEqual(3_000);
    expect(paused.turns).toBe(1);
    const answer = await extend(handle, { durationMs: 600_000 });
    expect(answer).toMatchObject({ status: 'running', limits: { maxDurationMs: 602_000 }, pause: null });
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'slept', turns: 2 });
  });

  test("onBudget 'end' ends the run with the budget's status, as before budgets paused", async () => {
    const u = usage(1_000, 1_000, 2_000, 10_000);
    bed = await TestBed.create({ script: { responses: [ask('toolu_1', 'true', u), ask('toolu_2', 'true', u), done('never', u)] } });
    const turns = await bed.start(
      { model: MODEL, task: 'end on turns', approval: 'auto', maxTurns: 1, onBudget: 'end' },
      'budget-end-turns',
    );
    expect(await turns.result()).toEqual({
      status: 'max_turns',
      turns: 1,
      usage: sum(u),
      costUsd: expect.any(Number),
      error: 'the turn budget of 1 model calls is spent',
    });
    const cost = await bed.start(
      { model: MODEL, task: 'end on cost', approval: 'auto', maxCostUsd: 0.05, onBudget: 'end' },
      'budget-end-cost',
    );
    expect(await cost.result()).toMatchObject({
      status: 'max_cost',
      turns: 2,
      error: expect.stringMatching(/cost budget of \$0.05 is spent/),
    });
    // No onBudget at all (runs from other clients, and every run started before budgets paused) ends too.
    const tokens = await bed.start({ model: MODEL, task: 'end on tokens', approval: 'auto', maxTokensTotal: 100 });
    expect(await tokens.result()).toMatchObject({ status: 'max_tokens_total', turns: 1 });
  });

  test('the CLI: start pauses by default, status and list show the budget and the cost, resume is refused, extend goes on', async () => {
    const u = usage(1_000, 1_000, 2_000, 10_000);
    bed = await TestBed.create({ script: { responses: [ask('toolu_1', 'true', u), done('cli done', u)] } });
    const a = bed.address;
    const id = `budget-cli-${Date.now()}`;
    expect(
      (await cli(a, 'start', 'one', 'turn', '--model', MODEL, '--id', id, '--approval', 'auto', '--max-turns', '1', '--json')).code,
    ).toBe(0);
    const status = await waitFor('paused on a budget', async () => {
      const s = JSON.parse((await cli(a, 'status', id, '--json')).stdout) as Record<string, unknown> & { status: string };
      return s.status === 'paused' ? s : null;
    });
    expect(status).toMatchObject({
      status: 'paused',
      pause: { reason: 'budget', budget: 'turns', limit: 1, used: 1 },
      usage: sum(u),
      costUsd: expect.any(Number),
      budget: { limits: { maxTurns: 1 }, onBudget: 'pause' },
    });
    expect(status.costUsd).toBeCloseTo(0.0285, 12);
    const text = await cli(a, 'status', id);
    expect(text.stdout).toMatch(/paused: the turn budget is spent \(1 of 1 model calls\)/);
    expect(text.stdout).toMatch(/cost: {3}\$0\.0285/);

    const listed = await waitFor('AgentCostUsd indexed', async () => {
      const rows = JSON.parse((await cli(a, 'list', '--json')).stdout) as Array<{
        workflowId: string;
        costUsd: number | null;
        status: string;
      }>;
      return rows.find((r) => r.workflowId === id && r.status === 'paused' && r.costUsd !== null);
    });
    expect(listed.costUsd).toBeCloseTo(0.0285, 9);
    // `pending` reads its own visibility query (AgentAwaiting): wait for the run to be listed there too, then check what it waits on.
    const pending = await waitFor('the paused run listed by pending', async () => {
      const rows = JSON.parse((await cli(a, 'pending', '--json')).stdout) as Array<{ workflowId: string; awaiting: string }>;
      return rows.find((p) => p.workflowId === id);
    });
    expect(pending.awaiting).toMatch(/turn budget/);

    const resume = await cli(a, 'resume', id);
    expect(resume.code).toBe(1);
    expect(resume.stderr).toMatch(/resume gives no more: raise it with `agent-jobs extend/);
    expect((await cli(a, 'extend', id)).code).toBe(1);
    const extended = await cli(a, 'extend', id, '--turns', '2', '--by', 'ops', '--json');
    expect(extended.code).toBe(0);
    expect(JSON.parse(extended.stdout)).toMatchObject({ status: 'running', limits: { maxTurns: 3 }, pause: null, by: 'ops' });
    await bed.client.workflow.getHandle(id).result();
    const after = await cli(a, 'extend', id, '--turns', '2');
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/not open|has ended/);
    const ended = JSON.parse((await cli(a, 'status', id, '--json')).stdout) as {
      result: { status: string; usage: Usage; costUsd: number };
    };
    expect(ended.result).toMatchObject({ status: 'completed', usage: sum(u, u) });
    expect(ended.result.costUsd).toBeCloseTo(0.057, 12);
  });
});
