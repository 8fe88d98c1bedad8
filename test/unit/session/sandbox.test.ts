/**
 * Attacks on the session's sandbox and identity, from inside a real
 * session (BashSession, real bash, real bwrap): each must fail. Needs root
 * and a working bwrap; in CI (CI=true) missing either is a failure, not a
 * skip.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { BashSession, findBwrap, sandboxedSpawnArgs, SessionStartError } from '../../../src/session';
import { lookupUser as lookupUserForTest } from '../../../src/session/identity';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

const REPO = path.resolve(__dirname, '../../..');
const isRoot = process.getuid?.() === 0;
const bwrap = findBwrap();
const ready = isRoot && bwrap !== null;
const why = !isRoot ? 'not root' : 'no working bwrap';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

if (!ready) {
  if (process.env.CI === 'true') {
    test('sandbox tests can run here (CI needs root and bwrap)', () => {
      throw new Error(`sandbox tests cannot run in CI: ${why}; .ci/run installs bubblewrap and runs as root`);
    });
  } else {
    console.warn(`skipping sandbox and identity attack tests: ${why}`);
    test.skip(`sandbox attack tests (${why})`, () => undefined);
  }
}

const d = ready ? describe : describe.skip;

/** A TCP listener on loopback; resolves with its port and what it received. */
async function listener(): Promise<{ port: number; received: () => string; close: () => Promise<void> }> {
  let data = '';
  const server = net.createServer((sock) => sock.on('data', (b) => (data += b.toString())));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  return { port, received: () => data, close: () => new Promise((r) => server.close(() => r())) };
}

