/**
 * `npm run cluster -- up | down | status`: the local Temporal cluster on
 * PostgreSQL (src/dev/cluster/index.ts). Progress goes to stderr, the result
 * to stdout (`--json`: one JSON document).
 */
import path from 'node:path';
import { Command } from 'commander';
import { SEARCH_ATTRIBUTES } from '../../config';
import { clusterDown, clusterStatus, clusterUp, type ClusterState, type ClusterStatus } from './index';
import { NAMESPACE_RETENTION_DAYS, SERVICES } from './constants';

function rel(p: string): string {
  return path.relative(process.cwd(), p) || p;
}

/** The text `up` prints: what runs where, and how to point the CLI and workers at it. */
export function describeUp(state: ClusterState): string {
  const [first] = state.servers;
  const lines = [
    `Temporal Server ${state.serverVersion} cluster "${state.clusterName}" on PostgreSQL ${state.postgres.version}, data in ${rel(state.clusterDir)}`,
    `  postgres  pid ${state.postgres.pid}  127.0.0.1:${state.postgres.port}  ${rel(state.postgres.dataDir)}${state.postgres.osUser ? `  (as ${state.postgres.osUser})` : ''}`,
    ...state.servers.map((s) => `  server ${s.index}  pid ${s.pid}  frontend ${s.frontendAddress}  log ${rel(s.logFile)}`),
    `  namespace ${state.namespace} (retention ${NAMESPACE_RETENTION_DAYS} days), search attributes ${SEARCH_ATTRIBUTES.map((a) => `${a.name}=${a.type}`).join(' ')}`,
    '',
    'Point the CLI and workers at it (either frontend serves the whole cluster):',
    `  export TEMPORAL_ADDRESS=${first?.frontendAddress ?? '?'} TEMPORAL_NAMESPACE=${state.namespace}`,
    '  npm run worker        # in another terminal',
    '  npx agent-jobs start --follow "your task"   # without a Claude key: the scripted model server, see docs/scripted-server.md',
    'Status: npm run cluster -- status    Stop: npm run cluster -- down',
  ];
  return lines.join('\n');
}

/** The text `status` prints. */
export function describeStatus(s: ClusterStatus): string {
  if (!s.recorded || !s.state) return 'no cluster is recorded as up (start one: npm run cluster -- up)';
  const lines = [`cluster: ${s.up ? 'up' : 'NOT fully up'} (${rel(s.state.clusterDir)})`];
  const pg = s.postgres!;
  lines.push(
    `  postgres  pid ${pg.pid}  127.0.0.1:${pg.port}  PostgreSQL ${pg.version}  ${pg.alive ? 'running' : `not running (${pg.why})`}`,
  );
  for (const srv of s.servers) {
    const state = srv.alive ? (srv.answers ? 'answers' : 'runs, frontend does not answer') : `not running (${srv.why})`;
    lines.push(`  server ${srv.index}  pid ${srv.pid}  frontend (gRPC) ${srv.frontendAddress}  ${state}`);
    for (const svc of SERVICES) {
      const addrs = srv.membership[svc];
      if (addrs) lines.push(`      ${svc.padEnd(8)} ring, as it logs it (gRPC addresses): ${addrs.join(', ')}`);
    }
  }
  if (s.clusterInfo) {
    const c = s.clusterInfo;
    lines.push(
      `GetClusterInfo (${c.askedAt}): server ${c.serverVersion}, cluster ${c.clusterName}, persistence ${c.persistenceStore}, visibility ${c.visibilityStore}, ${c.historyShardCount} history shards`,
    );
  } else lines.push('GetClusterInfo: no frontend answered');
  if (s.membership.length > 0) {
    lines.push('membership table in PostgreSQL (membership ports, not gRPC; last heartbeats):');
    for (const m of s.membership)
      lines.push(`  ${m.role.padEnd(8)} ${m.address.padEnd(16)} last heartbeat ${m.lastHeartbeat}${m.live ? '' : '  (stale)'}`);
  }
  return lines.join('\n');
}

function fail(err: unknown): void {
  const message = err instanceof Error ? err.message : String(err);
  process.stderr.write(`cluster: ${message}\n`);
  process.exitCode = 1;
}

/** Builds the `cluster` command line. */
export function program(): Command {
  const p = new Command('cluster').description('a local Temporal cluster on PostgreSQL: two server processes, one ring');
  const say = (line: string): void => void process.stderr.write(`${line}\n`);
  p.command('up')
    .description(
      'install what is missing, start PostgreSQL and two Temporal servers, register the namespace (does nothing when already up)',
    )
    .option('--json', 'print the state as JSON')
    .action(async (o: { json?: boolean }) => {
      const started = Date.now();
      const state = await clusterUp({ say });
      say(`up in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      process.stdout.write(o.json ? `${JSON.stringify(state, null, 2)}\n` : `${describeUp(state)}\n`);
    });
  p.command('status')
    .description(
      'what runs: PostgreSQL, each server, GetClusterInfo and the membership; exits 1 when PostgreSQL or a server is down or does not answer',
    )
    .option('--json', 'print the status as JSON')
    .action(async (o: { json?: boolean }) => {
      const s = await clusterStatus();
      process.stdout.write(o.json ? `${JSON.stringify(s, null, 2)}\n` : `${describeStatus(s)}\n`);
      if (!s.up) process.exitCode = 1;
    });
  p.command('down')
    .description('stop what up started (checked by pid and command line); the data stays unless --wipe')
    .option('--wipe', 'also delete the cluster folder: PostgreSQL data, configs and logs')
    .option('--json', 'print {"stopped": true, "wiped"} as JSON')
    .action(async (o: { wipe?: boolean; json?: boolean }) => {
      await clusterDown({ wipe: o.wipe === true, say });
      if (o.json) process.stdout.write(`${JSON.stringify({ stopped: true, wiped: o.wipe === true })}\n`);
    });
  return p;
}

/** Runs the command line; errors go to stderr with exit code 1. */
export async function main(argv: string[] = process.argv): Promise<void> {
  try {
    await program().parseAsync(argv);
  } catch (err) {
    fail(err);
  }
}

if (require.main === module) void main();
