/**
 * A worker that dies (SIGKILL) in the middle of a command: its bash dies with
 * it, the shell's sentinel kills everything the shell started (foreground
 * command and background job) at once, and `reapOrphanedSessions` (run by
 * the next worker) removes the session's directory and cgroup.
 *
 * The "worker" is a child Node process running the session code, transpiled
 * from src/ with TypeScript's transpileModule (no build needed).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as ts from 'typescript';
import { reapOrphanedSessions } from '../../../src/session';
import { processes, removeTempDirs, tempDir, uniqueSleepSeconds, waitGone } from './helpers';

afterEach(removeTempDirs);

/** Live `sleep <seconds>` processes (exact command line: the worker's own script also contains the number). */
function sleeping(seconds: string): number[] {
  return processes()
    .filter((p) => p.cmdline === `sleep ${seconds}` && p.state !== 'Z')
    .map((p) => p.pid);
}

/**
 * Transpiles every module of src/ into `outDir` with its folders (the session library imports
 * src/shared, src/config, ...), so `<outDir>/session` loads as the built one would.
 */
function transpileSrc(outDir: string, srcDir = path.join(__dirname, '../../../src')): void {
  for (const entry of fs.readdirSync(srcDir, { withFileTypes: true })) {
    const from = path.join(srcDir, entry.name);
    if (entry.isDirectory()) {
      fs.mkdirSync(path.join(outDir, entry.name), { recursive: true });
      transpileSrc(path.join(outDir, entry.name), from);
    } else if (entry.name.endsWith('.ts')) {
      const out = ts.transpileModule(fs.readFileSync(from, 'utf8'), {
        compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
      });
      fs.writeFileSync(path.join(outDir, entry.name.replace(/\.ts$/, '.js')), out.outputText);
    }
  }
}

test('a killed worker takes its bash and every process it started with it; the next worker reaps the rest', async () => {
  const work = tempDir('aj-orphan-');
  const lib = path.join(work, 'lib');
  const sessionsDir = path.join(work, 'tmp');
  fs.mkdirSync(lib);
  fs.mkdirSync(sessionsDir);
  transpileSrc(lib);
  const background = uniqueSleepSeconds();
  const foreground = uniqueSleepSeconds();
  const script = `
    const { BashSession } = require(${JSON.stringify(path.join(lib, 'session'))});
    (async () => {
      const s = await BashSession.start({ cwd: '/' });
      await s.run('sleep ${background} >/dev/null 2>&1 &');
      s.run('echo working; sleep ${foreground}');
      setTimeout(() => process.stdout.write(JSON.stringify({ pid: s.pid, id: s.id }) + '\\n'), 300);
    })();`;
  const worker = spawn(process.execPath, ['-e', script], {
    env: { ...process.env, TMPDIR: sessionsDir },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let info: { pid: number; id: string };
  try {
    info = await new Promise<{ pid: number; id: string }>((resolve, reject) => {
      worker.stdout.once('data', (d: Buffer) => resolve(JSON.parse(d.toString()) as { pid: number; id: string }));
      worker.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
    });
    expect(sleeping(foreground)).toHaveLength(1);
  } finally {
    worker.kill('SIGKILL');
    await new Promise((r) => (worker.exitCode !== null || worker.signalCode !== null ? r(null) : worker.once('exit', r)));
  }

  // bash dies with its worker (setpriv --pdeathsig), even in the middle of a command
  const hasSetpriv = (process.env.PATH ?? '').split(':').some((d) => fs.existsSync(path.join(d, 'setpriv')));
  if (hasSetpriv) {
    const end = Date.now() + 3000;
    while (processes().some((p) => p.pid === info.pid && p.state !== 'Z') && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
    expect(processes().filter((p) => p.pid === info.pid && p.state !== 'Z')).toEqual([]);
  }
  // what it started dies too, without waiting for another worker: the sentinel saw the worker's pipe close
  const end = Date.now() + 3000;
  while ((sleeping(background).length > 0 || sleeping(foreground).length > 0) && Date.now() < end)
    await new Promise((r) => setTimeout(r, 20));
  expect(sleeping(background)).toEqual([]);
  expect(sleeping(foreground)).toEqual([]);

  // the next worker removes what is left on disk
  const reaped = await reapOrphanedSessions(sessionsDir);
  expect(reaped.sessions).toEqual([info.id]);
  expect(await waitGone({ sid: info.pid })).toEqual([]);
  expect(fs.readdirSync(sessionsDir)).toEqual([]);
  expect(fs.readdirSync('/sys/fs/cgroup/pids').filter((d) => d.includes(info.id))).toEqual([]);
  // and its socket-memory cgroup (cgroup v1 memory hierarchy, below our own: guard.ts socketCgroup)
  const memory = /^\d+:memory:(.*)$/m.exec(fs.readFileSync('/proc/self/cgroup', 'utf8'))?.[1];
  const memoryDir = memory === undefined ? undefined : path.join('/sys/fs/cgroup/memory', memory);
  if (memoryDir && fs.existsSync(memoryDir)) expect(fs.readdirSync(memoryDir).filter((d) => d.includes(info.id))).toEqual([]);
  // a live worker's sessions are left alone
  expect(await reapOrphanedSessions(sessionsDir)).toEqual({ sessions: [], killed: 0 });
});
