/**
 * The local cluster's record of what `up` started (`<data>/cluster/state.json`)
 * and the checks that a recorded pid is still that process: a record can
 * outlive its processes (a reboot, a kill), and a pid then names any
 * process, or none.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { commandLineOf, processExists } from '../devserver';
import { dataDir } from '../../settings';
import type { ServerPorts } from './config';
import { isPostgresCommandLine, postmasterPid } from './postgres';

/** The folder of everything the cluster keeps: `<data>/cluster` (`AGENT_JOBS_DATA_DIR`, default `./data`). */
export function clusterDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(dataDir(env), 'cluster');
}

/** The state file: `<cluster dir>/state.json`. */
export function stateFile(dir: string = clusterDir()): string {
  return path.join(dir, 'state.json');
}

/** One Temporal server process of the cluster, as `up` started it. */
export interface ClusterServerState {
  /** 0 or 1. */
  index: number;
  /** Its pid (it leads its own process group). */
  pid: number;
  /** `127.0.0.1:<port>`: point TEMPORAL_ADDRESS here. */
  frontendAddress: string;
  /** Its gRPC and membership ports, by service. */
  ports: ServerPorts;
  /** Its config file (YAML, mode 0600: it holds the database password). */
  configFile: string;
  /** Its log (JSON lines, appended across restarts). */
  logFile: string;
  /** Size of the log, in bytes, when this process started: its own lines follow. */
  logOffset: number;
  /** The command line it was started with. */
  commandLine: string[];
  /** When it was started (ISO 8601). */
  startedAt: string;
}

/** The cluster's PostgreSQL, as `up` started it. */
export interface ClusterPostgresState {
  /** The postmaster's pid. */
  pid: number;
  /** Its port on 127.0.0.1. */
  port: number;
  /** Its data folder. */
  dataDir: string;
  /** Its log. */
  logFile: string;
  /** The folder of its programs (`postgres`, `pg_ctl`, `psql`). */
  binDir: string;
  /** Its version, e.g. `15.18`. */
  version: string;
  /** The OS user it runs as, or null for the user who ran `up`. */
  osUser: string | null;
  /** The command line it was started with. */
  commandLine: string[];
}

/** What `up` started: the record in `state.json`, and what {@link clusterUp} returns. */
export interface ClusterState {
  /** Format of this record. */
  version: 1;
  /** Temporal Server version of the servers. */
  serverVersion: string;
  /** The cluster's folder (state, configs, logs, PostgreSQL data). */
  clusterDir: string;
  /** The namespace `up` registered. */
  namespace: string;
  /** The cluster's name, as GetClusterInfo reports it. */
  clusterName: string;
  /** The dynamic config file both servers read. */
  dynamicConfigFile: string;
  postgres: ClusterPostgresState;
  /** The server processes, by index. */
  servers: ClusterServerState[];
  /** When `up` last started something (ISO 8601). */
  updatedAt: string;
}

/**
 * The recorded state, or null when there is none (or it cannot be read as
 * one: a broken file is treated as no record, and `up` writes a new one).
 */
export function readState(file: string = stateFile()): ClusterState | null {
  if (!existsSync(file)) return null;
  try {
    const s = JSON.parse(readFileSync(file, 'utf8')) as ClusterState;
    return s && s.version === 1 && Array.isArray(s.servers) && typeof s.postgres === 'object' ? s : null;
  } catch {
    return null;
  }
}

/** Writes the state file atomically (a temporary file renamed over it). */
export function writeState(state: ClusterState, file: string = stateFile(state.clusterDir)): void {
  mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.${process.pid}.tmp`;
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`);
  renameSync(tmp, file);
}

/** Removes the state file (after `down`). */
export function removeState(file: string = stateFile()): void {
  rmSync(file, { force: true });
}

/** Whether a live process is what a record says it is; `why` says what it is instead when not. */
export interface Liveness {
  alive: boolean;
  why?: string;
}

function describe(pid: number, argv: string[]): string {
  const shown = argv.length > 0 ? argv.join(' ') : '(no command line: a zombie or a kernel thread)';
  return `pid ${pid} runs ${shown.length > 120 ? `${shown.slice(0, 120)}…` : shown}`;
}

/**
 * Whether `argv` is the server process of this record: the same binary
 * and `--config-file <its config> start`.
 */
export function isServerCommandLine(argv: readonly string[], server: Pick<ClusterServerState, 'commandLine' | 'configFile'>): boolean {
  const i = argv.indexOf('--config-file');
  return argv[0] === server.commandLine[0] && i >= 0 && argv[i + 1] === server.configFile && argv.includes('start');
}

/**
 * Whether the recorded server process still runs: its pid exists and its
 * command line (`/proc/<pid>/cmdline`) is that server's. Where there is no
 * `/proc` the pid's existence is all there is to go on.
 */
export function serverLiveness(server: ClusterServerState): Liveness {
  if (!Number.isSafeInteger(server.pid) || server.pid <= 0) return { alive: false, why: 'no pid recorded' };
  if (!processExists(server.pid)) return { alive: false, why: `pid ${server.pid} is not running` };
  const argv = commandLineOf(server.pid);
  if (argv === null) return { alive: true };
  return isServerCommandLine(argv, server) ? { alive: true } : { alive: false, why: describe(server.pid, argv) };
}

/**
 * Whether the recorded PostgreSQL still runs: its pid exists, its command
 * line is `postgres -D <its data folder>`, and its `postmaster.pid` names
 * that pid.
 */
export function postgresLiveness(pg: ClusterPostgresState): Liveness {
  if (!Number.isSafeInteger(pg.pid) || pg.pid <= 0) return { alive: false, why: 'no pid recorded' };
  if (!processExists(pg.pid)) return { alive: false, why: `pid ${pg.pid} is not running` };
  const argv = commandLineOf(pg.pid);
  if (argv !== null && !isPostgresCommandLine(argv, pg.dataDir)) return { alive: false, why: describe(pg.pid, argv) };
  const recorded = postmasterPid(pg.dataDir);
  if (recorded !== pg.pid) return { alive: false, why: `postmaster.pid names ${recorded ?? 'no pid'}, not ${pg.pid}` };
  return { alive: true };
}
