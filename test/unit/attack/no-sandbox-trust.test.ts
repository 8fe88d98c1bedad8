/**
 * Without the sandbox (AGENT_JOBS_SANDBOX=none), round 3, kind 7: the worker (root) trusted files
 * the session user could write. The orphan reaper read any `agent-jobs-session-*` directory's
 * owner.json in the temp directory and killed the processes it named (a root process, the whole
 * root cgroup); a long command's file was the session user's own, so a job could rewrite it before
 * bash read it. Held by src/session/orphans.ts (`trustedOwner`: directory and record the worker's,
 * writable by no one else, no symlink; each victim of the session's user or the worker's and no
 * older than the shell) and src/session/session.ts (the command file the worker's, 0440, in the
 * worker's 0710 directory).
 *
 * Every plant is made by the session user itself, from a session with sandbox `none`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { reapOrphanedSessions } from '../../../src/session';
import { INLINE_COMMAND_MAX_BYTES } from '../../../src/session/protocol';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const victims: ChildProcess[] = [];

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
  for (const v of victims.splice(0)) v.kill('SIGKILL');
});

function startTime(pid: number): string {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]!;
}

function alive(pid: number): boolean {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

test('the orphan reaper kills nothing a session user names in files it planted', async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  // A root process leading its own session: what the attacker wants killed.
  const victim = spawn('/bin/sleep', ['600'], { detached: true, stdio: 'ignore' });
  victims.push(victim);
  await new Promise((r) => setTimeout(r, 200));
  const pid = victim.pid!;
  const reapDir = tempDir('aj-reap-');
  fs.chmodSync(reapDir, 0o1777);
  const ws = tempDir();
  fs.chmodSync(ws, 0o755);
  const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
  expect((await s.run('id -u')).output.trim()).not.toBe('0');
  const record = (extra: string) =>
    `{"sessionId":"evil","workerPid":4194303,"workerStart":"1","shellPid":${pid},"shellStart":"${startTime(pid)}"${extra}}`;
  // A directory of its own; one made 0755 after a root-looking name; a symlink to a root-owned directory holding
  // a record (the session user cannot write there, so it is planted by the test as the worker would have written it:
  // only the link is the attacker's); a record naming the root cgroup.
  const rootOwned = tempDir('aj-rootowned-');
  fs.writeFileSync(path.join(rootOwned, 'owner.json'), record(''), { mode: 0o600 });
  const plant = await s.run(
    [
      `cd ${reapDir}`,
      `mkdir agent-jobs-session-own && echo '${record('')}' > agent-jobs-session-own/owner.json`,
      `mkdir -m 777 agent-jobs-session-open && echo '${record(',"cgroup":"/sys/fs/cgroup"')}' > agent-jobs-session-open/owner.json`,
      `ln -s ${rootOwned} agent-jobs-session-link`,
      'ls -A | wc -l',
    ].join(' && '),
  );
  expect(plant.output.trim()).toBe('3');
  const result = await reapOrphanedSessions(reapDir);
  expect(result).toEqual({ sessions: [], killed: 0 });
  expect(alive(pid)).toBe(true);
  // The planted directories are left as they are (not removed through the link either).
  expect(fs.existsSync(path.join(rootOwned, 'owner.json'))).toBe(true);
});

test("a record of the worker's own kills no process older than the shell it names, from its cgroup either", async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const victim = spawn('/bin/sleep', ['600'], { detached: true, stdio: 'ignore' });
  victims.push(victim);
  await new Promise((r) => setTimeout(r, 200));
  const pid = victim.pid!;
  const reapDir = tempDir('aj-reap-');
  const dir = path.join(reapDir, 'agent-jobs-session-stale');
  fs.mkdirSync(dir, { mode: 0o700 });
  // A cgroup whose process list names the victim (a cgroup reused since, say); the shell started after the victim.
  const cgroup = path.join(reapDir, 'cg');
  fs.mkdirSync(cgroup);
  fs.writeFileSync(path.join(cgroup, 'cgroup.procs'), `${pid}\n`);
  const later = String(Number(startTime(pid)) + 1);
  fs.writeFileSync(
    path.join(dir, 'owner.json'),
    JSON.stringify({ sessionId: 'stale', workerPid: 4194303, workerStart: '1', shellPid: 4194302, shellStart: later, cgroup, uid: 999 }),
    { mode: 0o600 },
  );
  const result = await reapOrphanedSessions(reapDir);
  expect(result).toEqual({ sessions: ['stale'], killed: 0 });
  expect(alive(pid)).toBe(true);
});

test('a long approved command runs as approved while a job of the session user tries to rewrite its file', async () => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const ws = tempDir();
  fs.chmodSync(ws, 0o755);
  const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
  const tmp = os.tmpdir();
  // The job knows where session directories are and how command files are named; it writes every one it may.
  await s.run(
    `(while :; do for f in ${tmp}/agent-jobs-session-*/cmd.{1..60}; do [ -w "$f" ] && printf 'echo PWNED\\n#' > "$f" && echo "$f" >> ${ws}/wrote; done; done) >/dev/null 2>&1 &`,
  );
  const long = `echo approved # ${'x'.repeat(INLINE_COMMAND_MAX_BYTES + 100)}`;
  for (let i = 0; i < 30; i++) {
    const r = await s.run(long);
    expect(r.output).toBe('approved\n');
  }
  expect(fs.existsSync(path.join(ws, 'wrote'))).toBe(false);
});
