/**
 * Encryption of what Temporal keeps, end to end: with AGENT_JOBS_CODEC_KEYS
 * set, a real run (worker, CLI, harness client) leaves no plaintext of its
 * task, commands, outputs or answers in the server's history; a client
 * without the keys cannot read the result; the CLI with the keys reads
 * status and transcript; the codec server lets `temporal workflow show`
 * decode it for whoever holds the token; a CLI with other keys gets one line
 * naming the key, never garbage.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { EncryptionCodec, readCodecKeys, startCodecServer } from '../../src/codec';
import { ensureTemporalCli } from '../../src/dev/devserver';
import { cliWith } from './cli-process';
import { TestBed, waitFor } from './harness';
import { asks, end } from './steering-helpers';

const run = promisify(execFile);
const TASK = 'TASKMARK_7f3a: write the report';
const COMMAND = 'echo OUTMARK_91c2 > report.txt && cat report.txt';
const ANSWER = 'ANSWERMARK_b44e: the report is written';

/** Where in `value` a payload that is not encrypted sits (dotted paths), walking every field. */
function plaintextPayloads(value: unknown, at = 'history'): string[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return [];
  const o = value as Record<string, unknown>;
  const meta = o['metadata'] as Record<string, Uint8Array> | undefined;
  if (meta && typeof meta === 'object' && meta['encoding'] instanceof Uint8Array) {
    return Buffer.from(meta['encoding']).toString() === 'binary/encrypted' ? [] : [`${at} (${Buffer.from(meta['encoding']).toString()})`];
  }
  return Object.entries(o).flatMap(([k, v]) => plaintextPayloads(v, `${at}.${k}`));
}

