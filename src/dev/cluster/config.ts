/**
 * The local cluster's server config files: which loopback ports each
 * server process uses, and the YAML the server reads (`server
 * --config-file <file> start`). Pure functions, no I/O but the free port
 * search.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { CLUSTER_NAME, DATABASES, DB_USER, NUM_HISTORY_SHARDS, SERVICES, SQL_PLUGIN, type ServiceName } from './constants';
import { toYaml, type YamlValue } from './yaml';

/** Every host listens on loopback only, and tells the other members this address. */
export const LOOPBACK = '127.0.0.1';

/** The two ports of one service of one server process: its gRPC port and its ringpop membership port. */
export interface ServicePorts {
  grpc: number;
  membership: number;
}

/** The ports of one server process, by service. */
export type ServerPorts = Record<ServiceName, ServicePorts>;

/** Everything that differs between the server processes and the PostgreSQL they share. */
export interface ServerConfigInput {
  /** This process's ports. */
  ports: ServerPorts;
  /** PostgreSQL's port on {@link LOOPBACK}. */
  postgresPort: number;
  /** The password of {@link DB_USER}. */
  postgresPassword: string;
  /** Frontend address of server 0 (`host:port`), the cluster's rpc address in its metadata. */
  clusterRpcAddress: string;
  /** Absolute path of the dynamic config file. */
  dynamicConfigFile: string;
  /** Server log level; `info` is needed for the membership lines `up` waits on. @default 'info' */
  logLevel?: 'debug' | 'info' | 'warn' | 'error';
}

/**
 * The range cluster ports are picked from: 20000 up to 32767 (or the
 * ephemeral range's start, if lower). Two reasons: the server stores a
 * host's membership port in `cluster_membership.rpc_port`, a SMALLINT
 * (a port above 32767 fails its first heartbeat and the server exits), and
 * the kernel hands out ephemeral ports (`ip_local_port_range`, 32768 and
 * up here) to outgoing connections, which could take a server's port while
 * it restarts.
 */
export function clusterPortRange(): { low: number; high: number } {
  let ephemeralLow = 32768;
  try {
    const first = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(first) && first > 20001) ephemeralLow = first;
  } catch {
    /* not Linux: the usual range */
  }
  return { low: 20000, high: Math.min(32767, ephemeralLow - 1) };
}

/** Whether `port` can be bound on 127.0.0.1 right now. */
export function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, LOOPBACK, () => srv.close(() => resolve(true)));
  });
}

/**
 * A port of {@link clusterPortRange} that is free on 127.0.0.1 and not in
 * `taken` (which it is added to).
 * @throws Error after 1000 tries without one
 */
export async function freeClusterPort(taken: Set<number> = new Set()): Promise<number> {
  const { low, high } = clusterPortRange();
  for (let i = 0; i < 1000; i++) {
    const p = low + Math.floor(Math.random() * (high - low + 1));
    if (taken.has(p) || !(await portFree(p))) continue;
    taken.add(p);
    return p;
  }
  throw new Error(`no free port between ${low} and ${high} on ${LOOPBACK}`);
}

/**
 * Picks distinct free loopback ports for `servers` server processes (a
 * gRPC and a membership port per service each) from
 * {@link clusterPortRange}, none of them in `avoid`. Ports are free when
 * picked; another program may take one before the server binds it, which
 * the server then reports in its log.
 * @returns one {@link ServerPorts} per server
 */
export async function allocateServerPorts(servers: number, avoid: Iterable<number> = []): Promise<ServerPorts[]> {
  const taken = new Set<number>(avoid);
  const all: ServerPorts[] = [];
  for (let i = 0; i < servers; i++) {
    const ports = {} as ServerPorts;
    for (const s of SERVICES) ports[s] = { grpc: await freeClusterPort(taken), membership: await freeClusterPort(taken) };
    all.push(ports);
  }
  return all;
}

/** Every port of these servers, in order (service by service, gRPC before membership). */
export function portsOf(servers: readonly ServerPorts[]): number[] {
  return servers.flatMap((p) => SERVICES.flatMap((s) => [p[s].grpc, p[s].membership]));
}

/** The frontend address (`127.0.0.1:<grpc port>`) of a server with these ports. */
export function frontendAddress(ports: ServerPorts): string {
  return `${LOOPBACK}:${ports.frontend.grpc}`;
}

/**
 * The config of one server process, as the object {@link serverConfigYaml}
 * writes: persistence and visibility on the shared PostgreSQL
 * (`postgres12`), ringpop membership on loopback (the processes find each
 * other through the `cluster_membership` table of that database), the four
 * services on this process's ports with HTTP and pprof off, a
 * single-cluster metadata, and the dynamic config file.
 */
export function serverConfig(input: ServerConfigInput): { [key: string]: YamlValue } {
  const [main, visibility] = DATABASES;
  const store = (databaseName: string, maxConns: number): YamlValue => ({
    sql: {
      pluginName: SQL_PLUGIN,
      databaseName,
      connectAddr: `${LOOPBACK}:${input.postgresPort}`,
      connectProtocol: 'tcp',
      user: DB_USER,
      password: input.postgresPassword,
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const services: { [key: string]: YamlValue } = {};
  for (const s of SERVICES) {
    services[s] = { rpc: { grpcPort: input.ports[s].grpc, membershipPort: input.ports[s].membership, bindOnLocalHost: true } };
  }
  return {
    log: { stdout: true, level: input.logLevel ?? 'info' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: NUM_HISTORY_SHARDS,
      datastores: { 'postgres-default': store(main.name, 20), 'postgres-visibility': store(visibility.name, 10) },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: LOOPBACK },
      pprof: { port: 0 },
    },
    services,
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: CLUSTER_NAME,
      currentClusterName: CLUSTER_NAME,
      clusterInformation: {
        [CLUSTER_NAME]: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: input.clusterRpcAddress },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    dynamicConfigClient: { filepath: input.dynamicConfigFile, pollInterval: '10s' },
  };
}

/** {@link serverConfig} as the YAML file the server reads, with a header saying who wrote it. */
export function serverConfigYaml(input: ServerConfigInput, index: number): string {
  return toYaml(serverConfig(input), [
    `Temporal server ${index} of the local cluster, written by \`npm run cluster -- up\` (src/dev/cluster/config.ts).`,
    'Rewritten on every up: edit src/dev/cluster/config.ts, not this file. It holds the database password.',
  ]);
}
