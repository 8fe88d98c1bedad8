/**
 * The end-to-end cases `npm run test:cluster` runs against a Temporal
 * service ({@link Target}): each starts the scripted model server and real
 * worker processes (`node dist/worker.js`) connected to the frontends it
 * chooses, drives real runs through the client (and the CLI for the
 * approval), and returns pass/fail with its figures. They assert what the
 * integration suite asserts on a dev server (crash.test.ts, approvals and
 * cli tests, chaos.test.ts), here with the workflow's tasks, the client and
 * the workers spread over the server processes of a cluster.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { workspaceFolderName } from '../../activities/session';
import { runChaos, chaosPassed } from '../bench/chaos';
import { statusQuery, type AgentRunInput, type AgentRunResult, type Message, type StatusView, type ToolResultBlock } from '../../contract';
import { startModelServer, type ModelServer, type ScriptEntry } from '../model-server';
import { PROJECT_ROOT } from '../../settings';
import { startAgentRun } from '../../client';
import { rollingRestart } from '../testing/rolling-restart';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from '../testing/worker-process';
import type { Target } from '../testing/target';
import type { agentRun } from '../../workflows';

/** One case's outcome. Figures are numbers in the unit their name says (`…Seconds`, `…Ms`) or counts. */
export interface CaseResult {
  name: string;
  passed: boolean;
  /** Wall time of the case, seconds. */
  seconds: number;
  figures: Record<string, number | string>;
  /** What did not hold, one line each; empty when it passed. */
  problems: string[];
}

/** A case body: records figures and problems; a throw is a problem too. */
type CaseBody = (c: { figures: Record<string, number | string>; check: (ok: boolean, problem: string) => void }) => Promise<void>;

/** Runs a case body, timing it and turning a throw into a problem. */
export async function runCase(name: string, body: CaseBody): Promise<CaseResult> {
  const started = Date.now();
  const figures: Record<string, number | string> = {};
  const problems: string[] = [];
  try {
    await body({ figures, check: (ok, problem) => void (ok || problems.push(problem)) });
  } catch (err) {
    problems.push(err instanceof Error ? err.message : String(err));
  }
  return { name, passed: problems.length === 0, seconds: seconds(Date.now() - started), figures, problems };
}

const seconds = (ms: number): number => Math.round(ms / 100) / 10;

