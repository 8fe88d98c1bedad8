/**
 * The claim check end to end (src/codec/claim-check.ts): real workers, a
 * real dev server of this file's own (so no other file's test bed replays a
 * run whose blobs it cannot reach), the scripted model server.
 *
 * - Two runs whose command outputs exceed the threshold; the worker is
 *   SIGKILLed mid-run and another takes over. Run A completes: its raw
 *   history holds references and no payload over the threshold, the model
 *   got the outputs whole, the blobs are 0600 ciphertext. Run B's blobs are
 *   deleted before the new worker replays it: its workflow task fails naming
 *   the key and the store, and the CLI says so in one line.
 * - The S3 store (moto's server, installed from PyPI by the test itself):
 *   round trip, idempotent writes, a missing key; a run through it
 *   completes, and the worker's AWS_* variables never reach bash.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { readFileSync, rmSync, statSync } from 'node:fs';
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { BlobStoreError, DirectoryBlobStore, MAX_BLOB_BYTES, REFERENCE_ENCODING, S3BlobStore, parseReference } from '../../src/codec';
import { startDevServerOnFreePort, ensureTemporalCli, freePort, type DevServer } from '../../src/dev/devserver';
import { largestTaskPayloadBytes } from '../../src/dev/testing/history-payloads';
import { startS3Server, type S3Server } from '../../src/dev/testing/s3-server';
import { cliWith, spawnCli } from './cli-process';
import { TestBed, waitFor } from './harness';
import { asks, end } from './steering-helpers';

/** Far below the default (128 KiB), so one command's output (capped at 30 KB) is over it. */
const THRESHOLD = 16 * 1024;
/** ~26,700 characters of incompressible base64 (so they stay big after gzip), with a mark to find. */
const big = (mark: string): string => `echo ${mark}; head -c 20000 /dev/urandom | base64 -w0; echo`;

/** Every payload of `value` (a history), with where it sits. */
function payloads(value: unknown, at = 'history'): Array<{ at: string; payload: Payload }> {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return [];
  const o = value as Record<string, unknown>;
  if (o['metadata'] && typeof o['metadata'] === 'object' && (o['metadata'] as Record<string, unknown>)['encoding'] instanceof Uint8Array)
    return [{ at, payload: o }];
  return Object.entries(o).flatMap(([k, v]) => payloads(v, `${at}.${k}`));
}
const run = promisify(execFile);
/** `binary/claim-check` as `temporal workflow show --output json` prints metadata (base64). */
const REFERENCE_ENCODING_B64 = Buffer.from(REFERENCE_ENCODING).toString('base64');
/** The text of every payload in `temporal workflow show --output json` (proto JSON: data in base64). */
function payloadTexts(json: string): string {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (v === null || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if (typeof o['data'] === 'string' && typeof o['metadata'] === 'object') out.push(Buffer.from(o['data'], 'base64').toString('utf8'));
    Object.values(o).forEach(walk);
  };
  try {
    walk(JSON.parse(json));
  } catch {
    return '';
  }
  return out.join('\n');
}
const encodingOf = (p: Payload): string => Buffer.from(p.metadata!['encoding']!).toString();
const size = (p: Payload): number => temporal.api.common.v1.Payload.encode(p).finish().length;

