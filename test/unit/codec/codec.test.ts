/**
 * The payload codec and its keys (src/codec), attacked as someone holding
 * the database would: ciphertext must not show the plaintext, an altered
 * payload or a key id swapped in its metadata must fail to decode, a payload
 * under a key this process lacks must fail with one line naming the key and
 * where the keys came from, and payloads written before encryption (old
 * histories) must still read.
 */
import { createCipheriv, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  CodecDecodeError,
  CodecKeyError,
  createKeysFile,
  EncryptionCodec,
  isEncrypted,
  MIN_GZIP_BYTES,
  loadCodecKeys,
  PAYLOAD_CONVERTER_PATH,
  chainCodecs,
  productDataConverter,
  readCodecKeys,
} from '../../../src/codec';
import { payloadConverter } from '../../../src/codec/payload-converter';
import { SEALED_METADATA_KEY, isSealed } from '../../../src/shared/sealed';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-codec-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const key = (): string => randomBytes(32).toString('base64');
function keysFile(lines: string[]): string {
  const file = path.join(dir, `keys-${Math.random().toString(36).slice(2)}`);
  writeFileSync(file, lines.join('\n'));
  return file;
}
const meta = (p: Payload, k: string): string => Buffer.from(p.metadata![k]!).toString('utf8');
const SECRET_TEXT = 'the repository holds CUSTOMER_DATA_1234 in src/config.ts';

