/**
 * The Temporal service a cluster test or bench runs against: the local
 * cluster of `npm run cluster` (two server processes on PostgreSQL), or a
 * dev server of its own (SQLite) to compare with. One shape for both, so the
 * cases and the benches do not care which it is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { startDevServerOnFreePort, startDevServer, type DevServer } from '../devserver';

/** What the server says about itself (WorkflowService `GetClusterInfo`). */
export interface ServerInfo {
  clusterName: string;
  serverVersion: string;
  /** The persistence store's name as the server reports it, e.g. `postgres12`, `sqlite`. */
  persistenceStore: string;
  visibilityStore: string;
  /** History shards. */
  historyShardCount: number;
}

/** A running Temporal service to test against. */
export interface Target {
  /** `cluster`: the project's local cluster; `dev-server`: `temporal server start-dev` with SQLite. */
  kind: 'cluster' | 'dev-server';
  /** Frontend addresses (`host:port`), one per server process, by index. */
  addresses: string[];
  namespace: string;
  /** Whether this process started it (and {@link close} stops it, unless kept). */
  startedHere: boolean;
  /** SIGKILLs server process `index` (a machine dying); resolves once it is gone. */
  killServer(index: number): Promise<void>;
  /** Starts server process `index` again after {@link killServer}; resolves once its frontend answers. */
  restartServer(index: number): Promise<void>;
  /** The server's own account of itself, asked through `addresses[0]`. */
  info(): Promise<ServerInfo>;
  /** Stops what this process started (nothing when it found the service running, or when `keep`). */
  close(options?: { keep?: boolean }): Promise<void>;
}

/**
 * `GetClusterInfo` of the frontend at `address`.
 * @throws Error when it does not answer within 10 s
 */
export async function serverInfo(address: string): Promise<ServerInfo> {
  const connection = await Connection.connect({ address, connectTimeout: 10_000 });
  try {
    const r = await connection.workflowService.getClusterInfo({});
    return {
      clusterName: r.clusterName ?? '',
      serverVersion: r.serverVersion ?? '',
      persistenceStore: r.persistenceStore ?? '',
      visibilityStore: r.visibilityStore ?? '',
      historyShardCount: r.historyShardCount ?? 0,
    };
  } finally {
    await connection.close();
  }
}

/**
 * A dev server of its own on a free port, its SQLite file in a temporary
 * folder (so {@link Target.restartServer} brings the runs back), headless.
 * Its one "server process" is index 0; {@link Target.killServer} SIGKILLs
 * its process group.
 * @throws TemporalCliMissingError without a Temporal CLI; Error when it does not start
 */
export async function devServerTarget(): Promise<Target> {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-target-'));
  const files = { headless: true, dbFile: path.join(dir, 'temporal.db'), logFile: path.join(dir, 'server.log') };
  let server: DevServer | null = await startDevServerOnFreePort(files);
  // A restart keeps the port: the workers and clients reconnect to the same address.
  const options = { ...files, port: server.port };
  const only = (index: number): void => {
    if (index !== 0) throw new RangeError(`a dev server has one server process (index 0), not ${index}`);
  };
  return {
    kind: 'dev-server',
    addresses: [server.address],
    namespace: 'default',
    startedHere: true,
    killServer: async (index) => {
      only(index);
      if (!server) return;
      const pid = server.pid;
      const stopped = server.stop();
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
      await stopped;
      server = null;
    },
    restartServer: async (index) => {
      only(index);
      if (server) await server.stop();
      server = await startDevServer(options);
    },
    info: () => serverInfo(`127.0.0.1:${options.port}`),
    close: async () => {
      await server?.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
