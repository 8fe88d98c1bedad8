/**
 * `npm run bench:turns -- [--turns N] [--no-baseline] [--sweep 5,10,20] [--json]`: the
 * orchestration cost of one agent turn, beside the bare floor of Temporal
 * itself, measured on the same dev server in the same run.
 *
 * On each dev server: first a bare workflow of N turns (each one no-op
 * activity on the workflow's own task queue, then one on a second task queue
 * of the same worker process: `src/dev/testing/bare-workflow.ts`, run by a
 * worker inside this process), then one agent run of N turns (each a
 * scripted, instant model answer asking for `true`) on a worker process of
 * its own. From each workflow history it prints, per turn (median and p95,
 * ms): the whole turn; for the agent the `callClaude` activity (schedule →
 * complete), the `runCommand` activity and what is left (workflow tasks,
 * scheduling); how long each kind of task waited between being scheduled
 * and a worker starting it; and the CPU time per turn of each process
 * involved (worker, dev server, this process), which tells work from waiting.
 *
 * It does this twice, on two dev servers: one started as the project starts
 * every dev server (with {@link DEV_SERVER_DYNAMIC_CONFIG}), one with the
 * server's defaults (`--no-baseline` skips that one), so the effect of the
 * project's setting is measured side by side.
 *
 * `--cpu-prof DIR` runs the agent's worker under `node --cpu-prof` (one
 * sample per 500 µs, profiles written to DIR when it exits) and prints the
 * functions with the most self and total time between the run's start and
 * its end, per turn and as a share of the worker's CPU (src/dev/testing/cpu-profile.ts).
 *
 * `--sweep` then measures the bare floor once more on one dev server per
 * value of `history.transferProcessorMaxPollRPS` given: while that limit
 * holds, a bare turn (three tasks through the transfer queue) takes 3 / RPS
 * seconds, which it prints beside.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime, Worker, bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import Table from 'cli-table3';
import { Command } from 'commander';
import { startDevServerOnFreePort, DEV_SERVER_DYNAMIC_CONFIG, type DevServer, type DevServerOptions } from '../devserver';
import { startModelServer, type ScriptEntry } from '../model-server';
import { statFields } from '../../session/procs';
import { startAgentRun } from '../../client';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker } from '../testing/worker-process';
import { readProfiles, summarizeProfiles, type ProfileSummary } from '../testing/cpu-profile';

/** Median and 95th percentile, ms. */
export interface Spread {
  median: number;
  p95: number;
}

/** Median and 95th percentile of `values` (ms), rounded to 0.1. */
export function summarize(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number): number => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
  return { median: Math.round(at(0.5) * 10) / 10, p95: Math.round(at(0.95) * 10) / 10 };
}

/** Per-turn figures (ms) of one measured agent run. */
export interface TurnFigures {
  turn: Spread;
  callClaude: Spread;
  runCommand: Spread;
  overhead: Spread;
  /** Scheduled → started, per task: how long each waited for a worker. */
  wait: { workflowTask: Spread; callClaude: Spread; runCommand: Spread };
  /** CPU time (user + system, ms) per turn over the run: the worker process, the dev server, this process (the scripted model server and the client). */
  cpuPerTurnMs: { worker: number; server: number; bench: number };
  wallMs: number;
  /** With `cpuProfDir`: where the worker's CPU went during the run, and the folder of its profiles. */
  profile?: ProfileSummary & { dir: string };
}

/** Per-turn figures (ms) of one bare run (see `src/dev/testing/bare-workflow.ts`). */
export interface BareFigures {
  turn: Spread;
  /** Scheduled → started, per task: the shared-queue activity is started eagerly, the others wait for a poll. */
  wait: { workflowTask: Spread; sharedActivity: Spread; secondActivity: Spread };
  /** CPU time (user + system, ms) per turn over the run: the dev server, this process (the worker and the client). */
  cpuPerTurnMs: { server: number; bench: number };
  wallMs: number;
}

