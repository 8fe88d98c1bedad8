/**
 * What the claim check (src/codec/claim-check.ts) takes out of history: the same scripted run,
 * side by side with the claim check off (`AGENT_JOBS_BLOB_STORE=none`), on at the default
 * threshold (128 KiB) and on at a low one (16 KiB), each on a dev server, worker and blob
 * folder of its own, encryption on in all three. The run: N turns (default 3; past about 3 the conversation outgrows the scripted server's 200,000-token window), each asking for C
 * commands (default 8) that print B random bytes in base64 (default 20,000 bytes, 26,668
 * characters: incompressible, as a build log or a binary dump is to gzip), then an answer.
 *
 * Per configuration it prints the run's history as the server stores it (bytes of the encoded
 * `History`, events), its largest payload, the most payload bytes one workflow task's commands
 * carried, the references it holds, and the bytes the blob
 * store holds. Figures in docs/performance.md ("History size and the claim check").
 *
 * Usage: npm run build && node dist/dev/bench/history-size.js [--turns N] [--commands C] [--output-bytes B] [--json]
 */
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { REFERENCE_ENCODING, productDataConverter } from '../../codec';
import { DEFAULT_BLOB_THRESHOLD_BYTES } from '../../config';
import { startAgentRun } from '../../client';
import { startDevServerOnFreePort } from '../devserver';
import { startModelServer, type ScriptEntry } from '../model-server';
import { largestTaskPayloadBytes, payloadsOf } from '../testing/history-payloads';
import { scriptedWorkerEnv, sharedCodecKeys, spawnWorker } from '../testing/worker-process';

function arg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : fallback;
}

/** The figures of one configuration (bytes and counts). */
export interface HistorySizeFigures {
  config: string;
  status: string;
  historyBytes: number;
  events: number;
  largestPayloadBytes: number;
  /** The most payload bytes the commands of one workflow task completion carried (events naming that completion). */
  largestTaskBytes: number;
  references: number;
  blobs: number;
  blobBytes: number;
}

/** Files and bytes under `dir` (0 when it does not exist). */
function filesUnder(dir: string): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile()) {
        files++;
        bytes += statSync(p).size;
      }
    }
  };
  try {
    walk(dir);
  } catch {
    /* no blob written */
  }
  return { files, bytes };
}

async function measure(config: string, blobEnv: Record<string, string>, responses: ScriptEntry[]): Promise<HistorySizeFigures> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-history-size-'));
  const server = await startDevServerOnFreePort({ headless: true, logFile: path.join(dir, 'server.log') });
  const model = await startModelServer({ script: { responses } });
  const blobs = path.join(dir, 'blobs');
  const env = {
    ...scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'bench', dataDir: dir, logLevel: 'ERROR' }),
    AGENT_JOBS_BLOB_STORE: blobs,
    ...blobEnv,
  };
  const connection = await Connection.connect({ address: server.address });
  const worker = await spawnWorker({ workerId: `bench-history-${process.pid}-${config.replace(/\W+/g, '-')}`, connection, env });
  try {
    const client = new Client({ connection, dataConverter: productDataConverter(env, dir) });
    const handle = await startAgentRun(
      client,
      { task: 'print big outputs', approval: 'auto', maxTurns: responses.length + 1 },
      `history-size-${Date.now()}`,
    );
    const result = await handle.result();
    const history = await handle.fetchHistory();
    const payloads = payloadsOf(history);
    const size = (p: Payload): number => temporal.api.common.v1.Payload.encode(p).finish().length;
    const stored = filesUnder(blobs);
    return {
      config,
      status: result.status === 'completed' ? result.status : `${result.status}: ${JSON.stringify(result).slice(0, 300)}`,
      historyBytes: temporal.api.history.v1.History.encode(history).finish().length,
      events: history.events?.length ?? 0,
      largestPayloadBytes: Math.max(...payloads.map(size)),
      largestTaskBytes: largestTaskPayloadBytes(history),
      references: payloads.filter((p) => Buffer.from(p.metadata!['encoding']!).toString() === REFERENCE_ENCODING).length,
      blobs: stored.files,
      blobBytes: stored.bytes,
    };
  } finally {
    await worker.stop();
    await connection.close();
    await model.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const turns = arg('--turns', 3);
  const commands = arg('--commands', 8);
  const outputBytes = arg('--output-bytes', 20_000);
  sharedCodecKeys();
  const ask = (turn: number): ScriptEntry => ({
    content: Array.from({ length: commands }, (_, i) => ({
      type: 'tool_use' as const,
      id: `toolu_${turn}_${i}`,
      name: 'bash',
      input: { command: `head -c ${outputBytes} /dev/urandom | base64 -w0` },
    })),
    stop_reason: 'tool_use' as const,
  });
  const responses: ScriptEntry[] = [
    ...Array.from({ length: turns }, (_, t) => ask(t)),
    { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
  ];
  const figures = [
    await measure('claim check off', { AGENT_JOBS_BLOB_STORE: 'none' }, responses),
    await measure(`on, threshold ${DEFAULT_BLOB_THRESHOLD_BYTES / 1024} KiB (default)`, {}, responses),
    await measure('on, threshold 16 KiB', { AGENT_JOBS_BLOB_THRESHOLD: '16KiB' }, responses),
  ];
  if (process.argv.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ turns, commands, outputBytes, figures })}\n`);
    return;
  }
  process.stdout.write(`${turns} turns of ${commands} commands, each printing ${outputBytes} random bytes in base64; encryption on\n`);
  const cols: Array<[string, (f: HistorySizeFigures) => string]> = [
    ['', (f) => f.config],
    ['status', (f) => f.status],
    ['history bytes', (f) => f.historyBytes.toLocaleString('en-US')],
    ['events', (f) => String(f.events)],
    ['largest payload', (f) => f.largestPayloadBytes.toLocaleString('en-US')],
    ['largest task', (f) => f.largestTaskBytes.toLocaleString('en-US')],
    ['references', (f) => String(f.references)],
    ['blobs', (f) => String(f.blobs)],
    ['blob bytes', (f) => f.blobBytes.toLocaleString('en-US')],
  ];
  const rows = [cols.map(([h]) => h), ...figures.map((f) => cols.map(([, v]) => v(f)))];
  const widths = cols.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  for (const r of rows) process.stdout.write(`${r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ')}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
