/**
 * Settings read from the environment, for the worker and the CLI (never
 * from workflow code). Every variable is listed in docs/configuration.md.
 */
import { readFileSync } from 'node:fs';
import { hostname, totalmem } from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import {
  CLAUDE_IDLE_TIMEOUT_MS,
  DEFAULT_BLOB_THRESHOLD_BYTES,
  MAX_BLOB_THRESHOLD_BYTES,
  MIN_BLOB_THRESHOLD_BYTES,
  DEFAULT_CLAUDE_TIMEOUT_MS,
  DEFAULT_SHUTDOWN_GRACE_MS,
  MAX_SHUTDOWN_GRACE_MS,
  MAX_DEFAULT_MAX_SESSIONS,
  MIN_DEFAULT_MAX_SESSIONS,
  SESSION_MEMORY_ALLOWANCE_BYTES,
  SHUTDOWN_FORCE_TIME_MS,
  UPDATE_DEADLINE_MS,
} from './config';
import { DEFAULT_LIMITS } from './session/limits';
import { BUILTIN_MODELS, parseModelOverrides, type ModelInfo } from './contract/models';
import type { ConnectionOptions } from '@temporalio/client';
import type { LogLevel, NativeConnectionOptions } from '@temporalio/worker';

/**
 * The repository root: the nearest folder above this file whose package.json is this
 * package's (one level above `src/` or `dist/`, two above a build of the sources elsewhere,
 * such as docs/client.md's `.example-build/src/`), else one level above this file.
 */
export const PROJECT_ROOT = projectRoot(__dirname);

function projectRoot(from: string): string {
  for (let dir = path.resolve(from, '..'); ; dir = path.dirname(dir)) {
    try {
      if ((JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string }).name === 'agent-jobs') return dir;
    } catch {
      // No package.json here, or not JSON: look further up.
    }
    if (path.dirname(dir) === dir) return path.resolve(from, '..');
  }
}

/** Data folder: dev server database, workspaces, audit log. `AGENT_JOBS_DATA_DIR`, default `<project>/data` (git-ignored). */
export function dataDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.AGENT_JOBS_DATA_DIR ?? path.join(PROJECT_ROOT, 'data'));
}

/** Root of the per-run working directories. `AGENT_JOBS_WORKSPACE_ROOT`, default `<data>/workspaces`. */
export function workspaceRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.AGENT_JOBS_WORKSPACE_ROOT ?? path.join(dataDir(env), 'workspaces'));
}

/** Command audit log (JSON lines). `AGENT_JOBS_AUDIT_LOG`, default `<data>/audit.jsonl`. */
export function auditLogPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.AGENT_JOBS_AUDIT_LOG ?? path.join(dataDir(env), 'audit.jsonl'));
}

/** Root of the checkpoint stores (one bare git repository per workspace: docs/rewind.md). `AGENT_JOBS_CHECKPOINT_DIR`, default `<data>/checkpoints`. Hidden from every session. */
export function checkpointRoot(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.AGENT_JOBS_CHECKPOINT_DIR ?? path.join(dataDir(env), 'checkpoints'));
}

/**
 * More paths the session sandbox hides (empty tmpfs over directories, an
 * empty file over files) besides the data dir, workspace root, audit log,
 * project folder, /root and the worker's home. `AGENT_JOBS_SANDBOX_HIDE`,
 * colon-separated, default none.
 */
export function sandboxHiddenPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.AGENT_JOBS_SANDBOX_HIDE ?? '')
    .split(':')
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
    .map((s) => path.resolve(s));
}

/**
 * Every path a worker's sessions must not see: the data dir, the workspace root, the audit log,
 * this project's folder, the checkpoint stores, the codec keys (`AGENT_JOBS_CODEC_KEYS`, a file or a directory that may
 * lie anywhere; the default one is in the data dir), the claim check's blob directory (`AGENT_JOBS_BLOB_STORE`), and
 * {@link sandboxHiddenPaths}.
 */
