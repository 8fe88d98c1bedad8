/**
 * A real S3-compatible server for the claim check's tests: moto's server
 * (PyPI `moto[server]`, pinned), installed on first use into
 * `.tools/moto` (git-ignored) the way src/dev/devserver.ts installs the
 * Temporal CLI, and started on a free loopback port.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pipInstalled } from '../devserver';
import { freePort } from '../ports';
import { PROJECT_ROOT } from '../../settings';

/** The moto release the tests run (PyPI `moto[server]`). */
export const MOTO_VERSION = '5.2.6';
/** Where it is installed (`pip install --target`). */
export const MOTO_DIR = path.join(PROJECT_ROOT, '.tools', 'moto');

/** A running S3-compatible server. */
export interface S3Server {
  /** `http://127.0.0.1:<port>`, for `AGENT_JOBS_BLOB_S3_ENDPOINT`. */
  endpoint: string;
  /** Credentials it accepts (moto accepts any; these are shaped like real ones, so a leak would be seen). */
  credentials: { AWS_ACCESS_KEY_ID: string; AWS_SECRET_ACCESS_KEY: string; AWS_REGION: string };
  /** Creates a bucket (PUT /<bucket>). */
  createBucket(name: string): Promise<void>;
  /** Stops it and resolves once it is gone. */
  stop(): Promise<void>;
}

/**
 * Installs (once, about 300 MB, a few minutes) and starts moto's S3 server.
 * @param say progress lines
 * @throws Error when pip fails or the server does not answer within 60 s
 */
export async function startS3Server(say: (line: string) => void = () => {}): Promise<S3Server> {
  if (!existsSync(path.join(MOTO_DIR, 'moto', 'server.py'))) await pipInstalled('moto[server]', MOTO_VERSION, MOTO_DIR, 'moto_server', say);
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawn('python3', ['-m', 'moto.server', '-H', '127.0.0.1', '-p', String(port)], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PYTHONPATH: MOTO_DIR, HOME: process.env.HOME ?? '/root' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    const ok = await fetch(`${endpoint}/`)
      .then((r) => r.status < 500)
      .catch(() => false);
    if (ok) break;
    if (child.exitCode !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`moto's S3 server did not start on ${endpoint}: ${out.trim().slice(-500)}`);
    }
    await sleep(200);
  }
  return {
    endpoint,
    credentials: {
      AWS_ACCESS_KEY_ID: 'AKIAMOTOTEST7Q2ZEXAMPLE',
      AWS_SECRET_ACCESS_KEY: 'motoSecret/K7MDENG+bPxRfiCYzq9wJalrXUtnFEMI',
      AWS_REGION: 'us-east-1',
    },
    createBucket: async (name) => {
      const r = await fetch(`${endpoint}/${name}`, { method: 'PUT' });
      if (!r.ok) throw new Error(`cannot create bucket ${name}: HTTP ${r.status}`);
    },
    stop,
  };
}