/** Polls `fn` every 100 ms until it returns a truthy value. @throws Error naming `what` after `timeoutMs` */
async function waitFor<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 30_000,
) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await Promise.resolve(fn()).catch(() => null);
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs / 1000} s waiting for ${what}`);
    await sleep(100);
  }
}

/** How long a case waits for one of its runs to end, in ms: minutes more than it takes on a loaded machine. */
export const CASE_RUN_TIMEOUT_MS = 180_000;

/** A case's own scripted model server, data folder and workers, on a target. */
class CaseBed {
  readonly workers: WorkerProcess[] = [];
  private seq = 0;
  private constructor(
    readonly target: Target,
    readonly dir: string,
    readonly model: ModelServer,
    readonly connection: Connection,
    readonly client: Client,
  ) {}

  /** Its client talks to `addresses[0]`. */
  static async create(target: Target, responses: ScriptEntry[]): Promise<CaseBed> {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-cluster-test-'));
    const model = await startModelServer({ script: { responses } });
    const connection = await Connection.connect({ address: target.addresses[0]! });
    return new CaseBed(target, dir, model, connection, new Client({ ...codecClientOptions(), connection, namespace: target.namespace }));
  }

  /** Starts a worker connected to frontend `server` (an index into the target's addresses) and waits until it polls. */
  async startWorker(server: number): Promise<WorkerProcess> {
    const address = this.target.addresses[server % this.target.addresses.length]!;
    const w = await spawnWorker({
      workerId: `cluster-test-${process.pid}-${Date.now()}-${++this.seq}`,
      connection: this.connection,
      namespace: this.target.namespace,
      // Beside two server processes and PostgreSQL on the same cores, a worker may take longer than the default 30 s.
      readyTimeoutMs: 120_000,
      env: scriptedWorkerEnv({
        address,
        namespace: this.target.namespace,
        modelUrl: this.model.url,
        apiKey: 'cluster-test-scripted-key',
        dataDir: this.dir,
        logLevel: 'WARN',
      }),
    });
    this.workers.push(w);
    return w;
  }

  /**
   * The run's result, or a throw after `timeoutMs` (a case must end even when the run never does).
   * @throws Error naming the run when it has not ended in time
   */
  async result(handle: WorkflowHandle<typeof agentRun>, timeoutMs = CASE_RUN_TIMEOUT_MS): Promise<AgentRunResult> {
    const late = sleep(timeoutMs, null, { ref: false });
    const r = await Promise.race([handle.result(), late]);
    if (r === null) throw new Error(`${handle.workflowId} did not end within ${timeoutMs / 1000} s`);
    return r;
  }

  start(input: AgentRunInput, workflowId: string): Promise<WorkflowHandle<typeof agentRun>> {
    return startAgentRun(this.client, input, workflowId);
  }

  status(handle: WorkflowHandle): Promise<StatusView> {
    return handle.query(statusQuery);
  }

  workspace(workflowId: string): string {
    return path.join(this.dir, 'workspaces', workspaceFolderName(workflowId));
  }

  /** Model requests answered with a message, oldest first: their `messages`. */
  sentMessages(): Message[][] {
    return this.model
      .requests()
      .filter((r) => r.path === '/v1/messages' && r.response.status === 200)
      .map((r) => (r.body as { messages: Message[] }).messages);
  }

  /** The `tool_result` blocks the `i`-th answered request (0-based) carried in its last message. */
  resultsSentIn(i: number): ToolResultBlock[] {
    const messages = this.sentMessages()[i];
    if (!messages) return [];
    const content = messages[messages.length - 1]!.content;
    return Array.isArray(content) ? (content as ToolResultBlock[]).filter((b) => b.type === 'tool_result') : [];
  }

  /** Model requests per step (0-based), all attempts. */
  stepCounts(): Record<number, number> {
    const counts: Record<number, number> = {};
    for (const r of this.model.requests()) if (r.step !== null) counts[r.step] = (counts[r.step] ?? 0) + 1;
    return counts;
  }

  async close(): Promise<void> {
    await Promise.all(this.workers.map((w) => w.stop()));
    await this.model.close();
    await this.connection.close();
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The last frontend: a worker there and the client on the first make every case cross server processes. */
const lastServer = (t: Target): number => t.addresses.length - 1;

const toolUse = (id: string, command: string): ScriptEntry => ({
  content: [{ type: 'tool_use', id, name: 'bash', input: { command } }],
  stop_reason: 'tool_use',
});

/** Command lines of processes whose command line contains `needle` (from /proc; never this process). */
function processesMatching(needle: string): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ');
      if (argv.includes(needle)) out.push(`${pid} ${argv.trim()}`);
    } catch {
      /* gone */
    }
  }
  return out;
}

const stamp = (): string => `${process.pid}-${Date.now()}`;

/**
 * (1) A multi-turn run to completion: `turns` commands, each echoing its
 * number, then a final text; the worker on the last server process, the
 * client on the first. Every command's output reaches the model, each
 * step is requested once.
 */
export function multiTurnCase(target: Target, turns = 8): Promise<CaseResult> {
  return runCase('multi-turn run', async ({ figures, check }) => {
    const responses: ScriptEntry[] = [];
    for (let i = 1; i <= turns; i++) responses.push(toolUse(`toolu_${i}`, `echo turn-${i}`));
    responses.push({ content: [{ type: 'text', text: 'all turns done' }], stop_reason: 'end_turn' });
    const bed = await CaseBed.create(target, responses);
    try {
      await bed.startWorker(lastServer(target));
      const t0 = Date.now();
      const handle = await bed.start({ task: 'count the turns', approval: 'auto' }, `cluster-test-turns-${stamp()}`);
      const result = await bed.result(handle);
      const ms = Date.now() - t0;
      figures.turns = result.turns;
      figures.seconds = seconds(ms);
      figures.msPerTurn = Math.round(ms / Math.max(1, result.turns));
      check(result.status === 'completed' && result.text === 'all turns done', `result: ${result.status} ${result.error ?? ''}`);
      check(result.turns === turns + 1, `turns: ${result.turns}, expected ${turns + 1}`);
      for (let i = 1; i <= turns; i++) {
        const sent = bed.resultsSentIn(i);
        check(
          sent.length === 1 && sent[0]!.tool_use_id === `toolu_${i}` && sent[0]!.content.trim() === `turn-${i}` && !sent[0]!.is_error,
          `request ${i} did not carry turn-${i}'s output: ${JSON.stringify(sent)}`,
        );
      }
      const counts = bed.stepCounts();
      const twice = Object.entries(counts).filter(([, n]) => n !== 1);
      check(twice.length === 0, `steps requested more than once: ${JSON.stringify(twice)}`);
    } finally {
      await bed.close();
    }
  });
}

