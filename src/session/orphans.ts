/**
 * What happens to a session when its worker dies (SIGKILL, OOM, crash).
 *
 * 1. bash itself: it is started through `setpriv --pdeathsig KILL` (when
 *    util-linux's setpriv is installed), so the kernel kills it the moment
 *    the worker dies, even if it is blocked. Without setpriv, bash exits on
 *    end-of-file of its control pipe once it is idle.
 * 2. What bash started: a sentinel process per shell (shell.ts) blocks on a
 *    pipe from the worker and, when the worker dies and the pipe closes,
 *    SIGKILLs the shell's process group and cgroup within milliseconds.
 * 3. Anything that escaped both (a process that left the group with setsid
 *    where no cgroup holds it, or a sentinel that could not start). Each
 *    session's private directory holds an `owner.json` naming the worker
 *    (pid and start time, so a reused pid is not mistaken for it), the
 *    shell's pid (= session id and process group of its processes) and its
 *    cgroup. {@link reapOrphanedSessions}, called by a worker when it
 *    starts, kills what is left of sessions whose worker is gone and removes
 *    their directories and cgroups.
 *
 * The reaper runs as the worker's user (root, usually) and kills what a
 * file names, so it trusts only what the session user cannot write: a
 * directory (not a symlink) owned by the worker's user and writable by no
 * one else, an `owner.json` in it likewise (opened without following a
 * symlink). Even then, it kills only processes of the worker's user or the
 * session's, started no earlier than the shell the record names. Attack
 * test: test/unit/attack/no-sandbox-trust.test.ts.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { listProcesses, processUid, readProc, sessionMembers, signalPid } from './procs';
import { setTimeout as sleep } from 'node:timers/promises';

/** Prefix of every session's private directory in the temp directory. */
export const SESSION_DIR_PREFIX = 'agent-jobs-session-';
const OWNER_FILE = 'owner.json';

/** Contents of a session directory's owner.json. */
export interface OwnerRecord {
  sessionId: string;
  workerPid: number;
  /** The worker's start time in clock ticks since boot (/proc/<pid>/stat field 22). */
  workerStart: string;
  /** Pid of the current bash: session id and process group of everything it started. */
  shellPid: number;
  /** Its start time (clock ticks since boot), to tell it from a later process given the same pid. */
  shellStart: string;
  /** Its pids cgroup directory, if any. */
  cgroup?: string;
  /** Its socket-memory cgroup directory (guard.ts `socketCgroup`), if any: removed with the pids cgroup. */
  socketCgroup?: string;
  /** The user id bash runs as (the worker's own when absent). */
  uid?: number;
}

/** Start time of a process (clock ticks since boot), or undefined if it does not exist. */
export function processStartTime(pid: number): string | undefined {
  return readProc(pid)?.startTime;
}

/** Records who owns a session directory (called at every shell start). Best effort. */
export function writeOwner(dir: string, record: OwnerRecord): void {
  try {
    const file = path.join(dir, OWNER_FILE);
    fs.writeFileSync(file, JSON.stringify(record), { mode: 0o600 });
    fs.chmodSync(file, 0o600);
  } catch {
    /* the directory was removed by a command; the next start writes it again */
  }
}

/** Result of {@link reapOrphanedSessions}. */
export interface ReapResult {
  /** Ids of the sessions cleaned up. */
  sessions: string[];
  /** Processes killed. */
  killed: number;
}

/**
 * Cleans up after sessions whose worker process is gone: SIGKILLs every
 * process in their shell's session / process group / cgroup, removes the
 * cgroup and the session directory. Sessions of live workers are left
 * alone. Call it when a worker starts (it takes milliseconds, up to 2 s
 * per stale cgroup while its processes exit). Never throws.
 * @param tmpDir where session directories live @default os.tmpdir()
 */
export async function reapOrphanedSessions(tmpDir: string = os.tmpdir()): Promise<ReapResult> {
  const result: ReapResult = { sessions: [], killed: 0 };
  let entries: string[];
  try {
    entries = fs.readdirSync(tmpDir).filter((e) => e.startsWith(SESSION_DIR_PREFIX));
  } catch {
    return result;
  }
  let procs: ReturnType<typeof listProcesses> | undefined;
  for (const entry of entries) {
    const dir = path.join(tmpDir, entry);
    const owner = trustedOwner(dir);
    if (!owner) continue; // being created, or not ours (or planted)
    if (processStartTime(owner.workerPid) === owner.workerStart) continue; // worker alive
    procs ??= listProcesses();
    const victims = new Set<number>();
    // Processes in the shell's session or group are its own only if its pid
    // is free or still the shell: the kernel does not hand out a pid that is
    // some live process's session or group id, but once the last of them is
    // gone the number may belong to an unrelated new session.
    const holder = processStartTime(owner.shellPid);
    if (holder === undefined || holder === owner.shellStart) {
      for (const p of sessionMembers(owner.shellPid, procs)) victims.add(p.pid);
    }
    if (owner.cgroup) {
      try {
        for (const pid of fs.readFileSync(path.join(owner.cgroup, 'cgroup.procs'), 'utf8').split('\n')) if (pid) victims.add(Number(pid));
      } catch {
        /* cgroup gone */
      }
    }
    const me = process.getuid?.() ?? 0;
    const uids = new Set([me, owner.uid ?? me]);
    const since = Number(owner.shellStart);
    for (const pid of victims) {
      // Checked again just before the signal: a process of another user, or older than the shell, is not the session's.
      const start = Number(processStartTime(pid));
      const uid = processUid(pid);
      if (!Number.isFinite(start) || !(start >= since) || uid === undefined || !uids.has(uid)) continue;
      signalPid(pid, 'SIGKILL');
      result.killed++;
    }
    for (const cgroup of [owner.cgroup, owner.socketCgroup]) {
      if (!cgroup) continue;
      // The killed processes leave the cgroup as they exit: retry for up to 2 s.
      for (let attempt = 0; attempt < 100; attempt++) {
        try {
          fs.rmdirSync(cgroup);
          break;
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') break;
          await sleep(20);
        }
      }
    }
    fs.rmSync(dir, { recursive: true, force: true });
    result.sessions.push(owner.sessionId);
  }
  return result;
}

/**
 * The owner record of session directory `dir`, or undefined unless only the worker's user could
 * have written it: `dir` a real directory and `owner.json` a regular file, both owned by this
 * process's user and writable by no group or other user, the file opened with O_NOFOLLOW.
 */
function trustedOwner(dir: string): OwnerRecord | undefined {
  const me = process.getuid?.() ?? 0;
  const mine = (st: fs.Stats): boolean => st.uid === me && (st.mode & 0o022) === 0;
  let fd: number | undefined;
  try {
    const d = fs.lstatSync(dir);
    if (!d.isDirectory() || !mine(d)) return undefined;
    fd = fs.openSync(path.join(dir, OWNER_FILE), fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
    const f = fs.fstatSync(fd);
    if (!f.isFile() || !mine(f) || f.nlink !== 1) return undefined;
    const record = JSON.parse(fs.readFileSync(fd, 'utf8')) as OwnerRecord;
    return typeof record === 'object' && record !== null && Number.isInteger(record.shellPid) ? record : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}
