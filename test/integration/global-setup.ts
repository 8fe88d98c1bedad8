/**
 * Starts one Temporal dev server for the integration suite through the CLI
 * (`agent-jobs server --detach`), on a free port, in memory, headless, with
 * this project's search attributes. Another dev server on 7233 is left
 * alone. It also makes the run's one payload encryption keys file and sets
 * `AGENT_JOBS_CODEC_KEYS` to it, so every worker, CLI process and client
 * the tests start (they inherit this environment, and `scriptedWorkerEnv`
 * passes it on) encrypts and reads with the same key, and points
 * `AGENT_JOBS_BLOB_STORE` at one folder, so they all read the claim check's blobs. (The CLI runs as a child process: Jest's module hooks cannot load
 * execa's ESM-only helpers in a global setup.)
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createKeysFile } from '../../src/codec';
import { freePort } from '../../src/dev/ports';

const CLI = path.resolve(__dirname, '../../bin/agent-jobs.js');

export default async function globalSetup(): Promise<void> {
  const port = await freePort();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-suite-'));
  const codecKeys = path.join(dataDir, 'codec-keys');
  createKeysFile(codecKeys);
  process.env.AGENT_JOBS_CODEC_KEYS = codecKeys;
  // One claim-check store for the run too: a worker's blobs must be readable by every client and CLI of the run.
  process.env.AGENT_JOBS_BLOB_STORE = path.join(dataDir, 'blobs');
  const env = { ...process.env, AGENT_JOBS_DATA_DIR: dataDir };
  const out = execFileSync(process.execPath, [CLI, 'server', '--port', String(port), '--in-memory', '--headless', '--detach', '--json'], {
    env,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const info = JSON.parse(out) as { address: string };
  process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS = info.address;
  process.env.AGENT_JOBS_TEST_SUITE_DATA = dataDir;
  process.env.AGENT_JOBS_TEST_SUITE_PORT = String(port);
}
