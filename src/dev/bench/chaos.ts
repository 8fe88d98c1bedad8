/**
 * `npm run chaos -- --runs N --kills K [--server-restarts R] [--workers W] [--json]`
 *
 * Starts N agent runs against the scripted model server. Each run's
 * commands append one unique line to a shared log and sleep a little. While
 * they run, worker processes are SIGKILLed K times at random moments (a
 * replacement starts at once; the victim is one that holds work, a session
 * or a running activity, when any does) and the Temporal dev server (SQLite) is
 * restarted R times, each fault at a random moment (up to `--gap` seconds,
 * default 6) after the runs the previous fault hit have recovered. After each
 * server fault every live worker must poll again (a worker whose frontend
 * went away comes back when it answers again). Once the runs the last fault
 * hit have made progress again, the scripted server answers each run's next
 * model call with the end (the steps left would only add time: 85 s of a
 * 128 s short form). Then it waits for every run and prints:
 *
 * - `runsStarted`, `runsCompleted`
 * - `commandsRunTwice`: log lines that appear more than once
 * - `completedStepsRequestedAgain`: model requests for a step whose answer
 *   was already recorded in the run's history
 * - `callsCutByKills`: model answers sent but never recorded (the calling
 *   worker died), i.e. requests beyond one per step
 * - `maxRecoverySeconds`: from a kill to the next progress (model request or
 *   command) of each run that had work on the killed worker
 * - `maxServerRecoverySeconds`: from a server fault to the next progress of
 *   each run open then; `maxWorkerReturnSeconds`: from the server answering
 *   again to the last worker polling again
 *
 * {@link runChaos} with {@link ChaosOptions.temporal} runs the same on a
 * Temporal service it is given (a cluster: `npm run test:cluster`), whose
 * server fault is the caller's, e.g. SIGKILLing one server process of two
 * and starting it again.
 *
 * Target (nothing lost under faults): N=20, K=5, R=1 → 20/20, 0, 0, max recovery ≤ 10 s
 * (2 × the session heartbeat timeout).
 *
 * With `AGENT_JOBS_CHAOS_DUMP=FILE`, the histories (every run of the
 * continue-as-new chain) of the run with the slowest recovery are written to
 * FILE as JSON `{slowest, histories}`, to see where the time went.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { Command } from 'commander';
import { freePort, startDevServer, type DevServer } from '../devserver';
import { startModelServer, type ModelServer, type ScriptEntry } from '../model-server';
import { startAgentRun } from '../../client';
import { NO_USAGE, statusQuery } from '../../contract';
import type { agentRun } from '../../workflows';
import type { AgentRunResult } from '../../contract';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from '../testing/worker-process';
import { decodedHistory } from '../testing/history-codec';
import { SHARED_TASK_QUEUE, sessionTaskQueue } from '../../config';

/** Options of {@link runChaos}. */
export interface ChaosOptions {
  /** Agent runs started at once. */
  runs: number;
  /** Worker SIGKILLs, at random moments. */
  kills: number;
  /** Dev server restarts. @default 0 */
  serverRestarts?: number;
  /** Worker processes kept alive. @default 3 */
  workers?: number;
  /**
   * Longest random pause, in seconds, before each fault (kill or restart).
   * Each fault also waits until the runs the previous one hit have made
   * progress again, so every recovery is measured from one fault, not from
   * two piled up. @default 6
   */
  gapSeconds?: number;
  /** Commands per run (each about 0.8 s with its model call). @default enough for the runs to outlast the faults */
  steps?: number;
  /** Progress lines on stderr. @default true */
  verbose?: boolean;
  /**
   * The Temporal service to run on and what a server fault is there.
   * @default a dev server of its own (SQLite in a temporary folder), whose fault is a restart
   */
  temporal?: ChaosTemporal;
}

/** A Temporal service {@link runChaos} runs on instead of a dev server of its own (left running). */
export interface ChaosTemporal {
  /** Frontend (`host:port`) of the experiment's own client: it must stay up through the faults. */
  clientAddress: string;
  namespace: string;
  /** Frontend of the `n`-th worker started (0-based, in start order); a replacement after a kill takes its victim's. */
  workerAddress(n: number): string;
  /**
   * One server fault (`serverRestarts` of them): takes a server process down
   * and brings it back, and resolves once it answers again.
   * @returns a line for the progress log, saying what it did
   */
  serverFault(): Promise<string>;
}

