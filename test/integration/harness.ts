/**
 * Integration test bed: a real Temporal dev server (started by the global
 * setup), real worker processes (`node dist/worker.js`, so they can be
 * SIGKILLed), and the scripted Messages API server.
 */
import { randomInt } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inspect } from 'node:util';
import { gzipSync } from 'node:zlib';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';
import { AGENT_RUN_WORKFLOW } from '../../src/config';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from '../../src/dev/testing/worker-process';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { AgentJobsClient, startAgentRun } from '../../src/client';
import { requestBindingInterceptor } from '../../src/request-binding';
import {
  startModelServer,
  type LoggedRequest,
  type ModelServer,
  type ScriptContentBlock,
  type ScriptFile,
} from '../../src/dev/model-server';
import { statusQuery, transcriptQuery } from '../../src/contract';
import type { agentRun } from '../../src/workflows';
import type { AgentRunInput, StatusView, Message, ToolResultBlock } from '../../src/contract';

const ROOT = path.resolve(__dirname, '../..');

/**
 * A query asked again (at most 3 times in all) when the server gave up waiting for the worker ("query timed out
 * before a worker could process it", DEADLINE_EXCEEDED): on a machine loaded past its cores the worker can be
 * slower than the server's query deadline, which says nothing about the run. Every other error is thrown at once.
 */
async function patiently<T>(ask: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await ask();
    } catch (err) {
      const cause = (err as { cause?: { code?: number; details?: string } }).cause;
      if (attempt >= 3 || cause?.code !== 4 || !/query timed out/i.test(cause.details ?? '')) throw err;
      process.stderr.write(`harness: a query timed out at the server (attempt ${attempt} of 3), asking again\n`);
    }
  }
}

export interface TestBedOptions {
  script: ScriptFile;
  /** Worker processes to start. @default 1 */
  workers?: number;
  /** Temporal address. @default the suite's dev server */
  address?: string;
  /** Extra environment for the workers. */
  workerEnv?: Record<string, string>;
}

let counter = 0;

