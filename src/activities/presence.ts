/**
 * Which worker processes run on this machine: each worker writes a presence
 * record (its worker id, pid, the process's start time, the boot id and its
 * pid namespace), so the liveness check of a lost-looking session
 * (liveness.ts) can tell at once that a worker on the same machine is gone
 * (its process has exited), instead of waiting out `WORKER_SILENCE_MS` of
 * silence. A worker elsewhere has no record here and is judged by the
 * server's view alone.
 *
 * Only evidence of death is taken from a record, never of life: a record
 * whose process still runs (a stopped or starved one included) says nothing,
 * so the silence rule decides as before. A record is trusted only when it
 * and its folder belong to this process's user and nobody else can write
 * them (a session user, another uid, cannot plant one); and only on the same
 * boot and pid namespace (a container with the same hostname, or a machine
 * rebooted, cannot make a live worker look gone).
 *
 * Linux `/proc`: `stat` field 22 is the start time in clock ticks since
 * boot; `/proc/sys/kernel/random/boot_id` changes at each boot;
 * `/proc/self/ns/pid` names the pid namespace (proc(5)).
 */
import { lstatSync, mkdirSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** One worker process's presence record (JSON in `<dir>/<workerId>.json`). */
export interface PresenceRecord {
  workerId: string;
  pid: number;
  /** `/proc/<pid>/stat` field 22: start time in clock ticks since boot. */
  startTicks: string;
  bootId: string;
  /** `readlink /proc/self/ns/pid`, e.g. `pid:[4026531836]`. */
  pidNamespace: string;
}

/**
 * The folder of presence records for this user: `AGENT_JOBS_PRESENCE_DIR`,
 * default `<os tmpdir>/agent-jobs-presence-<uid>` (a session's sandbox has a
 * private /tmp, so no session sees it).
 */
export function presenceDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.resolve(env.AGENT_JOBS_PRESENCE_DIR ?? path.join(tmpdir(), `agent-jobs-presence-${process.getuid?.() ?? 0}`));
}

/** The start time of `pid` (clock ticks since boot) and its state letter, or null when no such process. */
export function processStart(pid: number): { startTicks: string; state: string } | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // `pid (comm) state ...`: comm may hold spaces and parentheses, so split after the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const state = fields[0];
  const startTicks = fields[19];
  return state && startTicks ? { startTicks, state } : null;
}

function thisMachine(): { bootId: string; pidNamespace: string } | null {
  try {
    return { bootId: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(), pidNamespace: readlinkSync('/proc/self/ns/pid') };
  } catch {
    return null;
  }
}

/** Whether `p` is this user's and writable by nobody else (folder or file). */
function ownedSafely(p: string): boolean {
  try {
    const st = lstatSync(p);
    return !st.isSymbolicLink() && st.uid === (process.getuid?.() ?? st.uid) && (st.mode & 0o022) === 0;
  } catch {
    return false;
  }
}

/**
 * Writes this process's record for `workerId` (atomically, mode 0600 in a
 * 0700 folder). Returns a function that removes it (at a clean exit), or
 * null when nothing could be written (no /proc, a folder someone else owns):
 * the worker then is judged by the server's view alone.
 */
export function writePresence(workerId: string, env: NodeJS.ProcessEnv = process.env): (() => void) | null {
  const machine = thisMachine();
  const me = processStart(process.pid);
  if (!machine || !me || !/^[\w.-]+$/.test(workerId)) return null;
  const dir = presenceDir(env);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!ownedSafely(dir)) return null;
    const record: PresenceRecord = { workerId, pid: process.pid, startTicks: me.startTicks, ...machine };
    const file = path.join(dir, `${workerId}.json`);
    const tmp = `${file}.${process.pid}.tmp`;
    writeFileSync(tmp, JSON.stringify(record), { mode: 0o600 });
    renameSync(tmp, file);
    return () => {
      // Only our own record: a worker started since with the same id keeps its.
      if (readPresence(workerId, env)?.pid === process.pid) rmSync(file, { force: true });
    };
  } catch {
    return null;
  }
}

/** The record for `workerId`, when one is here and safely owned; else null. */
export function readPresence(workerId: string, env: NodeJS.ProcessEnv = process.env): PresenceRecord | null {
  if (!/^[\w.-]+$/.test(workerId)) return null;
  const dir = presenceDir(env);
  const file = path.join(dir, `${workerId}.json`);
  if (!ownedSafely(dir) || !ownedSafely(file)) return null;
  try {
    const r = JSON.parse(readFileSync(file, 'utf8')) as Partial<PresenceRecord>;
    if (r.workerId !== workerId || !Number.isInteger(r.pid) || typeof r.startTicks !== 'string') return null;
    if (typeof r.bootId !== 'string' || typeof r.pidNamespace !== 'string') return null;
    return r as PresenceRecord;
  } catch {
    return null;
  }
}

/**
 * Evidence that `workerId`'s process, on this machine, has exited: a
 * sentence, or null when there is none (no record here, another boot or
 * pid namespace, or the process still there, stopped or not).
 */
export function exitedOnThisMachine(workerId: string, env: NodeJS.ProcessEnv = process.env): string | null {
  const record = readPresence(workerId, env);
  const machine = thisMachine();
  if (!record || !machine || record.bootId !== machine.bootId || record.pidNamespace !== machine.pidNamespace) return null;
  const now = processStart(record.pid);
  if (now === null) return `its process (pid ${record.pid} on this machine) has exited`;
  if (now.startTicks !== record.startTicks)
    return `its process (pid ${record.pid} on this machine) has exited (the pid is another process's now)`;
  if (now.state === 'Z' || now.state === 'X') return `its process (pid ${record.pid} on this machine) has exited (a zombie)`;
  return null;
}
