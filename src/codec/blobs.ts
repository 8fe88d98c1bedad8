/**
 * Blob stores of the claim check (src/codec/claim-check.ts): where a
 * payload too big for history goes. A blob is the bytes of an already
 * encrypted payload, under a content-addressed key (its sha256 in hex), so
 * writing the same bytes twice (a retried activity's codec, two workers
 * encoding one payload) writes one object, and a store never sees plaintext.
 *
 * - {@link DirectoryBlobStore}: one file per blob under a folder, the
 *   default (`<data dir>/blobs`), shared by the workers of one machine or a
 *   shared filesystem;
 * - {@link S3BlobStore} (src/codec/s3.ts): an S3-compatible bucket, for
 *   workers on several machines.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, fstatSync, linkSync, mkdirSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What a blob key is: the sha256 of the blob, 64 lower-case hex digits (nothing else reaches a path or an object name). */
export const BLOB_KEY_PATTERN = /^[0-9a-f]{64}$/;

/**
 * The largest blob a store reads, bytes: 64 MiB. A reference that claims
 * more, or a stored object that is larger, is refused before it is read
 * whole (a tampered history must not make a worker allocate without bound).
 * Far above what the product writes: one answer's results are cut at
 * 400,000 bytes, a continue-as-new input holds the transcript.
 */
export const MAX_BLOB_BYTES = 64 * 1024 * 1024;

/** A blob could not be written or read: one line naming the key and the store, with the cause. */
export class BlobStoreError extends Error {
  override name = 'BlobStoreError';
  constructor(
    message: string,
    /** `missing`: no blob under the key; `invalid`: a bad key or size; `io`: the store failed. */
    readonly kind: 'missing' | 'invalid' | 'io',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Where claim-checked payloads are kept. Implementations check keys with {@link assertBlobKey} themselves. */
export interface BlobStore {
  /** How the store is named in messages and references (`dir:/data/blobs`, `s3://bucket/prefix`). */
  readonly description: string;
  /**
   * Writes `bytes` under `key` (the sha256 of `bytes`, hex). Idempotent: a
   * key that exists already is left as it is.
   * @throws BlobStoreError when the key is malformed or the store fails
   */
  put(key: string, bytes: Uint8Array): Promise<void>;
  /**
   * The bytes under `key`, at most `maxBytes` of them.
   * @throws BlobStoreError `missing` when there is none, `invalid` when the key is malformed or the blob is over `maxBytes`, `io` when the store fails
   */
  get(key: string, maxBytes: number): Promise<Uint8Array>;
}

/**
 * Refuses a key that is not 64 lower-case hex digits (a path separator, `..`,
 * an absolute path, an empty or a long key all fail here, before any I/O).
 * @throws BlobStoreError `invalid`
 */
export function assertBlobKey(key: string, store: string): void {
  if (typeof key !== 'string' || !BLOB_KEY_PATTERN.test(key))
    throw new BlobStoreError(`blob key ${JSON.stringify(String(key).slice(0, 100))} in ${store} is not a sha256 in hex`, 'invalid');
}

/**
 * Blobs as files: `<root>/<first 2 hex digits>/<key>`, mode 0600 in 0700
 * folders. A blob is written aside and hard-linked into place, so a reader
 * sees no file or the whole blob, and a second writer of the same key finds
 * it there (EEXIST) and leaves it.
 */
export class DirectoryBlobStore implements BlobStore {
  readonly description: string;
  constructor(readonly root: string) {
    this.root = path.resolve(root);
    this.description = `dir:${this.root}`;
  }

  /** The file of `key` (checked with {@link assertBlobKey}, so it is always inside the root). */
  file(key: string): string {
    assertBlobKey(key, this.description);
    return path.join(this.root, key.slice(0, 2), key);
  }

  put(key: string, bytes: Uint8Array): Promise<void> {
    try {
      this.write(key, bytes);
      return Promise.resolve();
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** {@link put}, synchronously. */
  private write(key: string, bytes: Uint8Array): void {
    const file = this.file(key);
    const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    try {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      writeFileSync(aside, bytes, { mode: 0o600, flag: 'wx' });
      linkSync(aside, file);
    } catch (err) {
      // EEXIST: the same key, so the same bytes, is there already (content-addressed).
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new BlobStoreError(`cannot write blob ${key} to ${this.description}: ${(err as Error).message}`, 'io', { cause: err });
    } finally {
      rmSync(aside, { force: true });
    }
  }

  get(key: string, maxBytes: number): Promise<Uint8Array> {
    try {
      return Promise.resolve(this.read(key, maxBytes));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  /** {@link get}, synchronously. */
  private read(key: string, maxBytes: number): Uint8Array {
    const file = this.file(key);
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch (err) {
      const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
      throw new BlobStoreError(
        missing
          ? `blob ${key} is missing from ${this.description}`
          : `cannot read blob ${key} from ${this.description}: ${(err as Error).message}`,
        missing ? 'missing' : 'io',
        { cause: err },
      );
    }
    try {
      const { size } = fstatSync(fd);
      if (size > maxBytes) throw new BlobStoreError(`blob ${key} in ${this.description} is ${size} bytes, over ${maxBytes}`, 'invalid');
      const out = Buffer.alloc(size);
      let at = 0;
      while (at < size) {
        const n = readSync(fd, out, at, size - at, at);
        if (n === 0) break;
        at += n;
      }
      return out.subarray(0, at);
    } finally {
      closeSync(fd);
    }
  }
}
