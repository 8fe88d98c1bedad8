/**
 * Descriptors the worker inherited never reach the sandbox (src/session/fds.ts, called by
 * sandbox.ts `launchArgs`). A worker started by a supervisor or a CI runner may hold descriptors
 * without close-on-exec: Node marks 0..15 close-on-exec at startup and stops at the first gap, so
 * fd 20 and up survive, and libuv's spawn, setpriv and bwrap close nothing.
 *
 * The attacker's tries: descriptors at several numbers (just past Node's range, mid, far up, one
 * above 255 which bash keeps for itself), a directory descriptor (openat through it walks the
 * host's filesystem), from a command, a background job, an exact run and the launch the edit
 * helper uses, with the sandbox on and off.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { closingLaunch } from '../../../src/session/fds';
import { tempDir, removeTempDirs } from '../session/helpers';

const ROOT = path.resolve(__dirname, '../../..');

afterEach(() => removeTempDirs());

/** The worker's place: starts a session in mode MODE and tries every way into the inherited descriptors. */
const WORKER_JS = `
const fs = require('fs');
const { spawnSync } = require('child_process');
const ts = require(process.env.TS);
require.extensions['.ts'] = (m, f) => m._compile(ts.transpileModule(fs.readFileSync(f, 'utf8'), {
  compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true }, fileName: f }).outputText, f);
const { BashSession, sandboxedSpawnArgs } = require(process.env.ROOT + '/src/session/index.ts');
const FDS = process.env.FDS.split(' ');
const tries = FDS.map((n) => 'cat <&' + n + ' 2>/dev/null; echo W-' + n + ' >&' + n + ' 2>/dev/null; ls /proc/self/fd/' + n + '/ 2>/dev/null').join('; ');
(async () => {
  const ws = process.env.WS;
  const s = await BashSession.start({ cwd: ws, workspace: ws, sandbox: process.env.MODE, killGraceMs: 200, timeoutMs: 20000 });
  const out = {};
  out.user = (await s.run('id -un')).output;
  out.command = (await s.run(tries)).output;
  out.commandFds = (await s.run('ls /proc/self/fd')).output;
  out.shellFds = (await s.run('ls /proc/$$/fd')).output;
  await s.run('(sleep 0.2; { ' + tries + '; ls /proc/self/fd; } > job.txt 2>&1) >/dev/null 2>&1 &');
  const deadline = Date.now() + 15000;
  while (Date.now() < deadline && !(fs.existsSync(ws + '/job.txt') && fs.readFileSync(ws + '/job.txt', 'utf8').includes('\\n'))) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 300));
  out.job = fs.readFileSync(ws + '/job.txt', 'utf8');
  out.exact = (await s.runExact(['ls', '/proc/self/fd'])).output + (await s.runExact(['cat', '/proc/self/fd/' + FDS[1]])).output;
  // The launch of the edit helper (and of any other program the worker starts in the sandbox).
  const launch = sandboxedSpawnArgs(s.sandboxOptions, ['/bin/ls', '/proc/self/fd'], ws);
  const r = spawnSync(launch.file, launch.args, { cwd: ws, env: { PATH: '/usr/bin:/bin' }, encoding: 'utf8' });
  out.helper = r.stdout + r.stderr;
  await s.close();
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { console.error(e); process.exit(1); });
`;

const FDS = [20, 40, 41, 300, 1000];

