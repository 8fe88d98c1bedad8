/**
 * The claim check (src/codec/claim-check.ts, src/codec/blobs.ts), attacked
 * as someone who can write to the history or the blob store would: a
 * reference whose key is not its sha256, a key that walks out of the blob
 * directory, a blob swapped for other bytes, a size that is a lie or too
 * big, a reference that points at another reference. Each must fail with one
 * line naming the key and the store, never hand back other bytes.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  BlobStoreError,
  ClaimCheckCodec,
  ClaimCheckError,
  CodecDecodeError,
  DirectoryBlobStore,
  EncryptionCodec,
  MAX_BLOB_BYTES,
  REFERENCE_ENCODING,
  chainCodecs,
  claimCheckFromEnv,
  isReference,
  parseReference,
  parseS3Url,
  productCodecs,
  readCodecKeys,
} from '../../../src/codec';
import { blobStoreSetting, blobThresholdBytes, sessionHiddenPaths } from '../../../src/settings';
import { isSecretEnvName } from '../../../src/session';

let dir: string;
let store: DirectoryBlobStore;
let encryption: EncryptionCodec;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-claim-'));
  store = new DirectoryBlobStore(path.join(dir, 'blobs'));
  writeFileSync(path.join(dir, 'keys'), `k1 ${randomBytes(32).toString('base64')}\n`);
  encryption = new EncryptionCodec(readCodecKeys(path.join(dir, 'keys')));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const SECRET = 'OUTPUT_MARK_5e1d';
/** Incompressible text, so the encrypted payload stays as big as the output. */
const bigValue = (bytes = 20_000): { output: string } => ({ output: `${SECRET} ${randomBytes(bytes).toString('base64')}` });
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const refPayload = (ref: unknown): Payload => ({
  metadata: { encoding: Buffer.from(REFERENCE_ENCODING) },
  data: Buffer.from(typeof ref === 'string' ? ref : JSON.stringify(ref)),
});
const codec = (thresholdBytes = 4096): ClaimCheckCodec => new ClaimCheckCodec({ store, thresholdBytes });
const both = (thresholdBytes = 4096) => chainCodecs([encryption, codec(thresholdBytes)]);
async function failure(p: Promise<unknown>): Promise<Error> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(err instanceof Error)) throw new Error('expected a failure');
  return err;
}