/** What a chaos run measured. */
export interface ChaosReport {
  runsStarted: number;
  runsCompleted: number;
  commandsRunTwice: number;
  completedStepsRequestedAgain: number;
  callsCutByKills: number;
  kills: number;
  serverRestarts: number;
  maxRecoverySeconds: number;
  recoverySeconds: number[];
  /** Largest of {@link serverRecoverySeconds}, 0 without server faults. */
  maxServerRecoverySeconds: number;
  /** Per server fault and run open then: seconds from the fault to the run's next progress. */
  serverRecoverySeconds: number[];
  /** Per server fault: seconds from the server answering again to the last live worker polling again. */
  workerReturnSeconds: number[];
  /** Largest of {@link workerReturnSeconds}, 0 without server faults. */
  maxWorkerReturnSeconds: number;
  wallSeconds: number;
  failures: string[];
}

/** The script every run follows: `steps` commands, each logging one unique line, then the end. */
function chaosScript(log: string, steps: number): { responses: ScriptEntry[] } {
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < steps; i++) {
    responses.push({
      content: [
        {
          type: 'tool_use',
          name: 'bash',
          input: { command: `echo "$(date +%s.%N) $AGENT_JOBS_WORKFLOW_ID step-${i}" >> ${log}; sleep 0.4` },
        },
      ],
      stop_reason: 'tool_use',
      delay_ms: 300,
    });
  }
  responses.push({ content: [{ type: 'text', text: 'chaos run done' }], stop_reason: 'end_turn', delay_ms: 300 });
  return { responses };
}

/**
 * Runs the chaos experiment on a dev server of its own (free port, SQLite
 * in a temporary folder) and returns the figures.
 */