/** Both measurements on one dev server. */
export interface ServerFigures {
  /** `'project'`: started as the project starts dev servers; `'server default'`: without the project's dynamic config. */
  setting: 'project' | 'server default';
  /** The dynamic config the project added (empty for the server default). */
  dynamicConfig: Record<string, string | number | boolean>;
  bare: BareFigures;
  agent: TurnFigures;
}

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;
const E = temporal.api.enums.v1.EventType;
const eventMs = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;

/** What one history says of its tasks: activities by type or queue, and how long each task waited for a worker. */
interface Tasks {
  /** Activity scheduled times, keyed by `key(activity)`. */
  scheduledAt: Record<string, number[]>;
  /** Schedule → complete, ms, keyed likewise. */
  span: Record<string, number[]>;
  /** Scheduled → started, ms, keyed likewise, and `workflowTask`. */
  wait: Record<string, number[]>;
}

function tasksOf(history: History, key: (type: string, taskQueue: string) => string): Tasks {
  const scheduled = new Map<string, { key: string; at: number }>();
  const out: Tasks = { scheduledAt: {}, span: {}, wait: { workflowTask: [] } };
  const push = (m: Record<string, number[]>, k: string, v: number): void => void (m[k] ??= []).push(v);
  for (const e of history.events ?? []) {
    const at = eventMs(e.eventTime);
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED) scheduled.set(String(e.eventId), { key: 'workflowTask', at });
    if (e.eventType === E.EVENT_TYPE_WORKFLOW_TASK_STARTED) {
      const s = scheduled.get(String(e.workflowTaskStartedEventAttributes?.scheduledEventId));
      if (s) push(out.wait, s.key, at - s.at);
    }
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      const a = e.activityTaskScheduledEventAttributes;
      const k = key(a?.activityType?.name ?? '', a?.taskQueue?.name ?? '');
      scheduled.set(String(e.eventId), { key: k, at });
      push(out.scheduledAt, k, at);
    }
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const s = scheduled.get(String(e.activityTaskStartedEventAttributes?.scheduledEventId));
      if (s) push(out.wait, s.key, at - s.at);
    }
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const s = scheduled.get(String(e.activityTaskCompletedEventAttributes?.scheduledEventId));
      if (s) push(out.span, s.key, at - s.at);
    }
  }
  return out;
}

/** Time between consecutive starts of a turn (ms): one fewer than the turns. */
const gaps = (starts: number[] = []): number[] => starts.slice(1).map((t, i) => t - starts[i]!);

/** A dev server to measure on: where it listens and its process, whose CPU time is read. */
interface MeasuredServer {
  address: string;
  pid: number;
}

/**
 * CPU time (user + system, ms) a process has used so far, from
 * `/proc/<pid>/stat` (fields 14 and 15, in USER_HZ = 100 ticks per second
 * on Linux), with that of its reaped children; NaN where /proc does not
 * tell. `'self'` reads this process.
 */
export function cpuTimeMs(pid: number | 'self'): number {
  try {
    const f = statFields(readFileSync(`/proc/${pid}/stat`, 'latin1'));
    // statFields starts at field 3 (state): field N is at N - 3.
    return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 10;
  } catch {
    return Number.NaN;
  }
}

/** CPU ms per turn between two readings. */
const perTurn = (before: number, after: number, turns: number): number => Math.round(((after - before) / turns) * 10) / 10;

let bareBundle: Promise<WorkflowBundleWithSourceMap> | undefined;

/**
 * Runs the bare workflow for `turns` turns on the server at `address`, with
 * a worker in this process (one Worker on the workflow's queue, one on the
 * second queue, one connection), and reads its history.
 */
