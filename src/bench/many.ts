/**
 * `node dist/bench/many.js [--runs N] [--turns T] [--json]` (`npm run
 * bench:many`): many runs on one worker process. On a dev server of its
 * own, with one worker whose session cap is the number of runs, it starts
 * N runs at once (approval `auto`), each T turns of a scripted (instant)
 * model answer asking for a small command, waits for all of them and
 * reports throughput and memory: the worker's own RSS (Node, VmRSS) and,
 * apart, the sum over its child processes (the sessions' bwrap and bash),
 * sampled while the runs go, and the most sessions held at once (from the
 * runs' histories).
 *
 * {@link runMany} is the same as a function, for a combined bench script.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import Table from 'cli-table3';
import { Command, InvalidArgumentError } from 'commander';
import { freePort, startDevServer } from '../devserver';
import { startModelServer, type ScriptEntry } from '../model-server';
import { startAgentRun } from '../temporal';
import type { AgentRunResult } from '../contract';
import { scriptedWorkerEnv, spawnWorker } from '../testing/worker-process';
import { peakSessions, sessionSpans, waitedForRoom, type SessionSpan } from '../testing/session-spans';

/** Options of {@link runMany}. */
export interface ManyOptions {
  /** Runs started at once. @default 200 */
  runs?: number;
  /** Commands per run (one model answer each, plus a final text answer). @default 10 */
  turns?: number;
  /** The command each turn asks for. @default `echo turn` */
  command?: string;
  /** `AGENT_JOBS_MAX_SESSIONS` of the worker. @default the number of runs (every run gets a session at once) */
  maxSessions?: number;
  /** How often memory is sampled, in ms. @default 200 */
  sampleMs?: number;
  /** Progress lines on stderr. @default false */
  verbose?: boolean;
  /** Temporal frontend to use (left running). @default a dev server of its own, stopped at the end */
  address?: string;
}

/** What {@link runMany} measured. Memory in MiB (2^20 bytes, named `Mb` in the fields), times in seconds. */
export interface ManyReport {
  runs: number;
  turns: number;
  /** Runs whose result is `completed`. */
  completed: number;
  /** Runs that ended otherwise, or whose result could not be read. */
  failed: number;
  /** One line per run that did not complete: its id and status or error. */
  failures: string[];
  /** From the first start to the last result. */
  seconds: number;
  /** Commands run (turns of completed runs) per second of {@link seconds}. */
  turnsPerSecond: number;
  /** The worker's session cap during the bench. */
  maxSessions: number;
  /** Most sessions the worker held at once (from the histories: openSession completed → closeSession scheduled). */
  peakSessions: number;
  /** Sessions that opened only after a `WorkerFull` refusal. */
  sessionsThatWaited: number;
  /** The worker process's VmRSS before the runs start, MiB. */
  idleWorkerRssMb: number;
  /** Highest sampled VmRSS of the worker process (Node), MiB. */
  peakWorkerRssMb: number;
  /** {@link peakWorkerRssMb} / {@link peakSessions}. */
  rssPerSessionMb: number;
  /** ({@link peakWorkerRssMb} − {@link idleWorkerRssMb}) / {@link peakSessions}: what one more session costs the worker. */
  addedRssPerSessionMb: number;
  /** Highest sampled sum of VmRSS over the worker's descendant processes (bwrap, bash, commands), MiB. */
  peakChildrenRssMb: number;
  /** Highest sampled count of the worker's descendant processes. */
  peakChildren: number;
  /** Memory samples taken. */
  samples: number;
}

const MIB = 1024 * 1024;

/** VmRSS of a process in bytes, 0 when it is gone or unreadable. */
function rssBytes(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : 0;
  } catch {
    return 0;
  }
}

/** Every live descendant of `root` (children, their children, ...), from /proc/<pid>/stat. */
function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // Fields after the `(comm)`, which may hold spaces: state, ppid, ...
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    for (const c of children.get(todo.pop()!) ?? []) {
      out.push(c);
      todo.push(c);
    }
  }
  return out;
}

const round = (x: number, digits = 1): number => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Runs the bench: its own dev server (SQLite in a temp folder), the
 * scripted model server, one worker process (`node dist/worker.js`: run
 * `npm run build` first), N runs × T turns at once. Cleans everything up,
 * also on failure.
 * @throws Error when the dev server, the model server or the worker cannot start (a run that fails is counted, not thrown)
 */
