/**
 * A real Temporal cluster on this machine, for tests and for users who
 * outgrow the dev server: PostgreSQL on a loopback port, and two Temporal
 * Server processes (each running frontend, history, matching and worker)
 * that form one ring through the same database. `npm run cluster -- up |
 * down | status` (src/dev/cluster/main.ts) is this module's command line.
 *
 * Everything lives in `<data>/cluster` (`AGENT_JOBS_DATA_DIR`): the state
 * record (`state.json`), the server configs, the logs and PostgreSQL's data.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { execa } from '../testing/exec';
import { SEARCH_ATTRIBUTES } from '../../config';
import { serverAnswers } from '../devserver';
import { ensureSearchAttributes } from '../../client';
import { allocateServerPorts, freeClusterPort, frontendAddress, portFree, portsOf, serverConfigYaml, type ServerPorts } from './config';
import {
  CLUSTER_NAME,
  CLUSTER_NAMESPACE,
  DATABASES,
  DB_USER,
  DYNAMIC_CONFIG_FILE,
  NAMESPACE_RETENTION_DAYS,
  SERVER_COUNT,
  SQL_PLUGIN,
  TEMPORAL_SERVER_VERSION,
  type ServiceName,
} from './constants';
import {
  initPostgres,
  isInitialised,
  postgresCommand,
  postgresIdentity,
  psql,
  startPostgres,
  stopPostgres,
  POSTGRES_OS_USER,
  type PostgresIdentity,
} from './postgres';
import { membershipFromLog, signalServer, spawnServer, waitForCluster, type MembershipView } from './servers';
import {
  clusterDir,
  postgresLiveness,
  readState,
  removeState,
  serverLiveness,
  stateFile,
  writeState,
  type ClusterServerState,
  type ClusterState,
} from './state';
import { ensurePostgres, ensureServerTools, findPostgres, installedServerTools, type PostgresTools, type ServerTools } from './tools';

export type { ClusterState, ClusterServerState, ClusterPostgresState } from './state';
export { TEMPORAL_SERVER_VERSION, CLUSTER_NAMESPACE, DYNAMIC_CONFIG_FILE } from './constants';

/** How long `up` and {@link restartServer} wait for the servers to answer and form one ring, in ms. */
export const CLUSTER_READY_TIMEOUT_MS = 120_000;

/** Options of {@link clusterUp}. */
export interface ClusterUpOptions {
  /** Progress lines for a person (what is installed, started, waited for). @default none */
  say?: (line: string) => void;
}

const quiet = (): void => {};

function passwordFile(dir: string): string {
  return path.join(dir, 'postgres.password');
}

/** The database password: made once (random, 24 characters) and kept in `<cluster dir>/postgres.password`, mode 0600. */
function databasePassword(dir: string): string {
  const file = passwordFile(dir);
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  const pw = randomBytes(18).toString('base64url');
  writeFileSync(file, `${pw}\n`, { mode: 0o600 });
  return pw;
}

/** Where `down` keeps the ports, so that the next `up` gives the same addresses when they are free. */
function portsFile(dir: string): string {
  return path.join(dir, 'ports.json');
}

/** The ports the last `down` recorded, or null. */
function lastPorts(dir: string): { postgres: number; servers: ServerPorts[] } | null {
  try {
    const p = JSON.parse(readFileSync(portsFile(dir), 'utf8')) as { postgres: number; servers: ServerPorts[] };
    return Number.isInteger(p.postgres) && Array.isArray(p.servers) ? p : null;
  } catch {
    return null;
  }
}

/** Whether every port is free on 127.0.0.1 right now. */
async function portsFree(ports: readonly number[]): Promise<boolean> {
  for (const port of ports) if (!(await portFree(port))) return false;
  return true;
}

/** The recorded state, or null when `up` has not run (or `down` removed it). Reads `<data>/cluster/state.json`. */
export function readClusterState(): ClusterState | null {
  return readState(stateFile(clusterDir()));
}

