/**
 * `npm run bench:long -- [--turns N] [--output-bytes B] [--model M] [--api today|legacy] [--window W] [--kill-at K] [--json]`:
 * one long run on a dev server and worker of its own. N turns (default 300), each a scripted
 * model answer asking for a command that prints B bytes (default 20,000), approval `auto`, on
 * model M (default `DEFAULT_MODEL`, claude-opus-5-5) against the scripted server in API mode
 * `today` (default: per-model rules, thinking blocks bound to their prefix, server-side
 * compaction; docs/scripted-server.md) with a context window of W tokens (default 200,000,
 * a fifth of the model's 1M; the scripted server counts a token per 4 bytes). From the
 * workflow histories of the chain and the server's request log it measures:
 *
 * - history bytes per turn (encoded history events between two `callClaude`s), early
 *   (turns 10–20 % of N) and late (the last 10 %), beside the bytes the turn adds (its output);
 * - continue-as-new segments, and the largest payload of any event (activity input or
 *   result, continue-as-new input);
 * - the share of input tokens read from the prompt cache after turn 2;
 * - Claude-visible context per turn: the tokens of each request, and when outputs were cleared;
 * - the requests the API refused (any 4xx: a changed prefix is a 400), the compactions the
 *   server made, and what the run cost at the model's published prices, compactions included;
 * - with `--kill-at K`: once the server has answered K requests, a second worker starts and
 *   the first is SIGKILLed; then every request's prefix (system, tools and each earlier message,
 *   `cache_control` aside) is checked to be the previous request's, byte for byte, and the
 *   cache reads of the first answer after the kill are reported.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Command } from 'commander';
import { DEFAULT_MODEL } from '../../config';
import { NO_USAGE, addUsage, normalizeUsage, type CallClaudeOutput } from '../../contract';
import { costUsd, modelInfoOf, type ModelPrices } from '../../contract/models';
import { startDevServerOnFreePort } from '../devserver';
import { startModelServer, type LoggedRequest, type ScriptEntry } from '../model-server';
import { setTimeout as sleep } from 'node:timers/promises';
import { startAgentRun } from '../../client';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker } from '../testing/worker-process';
import { decodedHistory } from '../testing/history-codec';
import { summarize } from './turns';
import { withoutCacheControl } from '../model-server/request';

const E = temporal.api.enums.v1.EventType;
type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** Figures of one long run (bytes, tokens, counts). */
export interface LongFigures {
  turns: number;
  outputBytes: number;
  status: string;
  segments: number;
  /** History bytes per turn, median of the early and of the late window, and their ratio. */
  historyBytesPerTurn: { early: number; late: number; ratio: number; all: { median: number; p95: number } };
  /** Whole-chain history bytes. */
  historyBytes: number;
  /** Largest single payload (bytes) and the event that held it. */
  largestPayload: { bytes: number; event: string };
  /** Cache reads / (uncached input + cache writes + cache reads), turns 3 on. */
  cacheReadShare: number;
  /** Tokens of each request (what Claude saw), by turn; sampled. */
  contextTokens: { first: number; max: number; last: number; byTurn: Array<[number, number]> };
  /** Turns at which older outputs were cleared. */
  clearedAtTurns: number[];
  /** With `--kill-at`: where the worker was killed, prefix breaks (all requests, and the pair across the kill), cache reads after it. */
  kill?: {
    afterRequests: number;
    prefixBreaks: number;
    prefixBreaksAcrossKill: number;
    cacheReadAfterKill: number;
    stepsAskedTwice: number;
  };
  /** Server-side compactions (usage `iterations` of type compaction), and the turns whose answer carried one. */
  compactions: { count: number; atTurns: number[] };
  /** Cost in USD at the model table's prices, compactions' tokens included (null when the prices are unknown). */
  costUsd: number | null;
  wallSeconds: number;
  model?: string;
  api?: string;
  contextWindow?: number;
  /** Messages requests answered with a 4xx (zero for a run that never broke a rule of the API). */
  refused?: number;
}

/** Bytes of the payloads an event carries. */
function payloadBytes(e: HistoryEvent): number {
  const sizes = (p: temporal.api.common.v1.IPayloads | null | undefined): number =>
    (p?.payloads ?? []).reduce((n, x) => n + (x.data?.length ?? 0) + Object.values(x.metadata ?? {}).reduce((m, v) => m + v.length, 0), 0);
  return Math.max(
    sizes(e.activityTaskScheduledEventAttributes?.input),
    sizes(e.activityTaskCompletedEventAttributes?.result),
    sizes(e.workflowExecutionStartedEventAttributes?.input),
    sizes(e.workflowExecutionContinuedAsNewEventAttributes?.input),
    sizes(e.workflowExecutionCompletedEventAttributes?.result),
  );
}

