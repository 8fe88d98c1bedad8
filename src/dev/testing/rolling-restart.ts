/**
 * A rolling restart under load, as a deploy does it: runs of several turns
 * (each a ~1 s command) go on while every worker is replaced one by one
 * (start a new one, SIGTERM the old one, wait until it is gone); once the last
 * old worker is gone, the commands still to come skip their sleep (a `go` file
 * in each workspace), since what is checked is what the restarts did. Checks that
 * every run completes, that no command was killed mid-way without Claude
 * being told (or run twice), that no process of any session is left, and
 * that each worker was gone within grace + force.
 *
 * Runs against any Temporal server given by address: the integration test
 * passes its dev server; `npm run rolling-restart` takes `TEMPORAL_ADDRESS`
 * (a cluster, e.g. on PostgreSQL) and prints the report as JSON.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { SHUTDOWN_FORCE_TIME_MS } from '../../config';
import { workspaceFolderName } from '../../contract/subagent';
import { statusQuery, type Message, type ToolResultBlock } from '../../contract';
import { startModelServer, type ScriptFile } from '../model-server';
import { startAgentRun } from '../../client';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from './worker-process';

/** What {@link rollingRestart} runs. */
export interface RollingRestartOptions {
  /** The Temporal frontend, `host:port`. */
  address: string;
  /** @default 'default' */
  namespace?: string;
  /** Agent runs started at once. @default 8 */
  runs?: number;
  /**
   * Commands per run (each a model turn): enough that the runs outlast the restarts (each waits for a new worker to poll).
   * Each sleeps ~1 s until the last old worker is gone, then none. @default 25
   */
  turns?: number;
  /** Workers before the restart; each is replaced once, one at a time. @default 3 */
  workers?: number;
  /**
   * `AGENT_JOBS_MAX_SESSIONS` of every worker: small enough that the runs
   * spread over all of them (a run's session opens on the worker that runs
   * its workflow task, so otherwise one worker can take them all).
   * @default runs / workers, rounded up
   */
  maxSessionsPerWorker?: number;
  /** `AGENT_JOBS_SHUTDOWN_GRACE` of every worker, in ms. @default 30000 */
  graceMs?: number;
  /** Called with a line of progress (for people). @default none */
  progress?: (line: string) => void;
}

/** How one old worker went away. */
export interface WorkerRestart {
  workerId: string;
  /** From its SIGTERM until the process was gone, in seconds. */
  drainSeconds: number;
  exitCode: number | null;
  /** Its first log line of the drain (`draining (SIGTERM): N commands running, …`), if it logged one. */
  drainLine: string | null;
}

/** What {@link rollingRestart} saw. */
export interface RollingRestartReport {
  runs: number;
  completed: number;
  /** Runs by final status (`completed`, or what else they ended with). */
  statuses: Record<string, number>;
  /** Commands the audit log recorded. */
  commands: number;
  /** (run, command) pairs the audit log recorded more than once: must be 0. */
  commandsRunTwice: number;
  /** `tool_result`s Claude got with the command's own end marker: it ran to its end. */
  commandsCompleted: number;
  /** `tool_result`s saying the command was killed when a shutdown grace ran out. */
  commandsKilledReported: number;
  /** `tool_result`s saying the bash session was lost (a worker that did not drain). */
  commandsLostReported: number;
  /** `tool_result`s with neither the end marker nor a note saying why: must be 0. */
  commandsUnreported: number;
  /** `tool_result`s that told Claude its session moved off a worker that was shut down (after or before the command). */
  movedNotices: number;
  restarts: WorkerRestart[];
  maxDrainSeconds: number;
  /** Grace + force, in seconds: each worker must be gone within it. */
  boundSeconds: number;
  /** Processes of the experiment's commands still alive at the end (pids): must be none. */
  orphans: string[];
  wallSeconds: number;
  /** Everything that broke a guarantee, in words; empty when all held. */
  problems: string[];
}

/** `promise`, or null once `ms` passed (the timer is cleared either way, so it keeps no process alive). */
async function within<T>(promise: Promise<T>, ms: number): Promise<T | null> {
  const timer = new AbortController();
  try {
    return await Promise.race([promise, sleep(ms, null, { signal: timer.signal })]);
  } finally {
    timer.abort();
  }
}

