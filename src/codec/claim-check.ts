/**
 * The claim check: a payload too big for history goes to a blob store
 * (src/codec/blobs.ts) and history keeps a small reference to it, the
 * pattern Temporal's docs name for large payloads
 * (https://docs.temporal.io/troubleshooting/blob-size-limit-error). It is
 * the last codec of the chain (src/codec/index.ts): it sees each payload
 * already compressed and encrypted, so the store holds ciphertext only, and
 * the threshold is measured on those bytes.
 *
 * A reference payload:
 * - metadata `encoding` = {@link REFERENCE_ENCODING};
 * - data = JSON `{"v":1,"store":"<where it was written>","key":"<hex>",
 *   "sha256":"<hex>","size":<bytes>}`, about 250 bytes; the key is the
 *   blob's sha256 (content-addressed), and the blob is the encoded payload
 *   serialized as the `temporal.api.common.v1.Payload` protobuf.
 *
 * Decoding a reference checks everything it is told before trusting it:
 * the key is the sha256 (64 hex digits, so never a path), the size is at
 * most {@link MAX_BLOB_BYTES}, the blob read is that size and hashes to that
 * sha256, and it is not itself a reference. Any failure, a missing blob
 * first of all, is a {@link ClaimCheckError} naming the key and the store:
 * the workflow task that needed it fails and says so, and is retried until
 * the blob is back; it never runs on with a changed conversation.
 */
import { createHash } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { BlobStoreError, MAX_BLOB_BYTES, type BlobStore } from './blobs';
import { CodecDecodeError } from './codec';

/** The `encoding` of a reference payload. */
export const REFERENCE_ENCODING = 'binary/claim-check';

/** A reference's data is at most this many bytes (the JSON above is about 250); a longer one is refused unread. */
export const MAX_REFERENCE_BYTES = 1024;

/** What a reference payload holds (see the module doc). */
export interface BlobReference {
  v: 1;
  /** The store it was written to (`dir:/data/blobs`, `s3://bucket/prefix/`), for messages. */
  store: string;
  /** The store's key: the sha256 of the blob, 64 hex digits. */
  key: string;
  /** sha256 of the blob, hex. */
  sha256: string;
  /** Bytes of the blob. */
  size: number;
}

/** A reference could not be resolved: one line naming the key, the store and what is wrong (a {@link CodecDecodeError}, so the codec server answers 422). */
export class ClaimCheckError extends CodecDecodeError {
  override name = 'ClaimCheckError';
}

const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

/**
 * An upper bound of the bytes of `payload` serialized as the `Payload` protobuf: each bytes or string field
 * costs its length plus a tag and a length prefix (at most 1 + 5 bytes), each map entry 1 + 5 more.
 */
function encodedSizeBound(payload: Payload): number {
  let n = (payload.data?.length ?? 0) + 6;
  for (const [k, v] of Object.entries(payload.metadata ?? {})) n += 4 * k.length + (v?.length ?? 0) + 18;
  return n;
}

/** Whether `payload` is a claim-check reference. */
export function isReference(payload: Payload): boolean {
  const e = payload.metadata?.['encoding'];
  return e !== undefined && e !== null && Buffer.from(e).toString('utf8') === REFERENCE_ENCODING;
}

/**
 * The reference a payload holds, checked for shape (not yet against the blob).
 * @throws ClaimCheckError when the data is over {@link MAX_REFERENCE_BYTES}, not JSON, or a field is missing or malformed
 */