/**
 * Brings the cluster up, or confirms it is up: installs what is missing
 * (the pinned server and schema tool with `go install`, PostgreSQL from
 * Debian when root), starts PostgreSQL and sets up the `temporal` and
 * `temporal_visibility` schemas, starts the two server processes, waits
 * until both frontends answer and each process sees both in all four
 * rings, and registers the namespace and this project's search
 * attributes. Idempotent: what still runs (checked by pid and command
 * line) is kept; what is gone is started again, on the recorded ports when
 * they are free.
 * @returns the state, as also written to `state.json`
 * @throws ClusterToolMissingError when Go or PostgreSQL is missing and cannot be installed; Error naming the process and its log when something does not come up
 */
export async function clusterUp(options: ClusterUpOptions = {}): Promise<ClusterState> {
  const say = options.say ?? quiet;
  const dir = clusterDir();
  mkdirSync(dir, { recursive: true });
  const before = readState(stateFile(dir));
  const serverTools = await ensureServerTools(say);
  const pgTools = await ensurePostgres(say);
  const who = postgresIdentity();
  const password = databasePassword(dir);

  const pgLive = before ? postgresLiveness(before.postgres).alive : false;
  let liveServers = before ? before.servers.filter((s) => serverLiveness(s).alive) : [];
  if (before && pgLive && liveServers.length === SERVER_COUNT) {
    say('the cluster is already up');
    await registerNamespace(before, say);
    return before;
  }
  if (before && !pgLive && liveServers.length > 0) {
    say(`PostgreSQL is gone: stopping the ${liveServers.length} server process(es) still running, to start all again`);
    for (const s of liveServers) await signalServer(s, 'SIGTERM');
    liveServers = [];
  }

  const postgres = pgLive && before ? before.postgres : await bringUpPostgres(pgTools, dir, password, who, before, say);
  await setUpSchemas(serverTools, pgTools, postgres.port, password, say);

  const keep = new Map(liveServers.map((s) => [s.index, s]));
  let ports: ServerPorts[];
  const recorded = before?.servers.map((s) => s.ports) ?? lastPorts(dir)?.servers;
  if (recorded?.length === SERVER_COUNT && (keep.size > 0 || (await portsFree(portsOf(recorded))))) {
    ports = recorded;
  } else {
    ports = await allocateServerPorts(SERVER_COUNT, [postgres.port]);
  }

  const servers: ClusterServerState[] = [];
  const state: ClusterState = {
    version: 1,
    serverVersion: TEMPORAL_SERVER_VERSION,
    clusterDir: dir,
    namespace: CLUSTER_NAMESPACE,
    clusterName: CLUSTER_NAME,
    dynamicConfigFile: DYNAMIC_CONFIG_FILE,
    postgres,
    servers,
    updatedAt: new Date().toISOString(),
  };
  for (let index = 0; index < SERVER_COUNT; index++) {
    const kept = keep.get(index);
    if (kept) {
      say(`server ${index} still runs (pid ${kept.pid}, frontend ${kept.frontendAddress})`);
      servers.push(kept);
      continue;
    }
    const server = startServer({ dir, index, ports, postgres, password, binary: serverTools.server });
    servers.push(server);
    writeState(state);
    say(`started server ${index} (pid ${server.pid}, frontend ${server.frontendAddress}, log ${rel(server.logFile)})`);
    // One at a time: the first process on a new database creates the cluster's metadata and shards.
    await waitForCluster([server], CLUSTER_READY_TIMEOUT_MS);
  }
  say('waiting until both processes see each other in the frontend, history, matching and worker rings');
  await waitForCluster(servers, CLUSTER_READY_TIMEOUT_MS);
  await registerNamespace(state, say);
  state.updatedAt = new Date().toISOString();
  writeState(state);
  return state;
}

/**
 * Writes server `index`'s config (mode 0600: it holds the database
 * password) and starts it detached; does not wait for it.
 */
