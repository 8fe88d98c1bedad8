/**
 * The local Temporal cluster on PostgreSQL (src/dev/cluster) end to end, in a
 * data folder of its own: `up` builds what is missing, starts PostgreSQL
 * and two server processes; `status` reports PostgreSQL as the store and
 * both hosts in every ring; an agent run started through the CLI completes
 * on a worker connected to server 0; server 1 is SIGKILLed and restarted
 * while a second run goes on; `down` leaves no process behind.
 *
 * A slow suite (test/slow-suites.js): `npm test` leaves it out, .ci/run runs
 * it after (AGENT_JOBS_SLOW_TESTS=only), where Go (or an already built server
 * in .tools/) and PostgreSQL are installed; otherwise it is skipped and says why.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  clusterDown,
  clusterStatus,
  clusterUp,
  killServer,
  readClusterState,
  restartServer,
  type ClusterState,
} from '../../src/dev/cluster';
import { DYNAMIC_CONFIG_FILE, TEMPORAL_SERVER_VERSION } from '../../src/dev/cluster/constants';
import { installedServerTools } from '../../src/dev/cluster/tools';
import { SEARCH_ATTRIBUTES } from '../../src/config';
import { Connection } from '@temporalio/client';
import { cli } from './cli-process';
import { TestBed, toolUse } from './harness';

function hasGoOrServer(): boolean {
  if (installedServerTools()) return true;
  if (existsSync('/usr/local/go/bin/go')) return true;
  try {
    execFileSync('bash', ['-c', 'command -v go'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

function hasPostgres(): boolean {
  try {
    execFileSync('bash', ['-c', 'command -v postgres'], { stdio: 'ignore' });
    return true;
  } catch {
    return (
      existsSync('/usr/lib/postgresql') &&
      readdirSync('/usr/lib/postgresql').some((m) => existsSync(`/usr/lib/postgresql/${m}/bin/postgres`))
    );
  }
}

// A slow suite (it builds the Temporal server from Go: 6 min on a quiet machine, 24 loaded): test/slow-suites.js leaves
// it out of `npm test`; .ci/run runs it after.
const available = hasGoOrServer() && hasPostgres();
if (!available) console.warn('cluster.test.ts skipped: it needs Go (or a server built in .tools/temporal-server) and PostgreSQL');
const describeIfTools = available ? describe : describe.skip;

/** Pids of processes whose command line mentions `text`. */
function processesMentioning(text: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes(text)) found.push(Number(entry));
    } catch {
      /* gone */
    }
  }
  return found;
}

