/**
 * Saved histories (recorded from integration runs with
 * AGENT_JOBS_SAVE_HISTORIES=1 npm test) replay against today's workflow
 * code: a non-deterministic change fails here, in CI. They replay a second
 * time in a time zone no worker is likely to share: the worker's zone
 * reaches the sandbox, so code that reads local time replays differently.
 * They are plaintext, and replay through the payload codec every worker
 * holds (src/codec): payloads that are not encrypted pass through it (but
 * for those saved with the sealed mark, encrypted again first), and the
 * workers' payload converter (src/codec/payload-converter.ts).
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { randomBytes } from 'node:crypto';
import { Worker } from '@temporalio/worker';
import type { Payload } from '@temporalio/common';
import { EncryptionCodec, PAYLOAD_CONVERTER_PATH } from '../../../src/codec';
import { SEALED_METADATA_KEY } from '../../../src/shared/sealed';
import { fastTest, slowAsked, slowTest } from '../../slow';

const DIR = path.resolve(__dirname, '../../fixtures/histories');
// A history whose payloads are large is saved gzipped (`.json.gz`).
const files = readdirSync(DIR)
  .filter((f) => /\.json(\.gz)?$/.test(f))
  .sort();
const historyText = (f: string): string => {
  const bytes = readFileSync(path.join(DIR, f));
  return f.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
};
const WORKFLOWS = require.resolve('../../../src/workflows');
/** UTC+12:45: a quarter-hour offset, so local hours and minutes both differ from UTC. */
const OTHER_TIME_ZONE = 'Pacific/Chatham';

/** `history: error` of every saved history that does not replay against the workflows at `workflowsPath`, in the test machine's time zone. */
async function replayHere(workflowsPath: string): Promise<string[]> {
  const histories = files.map((f) => ({
    workflowId: f.replace(/\.json(\.gz)?$/, ''),
    history: historyFromJSON(JSON.parse(historyText(f))),
  }));
  const failures: string[] = [];
  // The codec of every worker, with a key none of these histories was written with.
  const key = { id: 'k-replay', key: randomBytes(32) };
  const codec = new EncryptionCodec({ source: 'replay.test', current: key, byId: new Map([[key.id, key.key]]) });
  // A payload saved with the sealed mark was encrypted in its run: encrypted again here, so the codec marks it as it did then.
  for (const h of histories) resealed(h.history, codec);
  const dataConverter = { payloadConverterPath: PAYLOAD_CONVERTER_PATH, payloadCodecs: [codec] };
  for await (const r of Worker.runReplayHistories({ workflowsPath, dataConverter }, histories)) {
    if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
  }
  return failures;
}

/**
 * Encrypts, in place, each payload of `value` (a history) that carries the sealed mark (src/shared/sealed.ts), without
 * the mark: the saved histories are decoded, and a payload the codec decrypted in the run carries the mark; replayed
 * through the codec as plaintext it would lose it (the codec strips it from what it did not decrypt).
 */
function resealed(value: unknown, codec: EncryptionCodec): void {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return;
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const meta = (v as Payload | null)?.metadata;
    if (meta && typeof meta === 'object' && meta[SEALED_METADATA_KEY] !== undefined) {
      const plain = { ...(v as Payload), metadata: { ...meta } };
      delete plain.metadata[SEALED_METADATA_KEY];
      (value as Record<string, unknown>)[k] = codec.encrypt(plain);
    } else resealed(v, codec);
  }
}

/** The same, replayed by a child process whose TZ is `zone` (replay-in-zone.cjs). */
function replayIn(zone: string, workflowsPath: string): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'replay-in-zone.cjs'), workflowsPath, DIR], {
      env: { ...process.env, TZ: zone },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code === 0) resolve(JSON.parse(stdout) as string[]);
      else reject(new Error(`replay-in-zone.cjs (TZ=${zone}) exited with ${code}:\n${stderr}`));
    });
  });
}

/**
 * The replays in other time zones are a slow suite (test/slow-suites.js; `.ci/run` runs them after `npm test`): each
 * bundles the workflows with webpack again in a child process and replays every saved history there, 23 s of a CI run's
 * jest time for the two tests (docs/development.md, "Slow suites"). The replay in this machine's zone runs in `npm test`.
 */
if (!slowAsked)
  console.warn(
    'replay.test.ts: the replays in another time zone skipped, a slow suite; AGENT_JOBS_SLOW_TESTS=only runs them, as .ci/run does',
  );

describe('replay of saved histories', () => {
  fastTest('there are saved histories for the main paths', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  fastTest(
    'every saved history replays without a determinism error',
    async () => {
      expect(await replayHere(WORKFLOWS)).toEqual([]);
    },
    120_000,
  );

  slowTest(
    `every saved history replays in another time zone (${OTHER_TIME_ZONE})`,
    async () => {
      expect(await replayIn(OTHER_TIME_ZONE, WORKFLOWS)).toEqual([]);
    },
    120_000,
  );

  slowTest(
    "the second zone catches a workflow that depends on the worker's time zone, which one zone does not",
    async () => {
      const fixture = path.resolve(__dirname, '../../fixtures/zone-dependent-workflow');
      expect(await replayIn('UTC', fixture)).toEqual([]);
      const failures = await replayIn(OTHER_TIME_ZONE, fixture);
      expect(failures).toHaveLength(files.length);
      expect(failures.every((f) => f.includes('DeterminismViolationError'))).toBe(true);
    },
    180_000,
  );
});