function startServer(o: {
  dir: string;
  index: number;
  ports: ServerPorts[];
  postgres: ClusterState['postgres'];
  password: string;
  binary: string;
}): ClusterServerState {
  const { dir, index, ports, postgres, password } = o;
  const configFile = path.join(dir, `server-${index}.yaml`);
  writeFileSync(
    configFile,
    serverConfigYaml(
      {
        ports: ports[index]!,
        postgresPort: postgres.port,
        postgresPassword: password,
        clusterRpcAddress: frontendAddress(ports[0]!),
        dynamicConfigFile: DYNAMIC_CONFIG_FILE,
      },
      index,
    ),
    { mode: 0o600 },
  );
  const logFile = path.join(dir, `server-${index}.log`);
  const started = spawnServer(o.binary, configFile, logFile);
  const server: ClusterServerState = {
    index,
    pid: started.pid,
    frontendAddress: frontendAddress(ports[index]!),
    ports: ports[index]!,
    configFile,
    logFile,
    logOffset: started.logOffset,
    commandLine: started.commandLine,
    startedAt: new Date().toISOString(),
  };
  return server;
}

function rel(p: string): string {
  return path.relative(process.cwd(), p) || p;
}

async function bringUpPostgres(
  tools: PostgresTools,
  dir: string,
  password: string,
  who: PostgresIdentity,
  before: ClusterState | null,
  say: (line: string) => void,
): Promise<ClusterState['postgres']> {
  const dataDir = path.join(dir, 'postgres');
  if (!isInitialised(dataDir)) {
    say(`initialising PostgreSQL ${tools.version} in ${rel(dataDir)}${who ? ` (runs as ${who.user}: PostgreSQL refuses root)` : ''}`);
    await initPostgres(tools, dataDir, password, who);
  }
  const previous = before?.postgres.port ?? lastPorts(dir)?.postgres;
  const port = previous && (await portsFree([previous])) ? previous : await freeClusterPort();
  const logFile = path.join(dir, 'postgres.log');
  const pid = await startPostgres(tools, { dataDir, port, password, logFile, who });
  say(`started PostgreSQL ${tools.version} (pid ${pid}, 127.0.0.1:${port}, log ${rel(logFile)})`);
  const [cmd, args] = postgresCommand(tools, dataDir, port, who);
  return {
    pid,
    port,
    dataDir,
    logFile,
    binDir: tools.binDir,
    version: tools.version,
    osUser: who ? POSTGRES_OS_USER : null,
    commandLine: [cmd, ...args],
  };
}

/**
 * Creates the two databases when missing and brings their schemas to the
 * server's version with the schema tool: `setup-schema -v 0.0` (creates
 * the version tables; skipped by the tool on a database past 0.0), then
 * `update-schema -d <versioned folder>` (a no-op when current).
 */
async function setUpSchemas(
  tools: ServerTools,
  pg: PostgresTools,
  port: number,
  password: string,
  say: (line: string) => void,
): Promise<void> {
  for (const db of DATABASES) {
    const base = ['--plugin', SQL_PLUGIN, '--ep', '127.0.0.1', '-p', String(port), '-u', DB_USER, '--db', db.name];
    // The schema tool reads the password from SQL_PASSWORD: kept off its command line.
    const run = async (args: string[]): Promise<void> => {
      const r = await execa(tools.sqlTool, [...base, ...args], {
        env: { ...process.env, SQL_PASSWORD: password },
        reject: false,
        all: true,
      });
      if (r.exitCode !== 0)
        throw new Error(`the schema tool failed: sql ${args.join(' ')} on ${db.name} (exit ${r.exitCode}):\n${(r.all ?? '').trim()}`);
    };
    const has = await psql(pg, { port, password, database: 'postgres' }, `SELECT 1 FROM pg_database WHERE datname = '${db.name}'`);
    if (has.length === 0) {
      say(`creating database ${db.name}`);
      await run(['create-database']);
    }
    await run(['setup-schema', '-v', '0.0']);
    await run(['update-schema', '-d', tools.schemaDirs[db.name]!]);
  }
  say(`schemas of ${DATABASES.map((d) => d.name).join(' and ')} are at Temporal Server ${TEMPORAL_SERVER_VERSION}'s version`);
}

/** Whether a gRPC error is ALREADY_EXISTS (code 6). */
function alreadyExists(err: unknown): boolean {
  return typeof err === 'object' && err !== null && (err as { code?: number }).code === 6;
}

