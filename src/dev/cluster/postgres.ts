/**
 * The cluster's own PostgreSQL: one data folder, listening on one loopback
 * port only (no Unix socket), password authentication (scram-sha-256) for
 * the single superuser `temporal`. PostgreSQL refuses to run as root, so
 * when this process is root it runs as the unprivileged system user
 * {@link POSTGRES_OS_USER} (created when missing), through `setpriv`.
 */
import { spawn, execFileSync } from 'node:child_process';
import { chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from '../testing/exec';
import { lookupUser, MINIMAL_ENV, type SessionIdentity } from '../../session/identity';
import { DB_USER } from './constants';
import { LOOPBACK } from './config';
import type { PostgresTools } from './tools';

/**
 * The OS user PostgreSQL runs as when `up` runs as root: its own user, not
 * the session user `agent-jobs` (whose bash runs the model's commands), so
 * no session can read the database files.
 */
export const POSTGRES_OS_USER = 'agent-jobs-pg';

/**
 * Most connections PostgreSQL accepts. Each of the 4 services of each
 * server process has its own pools (up to 20 + 10 connections), so two
 * processes may open 240; PostgreSQL's default of 100 is too few.
 */
export const POSTGRES_MAX_CONNECTIONS = 300;

/** Who PostgreSQL runs as: null for this process's own user (not root). */
export type PostgresIdentity = SessionIdentity | null;

/**
 * {@link POSTGRES_OS_USER} when this process is root (created first with
 * `useradd --system --no-create-home --shell /usr/sbin/nologin`), else
 * null: PostgreSQL then runs as this process's user.
 * @throws Error when the user is missing and cannot be created
 */
export function postgresIdentity(): PostgresIdentity {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return null;
  let id = lookupUser(POSTGRES_OS_USER);
  if (!id) {
    try {
      execFileSync('useradd', ['--system', '--no-create-home', '--shell', '/usr/sbin/nologin', POSTGRES_OS_USER], {
        env: MINIMAL_ENV,
        stdio: ['ignore', 'ignore', 'pipe'],
        timeout: 30_000,
      });
    } catch (err) {
      throw new Error(
        `PostgreSQL refuses to run as root and the user ${POSTGRES_OS_USER} could not be created (${(err as Error).message.trim()}); create it: useradd --system ${POSTGRES_OS_USER}`,
        { cause: err },
      );
    }
    id = lookupUser(POSTGRES_OS_USER);
    if (!id) throw new Error(`useradd ${POSTGRES_OS_USER} succeeded but the user cannot be looked up`);
  }
  return id;
}

/** `[program, ...args]` run as `who`: through `setpriv` (no supplementary groups) when who is a user, as is when null. */
export function asUser(who: PostgresIdentity, program: string, args: string[]): [string, string[]] {
  if (!who) return [program, args];
  return ['setpriv', ['--reuid', String(who.uid), '--regid', String(who.gid), '--clear-groups', '--', program, ...args]];
}

const PG_ENV = { ...MINIMAL_ENV, LC_ALL: 'C' };

/** Whether `dataDir` holds an initialised PostgreSQL cluster (its `PG_VERSION` file). */
export function isInitialised(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'PG_VERSION'));
}

/**
 * `initdb` of a new cluster in `dataDir` (created, mode 0700, owned by
 * `who`): superuser {@link DB_USER} with `password`, scram-sha-256
 * authentication for every connection, UTF-8, locale C.
 * @throws Error with initdb's output when it fails (e.g. `who` cannot reach a parent folder)
 */
