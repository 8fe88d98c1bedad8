/**
 * The cluster's Temporal server processes: starting one detached, reading
 * its view of the membership from its log, waiting until the processes
 * have joined one ring, and stopping one.
 */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync, statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { serverAnswers } from '../devserver';
import { SERVICES, type ServiceName } from './constants';
import { LOOPBACK, type ServerPorts } from './config';
import { serverLiveness, type ClusterServerState } from './state';

/** The server's command line for a config file (without the binary). `--allow-no-auth`: loopback only, no authorizer. */
export function serverArgs(configFile: string): string[] {
  return ['--config-file', configFile, '--allow-no-auth', 'start'];
}

/**
 * Starts a server process detached (its own process group, output
 * appended to `logFile`), so it outlives this process.
 * @returns its pid, command line and the log's size before it started
 * @throws Error when it cannot be spawned
 */
export function spawnServer(
  binary: string,
  configFile: string,
  logFile: string,
): { pid: number; commandLine: string[]; logOffset: number } {
  const logOffset = existsSync(logFile) ? statSync(logFile).size : 0;
  const args = serverArgs(configFile);
  const fd = openSync(logFile, 'a');
  // Only what the server needs: its config holds everything else.
  const env = { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/' };
  const child = spawn(binary, args, { detached: true, stdio: ['ignore', fd, fd], env });
  closeSync(fd);
  child.unref();
  if (child.pid === undefined) throw new Error(`could not start ${binary}`);
  return { pid: child.pid, commandLine: [binary, ...args], logOffset };
}

/** The members one server process sees, by service: the gRPC addresses of the latest "Current reachable members" line of each. */
export type MembershipView = Partial<Record<ServiceName, string[]>>;

const MEMBERS_MSG = 'Current reachable members';

/**
 * The membership as one server process last logged it, from `offset` on
 * (the server logs "Current reachable members" with the addresses, per
 * service, whenever its ring changes: ringpop's view, not the database's).
 * Lines that are not JSON are skipped.
 */
export function membershipFromLog(logFile: string, offset = 0): MembershipView {
  const view: MembershipView = {};
  if (!existsSync(logFile)) return view;
  const fd = openSync(logFile, 'r');
  try {
    const size = statSync(logFile).size;
    const chunk = Buffer.alloc(1 << 20);
    let pos = Math.min(offset, size);
    let rest = '';
    while (pos < size) {
      const n = readSync(fd, chunk, 0, chunk.length, pos);
      if (n <= 0) break;
      pos += n;
      const text = rest + chunk.subarray(0, n).toString('utf8');
      const cut = text.lastIndexOf('\n');
      rest = cut >= 0 ? text.slice(cut + 1) : text;
      for (const line of (cut >= 0 ? text.slice(0, cut) : '').split('\n')) readMembersLine(line, view);
    }
    readMembersLine(rest, view);
  } finally {
    closeSync(fd);
  }
  return view;
}

function readMembersLine(line: string, view: MembershipView): void {
  if (!line.includes(MEMBERS_MSG)) return;
  try {
    const o = JSON.parse(line) as { msg?: string; service?: string; addresses?: unknown };
    if (o.msg !== MEMBERS_MSG || !(SERVICES as readonly string[]).includes(o.service ?? '')) return;
    const addrs = Array.isArray(o.addresses) ? o.addresses.map(String) : typeof o.addresses === 'string' ? [o.addresses] : [];
    view[o.service as ServiceName] = [...addrs].sort();
  } catch {
    /* not a JSON log line */
  }
}

/** The gRPC address of `service` of a server with these ports. */
export function serviceAddress(ports: ServerPorts, service: ServiceName): string {
  return `${LOOPBACK}:${ports[service].grpc}`;
}

/**
 * What is missing for these servers to form one cluster: for each server,
 * each service whose latest membership line lacks one of the servers.
 * @returns one line per gap, empty when every server sees every server in every service
 */
export function membershipGaps(servers: readonly ClusterServerState[]): string[] {
  const gaps: string[] = [];
  for (const s of servers) {
    const view = membershipFromLog(s.logFile, s.logOffset);
    for (const svc of SERVICES) {
      const want = servers.map((o) => serviceAddress(o.ports, svc));
      const have = view[svc] ?? [];
      const missing = want.filter((a) => !have.includes(a));
      if (missing.length > 0)
        gaps.push(`server ${s.index} ${svc} does not see ${missing.join(', ')} (sees ${have.join(', ') || 'nothing yet'})`);
    }
  }
  return gaps;
}

/**
 * Waits until every server's frontend answers GetSystemInfo and each sees
 * all of them in each of its four rings.
 * @throws Error naming what is still missing (and the first server that exited) after `timeoutMs`
 */
export async function waitForCluster(servers: readonly ClusterServerState[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let why = '';
  while (Date.now() < deadline) {
    const dead = servers.find((s) => !serverLiveness(s).alive);
    if (dead) throw new Error(`server ${dead.index} exited; its log: ${dead.logFile}`);
    const silent: string[] = [];
    for (const s of servers)
      if (!(await serverAnswers(s.frontendAddress, 1_000)))
        silent.push(`server ${s.index}'s frontend ${s.frontendAddress} does not answer`);
    const gaps = silent.length === 0 ? membershipGaps(servers) : [];
    if (silent.length === 0 && gaps.length === 0) return;
    why = [...silent, ...gaps].join('; ');
    await sleep(500);
  }
  throw new Error(`the cluster did not form within ${timeoutMs / 1000} s: ${why}`);
}

/**
 * Sends `signal` to a server's process group and waits until it is gone,
 * at most `waitMs`; a SIGTERM not obeyed by then is followed by SIGKILL.
 * Does nothing when the record names no live server process.
 */
export async function signalServer(server: ClusterServerState, signal: NodeJS.Signals, waitMs = 30_000): Promise<void> {
  if (!serverLiveness(server).alive) return;
  const send = (sig: NodeJS.Signals): void => {
    try {
      process.kill(-server.pid, sig);
    } catch {
      try {
        process.kill(server.pid, sig);
      } catch {
        /* gone */
      }
    }
  };
  send(signal);
  const deadline = Date.now() + waitMs;
  while (serverLiveness(server).alive && Date.now() < deadline) await sleep(50);
  if (serverLiveness(server).alive) {
    send('SIGKILL');
    while (serverLiveness(server).alive) await sleep(50);
  }
}
