/**
 * Adversary round 5: a fresh attacker against the round-3 layers, as root with the
 * sandbox on. Each test asserts that a protection holds, so each fails while the attack works.
 *
 * Kind 6 (the sandbox's edges): the seccomp filter (src/session/seccomp.ts) refuses the unix
 * family only. AF_VSOCK is not namespaced by the network namespace (Linux 6.18): on a VM (this
 * one is Firecracker, with a virtio vsock device, /dev/vsock) a session opens a vsock socket and
 * can connect to CID 2, the hypervisor's host, whatever `--network` says: a host service outside
 * every network rule of src/session/network.ts.
 *
 * Kind 6/7 (anything the worker holds): every descriptor the worker inherited without
 * close-on-exec (a log its supervisor opened, a pipe of a CI runner) is inherited in turn by bash
 * and every job: libuv's spawn, setpriv and bwrap close nothing. A session then writes a file its
 * user cannot open.
 *
 * Kind 7 (what the worker trusts that the session user can write), with the sandbox on: the
 * checkpoint store (src/checkpoint/store.ts) runs `git add -A -f` as root on the workspace while
 * the session's background jobs run. git lstat()s a file, sees a regular one, then open()s it by
 * path, following whatever is there now: a job that swaps each file with a symlink (renameat2
 * RENAME_EXCHANGE, in a loop) makes root's git store a root-only file's content as that path. A
 * rewind (or fork) then writes it into the workspace as the session user's file; `diff` prints it.
 *
 * Kind 6/7, the same race at session start (src/session/session.ts `grantWorkspace`): a second
 * session on a root-owned workspace (a sub-agent's, which shares its parent's, or a second run on
 * one `--workdir`) runs `setfacl -R -P` as root while the first session's job swaps a directory
 * of the workspace with a symlink to a directory outside it. setfacl walks by path, so `-P`
 * holds only for the entry it lstat()ed: the files under the symlink get `u:agent-jobs:rwX`,
 * and the first session reads root-only files (the stand-in here for /etc/shadow or
 * /etc/ssh/ssh_host_*_key: 0600 root files in a 0755 directory the sandbox shows).
 *
 * Kind 6/7, root code execution: a sub-agent's worktree (`--subagent-workspace worktree`,
 * src/session/worktree.ts) is made by git as the workspace's owner, which for a root-owned
 * workspace (the worker's run folders, a clone made as root) is root, in the repository the
 * session user may write (its ACL entries cover `.git` too), with the repository's own config and
 * hooks. A `post-checkout` hook the session wrote then runs as uid 0, outside the sandbox.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createWorktree } from '../../../src/session/worktree';
import { restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const ROOT = path.resolve(__dirname, '../../..');

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const PY = '/usr/bin/python3';

describe('kind 6: socket families that cross the network namespace', () => {
  const vsock = `${PY} -c 'import socket; s=socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print("VSOCK-OPEN")' 2>&1`;

  test('a session opens no AF_VSOCK socket (the hypervisor host, reachable whatever the network namespace), from a command or a job', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    // The attack is real here: the worker's host has the family (a VM with a vsock device).
    const host = spawnSync(PY, ['-c', 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print("VSOCK-OPEN")'], {
      encoding: 'utf8',
    });
    if (!host.stdout.includes('VSOCK-OPEN')) throw new Error(`this attack test needs AF_VSOCK on the host: ${host.stderr}`);
    const ws = tempDir();
    for (const network of [false, true]) {
      const s = await startSession({ cwd: ws, workspace: ws, network });
      const r = await s.run(vsock);
      expect(r.output).not.toContain('VSOCK-OPEN');
      const out = path.join(ws, `job-${network}.txt`);
      // The job says when its try is over (`.done`), so the wait ends then: with the family refused its file stays empty
      // (the error goes to /dev/null), and a wait for output alone ran to its 10 s deadline each time.
      await s.run(`(sleep 0.2; ${vsock} > ${out}; echo $? > ${out}.done) >/dev/null 2>&1 &`);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !fs.existsSync(`${out}.done`) && !(fs.existsSync(out) && fs.readFileSync(out, 'utf8').length > 0)) {
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(fs.readFileSync(out, 'utf8')).not.toContain('VSOCK-OPEN');
      await s.close();
    }
  });
});

/**
 * A process that starts one session with the library (TypeScript transpiled on load) and runs
 * `CMD` in it: the worker's place. It is started with descriptors of its own beyond stdio, as a
 * supervisor or a CI runner leaves them (libuv's spawn keeps those from 20 up).
 */