d('sandbox (bwrap) and identity: what a command cannot do', () => {
  test('the session runs sandboxed, as the unprivileged session user, with no capabilities and no_new_privs', async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    expect(s.sandbox).toBe('bwrap');
    expect(s.user).toBe('agent-jobs');
    const id = lookupUserForTest('agent-jobs')!;
    const r = await s.run("id -u; id -g; id -G; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status; echo $$");
    expect(r.output).toBe(
      `${id.uid}\n${id.gid}\n${id.gid}\nCapPrm:\t0000000000000000\nCapEff:\t0000000000000000\nCapBnd:\t0000000000000000\nNoNewPrivs:\t1\n2\n`,
    );
    // The workspace (root's) keeps its owner; the session user was granted it by an ACL entry.
    expect(fs.statSync(ws).uid).toBe(0);
    expect(spawnSync('getfacl', ['-cpn', ws], { encoding: 'utf8' }).stdout).toContain(`user:${id.uid}:rwx`);
  });

  test("writing outside the workspace fails: /etc, the repository, /work, another session's workspace, the audit log", async () => {
    const ws = tempDir();
    const other = tempDir();
    const auditDir = tempDir();
    const audit = path.join(auditDir, 'audit.jsonl');
    const s = await startSession({ cwd: ws, workspace: ws, auditLog: audit });
    await startSession({ cwd: other, workspace: other });
    const targets = [
      '/etc/agent-jobs-x',
      path.join(REPO, 'agent-jobs-x'),
      '/work/agent-jobs-x',
      path.join(other, 'x'),
      '/usr/agent-jobs-x',
      '/var/tmp/agent-jobs-x',
    ];
    for (const t of targets) {
      const r = await s.run(`touch ${t} && echo WROTE`);
      expect(r.output).not.toContain('WROTE');
      expect(r.exitCode).not.toBe(0);
      expect(fs.existsSync(t)).toBe(false);
    }
    const before = fs.readFileSync(audit, 'utf8');
    const r = await s.run(`echo forged >> ${audit} && echo WROTE; ls ${auditDir}`);
    expect(r.output).not.toContain('WROTE');
    expect(fs.readFileSync(audit, 'utf8').startsWith(before)).toBe(true);
    // Every line is still one of the worker's JSON records (the command text itself is logged).
    expect(
      fs
        .readFileSync(audit, 'utf8')
        .trim()
        .split('\n')
        .every((l) => (JSON.parse(l) as { sessionId: string }).sessionId === s.id),
    ).toBe(true);
    // The workspace itself is writable, and the file is there outside too.
    expect((await s.run('echo ok > mine && cat mine')).output).toBe('ok\n');
    expect(fs.readFileSync(path.join(ws, 'mine'), 'utf8')).toBe('ok\n');
  });

  test('no network unless asked: a loopback listener of the host is unreachable, with network: true too (its own namespace, test/unit/attack/network-isolation.test.ts)', async () => {
    const l = await listener();
    try {
      const ws = tempDir();
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`echo secret-data > /dev/tcp/127.0.0.1/${l.port} && echo SENT`);
      expect(r.output).not.toContain('SENT');
      expect(r.exitCode).not.toBe(0);
      const n = await startSession({ cwd: ws, workspace: ws, network: true });
      const no = await n.run(`echo hello-net > /dev/tcp/127.0.0.1/${l.port} && echo SENT`);
      expect(no.output).not.toContain('SENT');
      expect(l.received()).toBe('');
    } finally {
      await l.close();
    }
  });

  test('the worker is out of reach: not in ps, its environ and memory unreadable, kill -9 fails', async () => {
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    const me = process.pid;
    const r = await s.run(
      `ps -eo pid,args; cat /proc/${me}/environ && echo READ-ENV; head -c 16 /proc/${me}/mem && echo READ-MEM; ls /proc/${me}/fd && echo READ-FD; kill -9 ${me} && echo KILLED; cat /proc/*/environ | tr '\\0' '\\n' | grep -c . ; true`,
    );
    expect(r.output).not.toMatch(/READ-ENV|READ-MEM|READ-FD|KILLED/);
    // ps shows the sandbox only: bwrap as pid 1, bash as 2, ps.
    const psLines = r.output.split('\n').filter((l) => /^\s*\d+ /.test(l));
    expect(psLines.map((l) => Number(l.trim().split(/\s+/)[0])).every((pid) => pid < 20)).toBe(true);
    expect(r.output).not.toMatch(/jest|node /);
    expect(fs.existsSync(`/proc/${me}`)).toBe(true);
  });

  test("another session's FIFO directory is not reachable", async () => {
    const a = await startSession({ cwd: '/' });
    const b = await startSession({ cwd: '/' });
    const fifoB = (await b.run('readlink /proc/self/fd/1')).output.trim();
    expect(fifoB).toMatch(/agent-jobs-session-/);
    const r = await a.run(`ls ${path.dirname(fifoB)} && echo LISTED; echo injected > ${fifoB} && echo WROTE`);
    expect(r.output).not.toMatch(/LISTED|WROTE/);
    expect((await b.run('echo still-mine')).output).toBe('still-mine\n');
  });

  test('own pid namespace and private /tmp; the worker sees bash at bashPid with the same cwd', async () => {
    const ws = tempDir();
    fs.mkdirSync(path.join(ws, 'sub'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('echo $$; cd sub; echo inside > /tmp/private-file; pwd');
    expect(r.output).toBe(`2\n${ws}/sub\n`);
    expect(fs.existsSync('/tmp/private-file')).toBe(false);
    expect(s.bashPid).not.toBe(s.pid);
    expect(fs.readlinkSync(`/proc/${s.bashPid}/cwd`)).toBe(`${ws}/sub`);
    expect(fs.readFileSync(`/proc/${s.bashPid}/comm`, 'utf8')).toBe('bash\n');
    expect(fs.readFileSync(`/proc/${s.bashPid}/oom_score_adj`, 'utf8').trim()).toBe('1000');
  });

  test('sandboxedSpawnArgs runs another process with the same sandbox and identity, exact argv, given cwd and env', async () => {
    const ws = tempDir();
    fs.mkdirSync(path.join(ws, 'sub'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const { file, args } = sandboxedSpawnArgs(
      s.sandboxOptions,
      [
        'bash',
        '-c',
        'id -u; pwd; echo "$ONLY"; echo $$; { echo x > /etc/x; } 2>/dev/null || echo ro; { echo > /dev/tcp/127.0.0.1/1; } 2>/dev/null || echo nonet',
        'a b',
      ],
      path.join(ws, 'sub'),
    );
    const r = spawnSync(file, args, { cwd: path.join(ws, 'sub'), env: { PATH: '/usr/bin:/bin', ONLY: 'given' }, encoding: 'utf8' });
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe(`${lookupUserForTest('agent-jobs')!.uid}\n${ws}/sub\ngiven\n2\nro\nnonet\n`);
  });

  test('sandbox bwrap asked for where there is no bwrap: a clear start error, never a silent fallback', async () => {
    const saved = process.env.PATH;
    const savedMode = process.env.AGENT_JOBS_SANDBOX;
    try {
      process.env.PATH = '/nonexistent-bin';
      await expect(BashSession.start({ cwd: '/', sandbox: 'bwrap' })).rejects.toThrow(SessionStartError);
      await expect(BashSession.start({ cwd: '/', sandbox: 'bwrap' })).rejects.toThrow(/no working bwrap was found/);
      process.env.AGENT_JOBS_SANDBOX = 'bwrap';
      await expect(BashSession.start({ cwd: '/' })).rejects.toThrow(/no working bwrap was found/);
    } finally {
      process.env.PATH = saved;
      if (savedMode === undefined) delete process.env.AGENT_JOBS_SANDBOX;
      else process.env.AGENT_JOBS_SANDBOX = savedMode;
    }
  });
});

d('identity without a sandbox (sandbox none, worker root)', () => {
  test("bash runs as the session user: the worker's environ, mem and fd are unreadable and it cannot be killed", async () => {
    const ws = tempDir();
    fs.chmodSync(ws, 0o755);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    expect(s.sandbox).toBe('none');
    const me = process.pid;
    const r = await s.run(
      `id -un; cat /proc/${me}/environ && echo READ-ENV; head -c 16 /proc/${me}/mem && echo READ-MEM; ls /proc/${me}/fd && echo READ-FD; kill -9 ${me} && echo KILLED; touch /etc/x && echo WROTE; true`,
    );
    expect(r.output.split('\n')[0]).toBe('agent-jobs');
    expect(r.output).not.toMatch(/READ-ENV|READ-MEM|READ-FD|KILLED|WROTE/);
  });

  test('a workspace the session user cannot reach without the sandbox is a clear start error', async () => {
    const parent = tempDir(); // 0700, root's
    const ws = path.join(parent, 'ws');
    fs.mkdirSync(ws);
    await expect(BashSession.start({ cwd: ws, workspace: ws, sandbox: 'none' })).rejects.toThrow(/cannot enter/);
  });
});

d('the worker is non-dumpable', () => {
  /** Starts a node process holding SECRET in its environment, made non-dumpable like the worker. */
  function holder(): Promise<ChildProcess> {
    const identity = path.join(REPO, 'dist', 'session', 'identity.js');
    const code = `const r = require(${JSON.stringify(identity)}).makeNonDumpable(); console.log(JSON.stringify(r)); setInterval(() => {}, 1000);`;
    const child = spawn(process.execPath, ['-e', code], {
      env: { PATH: '/usr/bin:/bin', SECRET: 'sk-ant-fake-dumpable-0123456789' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    return new Promise((resolve) =>
      child.stdout.once('data', (b: Buffer) => {
        expect(JSON.parse(b.toString())).toEqual({ done: true });
        resolve(child);
      }),
    );
  }

  test('makeNonDumpable succeeds as root, and the session user can read neither environ, mem nor fd of such a process', async () => {
    if (!fs.existsSync(path.join(REPO, 'dist', 'session', 'identity.js'))) throw new Error('run npm run build first');
    const hardened = await holder();
    try {
      const id = lookupUserForTest('agent-jobs')!;
      const asUser = (...argv: string[]) =>
        spawnSync('setpriv', ['--reuid', String(id.uid), '--regid', String(id.gid), '--clear-groups', '--', ...argv], {
          env: { PATH: '/usr/bin:/bin' },
          encoding: 'latin1',
        });
      for (const argv of [
        ['cat', `/proc/${hardened.pid}/environ`],
        ['head', '-c', '16', `/proc/${hardened.pid}/mem`],
        ['ls', `/proc/${hardened.pid}/fd`],
      ]) {
        const r = asUser(...argv);
        expect(r.status).not.toBe(0);
        expect(r.stdout).not.toContain('sk-ant-fake');
      }
      expect(asUser('kill', '-9', String(hardened.pid)).status).not.toBe(0);
    } finally {
      hardened.kill('SIGKILL');
    }
  });
});