/** The histories of every run of a chain, oldest first. */
async function chainHistories(client: Client, workflowId: string): Promise<HistoryEvent[][]> {
  const runs: Array<{ runId: string; start: number }> = [];
  for await (const w of client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runs.push({ runId: w.runId, start: w.startTime.getTime() });
  runs.sort((a, b) => a.start - b.start);
  const out: HistoryEvent[][] = [];
  for (const r of runs) out.push((await decodedHistory(await client.workflow.getHandle(workflowId, r.runId).fetchHistory())).events ?? []);
  return out;
}

/** Runs the long run and measures it (module doc), on the dev server at `address` (left running) or on one of its own. */
export async function measureLong(o: {
  turns: number;
  outputBytes: number;
  address?: string;
  model?: string;
  api?: 'today' | 'legacy';
  contextWindow?: number;
  /** SIGKILL the worker (a second one takes over) once the server answered this many requests. @default no kill */
  killAt?: number;
}): Promise<LongFigures> {
  const modelId = o.model ?? DEFAULT_MODEL;
  const api = o.api ?? 'today';
  const contextWindow = o.contextWindow ?? 200_000;
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-long-'));
  const server = o.address
    ? { address: o.address, stop: (): Promise<void> => Promise.resolve() }
    : await startDevServerOnFreePort({ headless: true, logFile: path.join(dir, 'server.log') });
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < o.turns; i++)
    responses.push({
      content: [{ type: 'tool_use', name: 'bash', input: { command: `head -c ${o.outputBytes} /dev/zero | tr '\\0' x; echo " ${i}"` } }],
      stop_reason: 'tool_use',
    });
  responses.push({ content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' });
  const model = await startModelServer({ script: { api, context_window: contextWindow, responses } });
  const connection = await Connection.connect({ address: server.address });
  const env = scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'bench', dataDir: dir, logLevel: 'ERROR' });
  const workers = [await spawnWorker({ workerId: `bench-long-${process.pid}`, connection, env })];
  try {
    const client = new Client({ ...codecClientOptions(), connection });
    const t0 = Date.now();
    const workflowId = `bench-long-${Date.now()}`;
    const input = { task: 'benchmark: a long run', model: modelId, approval: 'auto' as const, maxTurns: o.turns + 2, contextWindow };
    const handle = await startAgentRun(client, { ...input, modelInfo: modelInfoOf(input) }, workflowId);
    let killedAfter: number | null = null;
    if (o.killAt !== undefined) {
      while (messageRequests(model.requests()).length < o.killAt) await sleep(50);
      workers.push(await spawnWorker({ workerId: `bench-long-${process.pid}-b`, connection, env }));
      killedAfter = messageRequests(model.requests()).length;
      await workers[0]!.kill();
    }
    const result = await handle.result();
    const wallSeconds = (Date.now() - t0) / 1000;
    const histories = await chainHistories(client, workflowId);
    const refused = model
      .requests()
      .filter((r) => r.path === '/v1/messages' && (r.response.status ?? 0) >= 400 && (r.response.status ?? 0) < 500);
    const kill = killedAfter === null ? {} : { kill: killFigures(model.requests(), killedAfter, claudeCalls(histories)) };
    return {
      ...kill,
      ...figuresOf(histories, o, modelInfoOf(input).prices),
      status: result.status,
      wallSeconds,
      model: modelId,
      api,
      contextWindow,
      refused: refused.length,
    };
  } finally {
    for (const w of workers) await w.stop();
    await model.close();
    await connection.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The answered `/v1/messages` requests, oldest first. */
function messageRequests(log: LoggedRequest[]): LoggedRequest[] {
  return log.filter((r) => r.path === '/v1/messages');
}

/** A request's prefix as the API compares it (system, tools, messages), `cache_control` markers removed. */
function prefixParts(body: unknown): { head: string; messages: string[] } {
  const b = withoutCacheControl(body as { system?: unknown; tools?: unknown; messages?: unknown[] });
  return { head: JSON.stringify([b.system, b.tools]), messages: (b.messages ?? []).map((m) => JSON.stringify(m)) };
}

/** Whether `later` keeps `earlier`'s prefix: the same system and tools, and every earlier message but the last (a user turn grows) byte for byte. */
function keepsPrefix(earlier: unknown, later: unknown): boolean {
  const a = prefixParts(earlier);
  const b = prefixParts(later);
  return a.head === b.head && a.messages.slice(0, -1).every((m, i) => b.messages[i] === m);
}

/** The figures of `--kill-at`: prefix breaks between consecutive successful requests, across the kill, and cache reads after it. */
function killFigures(log: LoggedRequest[], killedAfter: number, calls: CallClaudeOutput[]): NonNullable<LongFigures['kill']> {
  const ok = messageRequests(log).filter((r) => r.response.status === 200);
  let prefixBreaks = 0;
  let acrossKill = 0;
  for (let i = 1; i < ok.length; i++) {
    if (keepsPrefix(ok[i - 1]!.body, ok[i]!.body)) continue;
    prefixBreaks++;
    if (i === killedAfter) acrossKill++;
  }
  const steps = messageRequests(log).map((r) => r.step);
  const firstAfter = calls[killedAfter];
  return {
    afterRequests: killedAfter,
    prefixBreaks,
    prefixBreaksAcrossKill: acrossKill,
    cacheReadAfterKill: firstAfter ? normalizeUsage(firstAfter.usage).cacheReadInputTokens : 0,
    stepsAskedTwice: steps.length - new Set(steps).size,
  };
}

/** The `callClaude` results of a chain's histories, in order (what each model call returned: content, usage, request report). */
export function claudeCalls(histories: HistoryEvent[][]): CallClaudeOutput[] {
  const calls: CallClaudeOutput[] = [];
  for (const events of histories) {
    const scheduled = new Map<string, string>();
    for (const e of events) {
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        scheduled.set(String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const a = e.activityTaskCompletedEventAttributes;
        if (scheduled.get(String(a?.scheduledEventId)) === 'callClaude')
          calls.push(JSON.parse(Buffer.from(a?.result?.payloads?.[0]?.data ?? []).toString('utf8')) as CallClaudeOutput);
      }
    }
  }
  return calls;
}

/** The figures of a chain's histories (module doc). */
export function figuresOf(
  histories: HistoryEvent[][],
  o: { turns: number; outputBytes: number },
  prices: ModelPrices | null = null,
): Omit<LongFigures, 'status' | 'wallSeconds'> {
  const perTurn: number[] = [];
  let largest = { bytes: 0, event: '' };
  let historyBytes = 0;
  let current = -1;
  const calls: CallClaudeOutput[] = [];
  const converter = (data: Uint8Array | null | undefined): CallClaudeOutput =>
    JSON.parse(Buffer.from(data ?? []).toString('utf8')) as CallClaudeOutput;
  const scheduledType = new Map<string, string>();
  for (const events of histories) {
    for (const e of events) {
      const bytes = temporal.api.history.v1.HistoryEvent.encode(e).finish().length;
      historyBytes += bytes;
      const p = payloadBytes(e);
      if (p > largest.bytes) largest = { bytes: p, event: E[e.eventType ?? 0] ?? String(e.eventType) };
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
        const type = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
        scheduledType.set(`${histories.indexOf(events)}:${String(e.eventId)}`, type);
        if (type === 'callClaude') {
          current++;
          perTurn.push(0);
        }
      }
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const type = scheduledType.get(`${histories.indexOf(events)}:${String(e.activityTaskCompletedEventAttributes?.scheduledEventId)}`);
        if (type === 'callClaude') calls.push(converter(e.activityTaskCompletedEventAttributes?.result?.payloads?.[0]?.data));
      }
      if (current >= 0) perTurn[current]! += bytes;
    }
  }
  // The last "turn" is the final answer and the end of the run: not a tool turn.
  const turns = perTurn.slice(0, Math.max(1, perTurn.length - 1));
  const window = (from: number, to: number): number =>
    summarize(turns.slice(Math.floor(from), Math.max(Math.floor(from) + 1, Math.floor(to)))).median;
  const early = window(turns.length * 0.1, turns.length * 0.2);
  const late = window(turns.length * 0.9, turns.length);
  let read = 0;
  let all = 0;
  calls.slice(2).forEach((c) => {
    const u = c.usage as CallClaudeOutput['usage'] & { cacheReadInputTokens?: number; cacheCreationInputTokens?: number };
    read += u.cacheReadInputTokens ?? 0;
    all += u.inputTokens + (u.cacheCreationInputTokens ?? 0) + (u.cacheReadInputTokens ?? 0);
  });
  const tokens = calls.map((c) => c.context?.requestTokens ?? 0);
  const clearedAtTurns: number[] = [];
  calls.forEach((c, i) => {
    if (c.context?.notice !== undefined) clearedAtTurns.push(i + 1);
  });
  const step = Math.max(1, Math.floor(tokens.length / 10));
  const compactedAt = calls.flatMap((c, i) => ((c.usage.compactions ?? 0) > 0 ? [i + 1] : []));
  const total = calls.reduce((u, c) => addUsage(u, normalizeUsage(c.usage)), NO_USAGE);
  const cost = costUsd(total, prices);
  return {
    turns: o.turns,
    outputBytes: o.outputBytes,
    segments: histories.length,
    historyBytesPerTurn: { early, late, ratio: Math.round((late / Math.max(1, early)) * 100) / 100, all: summarize(turns) },
    historyBytes,
    largestPayload: largest,
    cacheReadShare: all === 0 ? 0 : Math.round((read / all) * 1000) / 1000,
    contextTokens: {
      first: tokens[0] ?? 0,
      max: Math.max(0, ...tokens),
      last: tokens[tokens.length - 1] ?? 0,
      byTurn: tokens.map((t, i) => [i + 1, t] as [number, number]).filter(([turn]) => turn % step === 0 || turn === 1),
    },
    clearedAtTurns,
    compactions: { count: total.compactions ?? 0, atTurns: compactedAt },
    costUsd: cost === null ? null : Math.round(cost * 1e4) / 1e4,
  };
}

