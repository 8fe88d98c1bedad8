/**
 * Reading the process table from /proc (Linux only), and signalling sets of
 * processes safely. Used to find everything a session started (its process
 * group and its session id: the shell is started with setsid, so even jobs
 * that a `set -m` shell moves to their own process groups keep its session
 * id), to count it, and to kill it.
 */
import * as fs from 'node:fs';

/** One process as /proc/<pid>/stat describes it. */
export interface ProcInfo {
  pid: number;
  ppid: number;
  /** Process group id. */
  pgid: number;
  /** Session id. */
  sid: number;
  /** State letter: R running, S sleeping, D disk wait, Z zombie, T stopped, ... */
  state: string;
  /** Number of threads (kernel tasks) of the process. */
  threads: number;
  /** Executable name (at most 15 characters). */
  comm: string;
  /** Start time in clock ticks since boot (field 22), as text: tells a process from a later one given the same pid. */
  startTime: string;
}

/**
 * The fields of a /proc/<pid>/stat text after the command name (which is in
 * parentheses and may itself contain spaces and ')'): element 0 is field 3
 * (state), so field N of proc(5) is element N - 3.
 */
export function statFields(text: string): string[] {
  return text
    .slice(text.lastIndexOf(')') + 2)
    .trim()
    .split(' ');
}

/** Parses the text of /proc/<pid>/stat; undefined when malformed. */
export function parseStat(text: string): ProcInfo | undefined {
  // comm is in parentheses and may itself contain spaces and ')'.
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const f = statFields(text);
  // f[0] = state (field 3), f[1] = ppid, f[2] = pgrp, f[3] = session, f[17] = num_threads (field 20), f[19] = starttime (field 22)
  const info = {
    pid: Number(text.slice(0, open).trim()),
    comm: text.slice(open + 1, close),
    state: f[0] ?? '?',
    ppid: Number(f[1]),
    pgid: Number(f[2]),
    sid: Number(f[3]),
    threads: Number(f[17]),
    startTime: f[19] ?? '',
  };
  return Number.isInteger(info.pid) && Number.isInteger(info.sid) ? info : undefined;
}

/** Reads /proc/<pid>/stat; undefined when the process is gone. */
export function readProc(pid: number): ProcInfo | undefined {
  try {
    return parseStat(fs.readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Like {@link readProc}, without blocking the event loop. */
export async function readProcAsync(pid: number): Promise<ProcInfo | undefined> {
  try {
    return parseStat(await fs.promises.readFile(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Real user id of a process (/proc/<pid>/status `Uid:`), or undefined when it is gone. */
export function processUid(pid: number): number | undefined {
  try {
    const m = /^Uid:\s+(\d+)/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/** Every process on the machine (a snapshot; processes come and go while it is read). */
export function listProcesses(): ProcInfo[] {
  let names: string[];
  try {
    names = fs.readdirSync('/proc');
  } catch {
    return [];
  }
  const out: ProcInfo[] = [];
  for (const name of names) {
    const c = name.charCodeAt(0);
    if (c < 48 || c > 57) continue;
    const info = readProc(Number(name));
    if (info) out.push(info);
  }
  return out;
}

/**
 * Processes that belong to the session led by `leader` (a bash started with
 * setsid): same session id or same process group. Zombies included.
 */
export function sessionMembers(leader: number, procs: ProcInfo[] = listProcesses()): ProcInfo[] {
  return procs.filter((p) => p.sid === leader || p.pgid === leader);
}

/** Whether a pid may be signalled by cleanup code: never init, never ourselves. */
function safeTarget(pid: number): boolean {
  return Number.isInteger(pid) && pid > 1 && pid !== process.pid;
}

/** Sends `signal` to one process, ignoring a process that is already gone. */
export function signalPid(pid: number, signal: NodeJS.Signals): void {
  if (!safeTarget(pid)) return;
  try {
    process.kill(pid, signal);
  } catch {
    /* gone, or not ours */
  }
}

/** Sends `signal` to a whole process group (`kill(-pgid)`), ignoring an empty group. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  if (!safeTarget(pgid)) return;
  try {
    process.kill(-pgid, signal);
  } catch {
    /* no such group */
  }
}

/** From /proc/loadavg: total kernel tasks (threads) on the machine, and the most recently created pid. */
export interface Loadavg {
  tasks: number;
  lastPid: number;
}

/** Reads /proc/loadavg; undefined if unreadable. */
export function readLoadavg(): Loadavg | undefined {
  try {
    const text = fs.readFileSync('/proc/loadavg', 'utf8');
    const m = /\s\d+\/(\d+)\s+(\d+)/.exec(text);
    return m ? { tasks: Number(m[1]), lastPid: Number(m[2]) } : undefined;
  } catch {
    return undefined;
  }
}
