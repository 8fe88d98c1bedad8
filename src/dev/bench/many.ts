/**
 * `node dist/dev/bench/many.js [--runs N] [--turns T] [--json]` (`npm run
 * bench:many`): many runs on one worker process. On a dev server of its
 * own, with one worker whose session cap is the number of runs, it starts
 * N runs at once (approval `auto`), each T turns of a scripted (instant)
 * model answer asking for a small command, waits for all of them and
 * reports throughput and memory: the worker's own RSS (Node, VmRSS) and,
 * apart, the sum over its child processes (the sessions' bwrap and bash),
 * sampled while the runs go, and the most sessions held at once (from the
 * runs' histories).
 *
 * {@link runMany} is the same as a function, for a combined bench script;
 * with `workers` > 1 and `workerAddresses` it spreads the runs over several
 * worker processes on a Temporal service it is given (`npm run
 * bench:cluster`) and reports each worker's share and memory.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import Table from 'cli-table3';
import { Command, InvalidArgumentError } from 'commander';
import { startDevServerOnFreePort } from '../devserver';
import { startModelServer, type ScriptEntry } from '../model-server';
import { startAgentRun } from '../../client';
import type { AgentRunResult } from '../../contract';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from '../testing/worker-process';
import { decodedHistory } from '../testing/history-codec';
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
  /** Namespace on {@link address}. @default 'default' */
  namespace?: string;
  /** Worker processes. @default 1 */
  workers?: number;
  /** Frontend of worker `i`: `workerAddresses[i % length]`. @default every worker on {@link address} */
  workerAddresses?: string[];
  /** Called with the server's frontend once it answers, before any worker starts (e.g. to ask it what it is). */
  onServer?: (address: string) => Promise<void>;
}

