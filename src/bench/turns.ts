/**
 * `npm run bench:turns -- [--turns N] [--json]`: the orchestration cost of
 * one agent turn. One run of N turns, each a scripted (instant) model
 * answer asking for `true`, on a dev server and worker of its own. From the
 * workflow history it prints, per turn (median and p95, ms): the whole turn,
 * the `callClaude` activity (schedule → complete), the `runCommand` activity,
 * and what is left (workflow tasks, scheduling): the per-turn overhead.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import Table from 'cli-table3';
import { Command } from 'commander';
import { freePort, startDevServer } from '../devserver';
import { startModelServer, type ScriptEntry } from '../model-server';
import { startAgentRun } from '../temporal';
import { scriptedWorkerEnv, spawnWorker } from '../testing/worker-process';

/** Median and 95th percentile of `values` (ms), rounded to 0.1. */
export function summarize(values: number[]): { median: number; p95: number } {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { median: Math.round(at(0.5) * 10) / 10, p95: Math.round(at(0.95) * 10) / 10 };
}

/** Per-turn figures (ms) of one measured run. */
export interface TurnFigures {
  turn: { median: number; p95: number };
  callClaude: { median: number; p95: number };
  runCommand: { median: number; p95: number };
  overhead: { median: number; p95: number };
  wallMs: number;
}

/** Measures `turns` turns; returns per-turn figures in ms. */
export async function measureTurns(turns: number): Promise<TurnFigures> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-'));
  const server = await startDevServer({ port: await freePort(), headless: true, logFile: path.join(dir, 'server.log') });
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < turns; i++)
    responses.push({ content: [{ type: 'tool_use', name: 'bash', input: { command: 'true' } }], stop_reason: 'tool_use' });
  responses.push({ content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' });
  const model = await startModelServer({ script: { responses } });
  const connection = await Connection.connect({ address: server.address });
  const worker = await spawnWorker({
    workerId: `bench-${process.pid}`,
    connection,
    env: scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'bench', dataDir: dir, logLevel: 'ERROR' }),
  });
  try {
    const client = new Client({ connection });
    const t0 = Date.now();
    const handle = await startAgentRun(client, { task: 'benchmark', approval: 'auto', maxTurns: turns + 2 }, `bench-turns-${Date.now()}`);
    await handle.result();
    const wallMs = Date.now() - t0;
    const history = await handle.fetchHistory();
    const E = temporal.api.enums.v1.EventType;
    const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
      Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
    const scheduled = new Map<string, { type: string; at: number }>();
    const spans: Record<string, number[]> = { callClaude: [], runCommand: [] };
    const claudeScheduledAt: number[] = [];
    for (const e of history.events ?? []) {
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
        const type = e.activityTaskScheduledEventAttributes?.activityType?.name ?? '';
        scheduled.set(String(e.eventId), { type, at: ms(e.eventTime) });
        if (type === 'callClaude') claudeScheduledAt.push(ms(e.eventTime));
      }
      if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const s = scheduled.get(String(e.activityTaskCompletedEventAttributes?.scheduledEventId));
        if (s && spans[s.type]) spans[s.type]!.push(ms(e.eventTime) - s.at);
      }
    }
    const turnMs = claudeScheduledAt.slice(1).map((t, i) => t - claudeScheduledAt[i]!);
    const overhead = turnMs.map((t, i) => t - (spans.callClaude![i] ?? 0) - (spans.runCommand![i] ?? 0));
    return {
      turn: summarize(turnMs),
      callClaude: summarize(spans.callClaude!),
      runCommand: summarize(spans.runCommand!),
      overhead: summarize(overhead),
      wallMs,
    };
  } finally {
    await worker.stop();
    await model.close();
    await connection.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const o = new Command('bench:turns')
    .option('--turns <n>', 'turns in the run', (v) => Number(v), 50)
    .option('--json', 'print JSON')
    .parse(process.argv)
    .opts<{ turns: number; json?: boolean }>();
  const r = await measureTurns(o.turns);
  if (o.json) return void process.stdout.write(`${JSON.stringify({ turns: o.turns, ...r }, null, 2)}\n`);
  // Colours only on a terminal: piped or redirected output stays plain text.
  const plain = !process.stdout.isTTY;
  const table = new Table({
    head: [`per turn (${o.turns} turns), ms`, 'median', 'p95'],
    ...(plain ? { style: { head: [], border: [] } } : {}),
  });
  for (const k of ['turn', 'callClaude', 'runCommand', 'overhead'] as const) table.push([k, r[k].median, r[k].p95]);
  process.stdout.write(`${table.toString()}\nwall time ${(r.wallMs / 1000).toFixed(1)} s\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:turns: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