describeIfTools('a Temporal cluster on PostgreSQL (runs only where Go and PostgreSQL are installed)', () => {
  let dataDir: string;
  let saved: string | undefined;
  let state: ClusterState;
  let upSeconds = 0;
  const lines: string[] = [];

  beforeAll(async () => {
    saved = process.env.AGENT_JOBS_DATA_DIR;
    dataDir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-cluster-'));
    // A data folder PostgreSQL's own user can reach when this runs as root.
    execFileSync('chmod', ['755', dataDir]);
    process.env.AGENT_JOBS_DATA_DIR = dataDir;
    const started = Date.now();
    state = await clusterUp({ say: (l) => lines.push(l) });
    upSeconds = (Date.now() - started) / 1000;
  }, 30 * 60_000);

  afterAll(async () => {
    try {
      await clusterDown({ wipe: true });
    } finally {
      if (saved === undefined) delete process.env.AGENT_JOBS_DATA_DIR;
      else process.env.AGENT_JOBS_DATA_DIR = saved;
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);

  test('up starts PostgreSQL and two servers in one ring; status reports PostgreSQL and both hosts; a second up keeps them', async () => {
    console.log(`cluster up from a fresh data folder in ${upSeconds.toFixed(1)} s:\n${lines.join('\n')}`);
    expect(state.servers).toHaveLength(2);
    expect(state.servers[0]!.frontendAddress).not.toBe(state.servers[1]!.frontendAddress);
    const status = await clusterStatus();
    expect(status.up).toBe(true);
    expect(status.postgres).toMatchObject({ alive: true, port: state.postgres.port });
    expect(status.clusterInfo).toMatchObject({
      serverVersion: TEMPORAL_SERVER_VERSION,
      persistenceStore: 'postgres12',
      visibilityStore: 'postgres12',
      clusterName: 'active',
      historyShardCount: 4,
    });
    for (const s of status.servers) {
      expect(s).toMatchObject({ alive: true, answers: true });
      for (const svc of ['frontend', 'history', 'matching', 'worker'] as const) expect(s.membership[svc]).toHaveLength(2);
    }
    // The heartbeats in PostgreSQL: 2 processes × 4 services, all live.
    expect(status.membership.filter((m) => m.live)).toHaveLength(8);

    for (const s of state.servers) {
      const c = await Connection.connect({ address: s.frontendAddress });
      try {
        const sa = await c.operatorService.listSearchAttributes({ namespace: 'default' });
        for (const a of SEARCH_ATTRIBUTES) expect(Object.keys(sa.customAttributes ?? {})).toContain(a.name);
      } finally {
        await c.close();
      }
    }

    const again: string[] = [];
    const same = await clusterUp({ say: (l) => again.push(l) });
    expect(again.join('\n')).toContain('already up');
    expect(same.servers.map((s) => s.pid)).toEqual(state.servers.map((s) => s.pid));
    expect(same.postgres.pid).toBe(state.postgres.pid);

    // The dynamic config file both the cluster and docker-compose.yml use holds only keys this server knows.
    const check = execFileSync(installedServerTools()!.server, ['validate-dynamic-config', DYNAMIC_CONFIG_FILE], { encoding: 'utf8' });
    expect(check).not.toMatch(/error|warning/);
  });

  test('runs complete through the CLI on the cluster, also while server 1 is SIGKILLed and restarted', async () => {
    const address = state.servers[0]!.frontendAddress;
    const bed = await TestBed.create({
      address,
      script: {
        responses: [
          { content: [toolUse('toolu_1', 'echo one; sleep 1')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_2', 'echo two; sleep 1')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_3', 'echo three; sleep 1')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'Done on the cluster.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    try {
      const first = await cli(address, 'start', '--approval', 'auto', '--id', 'cluster-run-1', '--follow', 'count to three');
      expect(first.stderr).toBe('');
      expect(first.code).toBe(0);
      expect(first.stdout).toContain('Done on the cluster.');

      // A second run; server 1 dies mid-run and comes back.
      const started = await cli(address, 'start', '--approval', 'auto', '--id', 'cluster-run-2', '--json', 'count again');
      expect(started.code).toBe(0);
      await killServer(1, 'SIGKILL');
      expect((await clusterStatus()).servers[1]).toMatchObject({ alive: false });
      const t0 = Date.now();
      await restartServer(1);
      console.log(`server 1 restarted and rejoined in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
      const result = await bed.client.workflow.getHandle('cluster-run-2').result();
      expect(result).toMatchObject({ status: 'completed', text: 'Done on the cluster.', turns: 4 });
      const after = await clusterStatus();
      expect(after.up).toBe(true);
      expect(readClusterState()!.servers[1]!.pid).not.toBe(state.servers[1]!.pid);
      for (const s of after.servers) expect(s.membership.history).toHaveLength(2);
      // Through server 1's frontend too, now that it is back.
      const viaOne = await cli(after.servers[1]!.frontendAddress, 'status', 'cluster-run-2', '--json');
      expect(JSON.parse(viaOne.stdout)).toMatchObject({ status: 'completed' });
    } finally {
      await bed.close();
    }
  });

  const asRoot = typeof process.getuid === 'function' && process.getuid() === 0 ? test : test.skip;
  asRoot("as root, a data folder PostgreSQL's user cannot reach is refused with the folder to open (runs as root only)", async () => {
    const closed = mkdtempSync(path.join(tmpdir(), 'agent-jobs-closed-'));
    execFileSync('chmod', ['700', closed]);
    const here = process.env.AGENT_JOBS_DATA_DIR;
    process.env.AGENT_JOBS_DATA_DIR = path.join(closed, 'data');
    try {
      await expect(clusterUp()).rejects.toThrow(`${closed} is closed to other users`);
    } finally {
      process.env.AGENT_JOBS_DATA_DIR = here;
      rmSync(closed, { recursive: true, force: true });
    }
  });

  test('down stops everything up started and nothing else', async () => {
    const dir = readClusterState()!.clusterDir;
    expect(processesMentioning(dir).length).toBeGreaterThanOrEqual(3);
    await clusterDown();
    expect(processesMentioning(dir)).toEqual([]);
    expect(readClusterState()).toBeNull();
    expect(existsSync(path.join(dir, 'postgres', 'PG_VERSION'))).toBe(true);
  });
});