export function sessionHiddenPaths(env: NodeJS.ProcessEnv = process.env): string[] {
  const named = env.AGENT_JOBS_CODEC_KEYS?.trim();
  // `none` turns encryption off (src/codec/index.ts), naming no path; the default keys file lies in the data dir.
  const keys = named && named.toLowerCase() !== 'none' ? [path.resolve(named)] : [];
  // The claim check's blobs are ciphertext, but a session has no business with them either (deleting one ends a run).
  const blobs = blobStoreSetting(env);
  const blobDir = blobs.kind === 'dir' ? [blobs.root] : [];
  return [
    dataDir(env),
    workspaceRoot(env),
    auditLogPath(env),
    checkpointRoot(env),
    PROJECT_ROOT,
    ...keys,
    ...blobDir,
    ...sandboxHiddenPaths(env),
  ];
}

/** Where the claim check keeps big payloads ({@link blobStoreSetting}). */
export type BlobStoreSetting =
  { kind: 'none' } | { kind: 'dir'; root: string } | { kind: 's3'; url: string; endpoint?: string; region?: string };

/**
 * The claim check's store: `AGENT_JOBS_BLOB_STORE`, one of
 * - unset or empty: the directory `<data dir>/blobs`;
 * - `none` (any case): no claim check, every payload inline in history as before;
 * - `s3://<bucket>/<prefix>`: an S3-compatible bucket; `AGENT_JOBS_BLOB_S3_ENDPOINT` names a
 *   server other than AWS (`http://127.0.0.1:9000`, path-style), `AWS_REGION` its region
 *   (default `us-east-1`), credentials from the AWS SDK's chain (`AWS_ACCESS_KEY_ID`, ...);
 * - anything else: a directory (relative to the working directory).
 * Read only where encryption is on (src/codec/index.ts): with `AGENT_JOBS_CODEC_KEYS=none` there is no claim check.
 */
export function blobStoreSetting(env: NodeJS.ProcessEnv = process.env): BlobStoreSetting {
  const raw = env.AGENT_JOBS_BLOB_STORE?.trim() ?? '';
  if (raw === '') return { kind: 'dir', root: path.join(dataDir(env), 'blobs') };
  if (raw.toLowerCase() === 'none') return { kind: 'none' };
  if (raw.startsWith('s3://')) {
    const endpoint = env.AGENT_JOBS_BLOB_S3_ENDPOINT?.trim();
    const region = env.AWS_REGION?.trim();
    return { kind: 's3', url: raw, ...(endpoint ? { endpoint } : {}), ...(region ? { region } : {}) };
  }
  return { kind: 'dir', root: path.resolve(raw) };
}

/**
 * Size above which the claim check moves a payload to the store, in bytes of the encoded
 * payload: `AGENT_JOBS_BLOB_THRESHOLD`, a whole number of bytes, or with `KiB` / `MiB`
 * (`131072`, `128KiB`); unset or empty: `DEFAULT_BLOB_THRESHOLD_BYTES` (128 KiB, src/config.ts).
 * @throws Error naming the variable, the value and the range when it is not a size from 1 KiB to 512 KiB
 */
export function blobThresholdBytes(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.AGENT_JOBS_BLOB_THRESHOLD?.trim();
  if (raw === undefined || raw === '') return DEFAULT_BLOB_THRESHOLD_BYTES;
  const m = /^(\d+)\s*(KiB|MiB)?$/.exec(raw);
  const bytes = m ? Number(m[1]) * (m[2] === 'MiB' ? 1024 * 1024 : m[2] === 'KiB' ? 1024 : 1) : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < MIN_BLOB_THRESHOLD_BYTES || bytes > MAX_BLOB_THRESHOLD_BYTES)
    throw new Error(
      `AGENT_JOBS_BLOB_THRESHOLD must be a size in bytes (or KiB) from ${MIN_BLOB_THRESHOLD_BYTES} to ${MAX_BLOB_THRESHOLD_BYTES}, not ${JSON.stringify(raw)}`,
    );
  return bytes;
}

/**
 * Names of further environment variables the worker treats as secret:
 * removed from the bash environment and redacted from outputs.
 * `AGENT_JOBS_SECRET_ENV`, comma-separated, default none (ANTHROPIC_* and
 * TEMPORAL_* and names that look like keys or tokens are always secret).
 */
export function extraSecretEnvNames(env: NodeJS.ProcessEnv = process.env): string[] {
  return (env.AGENT_JOBS_SECRET_ENV ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
}

/**
 * Time limit of one Claude HTTP request in ms, after which the SDK aborts it
 * and the activity fails (retryably). `AGENT_JOBS_CLAUDE_TIMEOUT_MS`,
 * default `DEFAULT_CLAUDE_TIMEOUT_MS` (10 min, the SDK's own default).
 * @throws Error when the value is not a positive integer
 */
export function claudeTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return positiveMs(env, 'AGENT_JOBS_CLAUDE_TIMEOUT_MS', DEFAULT_CLAUDE_TIMEOUT_MS);
}

