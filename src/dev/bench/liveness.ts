/**
 * `npm run bench:liveness -- [--runs N] [--steps S] [--kills K] [--no-load] [--json]`
 *
 * A slow worker is not a lost one, measured under load.
 * On a dev server of its own, with 2 worker processes, it starts N runs
 * (approval `always`: every command waits for a human, and the bench
 * approves each as soon as it is pending), each S commands that append one
 * line to a file in the run's workspace. Meanwhile load processes keep
 * every core busy (`yes > /dev/null`, one per core) and the disk too (a
 * `dd ... conv=fsync` loop to a temporary file); they are killed at the
 * end. Once about a third of the commands ran it SIGKILLs the worker that
 * holds the most sessions, K times (a replacement starts at once). Prints:
 *
 * - `falseLosses`: results that say the bash session was lost in a run whose
 *   session's worker was not killed (goal 0)
 * - `realLosses`, `recoverySeconds`, `maxRecoverySeconds`: for each run
 *   whose session's worker was killed, from the kill (or the approval of
 *   the lost command, when that came later: it waited for a person until
 *   then) to the model request that tells Claude (goal ≤ 10 s)
 * - `commandsRunTwice`, `approvedNeverRan`: over the workspaces' files
 *   (an approved command that never ran and was not reported lost)
 * - `slowWorkerWaits`: how often a run waited for a worker that was slow
 *   (a liveness check that found it alive)
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { Command, InvalidArgumentError } from 'commander';
import { workspaceFolderName } from '../../activities/session';
import { approveSignal, statusQuery, type AgentRunResult, type Message, type ToolResultBlock } from '../../contract';
import { startDevServerOnFreePort } from '../devserver';
import { startModelServer, type ScriptEntry } from '../model-server';
import { startAgentRun } from '../../client';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from '../testing/worker-process';
import type { agentRun } from '../../workflows';

/** Options of {@link runLivenessBench}. */
export interface LivenessBenchOptions {
  /** Runs started at once. @default 20 */
  runs?: number;
  /** Commands per run. @default 6 */
  steps?: number;
  /** Worker SIGKILLs (each of the worker holding the most sessions). @default 1 */
  kills?: number;
  /** Load every core and the disk while the runs go. @default true */
  load?: boolean;
  /** Progress lines on stderr. @default true */
  verbose?: boolean;
  /** Runs still open this long after the start are terminated and counted as failures (with their last workflow task failure). @default 600 s */
  deadlineSeconds?: number;
}

/** What {@link runLivenessBench} measured; times in seconds. */
export interface LivenessReport {
  runs: number;
  steps: number;
  completed: number;
  failures: string[];
  /** Load processes that ran (cores + 1 disk writer; 0 without load). */
  loadProcesses: number;
  kills: number;
  /** Lost-session results in runs whose worker was not killed (or beyond the one each kill explains). */
  falseLosses: number;
  /** The false ones, `run: text`. */
  falseLossTexts: string[];
  /** Lost-session results explained by a kill. */
  realLosses: number;
  /** Per run hit by a kill: kill → the model request carrying its lost result. */
  recoverySeconds: number[];
  maxRecoverySeconds: number | null;
  /** Lines (run, step) found more than once in the workspaces. */
  commandsRunTwice: number;
  /** Approved commands whose line is missing and whose result is not a loss. */
  approvedNeverRan: number;
  /** `sessionWorkerLiveness` checks over all runs, and those that found the worker alive (the run waited instead of giving up). */
  livenessChecks: number;
  slowWorkerWaits: number;
  seconds: number;
}

const LOST = /bash session was lost/;

/** Each step appends `step-<i>` to steps.txt in the run's workspace, after a short sleep (so a kill can land mid-command). */
function script(steps: number): ScriptEntry[] {
  const entries: ScriptEntry[] = [];
  for (let i = 1; i <= steps; i++)
    entries.push({
      content: [{ type: 'tool_use', id: `toolu_step_${i}`, name: 'bash', input: { command: `sleep 0.3; echo step-${i} >> steps.txt` } }],
      stop_reason: 'tool_use',
    });
  entries.push({ content: [{ type: 'text', text: 'all steps done' }], stop_reason: 'end_turn' });
  return entries;
}