export async function runChaos(options: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  const say = (line: string): void => {
    if (options.verbose !== false) process.stderr.write(`chaos: ${line}\n`);
  };
  const gapMs = (options.gapSeconds ?? 6) * 1000;
  const faults = options.kills + (options.serverRestarts ?? 0);
  // About 0.7 s a step; each fault takes its pause plus up to ~10 s of recovery.
  const steps = options.steps ?? Math.ceil((faults * (gapMs + 12_000)) / 700) + 10;
  const workerCount = Math.max(2, options.workers ?? 3);
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-chaos-'));
  const log = path.join(dir, 'commands.log');
  const serverOptions = {
    port: await freePort(),
    headless: true,
    dbFile: path.join(dir, 'temporal.db'),
    logFile: path.join(dir, 'server.log'),
  };
  let server: DevServer | null = options.temporal ? null : await startDevServer(serverOptions);
  const service: ChaosTemporal = options.temporal ?? {
    clientAddress: server!.address,
    namespace: 'default',
    workerAddress: () => server!.address,
    serverFault: async () => {
      await server!.stop();
      server = await startDevServer(serverOptions);
      return 'restarted the Temporal dev server';
    },
  };
  const model: ModelServer = await startModelServer({ script: chaosScript(log, steps), logFile: path.join(dir, 'model.jsonl') });
  const connection = await Connection.connect({ address: service.clientAddress });
  const client = new Client({ ...codecClientOptions(), connection, namespace: service.namespace });
  let workerSeq = 0;
  const workers: WorkerProcess[] = [];
  const frontendOf = new Map<WorkerProcess, string>();
  const newWorker = async (address = service.workerAddress(workerSeq)): Promise<WorkerProcess> => {
    const w = await spawnWorker({
      workerId: `chaos-${process.pid}-${++workerSeq}`,
      connection,
      namespace: service.namespace,
      env: scriptedWorkerEnv({
        address,
        namespace: service.namespace,
        modelUrl: model.url,
        apiKey: 'chaos-scripted-key',
        dataDir: dir,
        logLevel: 'ERROR',
      }),
    });
    workers.push(w);
    frontendOf.set(w, address);
    return w;
  };
  const failures: string[] = [];
  const killTimes: Array<{ at: number; affected: string[] }> = [];
  const serverFaults: Array<{ at: number; affected: string[] }> = [];
  const workerReturnSeconds: number[] = [];
  try {
    for (let i = 0; i < workerCount; i++) await newWorker();
    say(`${workerCount} workers up; starting ${options.runs} runs`);
    const handles: Array<WorkflowHandle<typeof agentRun>> = [];
    for (let i = 0; i < options.runs; i++) {
      const workflowId = `chaos-${started}-${i}`;
      handles.push(await startAgentRun(client, { task: `chaos run ${workflowId}`, approval: 'auto', maxTurns: steps + 5 }, workflowId));
    }

    // The faults in random order; each at a random moment once the runs the
    // previous fault hit have recovered.
    const kinds: Array<'kill' | 'restart'> = [
      ...Array<'kill'>(options.kills).fill('kill'),
      ...Array<'restart'>(options.serverRestarts ?? 0).fill('restart'),
    ];
    for (let i = kinds.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [kinds[i], kinds[j]] = [kinds[j]!, kinds[i]!];
    }
    const runOf = (body: unknown): string | undefined => {
      const first = (body as { messages?: Array<{ content?: unknown }> }).messages?.[0]?.content;
      return typeof first === 'string' ? first.replace(/^chaos run /, '') : undefined;
    };
    const progressedSince = (id: string, t: number): boolean =>
      model.requests().some((r) => Date.parse(r.time) > t && runOf(r.body) === id) ||
      (existsSync(log) &&
        readFileSync(log, 'utf8')
          .split('\n')
          .some((l) => l.split(' ')[1] === id && Number(l.split(' ')[0]) * 1000 > t));
    let lastFault: { at: number; affected: string[] } | null = null;
    const results = Promise.all(
      handles.map((h) =>
        h.result().catch((err: unknown): AgentRunResult => ({
          status: 'failed',
          turns: 0,
          usage: { ...NO_USAGE },
          error: String(err),
        })),
      ),
    );
    let finished = false;
    void results.then(() => (finished = true));
    for (const kind of kinds) {
      const recoveredBy = Date.now() + 60_000;
      while (lastFault && !finished && Date.now() < recoveredBy && !lastFault.affected.every((id) => progressedSince(id, lastFault!.at)))
        await sleep(200);
      await sleep(500 + Math.random() * gapMs);
      if (finished) break;
      if (kind === 'restart') {
        const open = await Promise.all(handles.map(async (h) => ((await h.describe()).status.name === 'RUNNING' ? h.workflowId : null)));
        lastFault = { at: Date.now(), affected: open.filter((id): id is string => id !== null) };
        serverFaults.push(lastFault);
        say(await service.serverFault());
        const back = Date.now();
        const live = workers.filter((w) => w.alive());
        const late = await waitForPollsSince(connection, service.namespace, live, back, 60_000);
        if (late.length > 0) failures.push(`workers that did not poll again within 60 s of the server answering: ${late.join(', ')}`);
        else workerReturnSeconds.push(Math.round((Date.now() - back) / 100) / 10);
        continue;
      }
      // A random worker among those holding work (a session or a running activity): killing an idle one tests nothing.
      const live = workers.filter((w) => w.alive());
      const holding = (await Promise.all(live.map(async (w) => ({ w, runs: await runsOnWorker(handles, w.workerId) })))).filter(
        (x) => x.runs.length > 0,
      );
      const pick =
        holding.length > 0
          ? holding[Math.floor(Math.random() * holding.length)]!
          : { w: live[Math.floor(Math.random() * live.length)]!, runs: [] };
      const victim = pick.w;
      const affected = pick.runs;
      lastFault = { at: Date.now(), affected };
      killTimes.push(lastFault);
      await victim.kill();
      say(`killed ${victim.workerId} (runs with work on it: ${affected.length})`);
      await newWorker(frontendOf.get(victim));
    }
    // Every fault is done: once the runs the last one hit have moved on (their recovery), the runs end at their next call.
    const last = lastFault;
    const recoveredBy = Date.now() + 60_000;
    while (last && !finished && Date.now() < recoveredBy && !last.affected.every((id) => progressedSince(id, last.at))) await sleep(200);
    model.answerAllWith({ content: [{ type: 'text', text: 'chaos run done' }], stop_reason: 'end_turn' });
    const outcomes = await Promise.race([results, sleep(600_000, null, { ref: false })]);
    if (!outcomes) throw new Error('runs did not finish within 10 minutes');
    outcomes.forEach((r, i) => {
      if (r.status !== 'completed') failures.push(`${handles[i]!.workflowId}: ${r.status} ${r.error ?? ''}`);
    });

    // Figures.
    const lines = existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : [];
    const keys = lines.map((l) => l.split(' ').slice(1).join(' '));
    const commandsRunTwice = keys.length - new Set(keys).size;
    const requests = model.requests().filter((r) => r.step !== null);
    let completedStepsRequestedAgain = 0;
    let callsCutByKills = 0;
    for (const h of handles) {
      const completions = await claudeCompletions(h);
      const mine = requests.filter((r) => runOf(r.body) === h.workflowId);
      const byStep = new Map<number, number>();
      for (const r of mine) byStep.set(r.step!, (byStep.get(r.step!) ?? 0) + 1);
      for (const count of byStep.values()) callsCutByKills += Math.max(0, count - 1);
      for (const [step, completedAt] of completions) {
        completedStepsRequestedAgain += mine.filter((r) => r.step === step && Date.parse(r.time) > completedAt).length;
      }
    }
    const progressTimes = (id: string): number[] => [
      ...requests.filter((r) => runOf(r.body) === id).map((r) => Date.parse(r.time)),
      ...lines.filter((l) => l.split(' ')[1] === id).map((l) => Number(l.split(' ')[0]) * 1000),
    ];
    const recoverySeconds: number[] = [];
    let slowest: { workflowId: string; seconds: number; killedAt: string } | null = null;
    const recoveries = (fault: { at: number; affected: string[] }): Array<{ id: string; seconds: number }> =>
      fault.affected.flatMap((id) => {
        const next = progressTimes(id)
          .filter((t) => t > fault.at)
          .sort((a, b) => a - b)[0];
        return next === undefined ? [] : [{ id, seconds: Math.round((next - fault.at) / 100) / 10 }];
      });
    for (const kill of killTimes) {
      for (const { id, seconds } of recoveries(kill)) {
        recoverySeconds.push(seconds);
        if (!slowest || seconds > slowest.seconds) slowest = { workflowId: id, seconds, killedAt: new Date(kill.at).toISOString() };
      }
    }
    const serverRecoverySeconds = serverFaults.flatMap((f) => recoveries(f).map((r) => r.seconds));
    if (slowest && process.env.AGENT_JOBS_CHAOS_DUMP) {
      // Every run of the chain: the kill may predate a continue-as-new.
      const histories: unknown[] = [];
      for await (const run of client.workflow.list({ query: `WorkflowId = '${slowest.workflowId}'` })) {
        histories.push(
          JSON.parse(historyToJSON(await decodedHistory(await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory()))),
        );
      }
      writeFileSync(process.env.AGENT_JOBS_CHAOS_DUMP, JSON.stringify({ slowest, histories }));
    }
    return {
      runsStarted: handles.length,
      runsCompleted: outcomes.filter((r) => r.status === 'completed').length,
      commandsRunTwice,
      completedStepsRequestedAgain,
      callsCutByKills,
      kills: killTimes.length,
      serverRestarts: options.serverRestarts ?? 0,
      maxRecoverySeconds: recoverySeconds.length > 0 ? Math.max(...recoverySeconds) : 0,
      recoverySeconds,
      maxServerRecoverySeconds: serverRecoverySeconds.length > 0 ? Math.max(...serverRecoverySeconds) : 0,
      serverRecoverySeconds,
      workerReturnSeconds,
      maxWorkerReturnSeconds: workerReturnSeconds.length > 0 ? Math.max(...workerReturnSeconds) : 0,
      wallSeconds: Math.round((Date.now() - started) / 100) / 10,
      failures,
    };
  } finally {
    await Promise.all(workers.map((w) => w.stop()));
    await model.close();
    await connection.close();
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Workflow ids of the open runs whose session or in-flight activity is on `workerId`. */
async function runsOnWorker(handles: Array<WorkflowHandle<typeof agentRun>>, workerId: string): Promise<string[]> {
  const affected: string[] = [];
  await Promise.all(
    handles.map(async (h) => {
      try {
        const d = await h.describe();
        if (d.status.name !== 'RUNNING') return;
        const onWorker = (d.raw.pendingActivities ?? []).some((a) => a.lastWorkerIdentity === `${workerId}@agent-jobs`);
        const status = await h.query(statusQuery);
        if (onWorker || status.session?.workerId === workerId) affected.push(h.workflowId);
      } catch {
        /* the run is between states; not counted */
      }
    }),
  );
  return affected;
}

/**
 * Waits until each worker has polled one of its queues (its session queue,
 * the shared workflow or activity queue) at or after `since` (ms, this
 * machine's clock, which the local server shares).
 * @returns the ids of the workers that did not within `timeoutMs`
 */
async function waitForPollsSince(
  connection: Connection,
  namespace: string,
  workers: WorkerProcess[],
  since: number,
  timeoutMs: number,
): Promise<string[]> {
  const { TaskQueueKind, TaskQueueType } = temporal.api.enums.v1;
  const lastPoll = async (queue: string, type: temporal.api.enums.v1.TaskQueueType): Promise<Map<string, number>> => {
    const r = await connection.workflowService
      .describeTaskQueue({ namespace, taskQueue: { name: queue, kind: TaskQueueKind.TASK_QUEUE_KIND_NORMAL }, taskQueueType: type })
      .catch(() => null);
    const out = new Map<string, number>();
    for (const p of r?.pollers ?? [])
      out.set(p.identity ?? '', Number(p.lastAccessTime?.seconds ?? 0) * 1000 + (p.lastAccessTime?.nanos ?? 0) / 1e6);
    return out;
  };
  const deadline = Date.now() + timeoutMs;
  let waiting = workers.filter((w) => w.alive());
  while (waiting.length > 0 && Date.now() < deadline) {
    const shared = [
      await lastPoll(SHARED_TASK_QUEUE, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
      await lastPoll(SHARED_TASK_QUEUE, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
    ];
    const next: WorkerProcess[] = [];
    for (const w of waiting) {
      const identity = `${w.workerId}@agent-jobs`;
      const polls = [...shared, await lastPoll(sessionTaskQueue(w.workerId), TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY)];
      if (w.alive() && !polls.some((m) => (m.get(identity) ?? 0) >= since)) next.push(w);
    }
    waiting = next;
    if (waiting.length > 0) await sleep(500);
  }
  return waiting.map((w) => w.workerId);
}

/** For each model step (turn - 1) whose `callClaude` completed, the completion time in ms. */
async function claudeCompletions(handle: WorkflowHandle): Promise<Map<number, number>> {
  const history = await decodedHistory(await handle.fetchHistory());
  const scheduled = new Map<string, number>();
  const out = new Map<number, number>();
  const EventType = temporal.api.enums.v1.EventType;
  for (const e of history.events ?? []) {
    if (
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === 'callClaude'
    ) {
      const payload = e.activityTaskScheduledEventAttributes.input?.payloads?.[0]?.data;
      const input = payload ? (JSON.parse(Buffer.from(payload).toString('utf8')) as { turn: number }) : null;
      if (input) scheduled.set(String(e.eventId), input.turn);
    }
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const turn = scheduled.get(String(e.activityTaskCompletedEventAttributes?.scheduledEventId));
      const seconds = Number(e.eventTime?.seconds ?? 0);
      const nanos = e.eventTime?.nanos ?? 0;
      if (turn !== undefined) out.set(turn - 1, seconds * 1000 + nanos / 1e6);
    }
  }
  return out;
}

/** Whether nothing was lost: every run completed, no command ran twice, no recorded step was asked again, no other failure. */
export function chaosPassed(r: ChaosReport): boolean {
  return r.runsCompleted === r.runsStarted && r.commandsRunTwice === 0 && r.completedStepsRequestedAgain === 0 && r.failures.length === 0;
}

async function main(): Promise<void> {
  const program = new Command('chaos')
    .option('--runs <n>', 'agent runs', (v) => Number(v), 20)
    .option('--kills <n>', 'worker SIGKILLs', (v) => Number(v), 5)
    .option('--server-restarts <n>', 'Temporal server restarts', (v) => Number(v), 0)
    .option('--workers <n>', 'workers kept alive', (v) => Number(v), 3)
    .option('--gap <s>', 'longest random pause before each fault, after the previous one was recovered from', (v) => Number(v), 6)
    .option('--steps <n>', 'commands per run (default: enough to outlast the faults)', (v) => Number(v))
    .option('--json', 'print JSON only')
    .parse(process.argv);
  const o = program.opts<{
    runs: number;
    kills: number;
    serverRestarts: number;
    workers: number;
    gap: number;
    steps?: number;
    json?: boolean;
  }>();
  const report = await runChaos({
    runs: o.runs,
    kills: o.kills,
    serverRestarts: o.serverRestarts,
    workers: o.workers,
    gapSeconds: o.gap,
    ...(o.steps !== undefined ? { steps: o.steps } : {}),
    verbose: !o.json,
  });
  if (o.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  else {
    const lists = ['recoverySeconds', 'serverRecoverySeconds', 'workerReturnSeconds', 'failures'];
    const rows = Object.entries(report).filter(([k]) => !lists.includes(k));
    for (const [k, v] of rows) process.stdout.write(`${k.padEnd(30)} ${String(v)}\n`);
    for (const k of ['recoverySeconds', 'serverRecoverySeconds', 'workerReturnSeconds'] as const)
      process.stdout.write(`${k.padEnd(30)} ${report[k].join(', ') || '-'}\n`);
    for (const f of report.failures) process.stdout.write(`failed: ${f}\n`);
  }
  if (!chaosPassed(report)) process.exitCode = 1;
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`chaos: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exitCode = 1;
  });
}