/**
 * Registers the namespace (retention {@link NAMESPACE_RETENTION_DAYS} days)
 * and this project's search attributes when missing, then waits until
 * every frontend serves both (a frontend learns of a new namespace at its
 * next registry refresh, up to ~10 s later).
 */
async function registerNamespace(state: ClusterState, say: (line: string) => void): Promise<void> {
  const connection = await Connection.connect({ address: state.servers[0]!.frontendAddress, connectTimeout: 5_000 });
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace: state.namespace,
        workflowExecutionRetentionPeriod: msToTs(`${NAMESPACE_RETENTION_DAYS} days`),
        description: 'agent-jobs runs',
      });
      say(`registered namespace ${state.namespace} (retention ${NAMESPACE_RETENTION_DAYS} days)`);
    } catch (err) {
      if (!alreadyExists(err)) throw err;
    }
    const deadline = Date.now() + 60_000;
    let added: string[] | null = null;
    for (;;) {
      try {
        added ??= await ensureSearchAttributes(connection, state.namespace);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await sleep(500);
      }
    }
    if (added.length > 0) say(`added search attributes ${added.join(', ')}`);
  } finally {
    await connection.close();
  }
  await waitForNamespaceEverywhere(state, 60_000);
}

/** Waits until every frontend lists the namespace's workflows and reports all of SEARCH_ATTRIBUTES. */
async function waitForNamespaceEverywhere(state: ClusterState, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const s of state.servers) {
    let last: unknown;
    for (;;) {
      try {
        const c = await Connection.connect({ address: s.frontendAddress, connectTimeout: 2_000 });
        try {
          await c.workflowService.countWorkflowExecutions({ namespace: state.namespace });
          const sa = await c.operatorService.listSearchAttributes({ namespace: state.namespace });
          const have = Object.keys(sa.customAttributes ?? {});
          const missing = SEARCH_ATTRIBUTES.filter((a) => !have.includes(a.name)).map((a) => a.name);
          if (missing.length === 0) break;
          last = new Error(`search attributes ${missing.join(', ')} not listed yet`);
        } finally {
          await c.close();
        }
      } catch (err) {
        last = err;
      }
      if (Date.now() > deadline)
        throw new Error(
          `server ${s.index} (${s.frontendAddress}) does not serve namespace ${state.namespace}: ${String((last as Error)?.message ?? last)}`,
          {
            cause: last,
          },
        );
      await sleep(500);
    }
  }
}

/** What {@link clusterStatus} reports about one server process. */
export interface ServerStatus {
  index: number;
  pid: number;
  frontendAddress: string;
  /** Its process runs (pid and command line checked). */
  alive: boolean;
  /** Why it is not alive, when it is not. */
  why?: string;
  /** Its frontend answered GetSystemInfo just now. */
  answers: boolean;
  /** The members it last logged, by service (gRPC addresses). */
  membership: MembershipView;
  logFile: string;
  configFile: string;
}

/** A row of the `cluster_membership` table: a host the servers' heartbeats say is there. */
export interface MembershipRow {
  role: ServiceName | 'unknown';
  /** The host's membership address (`127.0.0.1:<membership port>`). */
  address: string;
  /** Its last heartbeat (ISO 8601, UTC). */
  lastHeartbeat: string;
  /** Heartbeat within the last 20 s, the server's own cutoff for a healthy host. */
  live: boolean;
}

/** GetClusterInfo as a frontend reports it. */
export interface ClusterInfo {
  /** The frontend asked. */
  askedAt: string;
  serverVersion: string;
  clusterName: string;
  clusterId: string;
  historyShardCount: number;
  /** e.g. `postgres12`. */
  persistenceStore: string;
  /** e.g. `postgres12`. */
  visibilityStore: string;
}

