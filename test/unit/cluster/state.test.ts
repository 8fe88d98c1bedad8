/**
 * The cluster's state record and the checks that a recorded pid is still
 * the process `up` started: a pid that is gone, or that now names another
 * program, counts as not running, and `down` signals nothing it did not
 * start (an attacker's record pointing at an unrelated process).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { clusterDown, clusterStatus, readClusterState } from '../../../src/dev/cluster';
import {
  isServerCommandLine,
  postgresLiveness,
  readState,
  serverLiveness,
  stateFile,
  writeState,
  type ClusterState,
} from '../../../src/dev/cluster/state';
import { isPostgresCommandLine } from '../../../src/dev/cluster/postgres';

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** A live child process that is not a Temporal server nor PostgreSQL. */
function sleeper(args: string[] = ['-e', 'setTimeout(() => {}, 60000)']): ChildProcess {
  const c = spawn(process.execPath, args, { stdio: 'ignore' });
  children.push(c);
  return c;
}

async function deadPid(): Promise<number> {
  const c = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' });
  await new Promise((r) => c.once('exit', r));
  return c.pid!;
}

let dir: string;
let savedDataDir: string | undefined;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cluster-state-'));
  savedDataDir = process.env.AGENT_JOBS_DATA_DIR;
  process.env.AGENT_JOBS_DATA_DIR = dir;
});
afterEach(() => {
  if (savedDataDir === undefined) delete process.env.AGENT_JOBS_DATA_DIR;
  else process.env.AGENT_JOBS_DATA_DIR = savedDataDir;
  rmSync(dir, { recursive: true, force: true });
});

function record(clusterDir: string, pids: { pg: number; s0: number; s1: number }): ClusterState {
  const ports = { grpc: 1, membership: 2 };
  const server = (index: number, pid: number): ClusterState['servers'][number] => ({
    index,
    pid,
    frontendAddress: `127.0.0.1:${40000 + index}`,
    ports: { frontend: ports, history: ports, matching: ports, worker: ports },
    configFile: path.join(clusterDir, `server-${index}.yaml`),
    logFile: path.join(clusterDir, `server-${index}.log`),
    logOffset: 0,
    commandLine: ['/nonexistent/server', '--config-file', path.join(clusterDir, `server-${index}.yaml`), '--allow-no-auth', 'start'],
    startedAt: new Date().toISOString(),
  });
  return {
    version: 1,
    serverVersion: '1.32.1',
    clusterDir,
    namespace: 'default',
    clusterName: 'active',
    dynamicConfigFile: '/x.yaml',
    postgres: {
      pid: pids.pg,
      port: 1,
      dataDir: path.join(clusterDir, 'postgres'),
      logFile: path.join(clusterDir, 'postgres.log'),
      binDir: '/nonexistent',
      version: '15',
      osUser: null,
      commandLine: ['/nonexistent/postgres', '-D', path.join(clusterDir, 'postgres')],
    },
    servers: [server(0, pids.s0), server(1, pids.s1)],
    updatedAt: new Date().toISOString(),
  };
}

describe('the state file', () => {
  test('round-trips; a missing, broken or foreign file reads as no record', () => {
    const cdir = path.join(dir, 'cluster');
    expect(readClusterState()).toBeNull();
    const s = record(cdir, { pg: 1, s0: 1, s1: 1 });
    writeState(s);
    expect(readClusterState()).toEqual(s);
    writeFileSync(stateFile(cdir), '{not json');
    expect(readState(stateFile(cdir))).toBeNull();
    writeFileSync(stateFile(cdir), JSON.stringify({ version: 2, servers: [] }));
    expect(readState(stateFile(cdir))).toBeNull();
  });
});