/** Polls `fn` every 100 ms until it returns a truthy value or `timeoutMs` passes. */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  while (Date.now() < deadline) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastError = err;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(
    `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${lastError instanceof Error ? String(lastError) : inspect(lastError)})` : ''}`,
  );
}

/** Where histories are saved when AGENT_JOBS_SAVE_HISTORIES=1 (the replay test replays them in CI). */
export const HISTORIES_DIR = path.join(ROOT, 'test', 'fixtures', 'histories');

export class TestBed {
  readonly workers: WorkerProcess[] = [];
  /** Runs started through {@link start} with a name: their histories are saved at {@link close} when AGENT_JOBS_SAVE_HISTORIES=1. */
  private readonly started: Array<{ handle: WorkflowHandle; name: string }> = [];
  /** When this bed was created: every run started on its server since then is replayed at {@link close}. */
  private readonly createdAt = Date.now();
  /** The runs {@link close} replayed, in order. */
  readonly replayed: Array<{ workflowId: string; runId: string }> = [];
  private constructor(
    readonly dir: string,
    readonly address: string,
    readonly connection: Connection,
    readonly client: Client,
    readonly model: ModelServer,
    private readonly workerEnv: Record<string, string>,
  ) {}

  static async create(options: TestBedOptions): Promise<TestBed> {
    const address = options.address ?? process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS;
    if (!address)
      throw new Error(
        'AGENT_JOBS_TEST_TEMPORAL_ADDRESS is not set: run the integration tests through jest (global setup starts the server)',
      );
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-it-'));
    const model = await startModelServer({ script: options.script, logFile: path.join(dir, 'model-requests.jsonl') });
    const connection = await Connection.connect({ address });
    // Encrypted with the run's keys (global setup), like every worker this bed starts (scriptedWorkerEnv); its steering
    // Updates bound to their run, once, as the product's client binds them (src/request-binding.ts).
    const client = new Client({
      connection,
      ...codecClientOptions(),
      interceptors: { workflow: [requestBindingInterceptor(connection, 'default')] },
    });
    const bed = new TestBed(dir, address, connection, client, model, options.workerEnv ?? {});
    for (let i = 0; i < (options.workers ?? 1); i++) await bed.startWorker();
    return bed;
  }

  /** Path of the workers' command audit log (JSON lines, one per command). */
  get auditLog(): string {
    return path.join(this.dir, 'audit.jsonl');
  }

  /** The workers' workspace root. */
  get workspaces(): string {
    return path.join(this.dir, 'workspaces');
  }

  /** Starts a worker process and waits until it polls; `detached`: as the leader of its own process group. */
  /** The whole environment a worker of this bed gets (the scripted model server, this bed's data folder), with `extraEnv` on top. */
  workerEnvWith(extraEnv: Record<string, string> = {}): Record<string, string> {
    return {
      ...scriptedWorkerEnv({
        address: this.address,
        modelUrl: this.model.url,
        apiKey: 'sk-ant-test-secret-key-0123456789',
        dataDir: this.dir,
      }),
      ...this.workerEnv,
      ...extraEnv,
    };
  }

  async startWorker(extraEnv: Record<string, string> = {}, options: { detached?: boolean } = {}): Promise<WorkerProcess> {
    const worker = await spawnWorker({
      workerId: `it-${process.pid}-${++counter}`,
      connection: this.connection,
      detached: options.detached ?? false,
      env: this.workerEnvWith(extraEnv),
    });
    this.workers.push(worker);
    return worker;
  }

  /**
   * Starts an agentRun with a unique id and returns its handle. `name`
   * names the saved history (`<name>.json`) when histories are saved.
   */
  /** Every run this bed started, terminated at close if still open. */
  private readonly all: WorkflowHandle[] = [];
  /** Run ids of the runs {@link close} terminated (a failed test's leftovers): not replayed. */
  private readonly terminated = new Set<string>();

  async start(
    input: AgentRunInput,
    name?: string,
    workflowId = `it-${path.basename(this.dir)}-${++counter}`,
  ): Promise<WorkflowHandle<typeof agentRun>> {
    const handle = await startAgentRun(this.client, input, workflowId);
    if (name) this.started.push({ handle, name });
    this.all.push(handle);
    return handle;
  }

  /** Names a run this bed did not start (e.g. one the CLI started), so its history is saved as `<name>.json` like those of {@link start}. */
  nameRun(handle: WorkflowHandle, name: string): void {
    this.started.push({ handle, name });
  }

  /**
   * Replays against the current workflow code (a determinism check on every
   * path the suite drives) every run started on this bed's server since the
   * bed was created and closed by now: runs started through {@link start},
   * named or not, runs started by the CLI or any other client, and every run
   * of a continue-as-new chain. Skipped: runs still open, and runs
   * {@link close} terminated. Saves the named runs' histories to
   * test/fixtures/histories when AGENT_JOBS_SAVE_HISTORIES=1.
   * @throws Error naming each run that does not replay
   */
  async replayRuns(): Promise<void> {
    const runs = new Map<string, { workflowId: string; runId: string }>();
    const add = (workflowId: string, runId: string): void => void runs.set(`${workflowId}/${runId}`, { workflowId, runId });
    // A second of slack for the clocks; a run of another test file listed here replays just as well.
    const since = new Date(this.createdAt - 1_000).toISOString();
    for await (const w of this.client.workflow.list({ query: `WorkflowType = '${AGENT_RUN_WORKFLOW}' AND StartTime >= '${since}'` }))
      add(w.workflowId, w.runId);
    // The bed's own runs and every run of their chains, even where visibility lags.
    for (const handle of this.all) for (const run of await runChain(this.client, handle.workflowId)) add(handle.workflowId, run.runId);
    const closed: Array<{ workflowId: string; runId: string }> = [];
    for (const run of runs.values()) {
      if (this.terminated.has(run.runId)) continue;
      if ((await this.client.workflow.getHandle(run.workflowId, run.runId).describe()).status.name !== 'RUNNING') closed.push(run);
    }
    const client = this.client;
    // Each run replays under its own workflow id (a sub-agent's id is derived from its parent's: docs/subagents.md).
    async function* histories(): AsyncGenerator<{ workflowId: string; history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> }> {
      for (const run of closed)
        yield { workflowId: run.workflowId, history: await client.workflow.getHandle(run.workflowId, run.runId).fetchHistory() };
    }
    const failures: string[] = [];
    const { dataConverter } = codecClientOptions();
    for await (const r of Worker.runReplayHistories(
      { workflowBundle: { codePath: path.join(ROOT, 'dist', 'workflow-bundle.js') }, ...(dataConverter ? { dataConverter } : {}) },
      histories(),
    )) {
      if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
    }
    this.replayed.push(...closed);
    if (failures.length > 0) throw new Error(`runs that do not replay against the current workflow code:\n${failures.join('\n')}`);
    if (process.env.AGENT_JOBS_SAVE_HISTORIES !== '1') return;
    for (const { handle, name } of this.started) {
      const d = await handle.describe();
      if (d.status.name === 'RUNNING' || this.terminated.has(d.runId)) continue;
      // Saved decoded: the fixture replays anywhere, without this run's keys (and so proves plaintext histories replay).
      const text = `${historyToJSON(await decodedHistory(await handle.fetchHistory()))}\n`;
      // A history of large payloads (over 1 MB of JSON) is saved gzipped; the replay tests read both.
      if (text.length > 1_000_000) writeFileSync(path.join(HISTORIES_DIR, `${name}.json.gz`), gzipSync(text));
      else writeFileSync(path.join(HISTORIES_DIR, `${name}.json`), text);
    }
  }

  /** An agent-jobs client (src/client.ts) over this bed's connection; closed with the bed. */
  jobs(): AgentJobsClient {
    return new AgentJobsClient(this.connection, { address: this.address, namespace: 'default' });
  }

  async status(handle: WorkflowHandle): Promise<StatusView> {
    return patiently(() => handle.query(statusQuery));
  }

  async transcript(handle: WorkflowHandle): Promise<Message[]> {
    return (await patiently(() => handle.query(transcriptQuery, 0))).messages;
  }

  /** Waits until the run waits for approval and returns the pending command. */
  async pendingApproval(handle: WorkflowHandle, timeoutMs = 20_000): Promise<NonNullable<StatusView['pendingApproval']>> {
    return waitFor('a pending approval', async () => (await this.status(handle)).pendingApproval, timeoutMs);
  }

  /**
   * Waits until the run waits for approval of tool_use `toolUseId` (status polled every 100 ms, for `timeoutMs`) and
   * returns that pending command; throws when it does not by then.
   */
  async pendingApprovalOf(
    handle: WorkflowHandle,
    toolUseId: string,
    timeoutMs = 20_000,
  ): Promise<NonNullable<StatusView['pendingApproval']>> {
    return waitFor(
      `${toolUseId} to wait for approval`,
      async () => {
        const pending = (await this.status(handle)).pendingApproval;
        return pending?.toolUseId === toolUseId ? pending : null;
      },
      timeoutMs,
    );
  }

  /** Requests the scripted model server received, oldest first. */
  requests(): LoggedRequest[] {
    return this.model.requests();
  }

  /**
   * Message bodies (`messages`) of the Messages API requests that were answered with a
   * message, with their `cache_control` breakpoints taken out (the messages as the
   * conversation holds them; {@link requests} has the bodies as sent).
   */
  sentMessages(): Message[][] {
    return this.requests()
      .filter((r) => r.path === '/v1/messages' && r.response.status === 200)
      .map((r) => withoutCacheControl((r.body as { messages: Message[] }).messages));
  }

  /** The `tool_result` blocks in the last message of answered request `i` (0-based; see {@link sentMessages}). */
  resultsSentIn(i: number): ToolResultBlock[] {
    const messages = this.sentMessages()[i]!;
    return messages[messages.length - 1]!.content as ToolResultBlock[];
  }

  /** Lines of the command audit log. */
  audit(): Array<{ command: string; exitCode: number | null; sessionId: string }> {
    if (!existsSync(this.auditLog)) return [];
    return readFileSync(this.auditLog, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { command: string; exitCode: number | null; sessionId: string });
  }

  async close(): Promise<void> {
    // A run a failed test left open would be picked up by the next file's
    // workers on the shared dev server (and talk to their model server):
    // end every run this bed started first. Its history is then not replayed.
    // (A run the CLI started and left open is the test's to end.)
    for (const handle of this.all) {
      try {
        const d = await handle.describe();
        if (d.status.name === 'RUNNING') {
          await handle.terminate('test bed closed');
          this.terminated.add(d.runId);
        }
      } catch {
        /* already gone */
      }
    }
    try {
      await this.replayRuns();
    } finally {
      await Promise.all(this.workers.map((w) => w.stop()));
      await this.model.close();
      await this.connection.close();
      rmSync(this.dir, { recursive: true, force: true });
    }
  }
}

/** A scripted `tool_use` block for the bash tool. */
export function toolUse(id: string, command: string): ScriptContentBlock {
  return { type: 'tool_use', id, name: 'bash', input: { command } };
}

export type { WorkerProcess };

/**
 * `base` seconds with five more random digits (`"27.3"` → `"27.304172"`): a `sleep` length no
 * other suite on this machine uses, so {@link processesMatching} finds this suite's sleep only,
 * never one of a second `.ci/run` beside it (two runs' shutdown tests once saw each other's).
 */
export function napSeconds(base: string): string {
  return `${base}${randomInt(10_000, 100_000)}`;
}

/** Pids of live processes whose command line matches `pattern` (pgrep -f): machine-wide, so name a sleep with {@link napSeconds}. */
export function processesMatching(pattern: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

/** A copy of `messages` without the `cache_control` field of any content block. */
export function withoutCacheControl(messages: Message[]): Message[] {
  return JSON.parse(JSON.stringify(messages, (key, value: unknown) => (key === 'cache_control' ? undefined : value))) as Message[];
}

/**
 * The runs of `workflowId`'s continue-as-new chain, oldest first, with how
 * each ended (`CONTINUED_AS_NEW` when its last event says so, `OTHER` for
 * another end; the latest run's status from `describe()`), read from the histories (which are consistent, unlike the
 * visibility list right after a run ends): the latest run from `describe()`,
 * then each run's `continuedExecutionRunId` back to the first.
 */
export async function runChain(client: Client, workflowId: string): Promise<Array<{ runId: string; status: string }>> {
  const latest = await client.workflow.getHandle(workflowId).describe();
  const chain: Array<{ runId: string; status: string }> = [];
  let runId: string | null = latest.runId;
  while (runId) {
    const history: Awaited<ReturnType<WorkflowHandle['fetchHistory']>> = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    // An earlier run's end is its last event (a retried or cron run also links back, but did not continue as new).
    const status =
      runId === latest.runId
        ? latest.status.name
        : events.at(-1)?.workflowExecutionContinuedAsNewEventAttributes
          ? 'CONTINUED_AS_NEW'
          : 'OTHER';
    chain.unshift({ runId, status });
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || null;
  }
  return chain;
}

/**
 * Waits until the run has handled every signal it was sent so far: in its
 * history, a workflow task completed after the last `WorkflowExecutionSignaled`
 * event (so what the signal changes, or does not, is in the run's state and
 * in the commands of that task).
 * @throws Error after `timeoutMs` naming what it waited for
 */
export async function signalsHandled(handle: WorkflowHandle, timeoutMs = 20_000): Promise<void> {
  await waitFor(
    `a workflow task completed after the last signal to ${handle.workflowId}`,
    async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      let lastSignal = -1;
      events.forEach((e, i) => {
        if (e.workflowExecutionSignaledEventAttributes) lastSignal = i;
      });
      return events.slice(lastSignal + 1).some((e) => !!e.workflowTaskCompletedEventAttributes);
    },
    timeoutMs,
  );
}

/**
 * A bash loop for a scripted command that must still be running when the test acts on it (an Update,
 * a signal, a screen it must see): it waits until a file named `go` exists in the command's working
 * directory, polling every 50 ms, for at most 1,200 polls (about 60 s; then it goes on and the test's
 * own checks fail). The test writes `go` with {@link release} once it has observed what it needed.
 * A fixed `sleep` is no substitute: on a loaded machine a status query or a worker start can take
 * longer than any sleep short enough to keep the suite quick.
 */
export const UNTIL_GO = 'for i in $(seq 1200); do [ -e go ] && break; sleep 0.05; done';

/**
 * Ends an {@link UNTIL_GO} loop running in `dir` (a run's workspace) by writing `go` there.
 * @returns Date.now() just before the file was written (the loop cannot have ended before it)
 */
export function release(dir: string): number {
  const at = Date.now();
  writeFileSync(path.join(dir, 'go'), '');
  return at;
}

/**
 * Sleeps until `atMs` (ms since the epoch): only for checks that something
 * did NOT happen by a moment the test names (a timer that would have fired
 * by then), never to let something happen (wait for it with {@link waitFor}).
 */
export async function sleepUntil(atMs: number): Promise<void> {
  const ms = atMs - Date.now();
  if (ms > 0) await new Promise((r) => setTimeout(r, ms));
}