/** What {@link clusterStatus} returns. */
export interface ClusterStatus {
  /** Whether a record exists (`up` ran and `down` did not). */
  recorded: boolean;
  /** PostgreSQL and both servers alive and both frontends answering. */
  up: boolean;
  state: ClusterState | null;
  postgres: { pid: number; port: number; dataDir: string; version: string; alive: boolean; why?: string } | null;
  servers: ServerStatus[];
  /** From the first frontend that answered; null when none did. */
  clusterInfo: ClusterInfo | null;
  /** The database's membership table; empty when PostgreSQL is down. */
  membership: MembershipRow[];
}

const ROLES: Record<string, ServiceName> = { '1': 'frontend', '2': 'history', '3': 'matching', '4': 'worker' };

/**
 * What runs, checked now: PostgreSQL (pid, port, alive), each server (pid,
 * frontend, alive, answering, the membership it logged), GetClusterInfo
 * from a frontend that answers (server version, persistence and visibility
 * stores, cluster name, history shard count), and the membership table.
 * Never throws for a cluster that is down: it reports it.
 */
export async function clusterStatus(): Promise<ClusterStatus> {
  const state = readClusterState();
  if (!state) return { recorded: false, up: false, state: null, postgres: null, servers: [], clusterInfo: null, membership: [] };
  const pgLive = postgresLiveness(state.postgres);
  const servers: ServerStatus[] = [];
  for (const s of state.servers) {
    const live = serverLiveness(s);
    const answers = live.alive && (await serverAnswersFast(s.frontendAddress));
    servers.push({
      index: s.index,
      pid: s.pid,
      frontendAddress: s.frontendAddress,
      alive: live.alive,
      ...(live.why ? { why: live.why } : {}),
      answers,
      membership: live.alive ? membershipFromLog(s.logFile, s.logOffset) : {},
      logFile: s.logFile,
      configFile: s.configFile,
    });
  }
  let clusterInfo: ClusterInfo | null = null;
  for (const s of servers.filter((x) => x.answers)) {
    clusterInfo = await getClusterInfo(s.frontendAddress).catch(() => null);
    if (clusterInfo) break;
  }
  const membership = pgLive.alive ? await membershipRows(state).catch(() => []) : [];
  return {
    recorded: true,
    up: pgLive.alive && servers.length === SERVER_COUNT && servers.every((s) => s.alive && s.answers),
    state,
    postgres: {
      pid: state.postgres.pid,
      port: state.postgres.port,
      dataDir: state.postgres.dataDir,
      version: state.postgres.version,
      alive: pgLive.alive,
      ...(pgLive.why ? { why: pgLive.why } : {}),
    },
    servers,
    clusterInfo,
    membership,
  };
}

async function serverAnswersFast(address: string): Promise<boolean> {
  return serverAnswers(address, 1_500);
}

/**
 * GetClusterInfo of the frontend at `address`.
 * @throws Error when it does not answer
 */
export async function getClusterInfo(address: string): Promise<ClusterInfo> {
  const c = await Connection.connect({ address, connectTimeout: 2_000 });
  try {
    const r = await c.workflowService.getClusterInfo({});
    return {
      askedAt: address,
      serverVersion: r.serverVersion ?? '',
      clusterName: r.clusterName ?? '',
      clusterId: r.clusterId ?? '',
      historyShardCount: Number(r.historyShardCount ?? 0),
      persistenceStore: r.persistenceStore ?? '',
      visibilityStore: r.visibilityStore ?? '',
    };
  } finally {
    await c.close();
  }
}

async function membershipRows(state: ClusterState): Promise<MembershipRow[]> {
  const pg = await findPostgres();
  if (!pg) return [];
  const password = readFileSync(passwordFile(state.clusterDir), 'utf8').trim();
  const rows = await psql(
    pg,
    { port: state.postgres.port, password, database: DATABASES[0].name },
    `SELECT role, rpc_address, rpc_port, to_char(last_heartbeat, 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), (last_heartbeat > (now() at time zone 'utc') - interval '20 seconds') FROM cluster_membership ORDER BY role, rpc_port`,
  );
  return rows.map(([role, addr, port, hb, live]) => ({
    role: ROLES[role ?? ''] ?? 'unknown',
    address: `${addr}:${port}`,
    lastHeartbeat: hb ?? '',
    live: live === 't',
  }));
}