/** Pids of live processes whose command line matches `pattern` (pgrep -f). */
function processesMatching(pattern: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** Text of a `tool_result`'s content. */
function resultText(r: ToolResultBlock): string {
  return typeof r.content === 'string' ? r.content : JSON.stringify(r.content);
}

/**
 * Runs the experiment and reports; throws only when it cannot run at all
 * (no server, no worker starts). Needs `npm run build` (the workers are
 * `dist/worker.js`).
 */
export async function rollingRestart(o: RollingRestartOptions): Promise<RollingRestartReport> {
  const runs = o.runs ?? 8;
  const turns = o.turns ?? 25;
  const workerCount = o.workers ?? 3;
  const graceMs = o.graceMs ?? 30_000;
  const cap = o.maxSessionsPerWorker ?? Math.ceil(runs / workerCount);
  const namespace = o.namespace ?? 'default';
  const say = o.progress ?? (() => undefined);
  // A tag in every command's sleep, so its processes can be found (and only its).
  const tag = String(100 + Math.floor(Math.random() * 900));
  const sleepArg = `0.9${tag}`;
  const script: ScriptFile = {
    responses: [
      ...Array.from({ length: turns }, (_, k) => ({
        content: [
          {
            type: 'tool_use' as const,
            id: `toolu_${k}`,
            name: 'bash',
            // The sleep keeps commands running through each restart; a run's `go` file ends it once they are done.
            input: { command: `echo rr-${k}-start; [ -e go ] || sleep ${sleepArg}; echo rr-${k}-end` },
          },
        ],
        stop_reason: 'tool_use' as const,
      })),
      { content: [{ type: 'text' as const, text: 'done' }], stop_reason: 'end_turn' as const },
    ],
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-rolling-'));
  const model = await startModelServer({ script });
  const connection = await Connection.connect({ address: o.address });
  const client = new Client({ ...codecClientOptions(), connection, namespace });
  const workers: WorkerProcess[] = [];
  let counter = 0;
  const startOne = async (): Promise<WorkerProcess> => {
    const w = await spawnWorker({
      workerId: `rolling-${process.pid}-${tag}-${++counter}`,
      connection,
      namespace,
      env: {
        ...scriptedWorkerEnv({ address: o.address, modelUrl: model.url, apiKey: 'scripted', dataDir: dir, logLevel: 'INFO' }),
        TEMPORAL_NAMESPACE: namespace,
        AGENT_JOBS_SHUTDOWN_GRACE: `${graceMs}ms`,
        AGENT_JOBS_MAX_SESSIONS: String(cap),
      },
    });
    workers.push(w);
    return w;
  };
  const started = Date.now();
  try {
    for (let i = 0; i < workerCount; i++) await startOne();
    const old = [...workers];
    say(`${workerCount} workers up; starting ${runs} runs of ${turns} commands`);
    const handles = await Promise.all(
      Array.from({ length: runs }, (_, i) =>
        startAgentRun(client, { task: `rolling restart run ${i} (${tag})`, approval: 'auto' }, `rolling-${tag}-${i}`),
      ),
    );
    const results = handles.map((h) =>
      h.result().then(
        (r) => r.status,
        (err: unknown) => `failed: ${String(err)}`,
      ),
    );
    const audit = path.join(dir, 'audit.jsonl');
    const auditLines = (): Array<{ runId?: string; command: string }> =>
      existsSync(audit)
        ? readFileSync(audit, 'utf8')
            .split('\n')
            .filter(Boolean)
            .map((l) => JSON.parse(l) as { runId?: string; command: string })
        : [];
    // Every run is under way (a command done each) before the first restart.
    const deadline = Date.now() + 120_000;
    while (new Set(auditLines().map((l) => l.runId)).size < runs && Date.now() < deadline) await sleep(200);

    say(`every run under way`);
    const restarts: WorkerRestart[] = [];
    const sessionsOn = async (w: WorkerProcess): Promise<number> => {
      const views = await Promise.all(handles.map((h) => h.query(statusQuery).catch(() => null)));
      return views.filter((v) => v?.session?.workerId === w.workerId).length;
    };
    while (old.length > 0) {
      // The old worker holding the most sessions now goes next.
      const held = await Promise.all(old.map((w) => sessionsOn(w)));
      const w = old.splice(held.indexOf(Math.max(...held)), 1)[0]!;
      await startOne();
      const at = Date.now();
      w.signal('SIGTERM');
      const exit = await within(w.exited, graceMs + SHUTDOWN_FORCE_TIME_MS + 10_000);
      if (exit === null) await w.kill();
      const drainSeconds = ((exit?.at ?? Date.now()) - at) / 1000;
      const drainLine = /draining \(SIGTERM\)[^\n]*/.exec(w.output())?.[0] ?? null;
      restarts.push({ workerId: w.workerId, drainSeconds, exitCode: exit?.code ?? null, drainLine });
      say(`worker ${w.workerId} gone ${drainSeconds.toFixed(2)} s after SIGTERM (${drainLine ?? 'no drain line'})`);
    }
    // Every worker was replaced: the commands still to come have nothing left to show, so they skip their sleep.
    for (const h of handles) {
      const workspace = path.join(dir, 'workspaces', workspaceFolderName(h.workflowId));
      if (existsSync(workspace)) writeFileSync(path.join(workspace, 'go'), '');
    }
    const statuses = await within(Promise.all(results), 300_000);
    for (const w of workers.filter((x) => x.alive())) await w.stop(graceMs + SHUTDOWN_FORCE_TIME_MS);
    const orphans = processesMatching(`sleep ${sleepArg}`);

    // What Claude was told about each command: the last request of each run holds its whole conversation.
    const lastOfRun = new Map<number, Message[]>();
    for (const r of model.requests()) {
      if (r.path !== '/v1/messages' || r.response.status !== 200) continue;
      const messages = (r.body as { messages: Message[] }).messages;
      const m = new RegExp(`rolling restart run (\\d+) \\(${tag}\\)`).exec(JSON.stringify(messages[0]));
      if (m) lastOfRun.set(Number(m[1]), messages);
    }
    let commandsCompleted = 0;
    let commandsKilledReported = 0;
    let commandsLostReported = 0;
    let commandsUnreported = 0;
    let movedNotices = 0;
    for (const messages of lastOfRun.values()) {
      for (const message of messages) {
        if (message.role !== 'user' || typeof message.content === 'string') continue;
        for (const block of message.content) {
          if (block.type !== 'tool_result') continue;
          const result = block as ToolResultBlock;
          const text = resultText(result);
          const k = /^toolu_(\d+)$/.exec(result.tool_use_id)?.[1];
          if (/its worker was shut down/.test(text)) movedNotices++;
          if (k !== undefined && text.includes(`rr-${k}-end`)) commandsCompleted++;
          else if (/shutdown grace of .* ran out/.test(text)) commandsKilledReported++;
          else if (/bash session was lost/.test(text)) commandsLostReported++;
          else commandsUnreported++;
        }
      }
    }
    const seen = new Map<string, number>();
    for (const l of auditLines()) seen.set(`${l.runId}\n${l.command}`, (seen.get(`${l.runId}\n${l.command}`) ?? 0) + 1);
    const byStatus: Record<string, number> = {};
    for (const s of statuses ?? []) byStatus[s] = (byStatus[s] ?? 0) + 1;
    const boundSeconds = (graceMs + SHUTDOWN_FORCE_TIME_MS) / 1000;
    const report: RollingRestartReport = {
      runs,
      completed: byStatus.completed ?? 0,
      statuses: byStatus,
      commands: auditLines().length,
      commandsRunTwice: [...seen.values()].filter((n) => n > 1).length,
      commandsCompleted,
      commandsKilledReported,
      commandsLostReported,
      commandsUnreported,
      movedNotices,
      restarts,
      maxDrainSeconds: Math.max(0, ...restarts.map((r) => r.drainSeconds)),
      boundSeconds,
      orphans,
      wallSeconds: (Date.now() - started) / 1000,
      problems: [],
    };
    const p = report.problems;
    if (statuses === null) p.push('runs did not end within 300 s');
    if (report.completed !== runs) p.push(`${runs - report.completed} of ${runs} runs did not complete: ${JSON.stringify(byStatus)}`);
    if (report.commandsRunTwice > 0) p.push(`${report.commandsRunTwice} commands ran twice`);
    if (commandsUnreported > 0) p.push(`${commandsUnreported} commands ended without their output or a note saying why`);
    if (commandsLostReported > 0) p.push(`${commandsLostReported} commands were lost with a worker instead of drained`);
    if (orphans.length > 0) p.push(`processes left: ${orphans.join(', ')}`);
    for (const r of restarts) {
      if (r.drainSeconds > boundSeconds) p.push(`worker ${r.workerId} took ${r.drainSeconds} s to go (bound ${boundSeconds} s)`);
      if (r.exitCode !== 0) p.push(`worker ${r.workerId} exited with ${r.exitCode}`);
      if (r.drainLine === null) p.push(`worker ${r.workerId} logged no drain`);
    }
    return report;
  } finally {
    for (const w of workers) if (w.alive()) await w.kill();
    await model.close();
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  // `npm run rolling-restart [-- --json]`: against TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE).
  const json = process.argv.includes('--json');
  rollingRestart({
    address: process.env.TEMPORAL_ADDRESS ?? 'localhost:7233',
    namespace: process.env.TEMPORAL_NAMESPACE ?? 'default',
    progress: json ? undefined : (line) => console.log(line),
  }).then(
    (report) => {
      console.log(json ? JSON.stringify(report) : JSON.stringify(report, null, 2));
      process.exit(report.problems.length === 0 ? 0 : 1);
    },
    (err: unknown) => {
      console.error(`rolling-restart: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