const WORKER_JS = `
const fs = require('fs');
const ts = require(process.env.TS);
require.extensions['.ts'] = (m, f) => m._compile(ts.transpileModule(fs.readFileSync(f, 'utf8'), {
  compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true }, fileName: f }).outputText, f);
const { BashSession } = require(process.env.ROOT + '/src/session/index.ts');
(async () => {
  const s = await BashSession.start({ cwd: process.env.WS, workspace: process.env.WS, killGraceMs: 200, timeoutMs: 10000 });
  const r = await s.run(process.env.CMD);
  process.stdout.write(JSON.stringify({ output: r.output, exitCode: r.exitCode }));
  await s.close();
})().catch((e) => { console.error(e); process.exit(1); });
`;

describe('kind 6/7: descriptors the worker inherited reach the session', () => {
  test('a session can neither read nor write a root-only file through a descriptor its worker was started with', () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-root-only-'));
    try {
      fs.chmodSync(secretDir, 0o700);
      const log = path.join(secretDir, 'supervisor.log');
      fs.writeFileSync(log, 'ROOT-ONLY-CONTENT\n', { mode: 0o600 });
      const script = path.join(secretDir, 'worker.js');
      fs.writeFileSync(script, WORKER_JS);
      const ws = tempDir();
      const r = spawnSync('/bin/bash', ['-c', 'exec 40>>"$LOG" 41<"$LOG"; exec node "$SCRIPT"'], {
        encoding: 'utf8',
        timeout: 60_000,
        env: {
          PATH: process.env.PATH,
          LOG: log,
          SCRIPT: script,
          ROOT,
          TS: require.resolve('typescript'),
          WS: ws,
          CMD: 'id -un; cat <&41; echo WRITTEN-BY-SESSION >&40',
        },
      });
      const result = JSON.parse(r.stdout || '{}') as { output?: string };
      // The session ran, as the unprivileged session user, who cannot open the file by its name.
      expect(result.output).toMatch(/^agent-jobs\n/);
      expect(result.output).not.toContain('ROOT-ONLY-CONTENT');
      expect(fs.readFileSync(log, 'utf8')).not.toContain('WRITTEN-BY-SESSION');
    } finally {
      fs.rmSync(secretDir, { recursive: true, force: true });
    }
  });
});

/** Swaps each of N regular files (of SIZE bytes) with a symlink to TARGET, over and over (python, renameat2 RENAME_EXCHANGE). */
const FLIPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
n, target, size = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
os.makedirs('d', exist_ok=True)
for i in range(n):
  with open(f'd/f{i}', 'w') as f: f.write('x' * size)
  os.symlink(target, f'd/l{i}')
print('READY', flush=True)
while True:
  for i in range(n):
    libc.renameat2(-100, f'd/f{i}'.encode(), -100, f'd/l{i}'.encode(), 2)