export async function runMany(options: ManyOptions = {}): Promise<ManyReport> {
  const runs = options.runs ?? 200;
  const turns = options.turns ?? 10;
  const command = options.command ?? 'echo turn';
  const cap = options.maxSessions ?? runs;
  const say = (line: string): void => void (options.verbose && process.stderr.write(`bench:many: ${line}\n`));
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-many-'));
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < turns; i++)
    responses.push({ content: [{ type: 'tool_use', name: 'bash', input: { command } }], stop_reason: 'tool_use' });
  responses.push({ content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' });
  const server = options.address
    ? { address: options.address, stop: (): Promise<void> => Promise.resolve() }
    : await startDevServer({ port: await freePort(), headless: true, logFile: path.join(dir, 'server.log') });
  const cleanup: Array<() => Promise<void>> = [async () => server.stop()];
  try {
    const model = await startModelServer({ script: { responses } });
    cleanup.push(async () => model.close());
    const connection = await Connection.connect({ address: server.address });
    cleanup.push(async () => connection.close());
    const worker = await spawnWorker({
      workerId: `bench-many-${process.pid}`,
      connection,
      env: {
        ...scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'bench', dataDir: dir, logLevel: 'ERROR' }),
        AGENT_JOBS_MAX_SESSIONS: String(cap),
      },
    });
    cleanup.push(async () => worker.stop());
    await sleep(500);
    const idle = rssBytes(worker.pid);
    let peakRss = idle;
    let peakChildrenRss = 0;
    let peakChildren = 0;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const kids = descendants(worker.pid);
        peakRss = Math.max(peakRss, rssBytes(worker.pid));
        peakChildrenRss = Math.max(
          peakChildrenRss,
          kids.reduce((sum, pid) => sum + rssBytes(pid), 0),
        );
        peakChildren = Math.max(peakChildren, kids.length);
        samples++;
        await sleep(options.sampleMs ?? 200);
      }
    })();

    const client = new Client({ connection });
    const stamp = Date.now();
    say(`starting ${runs} runs × ${turns} turns (session cap ${cap})`);
    const t0 = Date.now();
    const handles = await Promise.all(
      Array.from({ length: runs }, (_, i) =>
        startAgentRun(client, { task: `bench run ${i}`, approval: 'auto', maxTurns: turns + 2 }, `bench-many-${stamp}-${i}`),
      ),
    );
    let done = 0;
    const results = await Promise.all(
      handles.map((h) =>
        h.result().then(
          (r: AgentRunResult) => {
            if (++done % Math.max(1, Math.floor(runs / 10)) === 0) say(`${done}/${runs} done after ${round((Date.now() - t0) / 1000)} s`);
            return r;
          },
          (err: unknown) => ({ status: 'failed' as const, turns: 0, usage: { input_tokens: 0, output_tokens: 0 }, error: String(err) }),
        ),
      ),
    );
    const seconds = (Date.now() - t0) / 1000;
    sampling = false;
    await sampler;

    const spans: SessionSpan[] = [];
    for (const h of handles) spans.push(...sessionSpans(h.workflowId, await h.fetchHistory()));
    const failures = results.flatMap((r, i) =>
      r.status === 'completed' ? [] : [`${handles[i]!.workflowId}: ${r.status}${r.error ? ` (${r.error})` : ''}`],
    );
    const completed = runs - failures.length;
    const peak = peakSessions(spans, worker.workerId);
    return {
      runs,
      turns,
      completed,
      failed: failures.length,
      failures,
      seconds: round(seconds),
      turnsPerSecond: round((completed * turns) / seconds),
      maxSessions: cap,
      peakSessions: peak,
      sessionsThatWaited: spans.filter(waitedForRoom).length,
      idleWorkerRssMb: round(idle / MIB),
      peakWorkerRssMb: round(peakRss / MIB),
      rssPerSessionMb: peak > 0 ? round(peakRss / MIB / peak, 2) : 0,
      addedRssPerSessionMb: peak > 0 ? round((peakRss - idle) / MIB / peak, 2) : 0,
      peakChildrenRssMb: round(peakChildrenRss / MIB),
      peakChildren,
      samples,
    };
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

function positiveInt(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('a positive integer');
  return Number(value);
}

async function main(): Promise<void> {
  const o = new Command('bench:many')
    .description('many concurrent runs on one worker process: throughput, worker RSS, sessions held at once')
    .option('--runs <n>', 'runs started at once', positiveInt, 200)
    .option('--turns <n>', 'commands per run', positiveInt, 10)
    .option('--max-sessions <n>', "the worker's AGENT_JOBS_MAX_SESSIONS (default: the number of runs)", positiveInt)
    .option('--json', 'print JSON')
    .parse(process.argv)
    .opts<{ runs: number; turns: number; maxSessions?: number; json?: boolean }>();
  const r = await runMany({ runs: o.runs, turns: o.turns, ...(o.maxSessions ? { maxSessions: o.maxSessions } : {}), verbose: !o.json });
  if (o.json) return void process.stdout.write(`${JSON.stringify(r, null, 2)}\n`);
  const plain = !process.stdout.isTTY;
  const table = new Table({
    head: [`${r.runs} runs × ${r.turns} turns, one worker`, ''],
    ...(plain ? { style: { head: [], border: [] } } : {}),
  });
  table.push(
    ['completed / failed', `${r.completed} / ${r.failed}`],
    ['wall time', `${r.seconds} s`],
    ['turns per second', r.turnsPerSecond],
    ['sessions at once (cap)', `${r.peakSessions} (${r.maxSessions}); ${r.sessionsThatWaited} waited for room`],
    ['worker RSS idle / peak', `${r.idleWorkerRssMb} / ${r.peakWorkerRssMb} MiB`],
    ['worker RSS per session (added)', `${r.rssPerSessionMb} (${r.addedRssPerSessionMb}) MiB`],
    ['child processes: peak count, RSS', `${r.peakChildren}, ${r.peakChildrenRssMb} MiB`],
  );
  process.stdout.write(`${table.toString()}\n`);
  for (const f of r.failures.slice(0, 10)) process.stdout.write(`not completed: ${f}\n`);
  if (r.failed > 0) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:many: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