/** One worker's share of a {@link runMany} bench, read from the runs' histories (identities `<workerId>@agent-jobs`); memory in MiB. */
export interface WorkerShare {
  workerId: string;
  /** The frontend it was connected to. */
  frontend: string;
  /** Runs whose first session it held. */
  runs: number;
  /** Sessions it opened. */
  sessions: number;
  /** Most sessions it held at once. */
  peakSessions: number;
  /** Workflow tasks it completed. */
  workflowTasks: number;
  /** `callClaude` attempts it started. */
  modelCalls: number;
  /** Commands (`runCommand` attempts) it started. */
  commands: number;
  idleRssMb: number;
  peakRssMb: number;
  peakChildrenRssMb: number;
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
  /** The worker's session cap during the bench (each worker's, with several). */
  maxSessions: number;
  /** Most sessions the worker held at once (from the histories: openSession completed → closeSession scheduled); with several workers, the most any one held. */
  peakSessions: number;
  /** Sessions that opened only after a `WorkerFull` refusal. */
  sessionsThatWaited: number;
  /**
   * Workflow tasks of all runs: completed, and the timeouts their histories
   * record, by kind (`scheduleToStart`: waited past the sticky queue's
   * timeout for its worker; `startToClose`: started but not done within the
   * workflow task timeout). Each timeout is a task done again, from a
   * replay when another worker takes it: a machine short of CPU shows here
   * first. A lower bound: the server records no event for a retried
   * (transient) workflow task that times out again.
   */
  workflowTasks: { completed: number; scheduleToStartTimeouts: number; startToCloseTimeouts: number };
  /** The worker process's VmRSS before the runs start, MiB (with several workers: the highest). */
  idleWorkerRssMb: number;
  /** Highest sampled VmRSS of the worker process (Node), MiB (with several workers: the highest of any). */
  peakWorkerRssMb: number;
  /** {@link peakWorkerRssMb} / {@link peakSessions}. */
  rssPerSessionMb: number;
  /** ({@link peakWorkerRssMb} − {@link idleWorkerRssMb}) / {@link peakSessions}: what one more session costs the worker. */
  addedRssPerSessionMb: number;
  /** Highest sampled sum of VmRSS over the worker's descendant processes (bwrap, bash, commands), MiB (with several workers: over all of them). */
  peakChildrenRssMb: number;
  /** Highest sampled count of the worker's descendant processes (with several workers: of all of them). */
  peakChildren: number;
  /** Memory samples taken. */
  samples: number;
  /** Each worker's share and memory, in start order. */
  perWorker: WorkerShare[];
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

/** Parent pid → child pids of every live process, from /proc/<pid>/stat; yields to the event loop every 200 reads. */
async function processTree(): Promise<Map<number, number[]>> {
  const children = new Map<number, number[]>();
  let reads = 0;
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    // Thousands of sessions' processes: the model server shares this event loop and must keep answering.
    if (++reads % 200 === 0) await new Promise((r) => setImmediate(r));
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
  return children;
}

/** Every live descendant of `root` (children, their children, ...) in `tree` ({@link processTree}). */
function descendants(tree: Map<number, number[]>, root: number): number[] {
  const out: number[] = [];
  const todo = [root];
  while (todo.length > 0) {
    for (const c of tree.get(todo.pop()!) ?? []) {
      out.push(c);
      todo.push(c);
    }
  }
  return out;
}

const round = (x: number, digits = 1): number => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Runs the bench: its own dev server (SQLite in a temp folder) unless
 * given an address, the scripted model server, one worker process (`node
 * dist/worker.js`: run `npm run build` first; or `workers` of them), N runs
 * × T turns at once. Cleans up everything it started, also on failure.
 * @throws Error when the dev server, the model server or the worker cannot start (a run that fails is counted, not thrown)
 */
export async function runMany(options: ManyOptions = {}): Promise<ManyReport> {
  const runs = options.runs ?? 200;
  const turns = options.turns ?? 10;
  const command = options.command ?? 'echo turn';
  const cap = options.maxSessions ?? runs;
  const workerCount = options.workers ?? 1;
  const namespace = options.namespace ?? 'default';
  const say = (line: string): void => void (options.verbose && process.stderr.write(`bench:many: ${line}\n`));
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-many-'));
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < turns; i++)
    responses.push({ content: [{ type: 'tool_use', name: 'bash', input: { command } }], stop_reason: 'tool_use' });
  responses.push({ content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' });
  const server = options.address
    ? { address: options.address, stop: (): Promise<void> => Promise.resolve() }
    : await startDevServerOnFreePort({ headless: true, logFile: path.join(dir, 'server.log') });
  const cleanup: Array<() => Promise<void>> = [async () => server.stop()];
  try {
    await options.onServer?.(server.address);
    const model = await startModelServer({ script: { responses } });
    cleanup.push(async () => model.close());
    const connection = await Connection.connect({ address: server.address });
    cleanup.push(async () => connection.close());
    const frontends = options.workerAddresses?.length ? options.workerAddresses : [server.address];
    const workers: Array<{ process: WorkerProcess; frontend: string }> = [];
    for (let i = 0; i < workerCount; i++) {
      const frontend = frontends[i % frontends.length]!;
      const worker = await spawnWorker({
        workerId: workerCount > 1 ? `bench-many-${process.pid}-${i + 1}` : `bench-many-${process.pid}`,
        connection,
        namespace,
        // Several workers start on a loaded machine: give each more than the default 30 s.
        readyTimeoutMs: 120_000,
        env: {
          ...scriptedWorkerEnv({ address: frontend, namespace, modelUrl: model.url, apiKey: 'bench', dataDir: dir, logLevel: 'ERROR' }),
          AGENT_JOBS_MAX_SESSIONS: String(cap),
        },
      });
      cleanup.push(async () => worker.stop());
      workers.push({ process: worker, frontend });
    }
    await sleep(500);
    const memory = workers.map((w) => ({ idle: rssBytes(w.process.pid), peak: rssBytes(w.process.pid), peakChildren: 0 }));
    let peakChildrenRss = 0;
    let peakChildren = 0;
    let samples = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const began = Date.now();
        // One scan of /proc for all workers per sample (with 2,000 processes a scan takes a while).
        const tree = await processTree();
        let childrenRss = 0;
        let children = 0;
        for (const [i, w] of workers.entries()) {
          const kids = descendants(tree, w.process.pid);
          let rss = 0;
          for (const [k, pid] of kids.entries()) {
            rss += rssBytes(pid);
            if (k % 200 === 199) await new Promise((r) => setImmediate(r));
          }
          const m = memory[i]!;
          m.peak = Math.max(m.peak, rssBytes(w.process.pid));
          m.peakChildren = Math.max(m.peakChildren, rss);
          childrenRss += rss;
          children += kids.length;
        }
        peakChildrenRss = Math.max(peakChildrenRss, childrenRss);
        peakChildren = Math.max(peakChildren, children);
        samples++;
        // Sampling takes at most about a fifth of this process's time, however many processes there are.
        await sleep(Math.max(options.sampleMs ?? 200, 4 * (Date.now() - began)));
      }
    })();