describe('descriptors the worker inherited', () => {
  test.each(['bwrap', 'none'])(
    'reach no command, job, exact run or helper launch of a session (sandbox %s)',
    (mode) => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-root-only-'));
      try {
        fs.chmodSync(secretDir, 0o700);
        const log = path.join(secretDir, 'supervisor.log');
        fs.writeFileSync(log, 'ROOT-ONLY-CONTENT\n', { mode: 0o600 });
        fs.mkdirSync(path.join(secretDir, 'private'));
        fs.writeFileSync(path.join(secretDir, 'private', 'ROOT-ONLY-NAME'), '');
        const script = path.join(secretDir, 'worker.js');
        fs.writeFileSync(script, WORKER_JS);
        const ws = tempDir();
        fs.chmodSync(ws, 0o755); // without the sandbox, the session user must reach the workspace itself
        const r = spawnSync('/bin/bash', ['-c', 'exec 20<"$LOG" 40>>"$LOG" 41<"$LOG" 300<"$DIR" 1000<"$LOG"; exec node "$SCRIPT"'], {
          encoding: 'utf8',
          timeout: 120_000,
          env: {
            PATH: process.env.PATH,
            LOG: log,
            DIR: path.join(secretDir, 'private'),
            SCRIPT: script,
            ROOT,
            TS: require.resolve('typescript'),
            WS: ws,
            MODE: mode,
            FDS: FDS.join(' '),
          },
        });
        if (r.status !== 0) throw new Error(`worker failed: ${r.stderr}`);
        const out = JSON.parse(r.stdout) as Record<string, string>;
        expect(out.user).toBe('agent-jobs\n');
        for (const key of ['command', 'job', 'exact', 'helper']) {
          expect(`${key}: ${out[key]}`).not.toContain('ROOT-ONLY');
        }
        expect(fs.readFileSync(log, 'utf8')).toBe('ROOT-ONLY-CONTENT\n');
        // What a program started in the session holds: stdio and its own listing's descriptor, nothing more.
        const fds = (s: string | undefined) => (s ?? '').split('\n').filter((l) => /^\d+$/.test(l));
        expect(fds(out.commandFds)).toEqual(['0', '1', '2', '3']);
        expect(fds(out.job)).toEqual(['0', '1', '2', '3']);
        expect(fds(out.exact)).toEqual(['0', '1', '2', '3']);
        expect(fds(out.helper)).toEqual(['0', '1', '2', '3']);
        // bash itself holds none of them (its own control descriptors are its business, not the worker's).
        for (const n of FDS) expect(fds(out.shellFds)).not.toContain(String(n));
      } finally {
        fs.rmSync(secretDir, { recursive: true, force: true });
      }
    },
    150_000,
  );
});

describe('closingLaunch', () => {
  test('closes every descriptor above 2, keeps stdio, opens fd 3 only when asked, and passes argv and env through unchanged', () => {
    const dir = tempDir();
    const file = path.join(dir, 'fd3');
    fs.writeFileSync(file, 'FD3-CONTENT');
    const probe = 'ls /proc/self/fd | tr "\\n" " "; echo; cat <&3 2>/dev/null; echo; printf "%s|" "$@"; echo; echo "$FOO"';
    const run = (fd3?: string) => {
      const { file: f, args } = closingLaunch(['/bin/sh', '-c', probe, 'sh', 'a b', '$(x)', '*'], fd3);
      // The spawner holds fds 9, 30 and 256 without close-on-exec.
      // stdin a socket (libuv's pipes are socketpairs) and SSH_CLIENT set: bash would read $HOME/.bashrc as its caller.
      return spawnSync('/bin/bash', ['--norc', '-p', '-c', 'exec 9<"$1" 30<"$1" 256<"$1"; shift; exec "$@"', 'x', file, f, ...args], {
        encoding: 'utf8',
        input: '',
        env: { PATH: '/usr/bin:/bin', FOO: 'bar baz', BASH_ENV: path.join(dir, 'evil'), HOME: dir, SSH_CLIENT: '1 2 3' },
      });
    };
    fs.writeFileSync(path.join(dir, 'evil'), 'echo BASH_ENV-RAN');
    fs.writeFileSync(path.join(dir, '.bashrc'), 'echo BASHRC-RAN');
    const without = run();
    expect(without.stdout).toBe('0 1 2 3 \n\na b|$(x)|*|\nbar baz\n');
    const withFd3 = run(file);
    expect(withFd3.stdout).toBe('0 1 2 3 4 \nFD3-CONTENT\na b|$(x)|*|\nbar baz\n');
  });
});