`;

describe("kind 7: the checkpoint's git, run as root, reads what a session job swaps in", () => {
  test('no checkpoint taken while a job swaps files for symlinks holds a root-only file, and a rewind gives the session none', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-root-only-'));
    try {
      fs.chmodSync(secretDir, 0o700);
      const secret = path.join(secretDir, 'id_key');
      const content = `ROOT-ONLY-KEY-${'k'.repeat(50)}`;
      fs.writeFileSync(secret, content, { mode: 0o600 });
      const ws = tempDir();
      const checkpoints = tempDir('aj-checkpoints-');
      // A file of the repository (untrusted), run as a background job by an approved command (`npm test` would do).
      fs.writeFileSync(path.join(ws, 'flip.py'), FLIPPER);
      const s = await startSession({ cwd: ws, workspace: ws });
      const started = await s.run(`python3 flip.py 200 ${secret} ${content.length} > flip.log 2>&1 & sleep 1; cat flip.log; cat ${secret}`);
      expect(started.output).toContain('READY');
      // The session user cannot read the file itself.
      expect(started.output).not.toContain('ROOT-ONLY-KEY');

      // The worker checkpoints before every tool call that may write, while the job runs. Without the confinement
      // (git run as root, unconfined) four runs found the key at checkpoints 4, 9, 10 and 46: 150 checkpoints (about
      // 20 s) give the race three times the longest of those, and 45 s bound them on a loaded machine.
      const holding: Checkpoint[] = [];
      const deadline = Date.now() + 45_000;
      for (let turn = 1; holding.length === 0 && turn <= 150 && Date.now() < deadline; turn++) {
        const cp = await takeCheckpoint(checkpoints, ws, { maxBytes: 1e9 }, `turn ${turn}`).catch(() => undefined);
        if (!cp || !('id' in cp)) continue;
        const tree = execFileSync('git', ['--git-dir', cp.store, 'ls-tree', '-r', cp.id], { encoding: 'utf8' });
        for (const blob of new Set(
          tree
            .split('\n')
            .filter(Boolean)
            .map((l) => l.split(/\s+/)[2]!),
        )) {
          if (execFileSync('git', ['--git-dir', cp.store, 'cat-file', '-p', blob], { encoding: 'utf8' }).includes('ROOT-ONLY-KEY')) {
            holding.push(cp);
            break;
          }
        }
      }
      await s.close();
      // A person rewinds the run to that turn: the session restarts in the restored workspace.
      if (holding[0]) await restoreCheckpoint(holding[0].store, ws, holding[0].id);
      const after = await startSession({ cwd: ws, workspace: ws });
      const read = await after.run('id -un; grep -rh ROOT-ONLY-KEY d | head -1');
      expect(read.output).toMatch(/^agent-jobs\n/);
      expect(holding.map((c) => c.id)).toEqual([]);
      expect(read.output).not.toContain('ROOT-ONLY-KEY');
    } finally {
      fs.rmSync(secretDir, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Swaps the directory `d` (N empty files f0..) with a symlink `l` to TARGET, over and over (renameat2 RENAME_EXCHANGE). */
const DIR_FLIPPER = `
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
target, n = sys.argv[1], int(sys.argv[2])
os.makedirs('d', exist_ok=True)
for i in range(n):
  open(f'd/f{i}', 'w').close()
os.symlink(target, 'l')
print('READY', flush=True)
while True:
  libc.renameat2(-100, b'd', -100, b'l', 2)
