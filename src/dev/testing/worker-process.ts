/**
 * Worker processes for tests, benchmarks and the chaos run: `node
 * dist/worker.js` as a child, so it can be SIGKILLed like a machine dying.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { createKeysFile, dataConverterFromEnv } from '../../codec';
import { temporal } from '@temporalio/proto';
import { sessionTaskQueue } from '../../config';

/** A worker child process. */
export interface WorkerProcess {
  workerId: string;
  pid: number;
  child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Whether the process is still running. */
  alive(): boolean;
  /** SIGKILL, no cleanup (a machine dying). Resolves once it is gone. */
  kill(): Promise<void>;
  /**
   * SIGTERM (a drain: running commands may finish), then, when it is still
   * there after `secondSignalAfterMs`, a second SIGTERM (exit at once, every
   * bash process group killed). Resolves once it is gone.
   * @param secondSignalAfterMs @default 3000 (so a test bed's teardown never waits out a command)
   */
  stop(secondSignalAfterMs?: number): Promise<void>;
  /** Sends `signal` to the process (or, with `group`, to its whole process group, as a terminal's Ctrl-C does; needs `detached`). */
  signal(signal: NodeJS.Signals, group?: boolean): void;
  /** Resolves once the process exited: its exit code or the signal that ended it, and when (`Date.now()`). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>;
}

/**
 * The codec keys every process of a test run, benchmark or scripted run
 * shares (workers, CLI processes, clients): this process's
 * `AGENT_JOBS_CODEC_KEYS` when set (`none` included; the integration
 * suite's global setup sets it to one keys file per run), else a keys file
 * created now in a new temporary folder, which this process's
 * `AGENT_JOBS_CODEC_KEYS` names from then on, so its clients
 * ({@link codecClientOptions}) and every worker {@link scriptedWorkerEnv}
 * describes encrypt with the same key.
 * @returns the value of `AGENT_JOBS_CODEC_KEYS`
 */
export function sharedCodecKeys(): string {
  if (process.env.AGENT_JOBS_CODEC_KEYS) return process.env.AGENT_JOBS_CODEC_KEYS;
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'agent-jobs-codec-')), 'codec-keys');
  createKeysFile(file);
  process.env.AGENT_JOBS_CODEC_KEYS = file;
  return file;
}

/**
 * The claim check's store every process of a test run, benchmark or scripted run shares, as
 * {@link sharedCodecKeys} shares the keys: this process's `AGENT_JOBS_BLOB_STORE` when set
 * (`none` and `s3://...` included; the integration suite's global setup sets it to one folder per
 * run), else a new temporary folder, which this process's `AGENT_JOBS_BLOB_STORE` names from then
 * on. Without it each worker would keep blobs in its own data folder, where the clients (and the
 * replay of every run at a test bed's close) could not read them.
 * @returns the value of `AGENT_JOBS_BLOB_STORE`
 */
export function sharedBlobStore(): string {
  if (process.env.AGENT_JOBS_BLOB_STORE) return process.env.AGENT_JOBS_BLOB_STORE;
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-blobs-'));
  process.env.AGENT_JOBS_BLOB_STORE = dir;
  return dir;
}

/** The data converter of {@link sharedCodecKeys} and {@link sharedBlobStore}, spread into a `Client`'s options: `{ dataConverter }`, or `{}` for `none`. */
export function codecClientOptions(): { dataConverter?: DataConverter } {
  sharedCodecKeys();
  sharedBlobStore();
  const dataConverter = dataConverterFromEnv();
  return dataConverter ? { dataConverter } : {};
}

/**
 * The environment of a worker process started against a local dev server
 * and the scripted Messages API server: the PATH and HOME of this process,
 * the Temporal address (and namespace), the model server's URL and a stand-in API key, the
 * data folder (workspaces, audit log), the log level, the codec keys
 * ({@link sharedCodecKeys}) and the claim check's store ({@link sharedBlobStore}).
 */