const execFileP = promisify(execFile);

/**
 * (2) An approval: a run under approval `always` waits with the command
 * unrun; `agent-jobs approve` (the CLI, against the last server process)
 * approves it; the command runs after the approval and its output reaches
 * the model.
 */
export function approvalCase(target: Target): Promise<CaseResult> {
  return runCase('approval', async ({ figures, check }) => {
    const bed = await CaseBed.create(target, [
      toolUse('toolu_ask', 'echo "ran-at $(date +%s%3N)"'),
      { content: [{ type: 'text', text: 'approved and ran' }], stop_reason: 'end_turn' },
    ]);
    try {
      await bed.startWorker(0);
      const workflowId = `cluster-test-approval-${stamp()}`;
      const handle = await bed.start({ task: 'ask before running', approval: 'always' }, workflowId);
      const pending = await waitFor('the run to wait for approval', async () => (await bed.status(handle)).pendingApproval);
      check(pending.toolUseId === 'toolu_ask', `pending: ${JSON.stringify(pending)}`);
      check((await bed.status(handle)).status === 'awaiting_approval', 'status is not awaiting_approval');
      await sleep(500);
      check(bed.model.requests().length === 1, 'the model was asked again before the approval');
      // Visibility on PostgreSQL: the wait shows in `agent-jobs pending` (a Text attribute PostgreSQL could not parse would fail the whole update).
      const cliEnv = { ...process.env, TEMPORAL_ADDRESS: target.addresses[lastServer(target)]!, TEMPORAL_NAMESPACE: target.namespace };
      const listed = await waitFor(
        'the run to show in agent-jobs pending',
        async () => {
          const out = await execFileP(process.execPath, [path.join(PROJECT_ROOT, 'bin', 'agent-jobs.js'), 'pending', '--json'], {
            env: cliEnv,
          });
          const rows = JSON.parse(out.stdout) as Array<{ workflowId: string; status: string; awaiting: string }>;
          return rows.find((r) => r.workflowId === workflowId) ?? null;
        },
        15_000,
      ).catch(() => null);
      check(
        listed?.status === 'awaiting_approval' && listed.awaiting.startsWith('approval of bash: echo "ran-at'),
        `agent-jobs pending did not list the run awaiting approval of its command: ${JSON.stringify(listed)}`,
      );
      const approvedAt = Date.now();
      const cli = await execFileP(
        process.execPath,
        [path.join(PROJECT_ROOT, 'bin', 'agent-jobs.js'), 'approve', workflowId, '--by', 'cluster-test', '--json'],
        { env: cliEnv },
      ).catch((err: { code?: number; stderr?: string }) => {
        throw new Error(`agent-jobs approve exited ${err.code}: ${err.stderr?.trim()}`);
      });
      figures.approveCliMs = Date.now() - approvedAt;
      const answer = JSON.parse(cli.stdout) as { applied?: boolean; decision?: string; by?: string };
      check(answer.applied === true && answer.decision === 'approved' && answer.by === 'cluster-test', `approve said: ${cli.stdout}`);
      const result = await bed.result(handle);
      figures.approvalToResultMs = Date.now() - approvedAt;
      check(result.status === 'completed' && result.text === 'approved and ran', `result: ${result.status} ${result.error ?? ''}`);
      const sent = bed.resultsSentIn(1);
      const ranAt = Number(/^ran-at (\d+)/.exec(sent[0]?.content ?? '')?.[1]);
      check(
        sent.length === 1 && !sent[0]!.is_error && ranAt >= approvedAt,
        `the command did not run after the approval: ${JSON.stringify(sent)}`,
      );
    } finally {
      await bed.close();
    }
  });
}