export async function measureBare(server: MeasuredServer, turns: number): Promise<BareFigures> {
  const { address } = server;
  bareBundle ??= bundleWorkflowCode({ workflowsPath: require.resolve('../testing/bare-workflow'), logger: Runtime.instance().logger });
  const workflowBundle = await bareBundle;
  const sharedQueue = `bench-bare-${process.pid}`;
  const secondQueue = `${sharedQueue}-second`;
  const activities = { noop: async (): Promise<void> => {} };
  const native = await NativeConnection.connect({ address });
  const connection = await Connection.connect({ address });
  try {
    const shared = await Worker.create({ connection: native, taskQueue: sharedQueue, workflowBundle, activities });
    const second = await Worker.create({ connection: native, taskQueue: secondQueue, activities });
    const running = Promise.all([shared.run(), second.run()]);
    try {
      const client = new Client({ connection });
      const t0 = Date.now();
      const cpu0 = { server: cpuTimeMs(server.pid), bench: cpuTimeMs('self') };
      const handle = await client.workflow.start('bareTurns', {
        taskQueue: sharedQueue,
        workflowId: `bench-bare-${Date.now()}`,
        args: [turns, secondQueue],
      });
      await handle.result();
      const wallMs = Date.now() - t0;
      const cpuPerTurnMs = {
        server: perTurn(cpu0.server, cpuTimeMs(server.pid), turns),
        bench: perTurn(cpu0.bench, cpuTimeMs('self'), turns),
      };
      const t = tasksOf(await handle.fetchHistory(), (_type, queue) => (queue === secondQueue ? 'second' : 'shared'));
      return {
        turn: summarize(gaps(t.scheduledAt.shared)),
        wait: {
          workflowTask: summarize(t.wait.workflowTask ?? []),
          sharedActivity: summarize(t.wait.shared ?? []),
          secondActivity: summarize(t.wait.second ?? []),
        },
        cpuPerTurnMs,
        wallMs,
      };
    } finally {
      shared.shutdown();
      second.shutdown();
      await running;
    }
  } finally {
    await connection.close();
    await native.close();
  }
}

/**
 * Runs one agent run of `turns` instant scripted turns on the server at
 * `address`, on a worker process of its own; with `cpuProfDir`, that worker
 * runs under `node --cpu-prof` and its profiles are summarized.
 */