describe('ClaimCheckCodec over the encryption codec', () => {
  test('a big payload becomes a small reference; the blob is the encrypted payload (0600, in 0700 folders); decode gives it back', async () => {
    const value = bigValue();
    const [ref] = await both().encode([defaultPayloadConverter.toPayload(value)]);
    expect(isReference(ref!)).toBe(true);
    expect(temporal.api.common.v1.Payload.encode(ref!).finish().length).toBeLessThan(400);
    const r = parseReference(ref!);
    expect(r.key).toBe(r.sha256);
    expect(r.store).toBe(store.description);
    const file = store.file(r.key);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(file)).mode & 0o777).toBe(0o700);
    const blob = readFileSync(file);
    expect(blob.length).toBe(r.size);
    expect(sha256(blob)).toBe(r.sha256);
    // The store holds ciphertext only: the encrypted payload, never the output.
    expect(blob.includes(SECRET)).toBe(false);
    expect(Buffer.from(temporal.api.common.v1.Payload.decode(blob).metadata['encoding']!).toString()).toBe('binary/encrypted');
    const [back] = await both().decode([ref!]);
    expect(defaultPayloadConverter.fromPayload(back!)).toEqual(value);
  });

  test('a payload at or under the threshold stays inline (encrypted); nothing is written', async () => {
    const [enc] = await both(64 * 1024).encode([defaultPayloadConverter.toPayload(bigValue(10_000))]);
    expect(isReference(enc!)).toBe(false);
    expect(existsSync(path.join(dir, 'blobs'))).toBe(false);
  });

  test('the threshold is on the encoded payload: at it stays inline, one byte over goes to the store', async () => {
    const meta = { encoding: Buffer.from('binary/encrypted'), 'encryption-key-id': Buffer.from('k1') };
    const sized = (n: number): Payload => ({ metadata: meta, data: randomBytes(n) });
    let n = 4000;
    while (temporal.api.common.v1.Payload.encode(sized(n)).finish().length < 4096) n++;
    expect(temporal.api.common.v1.Payload.encode(sized(n)).finish().length).toBe(4096);
    const [at] = await codec(4096).encode([sized(n)]);
    expect(isReference(at!)).toBe(false);
    const [over] = await codec(4096).encode([sized(n + 1)]);
    expect(isReference(over!)).toBe(true);
    expect(parseReference(over!).size).toBe(4097);
  });

  test('content-addressed: the same bytes twice are one blob; a reference encoded again stays as it is', async () => {
    const [enc] = await encryption.encode([defaultPayloadConverter.toPayload(bigValue())]);
    const [a] = await codec().encode([enc!]);
    const [b] = await codec().encode([enc!]);
    expect(parseReference(a!).key).toBe(parseReference(b!).key);
    const [again] = await codec().encode([a!]);
    expect(again).toBe(a);
    expect(readdirSync(path.join(dir, 'blobs')).flatMap((d) => readdirSync(path.join(dir, 'blobs', d)))).toHaveLength(1);
  });

  test('a missing blob is one line naming the key and the store (a CodecDecodeError, so the codec server answers 422)', async () => {
    const [ref] = await both().encode([defaultPayloadConverter.toPayload(bigValue())]);
    const { key } = parseReference(ref!);
    rmSync(store.file(key));
    const err = await failure(both().decode([ref!]));
    expect(err).toBeInstanceOf(ClaimCheckError);
    expect(err).toBeInstanceOf(CodecDecodeError);
    expect(err.message).toContain(`blob ${key}`);
    expect(err.message).toContain(`is missing`);
    expect(err.message).toContain(store.description);
    expect(err.message).not.toContain('\n');
  });

  test('a blob swapped for other bytes of the same size fails its sha256', async () => {
    const [ref] = await both().encode([defaultPayloadConverter.toPayload(bigValue())]);
    const { key, size } = parseReference(ref!);
    writeFileSync(store.file(key), randomBytes(size));
    const err = await failure(codec().decode([ref!]));
    expect(err.message).toMatch(new RegExp(`blob ${key} .* does not match its sha256`));
  });

  test('a blob of another size than the reference says is refused (longer: before it is read whole)', async () => {
    const [ref] = await both().encode([defaultPayloadConverter.toPayload(bigValue())]);
    const { key, size } = parseReference(ref!);
    const blob = readFileSync(store.file(key));
    writeFileSync(store.file(key), Buffer.concat([blob, Buffer.from('x')]));
    expect((await failure(codec().decode([ref!]))).message).toMatch(new RegExp(`blob ${key} .*${size + 1} bytes, over ${size}`));
    writeFileSync(store.file(key), blob.subarray(0, size - 1));
    expect((await failure(codec().decode([ref!]))).message).toMatch(`is ${size - 1} bytes, not ${size}`);
  });

  test('a reference whose key is not its sha256 is refused before any read (a tampered key)', async () => {
    const [ref] = await both().encode([defaultPayloadConverter.toPayload(bigValue())]);
    const r = parseReference(ref!);
    const other = 'f'.repeat(64);
    const err = await failure(codec().decode([refPayload({ ...r, key: other })]));
    expect(err.message).toContain(`names key "${other}", not its sha256 ${r.sha256}`);
  });

  test.each([
    ['../../../etc/passwd'],
    ['/etc/passwd'],
    ['..'],
    ['ab/../../keys'],
    ['A'.repeat(64)],
    ['a'.repeat(63)],
    ['a'.repeat(65)],
    [`${'a'.repeat(62)}\u0000x`],
  ])('a key that is not 64 hex digits (%j) is refused by the reference and by the directory store itself', async (key) => {
    // Even with a sha256 field to match, the reference is refused:
    const err = await failure(codec().decode([refPayload({ v: 1, store: 'x', key, sha256: key, size: 10 })]));
    expect(err).toBeInstanceOf(ClaimCheckError);
    // And the store refuses it on its own, reading nothing and writing nothing outside its root.
    const read = await failure(store.get(key, 100));
    expect(read).toBeInstanceOf(BlobStoreError);
    expect((read as BlobStoreError).kind).toBe('invalid');
    expect((await failure(store.put(key, Buffer.from('x')))) as BlobStoreError).toBeInstanceOf(BlobStoreError);
    expect(() => store.file(key)).toThrow(BlobStoreError);
  });

  test.each([
    ['a size over the maximum', { size: MAX_BLOB_BYTES + 1 }, /claims 67108865 bytes/],
    ['a negative size', { size: -1 }, /claims -1 bytes/],
    ['a size that is not a number', { size: '12' }, /claims "12" bytes/],
    ['another version', { v: 2 }, /version 2, not 1/],
    ['a sha256 that is not hex', { sha256: 'z'.repeat(64), key: 'z'.repeat(64) }, /no valid sha256/],
  ])('a reference with %s is refused', async (_what, change, message) => {
    const key = 'a'.repeat(64);
    const err = await failure(codec().decode([refPayload({ v: 1, store: 'x', key, sha256: key, size: 10, ...change })]));
    expect(err).toBeInstanceOf(ClaimCheckError);
    expect(err.message).toMatch(message);
  });

  test('a reference over 1 KiB, or not JSON, is refused unread', async () => {
    expect((await failure(codec().decode([refPayload('x'.repeat(2000))]))).message).toMatch(/2000 bytes, over 1024/);
    expect((await failure(codec().decode([refPayload('{not json')]))).message).toMatch(/not JSON/);
  });

  test('a blob that holds another reference, or no payload at all, is refused', async () => {
    const inner = refPayload({ v: 1, store: 'x', key: 'a'.repeat(64), sha256: 'a'.repeat(64), size: 1 });
    const bytes = temporal.api.common.v1.Payload.encode(inner).finish();
    const key = sha256(bytes);
    await store.put(key, bytes);
    const err = await failure(codec().decode([refPayload({ v: 1, store: 'x', key, sha256: key, size: bytes.length })]));
    expect(err.message).toMatch(/holds another reference/);
    const junk = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f]);
    const junkKey = sha256(junk);
    await store.put(junkKey, junk);
    const err2 = await failure(codec().decode([refPayload({ v: 1, store: 'x', key: junkKey, sha256: junkKey, size: junk.length })]));
    expect(err2.message).toMatch(/is not a payload/);
  });
});