/**
 * Whether the worker may load the pre-built workflow bundle
 * (`dist/workflow-bundle.js`) rather than bundle the sources at start.
 * `AGENT_JOBS_WORKFLOW_BUNDLE=off` turns it off; default on.
 */
export function prebuiltWorkflowBundle(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.AGENT_JOBS_WORKFLOW_BUNDLE !== 'off';
}

/** Every SDK `LogLevel`, once each (a `Record` over the type, so a level the SDK adds or drops fails the typecheck). */
const SDK_LOG_LEVELS: Record<LogLevel, true> = { TRACE: true, DEBUG: true, INFO: true, WARN: true, ERROR: true };

/** The values `AGENT_JOBS_LOG_LEVEL` accepts (any case): the SDK's `LogLevel`s, most verbose first. */
export const LOG_LEVELS = Object.keys(SDK_LOG_LEVELS) as readonly LogLevel[];

/** Worker log level when `AGENT_JOBS_LOG_LEVEL` is unset. */
export const DEFAULT_LOG_LEVEL: LogLevel = 'INFO';

/**
 * Worker log level: `AGENT_JOBS_LOG_LEVEL`, one of {@link LOG_LEVELS} in any
 * case, default {@link DEFAULT_LOG_LEVEL}.
 * @throws Error naming the variable, the value and the allowed values when the value is none of them
 */
export function logLevel(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const raw = env.AGENT_JOBS_LOG_LEVEL;
  if (raw === undefined || raw.trim() === '') return DEFAULT_LOG_LEVEL;
  const level = raw.trim().toUpperCase();
  if (!Object.hasOwn(SDK_LOG_LEVELS, level))
    throw new Error(`AGENT_JOBS_LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')} (any case), not ${JSON.stringify(raw)}`);
  return level as LogLevel;
}

/**
 * Idle limit of a model call in ms (see `CLAUDE_IDLE_TIMEOUT_MS`).
 * `AGENT_JOBS_CLAUDE_IDLE_TIMEOUT_MS`, default 90000.
 * @throws Error when the value is not a positive integer
 */
export function claudeIdleTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  return positiveMs(env, 'AGENT_JOBS_CLAUDE_IDLE_TIMEOUT_MS', CLAUDE_IDLE_TIMEOUT_MS);
}

/** Units `AGENT_JOBS_SHUTDOWN_GRACE` accepts, in ms each. */
const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/**
 * How long a worker told to stop (the first SIGTERM, SIGINT or SIGHUP) lets its
 * running commands finish before it kills them, in ms.
 * `AGENT_JOBS_SHUTDOWN_GRACE`: a whole number with a unit, `ms`, `s`, `m`
 * or `h` (`150s`, `5m`, `0s`: kill at once); unset or empty:
 * `DEFAULT_SHUTDOWN_GRACE_MS` (the default command timeout plus its slack,
 * 150 s; src/config.ts).
 * @throws Error naming the variable, the value and the form expected when it is anything else (a bare number too: its unit would be a guess), or the limit when it is over `MAX_SHUTDOWN_GRACE_MS` (about 596 h)
 */
export function shutdownGraceMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.AGENT_JOBS_SHUTDOWN_GRACE;
  if (raw === undefined || raw.trim() === '') return DEFAULT_SHUTDOWN_GRACE_MS;
  const m = /^(\d+)\s*(ms|s|m|h)$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : NaN;
  if (!Number.isSafeInteger(ms))
    throw new Error(
      `AGENT_JOBS_SHUTDOWN_GRACE must be a whole number with a unit (ms, s, m or h), e.g. 150s or 5m, not ${JSON.stringify(raw)}`,
    );
  if (ms > MAX_SHUTDOWN_GRACE_MS)
    throw new Error(
      `AGENT_JOBS_SHUTDOWN_GRACE must be at most ${MAX_SHUTDOWN_GRACE_MS} ms (about ${Math.floor(MAX_SHUTDOWN_GRACE_MS / 3_600_000)}h: the exit deadline is a Node timer of grace + ${SHUTDOWN_FORCE_TIME_MS} ms, and a longer timer fires at once), not ${JSON.stringify(raw)}`,
    );
  return ms;
}