describe('EncryptionCodec', () => {
  test('round trip: metadata names the key, cipher and compression; no plaintext survives; decode gives the original bytes', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const original = defaultPayloadConverter.toPayload({ command: SECRET_TEXT, output: 'x'.repeat(10_000) });
    const [enc] = await codec.encode([original]);
    expect(isEncrypted(enc!)).toBe(true);
    expect(meta(enc!, 'encoding')).toBe('binary/encrypted');
    expect(meta(enc!, 'encryption-key-id')).toBe('k1');
    expect(meta(enc!, 'encryption-cipher')).toBe('AES-256-GCM');
    expect(meta(enc!, 'encryption-compression')).toBe('gzip');
    expect(Buffer.from(enc!.data!).includes('CUSTOMER_DATA_1234')).toBe(false);
    expect(JSON.stringify(enc!.metadata)).not.toContain('json/plain');
    expect(enc!.data!.length).toBeLessThan(original.data!.length / 5); // 10 KB of x compress before they are encrypted
    const [dec] = await codec.decode([enc!]);
    expect(defaultPayloadConverter.fromPayload(dec!)).toEqual({ command: SECRET_TEXT, output: 'x'.repeat(10_000) });
    expect(Buffer.from(dec!.metadata!['encoding']!).toString()).toBe('json/plain');
  });

  test('the same payload twice gives two different ciphertexts (a fresh IV each time)', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const p = defaultPayloadConverter.toPayload('same');
    const [a, b] = await codec.encode([p, p]);
    expect(Buffer.from(a!.data!).equals(Buffer.from(b!.data!))).toBe(false);
  });

  test('tiny payloads are not grown by gzip (compression none), and still decode', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const [enc] = await codec.encode([defaultPayloadConverter.toPayload(1)]);
    expect(meta(enc!, 'encryption-compression')).toBe('none');
    expect(defaultPayloadConverter.fromPayload((await codec.decode([enc!]))[0]!)).toBe(1);
  });

  test('gzip is tried only from MIN_GZIP_BYTES serialized bytes on: a compressible payload just under it is stored as none, one at it as gzip', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const sized = (n: number): Payload => {
      // The serialized Payload is the data plus the metadata's few dozen bytes: grow the data until it is n.
      for (let len = 0; ; len++) {
        const p = defaultPayloadConverter.toPayload('a'.repeat(len));
        if (temporal.api.common.v1.Payload.encode(p).finish().length === n) return p;
      }
    };
    const originals = [sized(MIN_GZIP_BYTES - 1), sized(MIN_GZIP_BYTES)];
    const [under, at] = await codec.encode(originals);
    expect(meta(under!, 'encryption-compression')).toBe('none');
    expect(meta(at!, 'encryption-compression')).toBe('gzip');
    // Each comes back as it was, marked as decrypted (src/shared/sealed.ts).
    const marked = originals.map((p) => ({ ...p, metadata: { ...p.metadata, [SEALED_METADATA_KEY]: new TextEncoder().encode('1') } }));
    expect(await codec.decode([under!, at!])).toEqual(marked);
  });

  test('a small payload written gzipped by the codec before MIN_GZIP_BYTES still decodes (histories keep them)', async () => {
    const raw = randomBytes(32);
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${raw.toString('base64')}`])));
    // The format as the module doc gives it, compressed whatever the size (what the codec wrote until 2026-12-06).
    const plain = temporal.api.common.v1.Payload.encode(defaultPayloadConverter.toPayload('bash: true')).finish();
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', raw, iv, { authTagLength: 16 });
    cipher.setAAD(Buffer.from('agent-jobs-codec\u0000k1\u0000gzip'));
    const body = Buffer.concat([cipher.update(gzipSync(plain)), cipher.final()]);
    const old: Payload = {
      metadata: {
        encoding: Buffer.from('binary/encrypted'),
        'encryption-key-id': Buffer.from('k1'),
        'encryption-cipher': Buffer.from('AES-256-GCM'),
        'encryption-compression': Buffer.from('gzip'),
      },
      data: Buffer.concat([iv, body, cipher.getAuthTag()]),
    };
    expect(defaultPayloadConverter.fromPayload((await codec.decode([old]))[0]!)).toBe('bash: true');
  });

  test('IVs are never reused: 2,000 payloads (several refills of the IV pool) have 2,000 distinct IVs, and each decodes', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const payloads = Array.from({ length: 2000 }, (_, i) => defaultPayloadConverter.toPayload(i));
    const enc = await codec.encode(payloads);
    expect(new Set(enc.map((p) => Buffer.from(p.data!.subarray(0, 12)).toString('hex'))).size).toBe(2000);
    expect((await codec.decode(enc)).map((p) => defaultPayloadConverter.fromPayload(p))).toEqual(payloads.map((_, i) => i));
  });

  test('payloads written before encryption pass through decode unchanged (old histories read and replay)', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const plain = defaultPayloadConverter.toPayload({ old: true });
    expect(await codec.decode([plain])).toEqual([plain]);
  });

  test('decode marks what it decrypted as sealed, and strips a forged mark from a plaintext payload', async () => {
    const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const value = { toolUseId: 'toolu_1', approved: true };
    const [dec] = await codec.decode(await codec.encode([defaultPayloadConverter.toPayload(value)]));
    expect(meta(dec!, SEALED_METADATA_KEY)).toBe('1');
    // The workers' payload converter remembers the object it made from it; a copy, or a plaintext one, is not sealed.
    const sealedValue = payloadConverter.fromPayload(dec!);
    expect(sealedValue).toEqual(value);
    expect({ it: isSealed(sealedValue), copy: isSealed({ ...(sealedValue as object) }) }).toEqual({ it: true, copy: false });
    // A sender without the keys sets the mark on its plaintext payload (any value, even an empty one): stripped.
    for (const forged of ['1', '', 'k1']) {
      const plain = defaultPayloadConverter.toPayload(value);
      plain.metadata = { ...plain.metadata, [SEALED_METADATA_KEY]: Buffer.from(forged) };
      const [out] = await codec.decode([plain]);
      expect(Object.keys(out!.metadata!)).toEqual(['encoding']);
      expect(isSealed(payloadConverter.fromPayload(out!))).toBe(false);
    }
    // Through the product's whole chain (the converter path it names, and its codecs) the same holds.
    const dc = productDataConverter({ AGENT_JOBS_CODEC_KEYS: keysFile([`k2 ${key()}`]) }, dir);
    expect(dc.payloadConverterPath).toBe(PAYLOAD_CONVERTER_PATH);
    const forgedPlain = {
      ...defaultPayloadConverter.toPayload(value),
      metadata: { encoding: Buffer.from('json/plain'), [SEALED_METADATA_KEY]: Buffer.from('1') },
    };
    const [chained] = await chainCodecs(dc.payloadCodecs!).decode([forgedPlain]);
    expect(chained!.metadata![SEALED_METADATA_KEY]).toBeUndefined();
  });

  test('rotation: a new key on top encrypts, the old one below still decrypts', async () => {
    const k1 = key();
    const before = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${k1}`])));
    const [old] = await before.encode([defaultPayloadConverter.toPayload('written with k1')]);
    const after = new EncryptionCodec(readCodecKeys(keysFile(['# rotated', `k2 ${key()}`, `k1 ${k1}`])));
    const [fresh] = await after.encode([defaultPayloadConverter.toPayload('written with k2')]);
    expect(meta(fresh!, 'encryption-key-id')).toBe('k2');
    const [a, b] = await after.decode([old!, fresh!]);
    expect([defaultPayloadConverter.fromPayload(a!), defaultPayloadConverter.fromPayload(b!)]).toEqual([
      'written with k1',
      'written with k2',
    ]);
  });

  test('a key this process does not hold: one line naming the key id and the keys it has', async () => {
    const writer = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`])));
    const [enc] = await writer.encode([defaultPayloadConverter.toPayload('x')]);
    const otherFile = keysFile([`k9 ${key()}`]);
    const err = await new EncryptionCodec(readCodecKeys(otherFile)).decode([enc!]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CodecDecodeError);
    expect((err as Error).message).toBe(
      `a payload is encrypted with key "k1", which the codec keys at ${otherFile} do not hold (give every worker and CLI the same keys: AGENT_JOBS_CODEC_KEYS)`,
    );
    expect((err as Error).message).not.toContain('\n');
  });

  test('a wrong key under the right id fails authentication, never decodes to garbage', async () => {
    const [enc] = await new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`]))).encode([defaultPayloadConverter.toPayload('x')]);
    const err = await new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`]))).decode([enc!]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CodecDecodeError);
    expect((err as Error).message).toMatch(/fails authentication: it was altered, or key k1 in .* is not the key it was written with/);
  });

  describe('tampering', () => {
    async function encrypted(): Promise<{ codec: EncryptionCodec; enc: Payload }> {
      const codec = new EncryptionCodec(readCodecKeys(keysFile([`k1 ${key()}`, `k2 ${key()}`])));
      const [enc] = await codec.encode([defaultPayloadConverter.toPayload({ approved: false, command: 'rm -rf /' })]);
      return { codec, enc: enc! };
    }
    const rejects = (codec: EncryptionCodec, p: Payload): Promise<void> =>
      expect(codec.decode([p])).rejects.toBeInstanceOf(CodecDecodeError);

    test.each([0, 5, 12, 20, -1, -16])('one bit flipped at byte %i (IV, ciphertext or tag)', async (at) => {
      const { codec, enc } = await encrypted();
      const data = Buffer.from(enc.data!);
      const i = at < 0 ? data.length + at : at;
      data[i] = data[i]! ^ 1;
      await rejects(codec, { ...enc, data });
    });

    test('truncated data, empty data', async () => {
      const { codec, enc } = await encrypted();
      await rejects(codec, { ...enc, data: enc.data!.subarray(0, 20) });
      await rejects(codec, { ...enc, data: new Uint8Array() });
    });

    test('the key id swapped for another key the process holds (the id is authenticated)', async () => {
      const { codec, enc } = await encrypted();
      await rejects(codec, { ...enc, metadata: { ...enc.metadata, 'encryption-key-id': Buffer.from('k2') } });
    });

    test('the compression flag or the cipher name changed', async () => {
      const { codec, enc } = await encrypted();
      const flip = meta(enc, 'encryption-compression') === 'gzip' ? 'none' : 'gzip';
      await rejects(codec, { ...enc, metadata: { ...enc.metadata, 'encryption-compression': Buffer.from(flip) } });
      await rejects(codec, { ...enc, metadata: { ...enc.metadata, 'encryption-compression': Buffer.from('zstd') } });
      await rejects(codec, { ...enc, metadata: { ...enc.metadata, 'encryption-cipher': Buffer.from('NULL') } });
    });
  });
});

describe('codec keys', () => {
  test.each([
    ['no key at all', ['# only a comment', ''], /holds no key/],
    ['a key of 16 bytes', [`k1 ${randomBytes(16).toString('base64')}`], /key k1 is not 32 bytes in base64/],
    ['a key that is not base64', ['k1 not-base64!!'], /key k1 is not 32 bytes in base64/],
    ['a bad key id', [`k/1 ${randomBytes(32).toString('base64')}`], /key id "k\/1" is not 1–64 of/],
    ['three fields', [`k1 ${randomBytes(32).toString('base64')} extra`], /:1: expected "<key id> <base64 key>"/],
    ['an id twice', [`k1 ${randomBytes(32).toString('base64')}`, `k1 ${randomBytes(32).toString('base64')}`], /key id k1 appears twice/],
  ])('a keys file with %s is refused with one line', (_what, lines, message) => {
    const file = keysFile(lines);
    expect(() => readCodecKeys(file)).toThrow(CodecKeyError);
    expect(() => readCodecKeys(file)).toThrow(message);
  });

  test('a missing path is refused, naming it', () => {
    expect(() => readCodecKeys(path.join(dir, 'nope'))).toThrow(`codec keys ${path.join(dir, 'nope')}: no such file or directory`);
  });

  test('a keys directory: one file per key, the id that sorts last encrypts', () => {
    const keys = path.join(dir, 'keys.d');
    mkdirSync(keys);
    writeFileSync(path.join(keys, '2026-11-01.key'), key());
    writeFileSync(path.join(keys, '2026-12-02.key'), `${key()}\n`);
    writeFileSync(path.join(keys, 'README'), 'not a key');
    const loaded = readCodecKeys(keys);
    expect(loaded.current.id).toBe('2026-12-02');
    expect([...loaded.byId.keys()].sort()).toEqual(['2026-11-01', '2026-12-02']);
  });

  test('the default keys file is created once, 0600 in a 0700 folder; later loads read the same key', () => {
    const data = path.join(dir, 'data');
    const created: string[] = [];
    const first = loadCodecKeys({}, data, (f) => created.push(f));
    const second = loadCodecKeys({}, data, (f) => created.push(f));
    expect(created).toEqual([path.join(data, 'codec-keys')]);
    expect(second.current.id).toBe(first.current.id);
    expect(second.current.key.equals(first.current.key)).toBe(true);
    expect(statSync(path.join(data, 'codec-keys')).mode & 0o777).toBe(0o600);
    expect(statSync(data).mode & 0o777).toBe(0o700);
    expect(createKeysFile(path.join(data, 'codec-keys'))).toBe(false);
    expect(
      readFileSync(path.join(data, 'codec-keys'), 'utf8')
        .split('\n')
        .filter((l) => l && !l.startsWith('#')),
    ).toHaveLength(1);
  });

  test('AGENT_JOBS_CODEC_KEYS set but missing is an error, not a new key', () => {
    const missing = path.join(dir, 'gone');
    expect(() => loadCodecKeys({ AGENT_JOBS_CODEC_KEYS: missing }, path.join(dir, 'data'))).toThrow(`codec keys ${missing}: no such file`);
  });

  test('productDataConverter: the codec with the loaded keys', async () => {
    const dc = productDataConverter({ AGENT_JOBS_CODEC_KEYS: keysFile([`k7 ${key()}`]) }, dir);
    const [enc] = await dc.payloadCodecs![0]!.encode([defaultPayloadConverter.toPayload('x')]);
    expect(meta(enc!, 'encryption-key-id')).toBe('k7');
  });
});