describe('settings of the claim check', () => {
  test('AGENT_JOBS_BLOB_THRESHOLD: bytes or KiB, 1 KiB to 512 KiB, default 128 KiB', () => {
    expect(blobThresholdBytes({})).toBe(131072);
    expect(blobThresholdBytes({ AGENT_JOBS_BLOB_THRESHOLD: '4096' })).toBe(4096);
    expect(blobThresholdBytes({ AGENT_JOBS_BLOB_THRESHOLD: '256KiB' })).toBe(262144);
    for (const bad of ['1023', '1MiB', '-5', '12k', 'lots', '1e5'])
      expect(() => blobThresholdBytes({ AGENT_JOBS_BLOB_THRESHOLD: bad })).toThrow(/AGENT_JOBS_BLOB_THRESHOLD must be/);
  });

  test('AGENT_JOBS_BLOB_STORE: <data>/blobs by default, none, a directory, s3://bucket/prefix', () => {
    expect(blobStoreSetting({ AGENT_JOBS_DATA_DIR: '/d' })).toEqual({ kind: 'dir', root: '/d/blobs' });
    expect(blobStoreSetting({ AGENT_JOBS_BLOB_STORE: 'None' })).toEqual({ kind: 'none' });
    expect(blobStoreSetting({ AGENT_JOBS_BLOB_STORE: '/srv/blobs' })).toEqual({ kind: 'dir', root: '/srv/blobs' });
    expect(
      blobStoreSetting({
        AGENT_JOBS_BLOB_STORE: 's3://b/p',
        AGENT_JOBS_BLOB_S3_ENDPOINT: 'http://127.0.0.1:9000',
        AWS_REGION: 'eu-west-1',
      }),
    ).toEqual({ kind: 's3', url: 's3://b/p', endpoint: 'http://127.0.0.1:9000', region: 'eu-west-1' });
    expect(parseS3Url('s3://my-bucket/runs/blobs')).toEqual({ bucket: 'my-bucket', prefix: 'runs/blobs/' });
    expect(parseS3Url('s3://my-bucket')).toEqual({ bucket: 'my-bucket', prefix: '' });
    for (const bad of ['s3://', 's3://UPPER/x', 's3://a', 'http://b/x']) expect(() => parseS3Url(bad)).toThrow(/AGENT_JOBS_BLOB_STORE/);
    expect(() => claimCheckFromEnv({ AGENT_JOBS_BLOB_STORE: 's3://Bad_Bucket/x' })).toThrow(/AGENT_JOBS_BLOB_STORE/);
  });

  test('the chain: encryption then the claim check by default; encryption alone with AGENT_JOBS_BLOB_STORE=none', () => {
    const env = { AGENT_JOBS_CODEC_KEYS: path.join(dir, 'keys'), AGENT_JOBS_DATA_DIR: dir };
    const codecs = productCodecs(env, dir);
    expect(codecs.map((c) => c.constructor.name)).toEqual(['EncryptionCodec', 'ClaimCheckCodec']);
    expect((codecs[1] as ClaimCheckCodec).options.store.description).toBe(`dir:${path.join(dir, 'blobs')}`);
    expect(productCodecs({ ...env, AGENT_JOBS_BLOB_STORE: 'none' }, dir).map((c) => c.constructor.name)).toEqual(['EncryptionCodec']);
  });

  test('sessions never see a blob directory; every AWS_* variable is secret (kept out of bash)', () => {
    expect(sessionHiddenPaths({ AGENT_JOBS_BLOB_STORE: '/srv/agent-blobs' })).toContain('/srv/agent-blobs');
    for (const name of [
      'AWS_ACCESS_KEY_ID',
      'AWS_SECRET_ACCESS_KEY',
      'AWS_SESSION_TOKEN',
      'AWS_PROFILE',
      'AWS_CONFIG_FILE',
      'AWS_ENDPOINT_URL_S3',
      'AWS_REGION',
    ])
      expect(isSecretEnvName(name)).toBe(true);
  });
});