describe('liveness', () => {
  test('a server record is alive only while its pid runs the server binary with its config file', async () => {
    const cdir = path.join(dir, 'cluster');
    const config = path.join(cdir, 'server-0.yaml');
    const fake = sleeper(['-e', 'setTimeout(() => {}, 60000)', '--', '--config-file', config, 'start']);
    const s = record(cdir, { pg: 1, s0: fake.pid!, s1: 1 }).servers[0]!;
    s.commandLine = [process.execPath, '--config-file', config, 'start'];
    // The same argv[0], --config-file <its file> and start: the recorded server.
    expect(serverLiveness(s)).toEqual({ alive: true });
    // Another config file: another server.
    expect(serverLiveness({ ...s, configFile: path.join(cdir, 'server-1.yaml') })).toMatchObject({
      alive: false,
      why: expect.stringContaining('runs'),
    });
    fake.kill('SIGKILL');
    await new Promise((r) => fake.once('exit', r));
    expect(serverLiveness(s)).toMatchObject({ alive: false, why: expect.stringMatching(/not running|runs/) });
    expect(serverLiveness({ ...s, pid: await deadPid() })).toMatchObject({ alive: false, why: expect.stringContaining('not running') });
  });

  test('command lines: the server needs --config-file <file> and start; PostgreSQL needs postgres -D <its data folder>', () => {
    const server = { commandLine: ['/t/server'], configFile: '/c/server-0.yaml' };
    expect(isServerCommandLine(['/t/server', '--config-file', '/c/server-0.yaml', '--allow-no-auth', 'start'], server)).toBe(true);
    expect(isServerCommandLine(['/t/server', '--config-file', '/c/server-1.yaml', 'start'], server)).toBe(false);
    expect(isServerCommandLine(['/other/server', '--config-file', '/c/server-0.yaml', 'start'], server)).toBe(false);
    expect(isServerCommandLine(['/t/server', '/c/server-0.yaml', 'start'], server)).toBe(false);
    expect(isPostgresCommandLine(['/usr/lib/postgresql/15/bin/postgres', '-D', '/d/pg', '-c', 'port=1'], '/d/pg')).toBe(true);
    expect(isPostgresCommandLine(['/usr/lib/postgresql/15/bin/postgres', '-D', '/d/other'], '/d/pg')).toBe(false);
    expect(isPostgresCommandLine(['/bin/sleep', '-D', '/d/pg'], '/d/pg')).toBe(false);
  });

  test('a PostgreSQL record is alive only when its postmaster.pid names the same pid', () => {
    const cdir = path.join(dir, 'cluster');
    const other = sleeper();
    const pg = record(cdir, { pg: other.pid!, s0: 1, s1: 1 }).postgres;
    expect(postgresLiveness(pg).alive).toBe(false);
    mkdirSync(pg.dataDir, { recursive: true });
    writeFileSync(path.join(pg.dataDir, 'postmaster.pid'), `${other.pid}\n${pg.dataDir}\n`);
    // Its pid file agrees, but the process is node, not postgres -D <dir>.
    expect(postgresLiveness(pg)).toMatchObject({ alive: false, why: expect.stringContaining('runs') });
  });
});

describe('a stale record', () => {
  test('status reports everything down without throwing; down signals nothing and removes the record', async () => {
    const cdir = path.join(dir, 'cluster');
    const bystander = sleeper();
    const dead = await deadPid();
    // Server 0's pid now names an unrelated live process, PostgreSQL's and server 1's are gone.
    writeState(record(cdir, { pg: dead, s0: bystander.pid!, s1: dead }));
    const s = await clusterStatus();
    expect(s).toMatchObject({ recorded: true, up: false, clusterInfo: null, membership: [] });
    expect(s.postgres).toMatchObject({ alive: false });
    expect(s.servers.map((x) => x.alive)).toEqual([false, false]);
    expect(s.servers[0]!.why).toContain(process.execPath);

    const lines: string[] = [];
    await clusterDown({ say: (l) => lines.push(l) });
    await new Promise((r) => setTimeout(r, 300));
    expect(bystander.exitCode).toBeNull();
    expect(bystander.signalCode).toBeNull();
    expect(lines.join('\n')).toMatch(/server 0 was not running \(pid \d+ runs/);
    expect(lines.join('\n')).toMatch(/PostgreSQL was not running/);
    expect(readClusterState()).toBeNull();
    expect(await clusterStatus()).toMatchObject({ recorded: false, up: false });
  });
});