export function scriptedWorkerEnv(o: {
  address: string;
  /** `TEMPORAL_NAMESPACE`. @default unset (the worker's `default`) */
  namespace?: string;
  modelUrl: string;
  /** A stand-in key: the scripted server accepts any; tests use one shaped like a real key to prove it is never leaked. */
  apiKey: string;
  dataDir: string;
  /** @default 'WARN' */
  logLevel?: string;
}): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    TEMPORAL_ADDRESS: o.address,
    ...(o.namespace ? { TEMPORAL_NAMESPACE: o.namespace } : {}),
    ANTHROPIC_BASE_URL: o.modelUrl,
    ANTHROPIC_API_KEY: o.apiKey,
    AGENT_JOBS_DATA_DIR: o.dataDir,
    AGENT_JOBS_LOG_LEVEL: o.logLevel ?? 'WARN',
    AGENT_JOBS_CODEC_KEYS: sharedCodecKeys(),
    AGENT_JOBS_BLOB_STORE: sharedBlobStore(),
  };
}

export interface SpawnWorkerOptions {
  /** Used as `AGENT_JOBS_WORKER_ID` (names its session queue). */
  workerId: string;
  /** The whole environment of the worker (nothing is inherited). */
  env: Record<string, string>;
  /** A client connection to wait on: resolves once the worker polls its session queue. */
  connection: Connection;
  namespace?: string;
  /** How long a live worker may take to start polling its session queue. @default 120,000 ms (a loaded machine has taken over 30 s) */
  readyTimeoutMs?: number;
  /** Start it as the leader of its own process group (like a shell's foreground job), so the group can be signalled. @default false */
  detached?: boolean;
  /** Node options before the script, e.g. `--cpu-prof` (which Node 20 refuses in `NODE_OPTIONS`). @default none */
  execArgv?: string[];
}

/** The compiled worker, from `src/dev/testing` (tests) or `dist/dev/testing` alike. */
const WORKER_JS = path.resolve(__dirname, '..', '..', '..', 'dist', 'worker.js');

/**
 * Starts `node dist/worker.js` (the compiled worker; run `npm run build`
 * first) and waits until its session queue has a poller.
 * @throws Error with the worker's output when it exits or does not poll in time
 */
export async function spawnWorker(options: SpawnWorkerOptions): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [...(options.execArgv ?? []), WORKER_JS], {
    env: { ...options.env, AGENT_JOBS_WORKER_ID: options.workerId },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: options.detached ?? false,
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  // Resolved at 'close' (its output read to the end), with the time of 'exit'.
  let exitedAt = 0;
  child.once('exit', () => (exitedAt = Date.now()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.once('close', (code: number | null, signal: NodeJS.Signals | null) => resolve({ code, signal, at: exitedAt || Date.now() })),
  );
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  const worker: WorkerProcess = {
    workerId: options.workerId,
    pid: child.pid!,
    child,
    output: () => out,
    alive,
    exited,
    kill: async () => {
      if (alive()) child.kill('SIGKILL');
      await exited;
    },
    stop: async (secondSignalAfterMs = 3_000) => {
      if (alive()) child.kill('SIGTERM');
      const second = setTimeout(() => alive() && child.kill('SIGTERM'), secondSignalAfterMs);
      await exited;
      clearTimeout(second);
    },
    signal: (signal, group = false) => {
      if (!alive()) return;
      if (group) process.kill(-child.pid!, signal);
      else child.kill(signal);
    },
  };
  const queue = sessionTaskQueue(options.workerId);
  // A live worker that is still starting is slow, not broken (a loaded machine has taken over 30 s to load
  // Node, the SDK's core and the workflow bundle): the wait ends at once when the process exits, so only a
  // worker that stays up and never polls waits out the deadline.
  const readyTimeoutMs = options.readyTimeoutMs ?? 120_000;
  const startedAt = Date.now();
  const deadline = startedAt + readyTimeoutMs;
  for (;;) {
    if (!alive()) throw new Error(`worker ${options.workerId} exited before it polled: ${out.trim()}`);
    const r = await options.connection.workflowService
      .describeTaskQueue({
        namespace: options.namespace ?? 'default',
        taskQueue: { name: queue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
        taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
      })
      .catch(() => null);
    if ((r?.pollers?.length ?? 0) > 0) return worker;
    if (Date.now() > deadline) {
      await worker.kill();
      throw new Error(
        `worker ${options.workerId} was up ${Date.now() - startedAt} ms and never polled ${queue} (waited ${readyTimeoutMs} ms): ${out.trim()}`,
      );
    }
    await sleep(100);
  }
}