/**
 * (3) Crash resume: the worker holding the session (on the last server
 * process) is SIGKILLed mid-command (a `sleep`); a second worker (on the
 * first) resumes the run, which completes with Claude told the shell was
 * lost; every command ran at most once, the killed one never finished, no
 * `sleep` is left, no model step was requested twice.
 */
export function crashResumeCase(target: Target): Promise<CaseResult> {
  return runCase('crash resume', async ({ figures, check }) => {
    // A sleep no other test on this machine runs, to look for it afterwards.
    const nap = `sleep 41.${String(process.pid % 1000).padStart(3, '0')}7`;
    const bed = await CaseBed.create(target, [
      toolUse('toolu_1', 'echo one >> crash.log'),
      toolUse('toolu_2', `echo two-start >> crash.log; ${nap}; echo two-end >> crash.log`),
      toolUse('toolu_3', 'echo three >> crash.log; pwd'),
      { content: [{ type: 'text', text: 'recovered' }], stop_reason: 'end_turn' },
    ]);
    try {
      const first = await bed.startWorker(lastServer(target));
      const workflowId = `cluster-test-crash-${stamp()}`;
      const log = path.join(bed.workspace(workflowId), 'crash.log');
      const lines = (): string[] => (existsSync(log) ? readFileSync(log, 'utf8').trim().split('\n').filter(Boolean) : []);
      const handle = await bed.start({ task: 'survive a crash', approval: 'auto' }, workflowId);
      await waitFor('the long command to start', () => lines().includes('two-start'));
      await bed.startWorker(0);
      const holder = (await bed.status(handle)).session?.workerId;
      check(holder === first.workerId, `the session is on ${holder}, not on the first worker`);
      const killedAt = Date.now();
      await first.kill();
      await waitFor('the run to ask the model again', () => bed.model.requests().length >= 3, 60_000);
      figures.recoverySeconds = seconds(Date.parse(bed.model.requests()[2]!.time) - killedAt);
      const result = await bed.result(handle);
      figures.killToResultSeconds = seconds(Date.now() - killedAt);
      check(result.status === 'completed' && result.text === 'recovered' && result.turns === 4, `result: ${JSON.stringify(result)}`);
      const lost = bed.resultsSentIn(2);
      check(
        lost.length === 1 &&
          lost[0]!.tool_use_id === 'toolu_2' &&
          lost[0]!.is_error === true &&
          /bash session was lost/.test(lost[0]!.content) &&
          /may or may not have run/.test(lost[0]!.content),
        `Claude was not told the shell was lost: ${JSON.stringify(lost)}`,
      );
      check(JSON.stringify(lines()) === JSON.stringify(['one', 'two-start', 'three']), `commands ran: ${JSON.stringify(lines())}`);
      const left = processesMatching(nap);
      check(left.length === 0, `the killed command's processes are left: ${left.join('; ')}`);
      const counts = bed.stepCounts();
      check(JSON.stringify(counts) === JSON.stringify({ 0: 1, 1: 1, 2: 1, 3: 1 }), `model requests per step: ${JSON.stringify(counts)}`);
    } finally {
      await bed.close();
    }
  });
}

