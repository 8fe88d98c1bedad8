/**
 * A worker that cannot start says why in one line on stderr and exits
 * non-zero, whichever way it is started (`agent-jobs worker`, `node
 * dist/worker.js`), instead of a stack trace or a process that hangs.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../src/ports';

const ROOT = path.resolve(__dirname, '../..');
const ENTRIES = [
  ['agent-jobs worker', [path.join(ROOT, 'bin', 'agent-jobs.js'), 'worker'], 'agent-jobs: '],
  ['node dist/worker.js', [path.join(ROOT, 'dist', 'worker.js')], 'agent-jobs worker: '],
] as const;

/** Runs a worker entry with `env`; resolves with its exit code and output (kills it after `timeoutMs`). */
function runWorker(args: readonly string[], env: Record<string, string>, timeoutMs: number): Promise<{ code: number | null; signal: string | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/root', ...env }, timeout: timeoutMs, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      resolve({ code: child.exitCode, signal: child.signalCode, stdout, stderr: String(stderr) });
      void err;
    });
  });
}

describe('worker startup errors', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-worker-startup-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  test.each(ENTRIES)('%s: an unknown AGENT_JOBS_LOG_LEVEL is one line naming the variable, the value and the allowed values', async (_name, args, prefix) => {
    const r = await runWorker(args, { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_LOG_LEVEL: 'verbose', TEMPORAL_ADDRESS: process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS! }, 20_000);
    expect(r).toEqual({ code: 1, signal: null, stdout: '', stderr: `${prefix}AGENT_JOBS_LOG_LEVEL must be one of TRACE, DEBUG, INFO, WARN, ERROR (any case), not "verbose"\n` });
  });

  test.each(ENTRIES)('%s: no Temporal server at TEMPORAL_ADDRESS exits 1 with the reason, not a hang', async (_name, args, prefix) => {
    const address = `127.0.0.1:${await freePort()}`;
    const r = await runWorker(args, { AGENT_JOBS_DATA_DIR: dataDir, AGENT_JOBS_LOG_LEVEL: 'ERROR', TEMPORAL_ADDRESS: address }, 40_000);
    expect(r.signal).toBeNull();
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`${prefix}no Temporal server answers at ${address}`);
  }, 60_000);
});