/** Options of {@link clusterDown}. */
export interface ClusterDownOptions {
  /** Also delete `<data>/cluster` (PostgreSQL's data, logs, configs). @default false */
  wipe?: boolean;
  say?: (line: string) => void;
}

/**
 * Stops what `up` started, and only that: each server whose recorded pid
 * still runs that server's command line (SIGTERM to its process group,
 * SIGKILL after 30 s), then PostgreSQL with `pg_ctl stop -m fast` when its
 * recorded pid is still the postmaster of its data folder. A record whose
 * pid names another process is reported and left alone. The data is kept
 * (the next `up` finds the runs again) unless `wipe`.
 * @throws Error when pg_ctl fails
 */
export async function clusterDown(options: ClusterDownOptions = {}): Promise<void> {
  const say = options.say ?? quiet;
  const dir = clusterDir();
  const state = readState(stateFile(dir));
  if (!state) say('no cluster is recorded as up');
  else {
    for (const s of state.servers) {
      const live = serverLiveness(s);
      if (live.alive) {
        await signalServer(s, 'SIGTERM');
        say(`stopped server ${s.index} (pid ${s.pid})`);
      } else say(`server ${s.index} was not running (${live.why})`);
    }
    const live = postgresLiveness(state.postgres);
    if (live.alive) {
      const pg = (await findPostgres()) ?? null;
      if (!pg) throw new Error(`PostgreSQL (pid ${state.postgres.pid}) runs but pg_ctl cannot be found in ${state.postgres.binDir}`);
      await stopPostgres(pg, state.postgres.dataDir, state.postgres.osUser ? postgresIdentity() : null);
      say(`stopped PostgreSQL (pid ${state.postgres.pid})`);
    } else say(`PostgreSQL was not running (${live.why})`);
    writeFileSync(portsFile(dir), `${JSON.stringify({ postgres: state.postgres.port, servers: state.servers.map((s) => s.ports) })}\n`);
    removeState(stateFile(dir));
  }
  if (options.wipe) {
    rmSync(dir, { recursive: true, force: true });
    say(`removed ${rel(dir)}`);
  }
}

function serverAt(state: ClusterState | null, index: number): ClusterServerState {
  if (!state) throw new Error('no cluster is up: run `npm run cluster -- up` first');
  const s = state.servers[index];
  if (!s) throw new Error(`the cluster has servers 0 to ${state.servers.length - 1}, not ${index}`);
  return s;
}

/**
 * Sends `signal` to server `index`'s process group (after checking the
 * recorded pid still runs that server) and waits until the process is gone
 * (a SIGTERM not obeyed within 30 s is followed by SIGKILL). The record
 * keeps its ports and config for {@link restartServer}.
 * @param signal @default 'SIGKILL' (a machine dying)
 * @throws Error when no cluster is recorded or there is no such server
 */
export async function killServer(index: number, signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
  await signalServer(serverAt(readClusterState(), index), signal);
}

/**
 * Starts server `index` again with its recorded ports and config (stopping
 * it first with SIGTERM when it still runs), and waits until its frontend
 * answers and both processes see each other in all four rings again.
 * @throws Error when no cluster is recorded, the tools are gone, or it does not rejoin within {@link CLUSTER_READY_TIMEOUT_MS}
 */
export async function restartServer(index: number): Promise<void> {
  const state = readClusterState();
  const s = serverAt(state, index);
  await signalServer(s, 'SIGTERM');
  const tools = installedServerTools();
  if (!tools) throw new Error('the Temporal server build is gone from .tools/: run `npm run cluster -- up`');
  const started = spawnServer(s.commandLine[0] ?? tools.server, s.configFile, s.logFile);
  const next: ClusterServerState = {
    ...s,
    pid: started.pid,
    logOffset: started.logOffset,
    commandLine: started.commandLine,
    startedAt: new Date().toISOString(),
  };
  state!.servers[index] = next;
  state!.updatedAt = next.startedAt;
  writeState(state!);
  await waitForCluster(
    state!.servers.filter((x) => x.index === index || serverLiveness(x).alive),
    CLUSTER_READY_TIMEOUT_MS,
  );
}