/** Options of {@link chaosCase}. */
export interface ChaosCaseOptions {
  runs?: number;
  kills?: number;
  /** Server faults: SIGKILL of the last server process, then its restart. */
  serverFaults?: number;
  /** Seconds the killed server process stays down before its restart. @default 5 */
  downSeconds?: number;
  verbose?: boolean;
}

/**
 * (4) The chaos experiment ({@link runChaos}) on the target with three
 * workers: two on the first server process, one on the last; the faults
 * are worker SIGKILLs and SIGKILLs of the last server process, each
 * followed (after `downSeconds`) by its restart. The experiment's own
 * client stays on the first server process, which never dies, so what it
 * measures is not cut by its own fault. The worker on the killed server's
 * frontend loses its connection and must poll again once it is back; the
 * other two keep working through the surviving process while the cluster
 * moves the dead one's shards.
 */
export function chaosCase(target: Target, o: ChaosCaseOptions = {}): Promise<CaseResult> {
  return runCase('chaos', async ({ figures, check }) => {
    const victim = lastServer(target);
    const down = o.downSeconds ?? 5;
    const report = await runChaos({
      runs: o.runs ?? 6,
      kills: o.kills ?? 2,
      serverRestarts: o.serverFaults ?? 1,
      workers: 3,
      verbose: o.verbose ?? false,
      temporal: {
        clientAddress: target.addresses[0]!,
        namespace: target.namespace,
        workerAddress: (n) => target.addresses[n % 3 === 2 ? victim : 0]!,
        serverFault: async () => {
          await target.killServer(victim);
          await sleep(down * 1000);
          await target.restartServer(victim);
          return `SIGKILLed server process ${victim} (${target.addresses[victim]}), restarted it ${down} s later`;
        },
      },
    });
    for (const k of [
      'runsStarted',
      'runsCompleted',
      'commandsRunTwice',
      'completedStepsRequestedAgain',
      'callsCutByKills',
      'kills',
      'serverRestarts',
      'maxRecoverySeconds',
      'maxServerRecoverySeconds',
      'maxWorkerReturnSeconds',
    ] as const)
      figures[k] = report[k];
    check(
      chaosPassed(report),
      `lost work: ${[...report.failures, `commandsRunTwice ${report.commandsRunTwice}`, `completedStepsRequestedAgain ${report.completedStepsRequestedAgain}`].join('; ')}`,
    );
  });
}

/** Options of {@link rollingRestartCase}. */
export interface RollingRestartCaseOptions {
  /** Print the experiment's progress lines on stderr. @default false */
  verbose?: boolean;
}

/**
 * (5) A rolling restart of three workers under load ({@link rollingRestart}):
 * runs of ~1 s commands go on while each worker is replaced in turn (a new
 * one started, the old one sent SIGTERM and waited for). Every run must
 * complete, no command may be killed mid-way without Claude being told or
 * run twice, no process of a session may be left, and each old worker must
 * be gone within grace + force. The workers talk to the first server
 * process's frontend; the runs' tasks are spread over both processes by the
 * cluster's shards and task queue partitions.
 */
export function rollingRestartCase(target: Target, o: RollingRestartCaseOptions = {}): Promise<CaseResult> {
  return runCase('rolling restart', async ({ figures, check }) => {
    const report = await rollingRestart({
      address: target.addresses[0]!,
      namespace: target.namespace,
      workers: 3,
      ...(o.verbose ? { progress: (line: string) => void process.stderr.write(`  rolling restart: ${line}\n`) } : {}),
    });
    figures.runsCompleted = `${report.completed}/${report.runs}`;
    figures.commands = report.commands;
    figures.commandsRunTwice = report.commandsRunTwice;
    figures.commandsKilledReported = report.commandsKilledReported;
    figures.commandsLostReported = report.commandsLostReported;
    figures.commandsUnreported = report.commandsUnreported;
    figures.movedNotices = report.movedNotices;
    figures.maxDrainSeconds = report.maxDrainSeconds;
    figures.boundSeconds = report.boundSeconds;
    figures.orphans = report.orphans.length;
    for (const p of report.problems) check(false, p);
  });
}