/** Prints the figures as text lines. */
export function printLong(r: LongFigures): string {
  const kb = (b: number): string => `${(b / 1024).toFixed(1)} KB`;
  return [
    `long run: ${r.turns} turns, each output ${r.outputBytes} bytes, status ${r.status}, ${r.wallSeconds.toFixed(0)} s`,
    `  history bytes per turn: early ${kb(r.historyBytesPerTurn.early)}, late ${kb(r.historyBytesPerTurn.late)} (late/early ${r.historyBytesPerTurn.ratio}×); ` +
      `${(r.historyBytesPerTurn.all.median / r.outputBytes).toFixed(2)}× the ${kb(r.outputBytes)} the turn adds`,
    `  continue-as-new segments: ${r.segments}; whole history ${(r.historyBytes / 1024 / 1024).toFixed(1)} MB`,
    `  largest payload: ${kb(r.largestPayload.bytes)} (${r.largestPayload.event})`,
    `  input tokens read from the prompt cache after turn 2: ${(r.cacheReadShare * 100).toFixed(1)} %`,
    `  Claude-visible context: first request ${r.contextTokens.first} tokens, max ${r.contextTokens.max}, last ${r.contextTokens.last}; ` +
      `outputs cleared at turns ${r.clearedAtTurns.join(', ') || 'none'}`,
    `  tokens by turn: ${r.contextTokens.byTurn.map(([t, n]) => `${t}:${n}`).join(' ')}`,
    `  ${r.model ?? '?'} (api ${r.api ?? '?'}, window ${r.contextWindow ?? '?'}): refused requests ${r.refused ?? '?'}; ` +
      `compactions ${r.compactions.count} (at turns ${r.compactions.atTurns.join(', ') || 'none'}); ` +
      `cost $${r.costUsd ?? '?'} (compactions included)`,
    ...(r.kill
      ? [
          `  worker SIGKILLed after ${r.kill.afterRequests} requests: prefix breaks ${r.kill.prefixBreaks} (across the kill ${r.kill.prefixBreaksAcrossKill}), ` +
            `cache reads of the first answer after it ${r.kill.cacheReadAfterKill} tokens, steps asked twice ${r.kill.stepsAskedTwice}`,
        ]
      : []),
  ].join('\n');
}

async function main(): Promise<void> {
  const o = new Command('bench:long')
    .option('--turns <n>', 'turns in the run', (v) => Number(v), 300)
    .option('--output-bytes <n>', 'bytes each command prints', (v) => Number(v), 20_000)
    .option('--model <id>', 'model id', DEFAULT_MODEL)
    .option('--api <mode>', "the scripted server's API mode: today or legacy", 'today')
    .option('--window <tokens>', 'context window of the run and the server', (v) => Number(v), 200_000)
    .option('--kill-at <n>', 'SIGKILL the worker once the server answered n requests (a second worker takes over)', (v) => Number(v))
    .option('--json', 'print JSON')
    .parse(process.argv)
    .opts<{
      turns: number;
      outputBytes: number;
      model: string;
      api: 'today' | 'legacy';
      window: number;
      killAt?: number;
      json?: boolean;
    }>();
  const r = await measureLong({ ...o, contextWindow: o.window });
  process.stdout.write(o.json ? `${JSON.stringify(r, null, 2)}\n` : `${printLong(r)}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:long: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
