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
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
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
