/**
 * Starts the integration suite's Temporal dev servers through the CLI
 * (`agent-jobs server --detach`), on free ports, in memory, headless, with
 * this project's search attributes: one per Jest worker (`maxWorkers`), so
 * test files that run at the same time never share a server, its task
 * queues or its visibility lists (test/integration/environment.ts gives
 * each worker its own). Another dev server on 7233 is left alone. It also
 * makes the run's one payload encryption keys file and sets
 * `AGENT_JOBS_CODEC_KEYS` to it, so every worker, CLI process and client
 * the tests start (they inherit this environment, and `scriptedWorkerEnv`
 * passes it on) encrypts and reads with the same key, and points
 * `AGENT_JOBS_BLOB_STORE` at one folder, so they all read the claim check's blobs. (The CLI runs as a child process: Jest's module hooks cannot load
 * execa's ESM-only helpers in a global setup.)
 */
import { execFile } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createKeysFile } from '../../src/codec';
import { FREE_PORT_ATTEMPTS, freePort, portWasTaken } from '../../src/dev/ports';
import { SUITE_SERVERS_ENV, type SuiteServer } from './environment';
import globalTeardown from './global-teardown';

const CLI = path.resolve(__dirname, '../../bin/agent-jobs.js');

/** @param globalConfig Jest's global configuration: `maxWorkers` servers are started (at least one). */
export default async function globalSetup(globalConfig: { maxWorkers: number }): Promise<void> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-suite-'));
  const codecKeys = path.join(dataDir, 'codec-keys');
  createKeysFile(codecKeys);
  process.env.AGENT_JOBS_CODEC_KEYS = codecKeys;
  // One claim-check store for the run too: a worker's blobs must be readable by every client and CLI of the run.
  process.env.AGENT_JOBS_BLOB_STORE = path.join(dataDir, 'blobs');
  process.env.AGENT_JOBS_TEST_SUITE_DATA = dataDir;
  const env = { ...process.env, AGENT_JOBS_DATA_DIR: dataDir };
  // One after another: started side by side, one server's own ports (HTTP API, UI, metrics, chosen by
  // itself) took the port chosen for the next, which then failed to start.
  const servers: SuiteServer[] = [];
  try {
    for (let i = 0; i < Math.max(1, globalConfig.maxWorkers); i++) {
      const { port, out } = await serverOnFreePort(env);
      servers.push({ address: (JSON.parse(out) as { address: string }).address, port });
    }
  } catch (err) {
    // Jest runs no global teardown after a failed setup: the servers started so far would outlive the run.
    process.env[SUITE_SERVERS_ENV] = JSON.stringify(servers);
    try {
      globalTeardown();
    } catch {
      /* the setup's own error is the one to report */
    }
    throw err;
  }
  process.env[SUITE_SERVERS_ENV] = JSON.stringify(servers);
}

/**
 * `agent-jobs server --detach` on a port free a moment before, choosing again when the server
 * found it (or the HTTP API port it picks itself) taken by another process meanwhile.
 * @returns the port and the command's JSON output
 * @throws the command's error (its stderr printed) when it fails otherwise, or every attempt met a taken port
 */
async function serverOnFreePort(env: NodeJS.ProcessEnv): Promise<{ port: number; out: string }> {
  for (let attempt = 1; ; attempt++) {
    const port = await freePort();
    try {
      const args = [CLI, 'server', '--port', String(port), '--in-memory', '--headless', '--detach', '--json'];
      const { stdout } = await promisify(execFile)(process.execPath, args, { env, encoding: 'utf8' });
      return { port, out: stdout };
    } catch (err) {
      const stderr = (err as { stderr?: string }).stderr ?? '';
      if (attempt < FREE_PORT_ATTEMPTS && portWasTaken(stderr)) continue;
      process.stderr.write(stderr);
      throw err;
    }
  }
}