export async function initPostgres(tools: PostgresTools, dataDir: string, password: string, who: PostgresIdentity): Promise<void> {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const pwFile = path.join(path.dirname(dataDir), `.initdb-pw-${process.pid}`);
  writeFileSync(pwFile, `${password}\n`, { mode: 0o600 });
  try {
    if (who) {
      chownSync(dataDir, who.uid, who.gid);
      chownSync(pwFile, who.uid, who.gid);
    }
    if (who) await checkReachable(who, dataDir);
    const [cmd, args] = asUser(who, tools.initdb, [
      '-D',
      dataDir,
      '-U',
      DB_USER,
      `--pwfile=${pwFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C',
    ]);
    const r = await execa(cmd, args, { env: PG_ENV, reject: false, all: true });
    if (r.exitCode !== 0) {
      const hint = who
        ? ` (PostgreSQL runs as ${who.user}: every folder above ${dataDir} must let it pass, i.e. be o+x; else set AGENT_JOBS_DATA_DIR to a folder it can reach)`
        : '';
      throw new Error(`initdb of ${dataDir} failed (exit ${r.exitCode})${hint}:\n${(r.all ?? '').trim().split('\n').slice(-6).join('\n')}`);
    }
  } finally {
    rmSync(pwFile, { force: true });
  }
}

/**
 * Checks that `who` can pass through every folder above `dir` and write
 * `dir` itself (a repository under `/root`, mode 0700, is the usual case
 * where it cannot).
 * @throws Error naming the first folder it cannot pass and what to do
 */
async function checkReachable(who: SessionIdentity, dir: string): Promise<void> {
  const [cmd, args] = asUser(who, 'test', ['-w', dir, '-a', '-x', dir]);
  if ((await execa(cmd, args, { env: PG_ENV, reject: false })).exitCode === 0) return;
  let closed = dir;
  const parts = path.resolve(dir).split(path.sep).filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    const folder = `/${parts.slice(0, i).join('/')}`;
    const [c, a] = asUser(who, 'test', ['-x', folder]);
    if ((await execa(c, a, { env: PG_ENV, reject: false })).exitCode !== 0) {
      closed = folder;
      break;
    }
  }
  throw new Error(
    `PostgreSQL refuses to run as root, so it runs as ${who.user}, which cannot reach ${dir}: ${closed} is closed to other users. ` +
      `Set AGENT_JOBS_DATA_DIR to a folder every user may pass through (e.g. /var/lib/agent-jobs), or open it with chmod o+x ${closed}`,
  );
}

/** The command line that runs the PostgreSQL server of `dataDir` on `port` (as `who`). */
export function postgresCommand(tools: PostgresTools, dataDir: string, port: number, who: PostgresIdentity): [string, string[]] {
  return asUser(who, tools.postgres, [
    '-D',
    dataDir,
    '-c',
    `listen_addresses=${LOOPBACK}`,
    '-c',
    `port=${port}`,
    '-c',
    'unix_socket_directories=',
    '-c',
    `max_connections=${POSTGRES_MAX_CONNECTIONS}`,
  ]);
}

/**
 * Whether `argv` (a `/proc/<pid>/cmdline`) is the PostgreSQL server of
 * `dataDir`: a program named `postgres` with `-D <dataDir>`.
 */
export function isPostgresCommandLine(argv: readonly string[], dataDir: string): boolean {
  return path.basename(argv[0] ?? '') === 'postgres' && argv.some((a, i) => a === '-D' && argv[i + 1] === dataDir);
}

/**
 * Starts PostgreSQL detached (its own process group, output appended to
 * `logFile`) and waits until it accepts `password` on `port`.
 * @returns the postmaster's pid
 * @throws Error with the log's last lines when it exits or does not answer within 60 s
 */
export async function startPostgres(
  tools: PostgresTools,
  o: { dataDir: string; port: number; password: string; logFile: string; who: PostgresIdentity },
): Promise<number> {
  const [cmd, args] = postgresCommand(tools, o.dataDir, o.port, o.who);
  const fd = openSync(o.logFile, 'a');
  const child = spawn(cmd, args, { detached: true, stdio: ['ignore', fd, fd], env: PG_ENV });
  closeSync(fd);
  let exited = false;
  child.once('exit', () => (exited = true));
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${cmd}`);
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    if (exited) break;
    const r = await psql(tools, { port: o.port, password: o.password, database: 'postgres' }, 'SELECT 1').catch((e: Error) => e);
    if (!(r instanceof Error)) return pid;
    last = r.message;
    await sleep(200);
  }
  const tail = existsSync(o.logFile) ? readFileSync(o.logFile, 'utf8').trim().split('\n').slice(-5).join('\n') : '';
  throw new Error(`PostgreSQL did not start on ${LOOPBACK}:${o.port}${exited ? ' (it exited)' : ''}: ${last}\n${tail}`);
}

/** Where {@link psql} connects. */
export interface PsqlTarget {
  port: number;
  password: string;
  database: string;
}

/**
 * Runs one SQL statement with `psql` as {@link DB_USER} on loopback and
 * returns its rows, each a list of column values (unaligned, tuples only).
 * The password goes in the child's environment, never on its command line.
 * @throws Error with psql's message when the statement fails
 */
export async function psql(tools: PostgresTools, target: PsqlTarget, sql: string): Promise<string[][]> {
  const r = await execa(
    tools.psql,
    [
      '-X',
      '-q',
      '-A',
      '-t',
      '-F',
      '\t',
      '-v',
      'ON_ERROR_STOP=1',
      '-h',
      LOOPBACK,
      '-p',
      String(target.port),
      '-U',
      DB_USER,
      '-d',
      target.database,
      '-c',
      sql,
    ],
    { env: { ...PG_ENV, PGPASSWORD: target.password, PGCONNECT_TIMEOUT: '3' }, reject: false, timeout: 30_000 },
  );
  if (r.exitCode !== 0) throw new Error(`psql: ${r.stderr.trim() || `exit ${r.exitCode}`}`);
  return r.stdout
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => l.split('\t'));
}

/**
 * Stops the PostgreSQL server of `dataDir`: `pg_ctl stop -m fast` (as
 * `who`), which ends its sessions and waits up to 60 s for it to exit.
 * @throws Error with pg_ctl's output when it fails
 */
export async function stopPostgres(tools: PostgresTools, dataDir: string, who: PostgresIdentity): Promise<void> {
  const [cmd, args] = asUser(who, tools.pgCtl, ['stop', '-D', dataDir, '-m', 'fast', '-w', '-t', '60']);
  const r = await execa(cmd, args, { env: PG_ENV, reject: false, all: true });
  if (r.exitCode !== 0) throw new Error(`pg_ctl stop -D ${dataDir} failed (exit ${r.exitCode}): ${(r.all ?? '').trim()}`);
}

/** The postmaster pid recorded in `dataDir/postmaster.pid`, or null when there is none. */
export function postmasterPid(dataDir: string): number | null {
  try {
    const first = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]?.trim() ?? '';
    return /^\d+$/.test(first) ? Number(first) : null;
  } catch {
    return null;
  }
}