export async function measureAgent(server: MeasuredServer, turns: number, cpuProfDir?: string): Promise<TurnFigures> {
  const { address } = server;
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-'));
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < turns; i++)
    responses.push({ content: [{ type: 'tool_use', name: 'bash', input: { command: 'true' } }], stop_reason: 'tool_use' });
  responses.push({ content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' });
  const model = await startModelServer({ script: { responses } });
  const connection = await Connection.connect({ address });
  try {
    const worker = await spawnWorker({
      workerId: `bench-${process.pid}`,
      connection,
      env: scriptedWorkerEnv({ address, modelUrl: model.url, apiKey: 'bench', dataDir: dir, logLevel: 'ERROR' }),
      ...(cpuProfDir ? { execArgv: ['--cpu-prof', `--cpu-prof-dir=${cpuProfDir}`, '--cpu-prof-interval', '500'] } : {}),
    });
    let window = { fromUs: 0, toUs: 0 };
    let workerCpuMs = 0;
    let figures: TurnFigures;
    try {
      // Encrypted like every client of the product (the worker's keys: scriptedWorkerEnv); the bare floor above has no codec.
      const client = new Client({ ...codecClientOptions(), connection });
      const t0 = Date.now();
      const cpu0 = { worker: cpuTimeMs(worker.pid), server: cpuTimeMs(server.pid), bench: cpuTimeMs('self') };
      // The profiles' clock is the monotonic one of process.hrtime, in µs.
      const fromUs = Number(process.hrtime.bigint() / 1000n);
      const handle = await startAgentRun(client, { task: 'benchmark', approval: 'auto', maxTurns: turns + 2 }, `bench-turns-${Date.now()}`);
      await handle.result();
      window = { fromUs, toUs: Number(process.hrtime.bigint() / 1000n) };
      workerCpuMs = cpuTimeMs(worker.pid) - cpu0.worker;
      const wallMs = Date.now() - t0;
      const cpuPerTurnMs = {
        worker: perTurn(cpu0.worker, cpuTimeMs(worker.pid), turns),
        server: perTurn(cpu0.server, cpuTimeMs(server.pid), turns),
        bench: perTurn(cpu0.bench, cpuTimeMs('self'), turns),
      };
      const t = tasksOf(await handle.fetchHistory(), (type) => type);
      const turnMs = gaps(t.scheduledAt.callClaude);
      const overhead = turnMs.map((ms, i) => ms - (t.span.callClaude?.[i] ?? 0) - (t.span.runCommand?.[i] ?? 0));
      figures = {
        turn: summarize(turnMs),
        callClaude: summarize(t.span.callClaude ?? []),
        runCommand: summarize(t.span.runCommand ?? []),
        overhead: summarize(overhead),
        wait: {
          workflowTask: summarize(t.wait.workflowTask ?? []),
          callClaude: summarize(t.wait.callClaude ?? []),
          runCommand: summarize(t.wait.runCommand ?? []),
        },
        cpuPerTurnMs,
        wallMs,
      };
    } finally {
      await worker.stop();
    }
    // The profiles are written as the worker exits.
    if (cpuProfDir) figures.profile = { dir: cpuProfDir, ...summarizeProfiles(readProfiles(cpuProfDir), window, workerCpuMs, turns) };
    return figures;
  } finally {
    await model.close();
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Runs `fn` against a dev server of its own, headless, with its log in a
 * temporary folder; stops the server and removes the folder afterwards.
 */
async function onOwnDevServer<T>(
  options: Pick<DevServerOptions, 'serverDefaults' | 'dynamicConfig'>,
  fn: (server: MeasuredServer) => Promise<T>,
): Promise<T> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-bench-server-'));
  let server: DevServer | undefined;
  try {
    server = await startDevServerOnFreePort({ headless: true, logFile: path.join(dir, 'server.log'), ...options });
    return await fn({ address: server.address, pid: server.pid });
  } finally {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Starts a dev server of its own (as the project does, or with the server's
 * defaults), measures the bare floor then an agent run of `turns` turns on
 * it, and stops it.
 */
export async function measureServer(turns: number, setting: ServerFigures['setting'], cpuProfDir?: string): Promise<ServerFigures> {
  return onOwnDevServer({ serverDefaults: setting === 'server default' }, async (server) => {
    const bare = await measureBare(server, turns);
    const agent = await measureAgent(server, turns, cpuProfDir);
    return { setting, dynamicConfig: setting === 'project' ? { ...DEV_SERVER_DYNAMIC_CONFIG } : {}, bare, agent };
  });
}

/** The transfer-queue read limit {@link DEV_SERVER_DYNAMIC_CONFIG} lifts. */
const READ_LIMIT_KEY = 'history.transferProcessorMaxPollRPS';

/** The bare floor on a dev server of its own with the server's defaults but `history.transferProcessorMaxPollRPS` = `rps`. */
export async function measureBareAtReadLimit(
  turns: number,
  rps: number,
): Promise<{ rps: number; limitedTurnMs: number; bare: BareFigures }> {
  return onOwnDevServer({ serverDefaults: true, dynamicConfig: { [READ_LIMIT_KEY]: rps } }, async (server) =>
    // Three tasks of a bare turn go through the transfer queue: two workflow tasks and the second-queue activity.
    ({ rps, limitedTurnMs: Math.round((3000 / rps) * 10) / 10, bare: await measureBare(server, turns) }),
  );
}

async function main(): Promise<void> {
  const o = new Command('bench:turns')
    .option('--turns <n>', 'turns in each run', (v) => Number(v), 50)
    .option('--no-baseline', "skip the second dev server, the one with the server's default dynamic config")
    .option('--sweep <rps,...>', `also the bare floor on one dev server per ${READ_LIMIT_KEY} value`, (v) =>
      v.split(',').map((x) => {
        const n = Number(x);
        if (!Number.isInteger(n) || n < 1) throw new Error(`--sweep takes positive integers, not ${JSON.stringify(x)}`);
        return n;
      }),
    )
    .option('--cpu-prof <dir>', "profile the agent's worker (node --cpu-prof) into an empty or new folder, and print where its CPU went")
    .option('--json', 'print JSON')
    .parse(process.argv)
    .opts<{ turns: number; baseline: boolean; sweep?: number[]; cpuProf?: string; json?: boolean }>();
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const cpuProfDir = o.cpuProf ? path.resolve(o.cpuProf) : undefined;
  if (cpuProfDir) {
    mkdirSync(cpuProfDir, { recursive: true });
    // Profiles of an earlier run would be summarized with this one's.
    if (readdirSync(cpuProfDir).some((f) => f.endsWith('.cpuprofile')))
      throw new Error(`--cpu-prof ${o.cpuProf} already holds profiles: give an empty folder`);
  }
  const runs = [await measureServer(o.turns, 'project', cpuProfDir)];
  if (o.baseline) runs.push(await measureServer(o.turns, 'server default'));
  const sweep = [];
  for (const rps of o.sweep ?? []) sweep.push(await measureBareAtReadLimit(o.turns, rps));
  if (o.json) return void process.stdout.write(`${JSON.stringify({ turns: o.turns, runs, ...(o.sweep ? { sweep } : {}) }, null, 2)}\n`);
  // Colours only on a terminal: piped or redirected output stays plain text.
  const plain = !process.stdout.isTTY;
  const setting = Object.entries(DEV_SERVER_DYNAMIC_CONFIG)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const table = new Table({
    head: [`per turn (${o.turns} turns), ms`, ...runs.flatMap((r) => [`${r.setting} median`, 'p95'])],
    ...(plain ? { style: { head: [], border: [] } } : {}),
  });
  const row = (label: string, pick: (r: ServerFigures) => Spread): void =>
    void table.push([label, ...runs.flatMap((r) => [pick(r).median, pick(r).p95])]);
  row('bare turn', (r) => r.bare.turn);
  row('agent turn', (r) => r.agent.turn);
  row('  callClaude', (r) => r.agent.callClaude);
  row('  runCommand', (r) => r.agent.runCommand);
  row('  overhead', (r) => r.agent.overhead);
  row('wait: bare workflow task', (r) => r.bare.wait.workflowTask);
  row('wait: bare shared-queue activity', (r) => r.bare.wait.sharedActivity);
  row('wait: bare second-queue activity', (r) => r.bare.wait.secondActivity);
  row('wait: agent workflow task', (r) => r.agent.wait.workflowTask);
  row('wait: callClaude', (r) => r.agent.wait.callClaude);
  row('wait: runCommand', (r) => r.agent.wait.runCommand);
  const cpu = (label: string, pick: (r: ServerFigures) => number): void => void table.push([label, ...runs.flatMap((r) => [pick(r), ''])]);
  cpu('CPU per bare turn: dev server', (r) => r.bare.cpuPerTurnMs.server);
  cpu('CPU per bare turn: this process (worker)', (r) => r.bare.cpuPerTurnMs.bench);
  cpu('CPU per agent turn: worker', (r) => r.agent.cpuPerTurnMs.worker);
  cpu('CPU per agent turn: dev server', (r) => r.agent.cpuPerTurnMs.server);
  cpu('CPU per agent turn: this process (model server)', (r) => r.agent.cpuPerTurnMs.bench);
  const walls = runs.map((r) => `${r.setting} ${((r.bare.wallMs + r.agent.wallMs) / 1000).toFixed(1)} s`).join(', ');
  process.stdout.write(`${table.toString()}\nproject setting: ${setting}\nwall time (bare + agent): ${walls}\n`);
  const profile = runs[0]!.agent.profile;
  if (profile) {
    for (const [kind, list] of [
      ['self', profile.self],
      ['total', profile.total],
    ] as const) {
      const prof = new Table({
        head: [`worker CPU per agent turn: ${kind} ms`, 'share', 'function'],
        ...(plain ? { style: { head: [], border: [] } } : {}),
      });
      for (const f of list) prof.push([f.msPerTurn, `${(f.share * 100).toFixed(1)} %`, f.where]);
      process.stdout.write(`${prof.toString()}\n`);
    }
    process.stdout.write(`profiles in ${profile.dir} (sampled ${profile.sampledMs} ms of the run's threads)\n`);
  }
  if (sweep.length === 0) return;
  const swept = new Table({
    head: [READ_LIMIT_KEY, 'bare turn median', 'p95', 'wait: workflow task median', '3 / RPS'],
    ...(plain ? { style: { head: [], border: [] } } : {}),
  });
  for (const r of sweep) swept.push([r.rps, r.bare.turn.median, r.bare.turn.p95, r.bare.wait.workflowTask.median, r.limitedTurnMs]);
  process.stdout.write(`${swept.toString()}\n`);
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`bench:turns: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