`;

describe('kind 6/7: the ACL grant at session start follows a directory a job swaps for a symlink', () => {
  test("a session starting on a workspace another session's job plays with grants the session user nothing outside it", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    // Root-only files in a directory the sandbox shows (as /etc shows /etc/shadow).
    const target = fs.mkdtempSync('/var/tmp/aj-root-only-');
    try {
      fs.chmodSync(target, 0o755);
      for (let i = 0; i < 200; i++) fs.writeFileSync(path.join(target, `f${i}`), `ROOT-ONLY-${i}\n`, { mode: 0o600 });
      const ws = tempDir(); // root-owned: bash runs as agent-jobs, given the workspace by ACL entries
      fs.writeFileSync(path.join(ws, 'flip.py'), DIR_FLIPPER);
      const first = await startSession({ cwd: ws, workspace: ws });
      const started = await first.run(`python3 flip.py ${target} 200 > flip.log 2>&1 & sleep 1; cat flip.log; cat ${target}/f1`);
      expect(started.output).toContain('READY');
      expect(started.output).not.toContain('ROOT-ONLY');

      // Second sessions on the same workspace (a sub-agent each), while the job runs.
      let granted: string[] = [];
      for (let k = 0; k < 15 && granted.length === 0; k++) {
        const second = await startSession({ cwd: ws, workspace: ws });
        await second.close();
        granted = execFileSync('getfacl', ['-R', '-p', target], { encoding: 'utf8' })
          .split('\n\n')
          .filter((block) => /^user:agent-jobs:/m.test(block))
          .map((block) => block.split('\n')[0]!);
      }
      const read = await first.run(`id -un; cat ${target}/f* 2>/dev/null | head -3`);
      expect(read.output).toMatch(/^agent-jobs\n/);
      expect(granted.slice(0, 3)).toEqual([]); // the first few files outside the workspace that now have an entry for the session user
      expect(read.output).not.toContain('ROOT-ONLY');
    } finally {
      fs.rmSync(target, { recursive: true, force: true });
    }
  }, 120_000);
});

describe("kind 6/7: a sub-agent's worktree runs what the session wrote into .git", () => {
  // uid 0: a root-owned workspace (the run's own folder, a clone made as root); 4242: a repository of a user, whom bash runs as
  // inside the sandbox, and whose git then runs the hook outside it (no seccomp, the hidden home, the host's sockets).
  test.each([0, 4242])('git worktree add for a sub-agent runs no hook the session user wrote (workspace owner uid %i)', async (owner) => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const root = tempDir('aj-workspaces-');
    fs.chmodSync(root, 0o755); // the worker's workspace root, which owners reach
    const ws = path.join(root, 'run-1');
    fs.mkdirSync(ws);
    const git = (...args: string[]): string =>
      execFileSync('git', ['-C', ws, '-c', 'user.name=op', '-c', 'user.email=op@example.com', ...args], { encoding: 'utf8' });
    git('init', '-q');
    fs.writeFileSync(path.join(ws, 'a.txt'), 'a\n');
    git('add', 'a.txt');
    git('commit', '-qm', 'one');
    if (owner !== 0) execFileSync('chown', ['-R', `${owner}:${owner}`, ws]);
    const marker = fs.mkdtempSync('/var/tmp/aj-marker-');
    try {
      fs.chmodSync(marker, 0o1777);
      const s = await startSession({ cwd: ws, workspace: ws });
      const hook = `#!/bin/sh\\nid > ${marker}/ran-as; grep Seccomp: /proc/self/status >> ${marker}/ran-as\\n`;
      // The session can no longer write a hook of its workspace's repository (hooks/ is read-only in its
      // sandbox, src/session/git-guard.ts); one written from outside (the person, a run without the sandbox)
      // must still never run when the worker makes the worktree.
      const wrote = await s.run(`printf '${hook}' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && echo HOOK`);
      expect(wrote.output).toMatch(/Read-only file system/);
      execFileSync('sh', ['-c', `printf '${hook}' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout`], { cwd: ws });
      if (owner !== 0) execFileSync('chown', [`${owner}:${owner}`, path.join(ws, '.git', 'hooks', 'post-checkout')]);
      // The model calls the subagent tool: the worker makes the child's worktree (or refuses; it must not run the hook).
      await createWorktree(root, ws, 'run-1.subagent.toolu_1');
      const ran = fs.existsSync(path.join(marker, 'ran-as')) ? fs.readFileSync(path.join(marker, 'ran-as'), 'utf8') : '';
      expect(ran).not.toContain('uid=0(');
      expect(ran).toBe('');
    } finally {
      fs.rmSync(marker, { recursive: true, force: true });
    }
  });
});
