/**
 * The payload codec: every payload the product writes to Temporal (workflow
 * input and result, activity inputs and results, signals, Updates and their
 * results, queries, memo, continue-as-new input, failure details) is
 * compressed and then encrypted with AES-256-GCM before it leaves the
 * process, so the server's database, its backups and the UI see ciphertext.
 * Temporal's own design: a `PayloadCodec` in the data converter of the
 * client and the worker (https://docs.temporal.io/payload-codec,
 * https://docs.temporal.io/production-deployment/data-encryption).
 *
 * An encrypted payload:
 * - metadata `encoding` = `binary/encrypted`, `encryption-key-id` = the id
 *   of the key (src/codec/keys.ts), `encryption-cipher` = `AES-256-GCM`,
 *   `encryption-compression` = `gzip` or `none` (gzip only when it is smaller;
 *   a payload under {@link MIN_GZIP_BYTES} is not tried);
 * - data = 12-byte IV ‖ ciphertext ‖ 16-byte GCM tag, of the original
 *   payload serialized as the `temporal.api.common.v1.Payload` protobuf;
 *   the key id and the compression flag are the additional authenticated
 *   data, so neither can be changed in the metadata without failing.
 *
 * Decoding leaves payloads that are not `binary/encrypted` as they are (the
 * histories of runs recorded before encryption still replay and read), but
 * for one metadata key: a payload it decrypted gets `agent-jobs-sealed`
 * (src/shared/sealed.ts), and any other loses it, so that nobody without the
 * keys can pass a payload off as sealed. An encrypted run's approval handlers
 * accept only sealed decisions (src/workflows/approval.ts).
 */
import { createCipheriv, createDecipheriv, randomFillSync } from 'node:crypto';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { SEALED_METADATA_KEY } from '../shared/sealed';
import type { CodecKeys } from './keys';

/** The `encoding` of an encrypted payload (the value Temporal's samples use). */
export const ENCRYPTED_ENCODING = 'binary/encrypted';
/** IV length of AES-GCM, bytes (NIST SP 800-38D's recommended 96 bits). */
const IV_BYTES = 12;
/** GCM tag length, bytes. */
const TAG_BYTES = 16;
const CIPHER = 'AES-256-GCM';

/**
 * Serialized payloads shorter than this (bytes) are encrypted without trying gzip, whose header
 * and trailer alone are 18 bytes; such payloads were already stored as `none` (measured:
 * docs/performance.md, "What was cut").
 */
export const MIN_GZIP_BYTES = 128;

/** Random bytes drawn at once for IVs: one CSPRNG call per 341 payloads instead of one each. */
const IV_POOL_BYTES = 4096;
let ivPool = Buffer.alloc(0);
let ivOffset = 0;

/**
 * A fresh 12-byte IV, never handed out twice: slices of a buffer filled from the CSPRNG, refilled
 * (a new buffer, so no IV already returned is overwritten) when used up. GCM needs IVs unique per
 * key, not secret; a random 96-bit IV is NIST SP 800-38D §8.2.2's construction. Pooled because a
 * `randomBytes` call per payload costs more (docs/performance.md).
 */
function nextIv(): Buffer {
  if (ivOffset + IV_BYTES > ivPool.length) {
    ivPool = randomFillSync(Buffer.allocUnsafe(IV_POOL_BYTES));
    ivOffset = 0;
  }
  const iv = ivPool.subarray(ivOffset, ivOffset + IV_BYTES);
  ivOffset += IV_BYTES;
  return iv;
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined): string => (b ? Buffer.from(b).toString('utf8') : '');

/** The additional authenticated data: what the metadata says about how to read the ciphertext. */
const aad = (keyId: string, compression: string): Uint8Array => utf8(`agent-jobs-codec\u0000${keyId}\u0000${compression}`);

/** A payload could not be decrypted: the message is one line naming the key id and where the keys came from. */
export class CodecDecodeError extends Error {
  override name = 'CodecDecodeError';
}

/** Whether `payload` is one this codec encrypted. */
export function isEncrypted(payload: Payload): boolean {
  return text(payload.metadata?.['encoding']) === ENCRYPTED_ENCODING;
}

