/**
 * A worker that cannot start says why in one line on stderr and exits
 * non-zero, whichever way it is started (`agent-jobs worker`, `node
 * dist/worker.js`), instead of a stack trace or a process that hangs; one
 * that starts says so as one JSON line with `--json`.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/dev/ports';
import { sharedCodecKeys } from '../../src/dev/testing/worker-process';
import { waitFor } from './harness';

const ROOT = path.resolve(__dirname, '../..');
const ENTRIES = [
  ['agent-jobs worker', [path.join(ROOT, 'bin', 'agent-jobs.js'), 'worker'], 'agent-jobs: '],
  ['node dist/worker.js', [path.join(ROOT, 'dist', 'worker.js')], 'agent-jobs worker: '],
] as const;

/** Runs a worker entry with `env`; resolves with its exit code and output (kills it after `timeoutMs`). */
function runWorker(
  args: readonly string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      process.execPath,
      [...args],
      {
        env: {
          PATH: process.env.PATH ?? '/usr/bin:/bin',
          HOME: process.env.HOME ?? '/root',
          AGENT_JOBS_CODEC_KEYS: sharedCodecKeys(),
          ...env,
        },
        timeout: timeoutMs,
        killSignal: 'SIGKILL',
      },
      (err, stdout, stderr) => {
        resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr: String(stderr) });
        void err;
      },
    );
  });
}

describe('worker startup errors', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-worker-startup-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test.each(ENTRIES)(
    '%s: an unknown AGENT_JOBS_LOG_LEVEL is one line naming the variable, the value and the allowed values',
    async (_name, args, prefix) => {
      const r = await runWorker(
        args,
        { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_LOG_LEVEL: 'verbose', TEMPORAL_ADDRESS: process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS! },
        20_000,
      );
      expect(r).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `${prefix}AGENT_JOBS_LOG_LEVEL must be one of TRACE, DEBUG, INFO, WARN, ERROR (any case), not "verbose"\n`,
      });
    },
  );

  // Every bad value, from either entry: one line naming the variable and the value, exit 1, before it connects anywhere.
  test.each(
    ENTRIES.flatMap(([name, args, prefix]) =>
      ['0', '-1', '1.5', 'many', '10 sessions', '1e3'].map((v) => [name, args, prefix, v] as const),
    ),
  )('%s: AGENT_JOBS_MAX_SESSIONS=%j stops the worker with a clear error', async (_name, args, prefix, value) => {
    // No server at this address: the error must come before any connection attempt.
    const address = `127.0.0.1:${await freePort()}`;
    const r = await runWorker(args, { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_MAX_SESSIONS: value, TEMPORAL_ADDRESS: address }, 20_000);
    expect(r).toEqual({
      code: 1,
      signal: null,
      stdout: '',
      stderr: `${prefix}AGENT_JOBS_MAX_SESSIONS must be a positive integer (bash sessions per worker process), not ${JSON.stringify(value)}\n`,
    });
  });

  test.each(ENTRIES)(
    '%s: AGENT_JOBS_CODEC_KEYS naming no file stops the worker in one line, before it connects',
    async (_name, args, prefix) => {
      const address = `127.0.0.1:${await freePort()}`;
      const missing = path.join(dataDir, 'no-such-keys');
      const r = await runWorker(
        args,
        { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_CODEC_KEYS: missing, AGENT_JOBS_LOG_LEVEL: 'ERROR', TEMPORAL_ADDRESS: address },
        20_000,
      );
      // The CLI entry adds its hint line, as for every error it reports.
      const hint =
        prefix === 'agent-jobs: '
          ? 'hint: AGENT_JOBS_CODEC_KEYS names the keys every worker and CLI share (docs/security.md, "Encryption")\n'
          : '';
      expect(r).toEqual({
        code: 1,
        signal: null,
        stdout: '',
        stderr: `${prefix}codec keys ${missing}: no such file or directory\n${hint}`,
      });
    },
  );

  // Both entries at once: each waits out the SDK's connection retries (about 10 s), which use no CPU.
  test('agent-jobs worker and node dist/worker.js: no Temporal server at TEMPORAL_ADDRESS exits 1 with the reason, not a hang', async () => {
    await Promise.all(
      ENTRIES.map(async ([, args, prefix]) => {
        const address = `127.0.0.1:${await freePort()}`;
        const r = await runWorker(args, { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_LOG_LEVEL: 'ERROR', TEMPORAL_ADDRESS: address }, 40_000);
        expect(r.signal).toBeNull();
        expect(r.code).toBe(1);
        expect(r.stderr).toContain(`${prefix}no Temporal server answers at ${address}`);
      }),
    );
  }, 60_000);
});

test('agent-jobs worker --json: one JSON line on stdout once started, logs on stderr', async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-worker-json-'));
  // A temp folder of its own: the worker's start reaps the session folders of dead workers in its temp folder and warns
  // of them, and a test running beside this one may just have killed a worker (CI saw "cleaned up 1 bash sessions").
  const ownTmp = mkdtempSync(path.join(tmpdir(), 'agent-jobs-worker-json-tmp-'));
  const address = process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS!;
  const child = spawn(process.execPath, [ENTRIES[0][1][0], 'worker', '--json'], {
    env: {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: process.env.HOME ?? '/root',
      TMPDIR: ownTmp,
      AGENT_JOBS_DATA_DIR: dataDir,
      AGENT_JOBS_CODEC_KEYS: sharedCodecKeys(),
      TEMPORAL_ADDRESS: address,
      AGENT_JOBS_WORKER_ID: 'json-worker',
      AGENT_JOBS_LOG_LEVEL: 'INFO',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  try {
    let stdout = '';
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const line = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('\n')) resolve(stdout);
      });
      child.once('exit', (code) => reject(new Error(`worker exited (${code}): ${stderr}`)));
    });
    expect(line.endsWith('\n') && line.indexOf('\n') === line.length - 1).toBe(true);
    expect(JSON.parse(line)).toEqual({
      workerId: 'json-worker',
      pid: child.pid,
      namespace: 'default',
      address,
      sharedTaskQueue: 'agent-jobs',
      sessionTaskQueue: 'agent-jobs.session.json-worker',
    });
    await waitFor(
      'the polling log line on stderr',
      () => stderr.includes('worker json-worker polling agent-jobs and agent-jobs.session.json-worker'),
      10_000,
    );
    expect(stdout).toBe(line);
    // A healthy start warns of nothing: the session worker's "No workflows registered" (its task queue carries activities only) is a DEBUG line.
    expect(stderr).not.toContain('[WARN]');
  } finally {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
    rmSync(ownTmp, { recursive: true, force: true });
  }
});
