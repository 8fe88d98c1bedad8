/**
 * The S3-compatible blob store of the claim check (src/codec/blobs.ts), for
 * workers on several machines: AWS S3, or any server that speaks its API
 * (MinIO, Ceph, R2; the tests run moto's server). `@aws-sdk/client-s3` is
 * loaded on first use, so a CLI call that never meets a reference does not
 * pay for it.
 *
 * Objects are `<prefix><key>` in the bucket; a `put` of a key that exists
 * already writes the same bytes again (content-addressed), which S3 makes
 * atomic. Credentials come from the AWS SDK's own chain (the standard
 * `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` / `AWS_SESSION_TOKEN`,
 * `AWS_PROFILE`, instance and container roles); the session never sees
 * them (every `AWS_*` variable is secret: src/session/env.ts).
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { assertBlobKey, BlobStoreError, type BlobStore } from './blobs';

/** Where an S3 store is and how to reach it. */
export interface S3BlobStoreOptions {
  bucket: string;
  /** Prepended to every key (`agent-jobs/`); empty for the bucket's root. */
  prefix: string;
  /** An S3-compatible server's URL (`http://127.0.0.1:9000`); unset: AWS S3 (or the SDK's `AWS_ENDPOINT_URL_S3`). With an endpoint, path-style addressing. */
  endpoint?: string;
  /** The bucket's region (the factory passes `AWS_REGION`). @default `us-east-1` */
  region?: string;
}

/**
 * Parses `s3://bucket/prefix` (the prefix may be empty; a trailing `/` is added to a non-empty one).
 * @throws Error naming the value when it is not that form or the bucket name is not a valid S3 bucket name
 */
export function parseS3Url(url: string): { bucket: string; prefix: string } {
  const m = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(url.trim());
  if (!m || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(m[1]!))
    throw new Error(`AGENT_JOBS_BLOB_STORE ${JSON.stringify(url)} is not s3://<bucket>/<prefix> with a valid bucket name`);
  const rest = (m[2] ?? '').replace(/^\/+/, '');
  return { bucket: m[1]!, prefix: rest === '' || rest.endsWith('/') ? rest : `${rest}/` };
}

/** Blobs as objects of an S3-compatible bucket (see the module doc). */
export class S3BlobStore implements BlobStore {
  readonly description: string;
  private client: Promise<S3Client> | undefined;

  constructor(private readonly options: S3BlobStoreOptions) {
    this.description = `s3://${options.bucket}/${options.prefix}`;
  }

  private s3(): Promise<S3Client> {
    this.client ??= import('@aws-sdk/client-s3').then(
      ({ S3Client: Client }) =>
        new Client({
          region: this.options.region ?? 'us-east-1',
          ...(this.options.endpoint ? { endpoint: this.options.endpoint, forcePathStyle: true } : {}),
          // Temporal's retry policies own retrying; the SDK's own three attempts keep a flaky network from failing a task.
          maxAttempts: 3,
        }),
    );
    return this.client;
  }

  async put(key: string, bytes: Uint8Array): Promise<void> {
    assertBlobKey(key, this.description);
    const { PutObjectCommand } = await import('@aws-sdk/client-s3');
    try {
      await (
        await this.s3()
      ).send(
        new PutObjectCommand({
          Bucket: this.options.bucket,
          Key: this.options.prefix + key,
          Body: bytes,
          ContentType: 'application/octet-stream',
        }),
      );
    } catch (err) {
      throw new BlobStoreError(`cannot write blob ${key} to ${this.description}: ${oneLine(err)}`, 'io', { cause: err });
    }
  }

  async get(key: string, maxBytes: number): Promise<Uint8Array> {
    assertBlobKey(key, this.description);
    const { GetObjectCommand } = await import('@aws-sdk/client-s3');
    let answer;
    try {
      answer = await (await this.s3()).send(new GetObjectCommand({ Bucket: this.options.bucket, Key: this.options.prefix + key }));
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === 'NoSuchKey' || name === 'NotFound')
        throw new BlobStoreError(`blob ${key} is missing from ${this.description}`, 'missing', { cause: err });
      throw new BlobStoreError(`cannot read blob ${key} from ${this.description}: ${oneLine(err)}`, 'io', { cause: err });
    }
    // Refused before the body is read when the server says it is too big; counted while reading otherwise.
    if ((answer.ContentLength ?? 0) > maxBytes) {
      (answer.Body as { destroy?: () => void } | undefined)?.destroy?.();
      throw new BlobStoreError(`blob ${key} in ${this.description} is ${answer.ContentLength} bytes, over ${maxBytes}`, 'invalid');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of answer.Body as AsyncIterable<Uint8Array>) {
      size += chunk.length;
      if (size > maxBytes) throw new BlobStoreError(`blob ${key} in ${this.description} is over ${maxBytes} bytes`, 'invalid');
      chunks.push(Buffer.from(chunk));
    }
    return Buffer.concat(chunks);
  }
}

function oneLine(err: unknown): string {
  const e = err as { name?: string; message?: string };
  return `${e.name ?? 'Error'}: ${(e.message ?? String(err)).split('\n')[0]}`;
}