/** `payload` marked as decrypted by this codec. */
function sealed(payload: Payload): Payload {
  return { ...payload, metadata: { ...payload.metadata, [SEALED_METADATA_KEY]: utf8('1') } };
}

/** `payload` without the sealed mark (a payload that was not encrypted cannot claim it); the same object when it has none. */
function unsealed(payload: Payload): Payload {
  if (payload.metadata?.[SEALED_METADATA_KEY] === undefined) return payload;
  const metadata = { ...payload.metadata };
  delete metadata[SEALED_METADATA_KEY];
  return { ...payload, metadata };
}

/**
 * AES-256-GCM over gzip, with key ids for rotation (see the module doc).
 * Encrypts with `keys.current`; decrypts with whichever key the payload names.
 */
export class EncryptionCodec implements PayloadCodec {
  constructor(private readonly keys: CodecKeys) {}

  /** Encrypts each payload (a payload that is already encrypted is left as it is). */
  encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.resolve(payloads.map((p) => (isEncrypted(p) ? p : this.encrypt(p))));
  }

  /**
   * Decrypts each encrypted payload and marks it sealed (`agent-jobs-sealed` = `1`); others pass
   * through without that key.
   * @throws CodecDecodeError when a payload names a key this process does not hold, or fails authentication
   */
  decode(payloads: Payload[]): Promise<Payload[]> {
    try {
      return Promise.resolve(payloads.map((p) => (isEncrypted(p) ? sealed(this.decrypt(p)) : unsealed(p))));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** One payload, encrypted with the current key. */
  encrypt(payload: Payload): Payload {
    const plain = Buffer.from(temporal.api.common.v1.Payload.encode(payload).finish());
    const zipped = plain.length < MIN_GZIP_BYTES ? plain : gzipSync(plain);
    const compressed = zipped.length < plain.length;
    const { id, key } = this.keys.current;
    const iv = nextIv();
    const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(id, compressed ? 'gzip' : 'none'));
    const body = Buffer.concat([cipher.update(compressed ? zipped : plain), cipher.final()]);
    return {
      metadata: {
        encoding: utf8(ENCRYPTED_ENCODING),
        'encryption-key-id': utf8(id),
        'encryption-cipher': utf8(CIPHER),
        'encryption-compression': utf8(compressed ? 'gzip' : 'none'),
      },
      data: Buffer.concat([iv, body, cipher.getAuthTag()]),
    };
  }

  /**
   * One encrypted payload, decrypted.
   * @throws CodecDecodeError (see {@link decode})
   */
  decrypt(payload: Payload): Payload {
    const id = text(payload.metadata?.['encryption-key-id']);
    const cipherName = text(payload.metadata?.['encryption-cipher']);
    if (cipherName !== CIPHER)
      throw new CodecDecodeError(`a payload is encrypted with ${JSON.stringify(cipherName)}, which this codec does not know`);
    const key = this.keys.byId.get(id);
    if (!key) {
      throw new CodecDecodeError(
        `a payload is encrypted with key ${JSON.stringify(id)}, which the codec keys at ${this.keys.source} do not hold ` +
          `(give every worker and CLI the same keys: AGENT_JOBS_CODEC_KEYS)`,
      );
    }
    const compression = text(payload.metadata?.['encryption-compression']);
    if (compression !== 'gzip' && compression !== 'none') {
      throw new CodecDecodeError(`a payload names compression ${JSON.stringify(compression)}, which this codec does not know`);
    }
    const data = Buffer.from(payload.data ?? new Uint8Array());
    if (data.length < IV_BYTES + TAG_BYTES)
      throw new CodecDecodeError(`a payload encrypted with key ${id} is truncated (${data.length} bytes)`);
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
      decipher.setAAD(aad(id, compression));
      decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
      plain = Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new CodecDecodeError(
        `a payload encrypted with key ${id} fails authentication: it was altered, or key ${id} in ${this.keys.source} is not the key it was written with`,
      );
    }
    const bytes = compression === 'gzip' ? gunzipSync(plain) : plain;
    const decoded = temporal.api.common.v1.Payload.decode(bytes);
    return { metadata: decoded.metadata ?? {}, data: decoded.data ?? new Uint8Array() };
  }
}