    const client = new Client({ ...codecClientOptions(), connection, namespace });
    const stamp = Date.now();
    say(`starting ${runs} runs × ${turns} turns on ${workerCount} worker(s) (session cap ${cap})`);
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
    const tasks = new Map<string, { workflowTasks: number; modelCalls: number; commands: number }>();
    const workflowTasks = { completed: 0, scheduleToStartTimeouts: 0, startToCloseTimeouts: 0 };
    for (const h of handles) {
      const history = await decodedHistory(await h.fetchHistory());
      spans.push(...sessionSpans(h.workflowId, history));
      countTasks(history, tasks, workflowTasks);
    }
    const failures = results.flatMap((r, i) =>
      r.status === 'completed' ? [] : [`${handles[i]!.workflowId}: ${r.status}${r.error ? ` (${r.error})` : ''}`],
    );
    const completed = runs - failures.length;
    const firstSession = new Map<string, string>();
    for (const s of spans) if (!firstSession.has(s.workflowId)) firstSession.set(s.workflowId, s.workerId);
    const perWorker: WorkerShare[] = workers.map(({ process: w, frontend }, i) => {
      const t = tasks.get(`${w.workerId}@agent-jobs`) ?? { workflowTasks: 0, modelCalls: 0, commands: 0 };
      return {
        workerId: w.workerId,
        frontend,
        runs: [...firstSession.values()].filter((id) => id === w.workerId).length,
        sessions: spans.filter((s) => s.workerId === w.workerId).length,
        peakSessions: peakSessions(spans, w.workerId),
        ...t,
        idleRssMb: round(memory[i]!.idle / MIB),
        peakRssMb: round(memory[i]!.peak / MIB),
        peakChildrenRssMb: round(memory[i]!.peakChildren / MIB),
      };
    });
    // The worker that peaked highest stands for all in the per-session figures.
    const top = memory.reduce((a, b) => (b.peak > a.peak ? b : a));
    const peak = Math.max(...perWorker.map((w) => w.peakSessions));
    const topSessions = perWorker[memory.indexOf(top)]!.peakSessions;
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
      workflowTasks,
      idleWorkerRssMb: round(Math.max(...memory.map((m) => m.idle)) / MIB),
      peakWorkerRssMb: round(top.peak / MIB),
      rssPerSessionMb: topSessions > 0 ? round(top.peak / MIB / topSessions, 2) : 0,
      addedRssPerSessionMb: topSessions > 0 ? round((top.peak - top.idle) / MIB / topSessions, 2) : 0,
      peakChildrenRssMb: round(peakChildrenRss / MIB),
      peakChildren,
      samples,
      perWorker,
    };
  } finally {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Adds one history's workflow tasks, `callClaude` and `runCommand` attempts
 * to the counts per worker identity, and its workflow tasks completed and
 * timed out to `totals`.
 */
function countTasks(
  history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>,
  into: Map<string, { workflowTasks: number; modelCalls: number; commands: number }>,
  totals: ManyReport['workflowTasks'],
): void {
  const E = temporal.api.enums.v1.EventType;
  const T = temporal.api.enums.v1.TimeoutType;
  const type = new Map<string, string>();
  const of = (identity: string | null | undefined): { workflowTasks: number; modelCalls: number; commands: number } => {
    const key = identity ?? '';
    if (!into.has(key)) into.set(key, { workflowTasks: 0, modelCalls: 0, commands: 0 });
    return into.get(key)!;
  };
  for (const e of history.events ?? []) {
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      type.set(String(e.eventId), e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
    else if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) {
      of(e.workflowTaskCompletedEventAttributes?.identity).workflowTasks++;
      totals.completed++;
    } else if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT) {
      const timeout = e.workflowTaskTimedOutEventAttributes?.timeoutType;
      if (timeout === T.TIMEOUT_TYPE_SCHEDULE_TO_START) totals.scheduleToStartTimeouts++;
      else if (timeout === T.TIMEOUT_TYPE_START_TO_CLOSE) totals.startToCloseTimeouts++;
    } else if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const a = e.activityTaskStartedEventAttributes;
      const name = type.get(String(a?.scheduledEventId));
      if (name === 'callClaude') of(a?.identity).modelCalls++;
      else if (name === 'runCommand') of(a?.identity).commands++;
    }
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