/**
 * How long the CLI waits for a run's answer to an Update (`approve`, `say`,
 * `pause`, ...), in ms: `AGENT_JOBS_UPDATE_TIMEOUT`, a whole number with a
 * unit (`ms`, `s`, `m` or `h`: `30s`, `2m`); unset or empty: 30 s
 * (`UPDATE_DEADLINE_MS`, src/config.ts). A request that times out may still
 * be applied; the CLI says so and how to check.
 * @throws Error naming the variable, the value and the form expected when it is anything else, or 0
 */
export function updateTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const raw = env.AGENT_JOBS_UPDATE_TIMEOUT;
  if (raw === undefined || raw.trim() === '') return UPDATE_DEADLINE_MS;
  const m = /^(\d+)\s*(ms|s|m|h)$/.exec(raw.trim());
  const ms = m ? Number(m[1]) * DURATION_UNITS[m[2]!]! : NaN;
  if (!Number.isSafeInteger(ms) || ms < 1)
    throw new Error(
      `AGENT_JOBS_UPDATE_TIMEOUT must be a positive whole number with a unit (ms, s, m or h), e.g. 30s or 2m, not ${JSON.stringify(raw)}`,
    );
  return ms;
}

function positiveMs(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer (ms), not ${JSON.stringify(raw)}`);
  return Number(raw);
}

/**
 * The model table `start` resolves a run's `modelInfo` from: the built-in
 * table (src/contract/models.ts) with `AGENT_JOBS_MODELS` merged over it.
 * The variable holds JSON, inline when it starts with `{`, else the path
 * of a JSON file: `{"<model id>": {"contextWindow"?, "prices"?: {"input",
 * "output", "cacheWrite5m"?, "cacheWrite1h"?, "cacheRead"?} | null,
 * "cacheTtl1h"?}}`, prices in USD per million tokens (the cache prices
 * default to 1.25×, 2× and 0.1× the input price). Unset or empty: the
 * built-in table.
 * @throws Error naming the file or the variable and every problem (unreadable file, not JSON, bad field)
 */
export function modelTable(env: NodeJS.ProcessEnv = process.env): Record<string, ModelInfo> {
  const raw = env.AGENT_JOBS_MODELS?.trim();
  if (raw === undefined || raw === '') return { ...BUILTIN_MODELS };
  if (raw.startsWith('{')) return parseModelOverrides(raw, 'AGENT_JOBS_MODELS');
  let text: string;
  try {
    text = readFileSync(path.resolve(raw), 'utf8');
  } catch (err) {
    // Node's fs errors are Errors of another realm under jest: read the message by shape, not instanceof.
    const why = typeof err === 'object' && err !== null && 'message' in err ? String(err.message) : String(err);
    throw new Error(`AGENT_JOBS_MODELS names ${raw}, which cannot be read: ${why}`, {
      cause: err,
    });
  }
  return parseModelOverrides(text, `AGENT_JOBS_MODELS file ${raw}`);
}

/** What the machine lets this worker's sessions use, for {@link defaultMaxSessions}. */
export interface MachineCapacity {
  /** Physical memory, in bytes (`os.totalmem()`). */
  totalMemoryBytes: number;
  /**
   * Processes and threads (kernel tasks) the worker and its sessions may
   * have at once: the least of `kernel.pid_max`, `kernel.threads-max`, the
   * `pids.max` of the worker's cgroup and, for a worker that is not root,
   * its soft `RLIMIT_NPROC`. `Infinity` when none can be read.
   */
  maxTasks: number;
  /** Tasks one session may have at once (the session guard's `maxProcesses`, default 1024). */
  tasksPerSession: number;
}

/** A number from a /proc or /sys file (`max` and unreadable files are `Infinity`). */
function readLimit(file: string): number {
  try {
    const text = readFileSync(file, 'utf8').trim();
    return /^\d+$/.test(text) ? Number(text) : Infinity;
  } catch {
    return Infinity;
  }
}

/** The `pids.max` of this process's cgroup (v2, or the v1 pids hierarchy), `Infinity` when there is none. */
function cgroupPidsMax(): number {
  let lines: string[];
  try {
    lines = readFileSync('/proc/self/cgroup', 'utf8').trim().split('\n');
  } catch {
    return Infinity;
  }
  let least = Infinity;
  for (const line of lines) {
    const [, controllers, rel] = /^\d+:([^:]*):(.*)$/.exec(line) ?? [];
    if (rel === undefined) continue;
    if (controllers === '') least = Math.min(least, readLimit(path.join('/sys/fs/cgroup', rel, 'pids.max')));
    else if (controllers!.split(',').includes('pids'))
      least = Math.min(least, readLimit(path.join('/sys/fs/cgroup/pids', rel, 'pids.max')));
  }
  return least;
}

/** This process's soft `RLIMIT_NPROC` (`Max processes` in /proc/self/limits), `Infinity` when unlimited or unreadable. */
function softProcessLimit(): number {
  try {
    const m = /^Max processes\s+(\S+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m && /^\d+$/.test(m[1]!) ? Number(m[1]) : Infinity;
  } catch {
    return Infinity;
  }
}

/** Reads {@link MachineCapacity} of this machine and process. Throws nothing (what cannot be read does not limit). */
export function machineCapacity(): MachineCapacity {
  const isRoot = process.getuid?.() === 0;
  const maxTasks = Math.min(
    readLimit('/proc/sys/kernel/pid_max'),
    readLimit('/proc/sys/kernel/threads-max'),
    cgroupPidsMax(),
    // RLIMIT_NPROC does not apply to root (see src/session/limits.ts).
    isRoot ? Infinity : softProcessLimit(),
  );
  return { totalMemoryBytes: totalmem(), maxTasks, tasksPerSession: DEFAULT_LIMITS.maxProcesses };
}

/**
 * The session cap sized to the machine: the least of memory /
 * `SESSION_MEMORY_ALLOWANCE_BYTES` (256 MiB) and tasks / tasks per session
 * (so every session can reach its process limit at once without the
 * machine running out of pids), kept within `MIN_DEFAULT_MAX_SESSIONS` (4)
 * and `MAX_DEFAULT_MAX_SESSIONS` (200). All in src/config.ts, with why.
 * @returns a whole number of sessions
 */
export function defaultMaxSessions(machine: MachineCapacity): number {
  const byMemory = Math.floor(machine.totalMemoryBytes / SESSION_MEMORY_ALLOWANCE_BYTES);
  const byTasks = Math.floor(machine.maxTasks / machine.tasksPerSession);
  return Math.min(MAX_DEFAULT_MAX_SESSIONS, Math.max(MIN_DEFAULT_MAX_SESSIONS, Math.min(byMemory, byTasks)));
}

/** A worker's session cap and where it comes from. */
export interface MaxSessions {
  /** Bash sessions the worker holds at most (opening ones included). */
  max: number;
  /** Why that value, for the worker's start log: the variable, or the machine figures it was derived from. */
  from: string;
}

/**
 * How many bash sessions this worker process holds at most:
 * `AGENT_JOBS_MAX_SESSIONS`, a positive integer; unset or empty: sized to
 * the machine ({@link defaultMaxSessions}).
 * @param machine what the default is derived from @default {@link machineCapacity}()
 * @throws Error naming the variable and the value when it is not a positive integer
 */
export function maxSessions(env: NodeJS.ProcessEnv = process.env, machine: () => MachineCapacity = machineCapacity): MaxSessions {
  const raw = env.AGENT_JOBS_MAX_SESSIONS;
  if (raw === undefined || raw.trim() === '') {
    const m = machine();
    const mib = Math.round(m.totalMemoryBytes / 1024 ** 2);
    const tasks = Number.isFinite(m.maxTasks) ? String(m.maxTasks) : 'no';
    return {
      max: defaultMaxSessions(m),
      from: `sized to the machine: ${mib} MiB of memory at ${SESSION_MEMORY_ALLOWANCE_BYTES / 1024 ** 2} MiB a session, ${tasks} task limit at ${m.tasksPerSession} a session, between ${MIN_DEFAULT_MAX_SESSIONS} and ${MAX_DEFAULT_MAX_SESSIONS}; set AGENT_JOBS_MAX_SESSIONS to choose`,
    };
  }
  const text = raw.trim();
  if (!/^\d+$/.test(text) || Number(text) < 1 || !Number.isSafeInteger(Number(text)))
    throw new Error(`AGENT_JOBS_MAX_SESSIONS must be a positive integer (bash sessions per worker process), not ${JSON.stringify(raw)}`);
  return { max: Number(text), from: 'AGENT_JOBS_MAX_SESSIONS' };
}

/** This worker process's id: `AGENT_JOBS_WORKER_ID`, default `<host>-<pid>-<6 hex>` (unique per process, so a restarted process gets a fresh session queue). */
export function workerId(env: NodeJS.ProcessEnv = process.env): string {
  return env.AGENT_JOBS_WORKER_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
}

/** Where Temporal is when nothing names it (no `TEMPORAL_ADDRESS`, no profile): a local server on its default port. */
export const DEFAULT_TEMPORAL_ADDRESS = 'localhost:7233';

/** Connection settings for Temporal, from `TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_API_KEY`, TLS variables and the envconfig TOML profile. */
export interface TemporalSettings {
  /** For `Connection.connect` (client). */
  connectionOptions: ConnectionOptions;
  /** For `NativeConnection.connect` (worker). */
  nativeConnectionOptions: NativeConnectionOptions;
  namespace: string;
  /** Address as configured (`localhost:7233` when nothing is set). */
  address: string;
}

/** Where {@link temporalSettings} reads from. */
export interface TemporalSettingsSource {
  /** Environment to read (`TEMPORAL_ADDRESS`, `TEMPORAL_NAMESPACE`, `TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`, ...). @default process.env */
  env?: NodeJS.ProcessEnv;
  /** Profile of the envconfig TOML file. @default `TEMPORAL_PROFILE`, else "default" */
  profile?: string;
}

/**
 * Loads the Temporal connection settings through `@temporalio/envconfig`
 * (the TOML profile, then the environment over it).
 * @throws Error when the config file named by `TEMPORAL_CONFIG_FILE` cannot be read or parsed
 */
export function temporalSettings(source: TemporalSettingsSource = {}): TemporalSettings {
  const env = source.env
    ? Object.fromEntries(Object.entries(source.env).filter((e): e is [string, string] => e[1] !== undefined))
    : undefined;
  const config = loadClientConnectConfig({
    ...(env ? { overrideEnvVars: env } : {}),
    ...(source.profile !== undefined ? { profile: source.profile } : {}),
  });
  const address = config.connectionOptions.address ?? DEFAULT_TEMPORAL_ADDRESS;
  return {
    connectionOptions: { ...config.connectionOptions, address },
    nativeConnectionOptions: { ...config.connectionOptions, address },
    namespace: config.namespace ?? 'default',
    address,
  };
}

/**
 * Base URL of the Temporal Web UI. `TEMPORAL_UI_URL` when set; otherwise,
 * for a local address, `http://localhost:<grpc port + 1000>` (the dev
 * server's default UI port); otherwise Temporal Cloud's UI.
 */
export function temporalUiUrl(address: string, env: NodeJS.ProcessEnv = process.env): string {
  if (env.TEMPORAL_UI_URL) return env.TEMPORAL_UI_URL.replace(/\/+$/, '');
  const match = /^(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d+)$/.exec(address);
  if (match) return `http://localhost:${Number(match[2]) + 1000}`;
  if (address.endsWith('.tmprl.cloud:7233')) return 'https://cloud.temporal.io';
  return `http://${address.replace(/:\d+$/, '')}:8233`;
}

/**
 * The local port {@link temporalUiUrl} derives the UI from (the gRPC port + 1000 of a local address), or null when the
 * URL is not derived so: `TEMPORAL_UI_URL` is set, or the address is not local (its UI is not probed).
 */
export function derivedLocalUiPort(address: string, env: NodeJS.ProcessEnv = process.env): number | null {
  if (env.TEMPORAL_UI_URL) return null;
  const match = /^(localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\]):(\d+)$/.exec(address);
  return match ? Number(match[2]) + 1000 : null;
}

/** Link to one run's page in the Temporal UI. */
export function workflowUiUrl(uiBase: string, namespace: string, workflowId: string, runId?: string): string {
  const ns = encodeURIComponent(namespace);
  const id = encodeURIComponent(workflowId);
  return runId ? `${uiBase}/namespaces/${ns}/workflows/${id}/${runId}/history` : `${uiBase}/namespaces/${ns}/workflows/${id}`;
}