/** Starts `yes > /dev/null` per core and a `dd` writer loop; returns them to kill (process groups). */
function startLoad(dir: string): ChildProcess[] {
  const procs: ChildProcess[] = [];
  for (let i = 0; i < cpus().length; i++) procs.push(spawn('sh', ['-c', 'exec yes > /dev/null'], { detached: true, stdio: 'ignore' }));
  const file = path.join(dir, 'disk-load.bin');
  procs.push(
    spawn('sh', ['-c', `while :; do dd if=/dev/zero of='${file}' bs=1M count=128 conv=fsync 2>/dev/null; rm -f '${file}'; done`], {
      detached: true,
      stdio: 'ignore',
    }),
  );
  return procs;
}

function stopLoad(procs: ChildProcess[]): void {
  for (const p of procs) {
    try {
      process.kill(-p.pid!, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/** The tool_result blocks of a request body's last message, with the run's task (its first message). */
function resultsOf(body: unknown): { task: string; results: ToolResultBlock[] } | null {
  const messages = (body as { messages?: Message[] } | null)?.messages;
  if (!messages || messages.length < 2) return null;
  const first = messages[0]!.content;
  const task = typeof first === 'string' ? first : first.map((b) => ('text' in b ? b.text : '')).join('');
  const last = messages[messages.length - 1]!.content;
  return { task, results: typeof last === 'string' ? [] : last.filter((b): b is ToolResultBlock => b.type === 'tool_result') };
}

function text(r: ToolResultBlock): string {
  return typeof r.content === 'string' ? r.content : JSON.stringify(r.content);
}

/** Runs the bench (see the module comment). */
export async function runLivenessBench(options: LivenessBenchOptions = {}): Promise<LivenessReport> {
  const runs = options.runs ?? 20;
  const steps = options.steps ?? 6;
  const kills = options.kills ?? 1;
  const say = (line: string): void => {
    if (options.verbose ?? true) console.error(`[liveness] ${line}`);
  };
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-liveness-'));
  const load = options.load === false ? [] : startLoad(dir);
  // Killed (Ctrl-C, SIGTERM), the bench still stops its load processes.
  const onSignal = (): void => {
    stopLoad(load);
    process.exit(130);
  };
  process.once('SIGINT', onSignal).once('SIGTERM', onSignal);
  const server = await startDevServerOnFreePort({ headless: true, logFile: path.join(dir, 'server.log') });
  const model = await startModelServer({ script: { responses: script(steps) }, logFile: path.join(dir, 'model.jsonl') });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ ...codecClientOptions(), connection });
  const workers: WorkerProcess[] = [];
  let n = 0;
  const startWorker = async (): Promise<WorkerProcess> => {
    const w = await spawnWorker({
      workerId: `liveness-${process.pid}-${++n}`,
      connection,
      env: scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'liveness-key', dataDir: dir }),
    });
    workers.push(w);
    return w;
  };
  try {
    say(`${load.length} load processes; starting 2 workers`);
    await startWorker();
    await startWorker();
    const started = Date.now();
    const handles: Array<WorkflowHandle<typeof agentRun>> = [];
    for (let i = 0; i < runs; i++)
      handles.push(await startAgentRun(client, { task: `liveness bench run ${i}`, approval: 'always' }, `liveness-${process.pid}-${i}`));
    const results = new Map<string, AgentRunResult | Error>();
    for (const h of handles)
      void h.result().then(
        (r) => results.set(h.workflowId, r),
        (e: Error) => results.set(h.workflowId, e),
      );

    // Approve every pending command as soon as it is seen; kill at a third of the commands.
    const approved = new Map<string, Set<string>>(handles.map((h) => [h.workflowId, new Set<string>()]));
    const sentAt = new Map<string, number>();
    const killAt = Math.ceil((runs * steps) / 3);
    const killsDone: Array<{ at: number; workerId: string; runs: Set<string> }> = [];
    // Each run has its own approver, so a slow query (a run cached on a killed worker) holds up no other run.
    const approver = async (h: WorkflowHandle<typeof agentRun>): Promise<void> => {
      const seen = approved.get(h.workflowId)!;
      while (!results.has(h.workflowId)) {
        const pending = (await h.query(statusQuery).catch(() => null))?.pendingApproval;
        // Again when it is still pending 5 s later: an approval sent on what a worker showed before it died is
        // (rightly, C14) ignored when it reaches the run before the replayed request; a person would approve again.
        const key = `${h.workflowId}/${pending?.toolUseId}`;
        if (pending && (!seen.has(pending.toolUseId) || Date.now() - (sentAt.get(key) ?? 0) > 5_000)) {
          seen.add(pending.toolUseId);
          sentAt.set(key, Date.now());
          await h
            // The hash, run and wait of what waits: an encrypted run ignores a signal without them.
            .signal(approveSignal, {
              toolUseId: pending.toolUseId,
              approved: true,
              by: 'bench',
              commandSha256: pending.commandSha256,
              ...(pending.runId !== undefined ? { runId: pending.runId } : {}),
              ...(pending.wait !== undefined ? { wait: pending.wait } : {}),
            })
            .catch(() => seen.delete(pending.toolUseId));
        }
        await sleep(300);
      }
    };
    const approvers = Promise.all(handles.map(approver));
    const deadline = started + (options.deadlineSeconds ?? 600) * 1000;
    while (results.size < runs) {
      if (Date.now() > deadline) {
        for (const h of handles) {
          if (results.has(h.workflowId)) continue;
          const events = (await h.fetchHistory()).events ?? [];
          const failed = events.flatMap((e) => e.workflowTaskFailedEventAttributes?.failure?.message ?? []).at(-1);
          say(`${h.workflowId} still open at the deadline${failed ? `: ${failed}` : ''}; terminating it`);
          await h.terminate('bench:liveness deadline').catch(() => undefined);
          results.set(h.workflowId, new Error(`still open at the deadline${failed ? ` (workflow task failed: ${failed})` : ''}`));
        }
        break;
      }
      let approvedSoFar = 0;
      for (const s of approved.values()) approvedSoFar += s.size;
      if (killsDone.length < kills && approvedSoFar >= killAt * (killsDone.length + 1)) {
        // The worker holding the most sessions now.
        const holders = new Map<string, Set<string>>();
        await Promise.all(
          handles.map(async (h) => {
            if (results.has(h.workflowId)) return;
            const id = (await h.query(statusQuery).catch(() => null))?.session?.workerId;
            if (id) holders.set(id, (holders.get(id) ?? new Set()).add(h.workflowId));
          }),
        );
        const [victimId, hit] = [...holders].sort((a, b) => b[1].size - a[1].size)[0] ?? [];
        const victim = workers.find((w) => w.workerId === victimId && w.alive());
        if (victim && hit) {
          say(`SIGKILL ${victim.workerId} (holds ${hit.size} sessions)`);
          const at = Date.now();
          await victim.kill();
          killsDone.push({ at, workerId: victim.workerId, runs: hit });
          await startWorker();
        }
      }
      await sleep(300);
    }
    await approvers;
    const seconds = (Date.now() - started) / 1000;
    say(`all ${runs} runs ended after ${seconds.toFixed(1)} s`);

    // Lost-session results, by run and time (the model server's log: when Claude was told).
    const byTask = new Map(handles.map((h, i) => [`liveness bench run ${i}`, h.workflowId]));
    const losses: Array<{ workflowId: string; toolUseId: string; atMs: number; text: string }> = [];
    const seenLoss = new Set<string>();
    for (const r of model.requests()) {
      if (r.path !== '/v1/messages') continue;
      const got = resultsOf(r.body);
      const workflowId = got ? byTask.get(got.task) : undefined;
      if (!got || !workflowId) continue;
      for (const res of got.results) {
        const key = `${workflowId}/${res.tool_use_id}`;
        if (!LOST.test(text(res)) || seenLoss.has(key)) continue;
        seenLoss.add(key);
        losses.push({ workflowId, toolUseId: res.tool_use_id, atMs: Date.parse(r.time), text: text(res) });
      }
    }
    const recoverySeconds: number[] = [];
    const falseLossTexts: string[] = [];
    const explained = new Set<string>();
    for (const loss of losses.sort((a, b) => a.atMs - b.atMs)) {
      const kill = killsDone.find((k) => k.runs.has(loss.workflowId) && k.at <= loss.atMs && !explained.has(`${k.at}/${loss.workflowId}`));
      if (kill) {
        explained.add(`${kill.at}/${loss.workflowId}`);
        // From the kill, or from the approval when the command was approved after it (it could not be lost before).
        const approvedAt = sentAt.get(`${loss.workflowId}/${loss.toolUseId}`) ?? 0;
        recoverySeconds.push((loss.atMs - Math.max(kill.at, approvedAt)) / 1000);
      } else falseLossTexts.push(`${loss.workflowId}: ${loss.text}`);
    }
    // Each (run, step) line at most once; every approved step either ran or was reported lost.
    let commandsRunTwice = 0;
    let approvedNeverRan = 0;
    for (const h of handles) {
      const file = path.join(dir, 'workspaces', workspaceFolderName(h.workflowId), 'steps.txt');
      const lines = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
      const counts = new Map<string, number>();
      for (const l of lines) counts.set(l, (counts.get(l) ?? 0) + 1);
      for (const c of counts.values()) if (c > 1) commandsRunTwice += c - 1;
      for (const toolUseId of approved.get(h.workflowId)!) {
        const step = `step-${toolUseId.replace('toolu_step_', '')}`;
        if (!counts.has(step) && !seenLoss.has(`${h.workflowId}/${toolUseId}`)) approvedNeverRan++;
      }
    }
    // Liveness checks from the histories: each completed one says alive or not in its result; count the checks and the waits.
    let livenessChecks = 0;
    let slowWorkerWaits = 0;
    for (const h of handles) {
      const events = (await h.fetchHistory()).events ?? [];
      const names = new Map<string, string>();
      for (const e of events) {
        const s = e.activityTaskScheduledEventAttributes;
        if (s) names.set(String(e.eventId), s.activityType?.name ?? '');
        const c = e.activityTaskCompletedEventAttributes;
        if (c && names.get(String(c.scheduledEventId)) === 'sessionWorkerLiveness') {
          livenessChecks++;
          const payload = c.result?.payloads?.[0]?.data;
          if (payload && /"alive":true/.test(Buffer.from(payload).toString('utf8'))) slowWorkerWaits++;
        }
      }
    }
    const failures = handles.flatMap((h) => {
      const r = results.get(h.workflowId);
      if (r instanceof Error) return [`${h.workflowId}: ${r.message}`];
      return r?.status === 'completed' ? [] : [`${h.workflowId}: ${r?.status ?? 'no result'}`];
    });
    return {
      runs,
      steps,
      completed: runs - failures.length,
      failures,
      loadProcesses: load.length,
      kills: killsDone.length,
      falseLosses: falseLossTexts.length,
      falseLossTexts,
      realLosses: recoverySeconds.length,
      recoverySeconds,
      maxRecoverySeconds: recoverySeconds.length > 0 ? Math.max(...recoverySeconds) : null,
      commandsRunTwice,
      approvedNeverRan,
      livenessChecks,
      slowWorkerWaits,
      seconds,
    };
  } finally {
    process.off('SIGINT', onSignal).off('SIGTERM', onSignal);
    stopLoad(load);
    await Promise.all(workers.map((w) => w.stop()));
    await model.close();
    await connection.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new InvalidArgumentError('expected a whole number >= 0');
  return n;
}

if (require.main === module) {
  const program = new Command('bench:liveness')
    .option('--runs <n>', 'runs started at once', positiveInt, 20)
    .option('--steps <n>', 'commands per run', positiveInt, 6)
    .option('--kills <n>', 'worker SIGKILLs', positiveInt, 1)
    .option('--no-load', 'no load processes')
    .option('--deadline <s>', 'seconds after which open runs are terminated (and counted as failures)', positiveInt, 600)
    .option('--json', 'print the report as JSON only')
    .parse();
  const o = program.opts<{ runs: number; steps: number; kills: number; load: boolean; deadline: number; json?: boolean }>();
  runLivenessBench({ runs: o.runs, steps: o.steps, kills: o.kills, load: o.load, deadlineSeconds: o.deadline, verbose: !o.json })
    .then((report) => {
      if (o.json) {
        console.log(JSON.stringify(report));
        return;
      }
      const recovery = report.recoverySeconds.map((s) => s.toFixed(1)).join(', ') || '-';
      console.log(
        `runs completed        ${report.completed}/${report.runs} (${report.steps} approved commands each, ${report.seconds.toFixed(1)} s)`,
      );
      console.log(`load processes        ${report.loadProcesses} (yes per core + dd loop)`);
      console.log(`false losses          ${report.falseLosses} (goal 0)`);
      console.log(
        `real losses           ${report.realLosses} after ${report.kills} SIGKILL; recovery ${recovery} s; max ${report.maxRecoverySeconds?.toFixed(1) ?? '-'} s (goal ≤ 10 s)`,
      );
      console.log(`commands run twice    ${report.commandsRunTwice}`);
      console.log(`approved, never ran   ${report.approvedNeverRan}`);
      console.log(`liveness checks       ${report.livenessChecks} (${report.slowWorkerWaits} found the worker alive: the run waited)`);
      for (const f of report.failures) console.log(`failed: ${f}`);
      for (const f of report.falseLossTexts) console.log(`false loss: ${f}`);
      console.log(JSON.stringify(report));
    })
    .catch((err: unknown) => {
      console.error(`bench:liveness: ${err instanceof Error ? err.stack : String(err)}`);
      process.exit(1);
    });
}