export function parseReference(payload: Payload): BlobReference {
  const data = payload.data ?? new Uint8Array();
  if (data.length > MAX_REFERENCE_BYTES)
    throw new ClaimCheckError(`a claim-check reference is ${data.length} bytes, over ${MAX_REFERENCE_BYTES}: not one this product wrote`);
  let ref: Partial<BlobReference>;
  try {
    ref = JSON.parse(Buffer.from(data).toString('utf8')) as Partial<BlobReference>;
  } catch {
    throw new ClaimCheckError('a claim-check reference is not JSON');
  }
  const store = typeof ref?.store === 'string' ? ref.store.slice(0, 200) : '?';
  const shown = JSON.stringify(String(ref?.key).slice(0, 100));
  if (ref?.v !== 1) throw new ClaimCheckError(`a claim-check reference (key ${shown}) has version ${JSON.stringify(ref?.v)}, not 1`);
  if (typeof ref.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(ref.sha256))
    throw new ClaimCheckError(`a claim-check reference (key ${shown}, store ${store}) has no valid sha256`);
  if (ref.key !== ref.sha256)
    throw new ClaimCheckError(`a claim-check reference names key ${shown}, not its sha256 ${ref.sha256} (store ${store}): it was altered`);
  if (typeof ref.size !== 'number' || !Number.isSafeInteger(ref.size) || ref.size < 0 || ref.size > MAX_BLOB_BYTES)
    throw new ClaimCheckError(
      `a claim-check reference to blob ${ref.key} (store ${store}) claims ${JSON.stringify(ref.size)} bytes, not 0 to ${MAX_BLOB_BYTES}`,
    );
  return { v: 1, store, key: ref.key, sha256: ref.sha256, size: ref.size };
}

/** Where and above what size the claim check moves payloads. */
export interface ClaimCheckOptions {
  store: BlobStore;
  /** A payload whose encoded protobuf is over this many bytes goes to the store. */
  thresholdBytes: number;
}

/** The claim-check codec (see the module doc). */
export class ClaimCheckCodec implements PayloadCodec {
  constructor(readonly options: ClaimCheckOptions) {}

  /**
   * Moves each payload over the threshold to the store and puts its reference in its place; others (and references) pass.
   * @throws BlobStoreError when the store cannot be written (the activity or workflow task fails, and is retried)
   */
  async encode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(payloads.map((p) => this.check(p)));
  }

  /**
   * Each reference replaced by the payload in its blob, verified; others pass.
   * @throws ClaimCheckError when a blob is missing, unreadable, of another size or hash, or a reference is malformed
   */
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return Promise.all(payloads.map((p) => (isReference(p) ? this.resolve(parseReference(p)) : Promise.resolve(p))));
  }

  private async check(payload: Payload): Promise<Payload> {
    if (isReference(payload)) return payload;
    // Most payloads are far under the threshold: an upper bound of their encoded size spares serializing them.
    if (encodedSizeBound(payload) <= this.options.thresholdBytes) return payload;
    const bytes = temporal.api.common.v1.Payload.encode(payload).finish();
    if (bytes.length <= this.options.thresholdBytes) return payload;
    if (bytes.length > MAX_BLOB_BYTES)
      throw new BlobStoreError(`a payload of ${bytes.length} bytes is over the claim check's ${MAX_BLOB_BYTES}`, 'invalid');
    const hash = sha256(bytes);
    await this.options.store.put(hash, bytes);
    const ref: BlobReference = { v: 1, store: this.options.store.description, key: hash, sha256: hash, size: bytes.length };
    return { metadata: { encoding: utf8(REFERENCE_ENCODING) }, data: utf8(JSON.stringify(ref)) };
  }

  /** The payload of a checked reference, from this process's store. */
  async resolve(ref: BlobReference): Promise<Payload> {
    const store = this.options.store.description;
    const where = `blob ${ref.key} (${ref.size} bytes, written to ${ref.store}) in ${store}`;
    let bytes: Uint8Array;
    try {
      bytes = await this.options.store.get(ref.key, ref.size);
    } catch (err) {
      const why = err instanceof BlobStoreError && err.kind === 'missing' ? 'is missing' : `cannot be read: ${(err as Error).message}`;
      throw new ClaimCheckError(
        `${where} ${why}; the run cannot go on without it (AGENT_JOBS_BLOB_STORE must name the store its workers wrote to)`,
        { cause: err },
      );
    }
    if (bytes.length !== ref.size) throw new ClaimCheckError(`${where} is ${bytes.length} bytes, not ${ref.size}: it was altered`);
    if (sha256(bytes) !== ref.sha256) throw new ClaimCheckError(`${where} does not match its sha256: it was altered or corrupted`);
    let payload: temporal.api.common.v1.Payload;
    try {
      payload = temporal.api.common.v1.Payload.decode(bytes);
    } catch {
      throw new ClaimCheckError(`${where} is not a payload`);
    }
    const out: Payload = { metadata: payload.metadata ?? {}, data: payload.data ?? new Uint8Array() };
    if (isReference(out)) throw new ClaimCheckError(`${where} holds another reference, which this codec never writes`);
    return out;
  }
}