/** The text of every payload in `temporal workflow show --output json` (proto JSON: data in base64). */
function shownPayloadTexts(json: string): string {
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

let dir: string;
let keys: string;
let saved: string | undefined;
let bed: TestBed | undefined;

beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-encryption-'));
  keys = path.join(dir, 'codec-keys');
  writeFileSync(keys, `k-test ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  // The harness's own client and its replay at close read the same payloads, so they get the keys too.
  saved = process.env.AGENT_JOBS_CODEC_KEYS;
  process.env.AGENT_JOBS_CODEC_KEYS = keys;
});

afterAll(async () => {
  await bed?.close();
  if (saved === undefined) delete process.env.AGENT_JOBS_CODEC_KEYS;
  else process.env.AGENT_JOBS_CODEC_KEYS = saved;
  rmSync(dir, { recursive: true, force: true });
});

test('a run with codec keys leaves no plaintext in history; with the keys it reads, without them it does not', async () => {
  const b = await TestBed.create({
    script: { responses: [asks(['toolu_r', COMMAND]), end(ANSWER)] },
    workerEnv: { AGENT_JOBS_CODEC_KEYS: keys },
  });
  bed = b;
  const handle = await b.start({ task: TASK, approval: 'auto' }, 'encrypted-run');
  const result = await handle.result();
  expect(result).toMatchObject({ status: 'completed', text: ANSWER });
  // The command really ran (the effect, not the answer).
  expect(b.audit().map((a) => a.command)).toEqual([COMMAND]);

  // What the server keeps: every payload of the history, serialized as the server stores it.
  const history = await handle.fetchHistory();
  const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
  for (const mark of ['TASKMARK_7f3a', 'OUTMARK_91c2', 'ANSWERMARK_b44e', 'report.txt'])
    expect({ mark, found: bytes.includes(mark) }).toEqual({ mark, found: false });
  expect(bytes.includes('binary/encrypted')).toBe(true);
  // The only plaintext payloads are the search attributes (the visibility store reads them; no codec may
  // touch them, and they hold no text of the run: status, counts, a command's hash) and the SDK's own
  // patch markers (a patch id each).
  expect(plaintextPayloads(history).filter((p) => !p.includes('searchAttributes') && !p.includes('.details.patch-data.'))).toEqual([]);

  // A client without the keys sees ciphertext only.
  const plain = new Client({ connection: b.connection });
  await expect(plain.workflow.getHandle(handle.workflowId).result()).rejects.toThrow(/binary\/encrypted|[Uu]nknown encoding/);

  // The CLI with the keys: status and transcript of the finished run read its history.
  const status = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: keys }, 'status', handle.workflowId, '--json');
  expect(status.code).toBe(0);
  expect(JSON.parse(status.stdout)).toMatchObject({ status: 'completed', result: { text: ANSWER } });
  const transcript = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: keys }, 'transcript', handle.workflowId);
  expect(transcript.stdout).toContain('TASKMARK_7f3a');
  expect(transcript.stdout).toContain('OUTMARK_91c2');

  // A CLI with encryption turned off: one line saying the run is encrypted, and which variable gives the keys.
  const keyless = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: 'none' }, 'status', handle.workflowId);
  expect(keyless.code).toBe(1);
  expect(keyless.stderr).toBe(
    'agent-jobs: this run\'s payloads are encrypted, and this process has no codec keys\nhint: set AGENT_JOBS_CODEC_KEYS to the keys its workers use (docs/security.md, "Encryption")\n',
  );

  // A CLI holding other keys: one line naming the key, never a garbled run.
  const otherKeys = path.join(dir, 'other-keys');
  writeFileSync(otherKeys, `k-other ${randomBytes(32).toString('base64')}\n`);
  const wrong = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: otherKeys }, 'status', handle.workflowId);
  expect(wrong.code).toBe(1);
  expect(wrong.stderr).toMatch(/encrypted with key "k-test", which the codec keys at .*other-keys do not hold/);
  expect(wrong.stdout).not.toContain('ANSWERMARK');

  // A CLI with no AGENT_JOBS_CODEC_KEYS makes the default keys file in its data folder (saying so once), and
  // then, holding another key than the run's, fails in one line naming the key: encryption is on by default.
  const ownData = path.join(dir, 'cli-data');
  const unset = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: '', AGENT_JOBS_DATA_DIR: ownData }, 'status', handle.workflowId);
  expect(unset.code).toBe(1);
  const created = `agent-jobs: created payload encryption keys ${ownData}/codec-keys (mode 0600): every worker and CLI that reads these runs needs this file (AGENT_JOBS_CODEC_KEYS; docs/security.md, "Encryption")\n`;
  expect(unset.stderr.startsWith(created)).toBe(true);
  expect(unset.stderr.slice(created.length)).toMatch(
    /^agent-jobs: a payload is encrypted with key "k-test", which the codec keys at .*cli-data\/codec-keys do not hold[^\n]*\n$/,
  );
  expect((statSync(path.join(ownData, 'codec-keys')).mode & 0o777).toString(8)).toBe('600');
  // Once made, it is not made again (and so not announced again).
  const again = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: '', AGENT_JOBS_DATA_DIR: ownData }, 'status', handle.workflowId);
  expect(again.stderr).not.toContain('created payload encryption keys');

  // The codec server decodes for `temporal workflow show` with the token, and only with it.
  const token = randomBytes(24).toString('base64url');
  const server = await startCodecServer({ codec: new EncryptionCodec(readCodecKeys(keys)), token, corsOrigins: [] });
  const temporalCli = await ensureTemporalCli();
  try {
    const show = (auth: string): Promise<string> =>
      run(
        temporalCli,
        [
          'workflow',
          'show',
          '--workflow-id',
          handle.workflowId,
          '--address',
          b.address,
          '--codec-endpoint',
          server.url,
          '--codec-auth',
          auth,
          '--output',
          'json',
        ],
        {
          maxBuffer: 64 * 1024 * 1024,
        },
      ).then(
        (r) => r.stdout,
        (e: { stdout?: string; stderr?: string }) => `${e.stdout ?? ''}${e.stderr ?? ''}`,
      );
    const decoded = shownPayloadTexts(await show(`Bearer ${token}`));
    expect(decoded).toContain('TASKMARK_7f3a');
    expect(decoded).toContain('ANSWERMARK_b44e');
    expect(shownPayloadTexts(await show('Bearer not-the-token-at-all'))).not.toContain('TASKMARK_7f3a');
  } finally {
    await server.close();
  }
}, 180_000);

test('a worker holding other keys than the CLI that started the run: one clear line, in the worker log and from the CLI, no garbled run', async () => {
  const otherKeys = path.join(dir, 'worker-keys');
  writeFileSync(otherKeys, `k-worker ${randomBytes(32).toString('base64')}\n`, { mode: 0o600 });
  const b = bed ?? (await TestBed.create({ script: { responses: [end(ANSWER)] }, workers: 0 }));
  bed = b;
  for (const w of b.workers) await w.stop();
  const ranBefore = b.audit().length;
  const worker = await b.startWorker({ AGENT_JOBS_CODEC_KEYS: otherKeys });
  const started = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: keys }, 'start', '--id', 'mismatched-keys', '--json', TASK);
  expect(started.code).toBe(0);
  const line = /a payload is encrypted with key "k-test", which the codec keys at .*worker-keys do not hold/;
  await waitFor('the worker says why', () => line.test(worker.output()), 60_000);
  // The CLI (with the run's keys) reports the worker's reason in one line, not a hang or a garbled status.
  const status = await waitFor(
    'the CLI reports it',
    async () => {
      const r = await cliWith(b.address, { AGENT_JOBS_CODEC_KEYS: keys }, 'status', 'mismatched-keys');
      return r.code !== 0 ? r : null;
    },
    60_000,
  );
  expect(status.stderr).toMatch(line);
  expect(status.stderr.trim().split('\n').length).toBeLessThanOrEqual(2);
  expect(status.stdout).not.toContain('TASKMARK');
  // Nothing ran: the worker never read the task, so no command of it was run.
  expect(b.audit()).toHaveLength(ranBefore);
  await b.client.workflow.getHandle('mismatched-keys').terminate('test over');
}, 180_000);