let server: DevServer | undefined;
beforeAll(async () => {
  server = await startDevServerOnFreePort({ headless: true });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

test('outputs over the threshold: history keeps references, the run completes across a SIGKILLed worker; a deleted blob fails the run clearly', async () => {
  const store = new DirectoryBlobStore(process.env.AGENT_JOBS_BLOB_STORE!);
  const bed = await TestBed.create({
    address: server!.address,
    script: {
      responses: [asks(['t1', big('BIGMARK_1')], ['t2', big('BIGMARK_2')]), asks(['t3', 'sleep 30; echo slept']), end('all done')],
    },
    workerEnv: { AGENT_JOBS_BLOB_THRESHOLD: String(THRESHOLD) },
  });
  try {
    const a = await bed.start({ task: 'big outputs A', approval: 'auto' }, 'claim-check-restart');
    const b = await bed.start({ task: 'big outputs B', approval: 'auto' });
    // Both runs are in their second turn's `sleep` (the model has answered twice each).
    await waitFor('both runs asked for their sleep', () => bed.requests().length >= 4, 120_000);
    await waitFor(
      'both sleeps started',
      async () => (await Promise.all([a, b].map((h) => bed.status(h)))).every((s) => s.turns >= 2),
      60_000,
    );

    // Run B's blobs go (every reference its history holds), then the worker dies and another takes over.
    const refsOf = async (h: typeof a): Promise<string[]> =>
      payloads(await h.fetchHistory())
        .filter((p) => encodingOf(p.payload) === REFERENCE_ENCODING)
        .map((p) => parseReference(p.payload).key);
    const bKeys = await refsOf(b);
    expect(bKeys.length).toBeGreaterThanOrEqual(2);
    for (const key of bKeys) rmSync(store.file(key));
    await bed.workers[0]!.kill();
    const second = await bed.startWorker();

    // A completes on the new worker, which replayed its history through the references.
    expect(await a.result()).toMatchObject({ status: 'completed', text: 'all done' });
    // The model got both outputs whole (the conversation went through the blobs unchanged).
    const sentA = bed.requests().filter((r) => JSON.stringify(r.body).includes('big outputs A'));
    const results = JSON.stringify(sentA[1]!.body);
    expect(results).toContain('BIGMARK_1');
    expect(results).toContain('BIGMARK_2');

    // The raw history (no codec): references, and no payload over the threshold.
    const raw = payloads(await a.fetchHistory());
    const refs = raw.filter((p) => encodingOf(p.payload) === REFERENCE_ENCODING);
    expect(refs.length).toBeGreaterThanOrEqual(3); // two runCommand results and the next callClaude's input, at least
    const largest = Math.max(...raw.map((p) => size(p.payload)));
    expect(largest).toBeLessThanOrEqual(THRESHOLD);
    // What one workflow task completion carries is counted in references too: far below the server's 4 MB.
    expect(largestTaskPayloadBytes(await a.fetchHistory())).toBeLessThan(THRESHOLD);
    for (const r of refs) expect(size(r.payload)).toBeLessThan(400);
    const bytes = Buffer.from(temporal.api.history.v1.History.encode(await a.fetchHistory()).finish());
    expect(bytes.includes('BIGMARK_1')).toBe(false);
    // Each blob: 0600, the sha256 its reference names, ciphertext only.
    for (const r of refs) {
      const { key, size: n } = parseReference(r.payload);
      const file = store.file(key);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      const blob = readFileSync(file);
      expect(blob.length).toBe(n);
      expect(blob.includes('BIGMARK')).toBe(false);
    }

    // `agent-jobs codec-server` resolves the references too, so `temporal workflow show` (and the UI) shows the outputs.
    const codecServer = spawnCli(server!.address, ['codec-server', '--port', String(await freePort()), '--json']);
    try {
      const info = await waitFor('the codec server', () => {
        const line = codecServer.stdout().split('\n')[0];
        return line && codecServer.stdout().includes('\n') ? (JSON.parse(line) as { url: string; token: string }) : null;
      });
      const temporalCli = await ensureTemporalCli();
      const show = (...codec: string[]): Promise<string> =>
        run(temporalCli, ['workflow', 'show', '--workflow-id', a.workflowId, '--address', server!.address, '--output', 'json', ...codec], {
          maxBuffer: 64 * 1024 * 1024,
        }).then(
          (r) => r.stdout,
          (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
        );
      const decoded = await show('--codec-endpoint', info.url, '--codec-auth', `Bearer ${info.token}`);
      expect(decoded).not.toContain(REFERENCE_ENCODING_B64);
      expect(payloadTexts(decoded)).toContain('BIGMARK_1');
      const plain = await show();
      expect(plain).toContain(REFERENCE_ENCODING_B64);
      expect(payloadTexts(plain)).not.toContain('BIGMARK_1');
    } finally {
      codecServer.child.kill('SIGTERM');
      await codecServer.exited;
    }

    // B: the new worker cannot replay it; it says which blob is missing from which store, and runs nothing more.
    const missing = new RegExp(
      `blob (${bKeys.join('|')}) \\(\\d+ bytes, written to dir:[^)]*\\) in dir:${store.root.replace(/[/.]/g, '\\$&')} is missing`,
    );
    await waitFor('the worker says which blob is missing', () => missing.test(second.output()), 90_000);
    expect((await b.describe()).status.name).toBe('RUNNING');
    // The CLI: one line naming the key and the store, and a hint.
    const status = await waitFor(
      'the CLI reports it',
      async () => {
        const r = await cliWith(server!.address, {}, 'status', b.workflowId);
        return r.code !== 0 ? r : null;
      },
      90_000,
    );
    const lines = status.stderr.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(missing);
    expect(lines[1]).toMatch(/^hint: AGENT_JOBS_BLOB_STORE must name the store/);
    // Reading the finished run A with the blobs gone: one line from the CLI too.
    for (const key of await refsOf(a)) rmSync(store.file(key), { force: true });
    const transcript = await cliWith(server!.address, {}, 'transcript', a.workflowId);
    expect(transcript.code).toBe(1);
    expect(transcript.stderr).toMatch(
      /^agent-jobs: [^\n]*blob [0-9a-f]{64} \(\d+ bytes, written to dir:.*\) in dir:.* is missing; [^\n]*\n/,
    );
    expect(transcript.stdout).not.toContain('BIGMARK');
    await b.terminate('blob deleted by the test');
    // Neither A nor B can replay at close without their blobs (deleted above on purpose); any other failure counts.
    const replay = await bed.replayRuns().then(
      () => null,
      (err: Error) => err,
    );
    const failed = (replay?.message ?? '').split('\n').slice(1);
    expect(failed.map((l) => l.split(':')[0]).sort()).toEqual([a.workflowId, b.workflowId].sort());
    for (const l of failed) expect(l).toMatch(/blob [0-9a-f]{64} .* is missing/);
  } finally {
    await bed.close().catch(() => undefined); // its replay fails on A and B, as checked above
  }
}, 600_000);

test('AGENT_JOBS_BLOB_STORE=none: the same outputs stay in history, encrypted, as before the claim check', async () => {
  const bed = await TestBed.create({
    address: server!.address,
    script: { responses: [asks(['n1', big('NONEMARK_1')]), end('inline done')] },
    workerEnv: { AGENT_JOBS_BLOB_STORE: 'none', AGENT_JOBS_BLOB_THRESHOLD: String(THRESHOLD) },
  });
  try {
    const h = await bed.start({ task: 'big output inline', approval: 'auto' });
    expect(await h.result()).toMatchObject({ status: 'completed', text: 'inline done' });
    expect(JSON.stringify(bed.resultsSentIn(1))).toContain('NONEMARK_1');
    const raw = payloads(await h.fetchHistory());
    expect(raw.filter((p) => encodingOf(p.payload) === REFERENCE_ENCODING)).toEqual([]);
    // The output's payload is in history itself (over the threshold), and encrypted.
    const bigOnes = raw.filter((p) => size(p.payload) > THRESHOLD);
    expect(bigOnes.length).toBeGreaterThanOrEqual(2);
    for (const p of bigOnes) expect(encodingOf(p.payload)).toBe('binary/encrypted');
  } finally {
    await bed.close();
  }
}, 300_000);

describe('the S3 store against a real S3-compatible server (moto)', () => {
  let s3: S3Server | undefined;
  const saved: Record<string, string | undefined> = {};
  const setEnv = (vars: Record<string, string>): void => {
    for (const [k, v] of Object.entries(vars)) {
      saved[k] = process.env[k];
      process.env[k] = v;
    }
  };
  beforeAll(async () => {
    s3 = await startS3Server((line) => process.stderr.write(`${line}\n`));
    await s3.createBucket('agent-jobs-it');
  }, 600_000);
  afterAll(async () => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    await s3?.stop();
  });

  test('round trip, idempotent writes, a missing key, an oversize blob', async () => {
    setEnv(s3!.credentials);
    const store = new S3BlobStore({ bucket: 'agent-jobs-it', prefix: 'unit/', endpoint: s3!.endpoint });
    const bytes = randomBytes(50_000);
    const key = (await import('node:crypto')).createHash('sha256').update(bytes).digest('hex');
    await store.put(key, bytes);
    await store.put(key, bytes);
    expect(Buffer.from(await store.get(key, bytes.length)).equals(bytes)).toBe(true);
    const over = await store.get(key, bytes.length - 1).catch((e: unknown) => e);
    expect(over).toBeInstanceOf(BlobStoreError);
    expect((over as BlobStoreError).kind).toBe('invalid');
    const gone = await store.get('0'.repeat(64), MAX_BLOB_BYTES).catch((e: unknown) => e);
    expect((gone as BlobStoreError).kind).toBe('missing');
    expect((gone as Error).message).toBe(`blob ${'0'.repeat(64)} is missing from s3://agent-jobs-it/unit/`);
    await expect(store.get('../etc/passwd', 10)).rejects.toThrow(/not a sha256/);
  }, 60_000);

  test('a run through the S3 store completes with references in history; no AWS_* variable reaches bash', async () => {
    const blobEnv = { AGENT_JOBS_BLOB_STORE: 's3://agent-jobs-it/runs', AGENT_JOBS_BLOB_S3_ENDPOINT: s3!.endpoint };
    // This process's client (and the replay at close) reads the same store.
    setEnv({ ...s3!.credentials, ...blobEnv });
    const bed = await TestBed.create({
      address: server!.address,
      script: {
        responses: [asks(['s1', big('S3MARK_1')], ['s2', 'env | grep -c "^AWS_"; env | grep "AWS\\|moto" ; echo envdone']), end('s3 done')],
      },
      workerEnv: { ...s3!.credentials, ...blobEnv, AGENT_JOBS_BLOB_THRESHOLD: String(THRESHOLD), AWS_MAX_ATTEMPTS: '3' },
    });
    try {
      const h = await bed.start({ task: 'big outputs through S3', approval: 'auto' });
      expect(await h.result()).toMatchObject({ status: 'completed', text: 's3 done' });
      // The big output reached the model whole (its result went through the bucket).
      expect(JSON.stringify(bed.resultsSentIn(1))).toContain('S3MARK_1');
      const refs = payloads(await h.fetchHistory()).filter((p) => encodingOf(p.payload) === REFERENCE_ENCODING);
      expect(refs.length).toBeGreaterThanOrEqual(2);
      const store = new S3BlobStore({ bucket: 'agent-jobs-it', prefix: 'runs/', endpoint: s3!.endpoint });
      for (const r of refs) {
        const ref = parseReference(r.payload);
        expect(ref.store).toBe('s3://agent-jobs-it/runs/');
        expect((await store.get(ref.key, ref.size)).length).toBe(ref.size);
      }
      // What bash saw: no AWS_* variable at all, and none of the credentials' values.
      const envResult = bed.resultsSentIn(1).find((r) => r.tool_use_id === 's2')!;
      const text = JSON.stringify(envResult.content);
      expect(text).toMatch(/^"0\\n/);
      expect(text).toContain('envdone');
      for (const v of [...Object.values(s3!.credentials).filter((x) => x.length > 12), s3!.endpoint]) expect(text).not.toContain(v);
    } finally {
      await bed.close();
    }
  }, 300_000);
});
