/**
 * Encryption of what Temporal keeps: the payload codec, its keys and the
 * codec server (docs/security.md, "Encryption").
 */
import path from 'node:path';
import type { DataConverter, PayloadCodec } from '@temporalio/common';
import { blobStoreSetting, blobThresholdBytes, dataDir } from '../settings';
import { DirectoryBlobStore, type BlobStore } from './blobs';
import { ClaimCheckCodec } from './claim-check';
import { EncryptionCodec } from './codec';
import { loadCodecKeys } from './keys';
import { parseS3Url, S3BlobStore } from './s3';

export { CodecDecodeError, ENCRYPTED_ENCODING, EncryptionCodec, isEncrypted, MIN_GZIP_BYTES } from './codec';
export { CodecKeyError, KEY_BYTES, createKeysFile, loadCodecKeys, newKeyId, readCodecKeys, type CodecKey, type CodecKeys } from './keys';
export { MAX_BODY_BYTES, startCodecServer, type CodecServer, type CodecServerOptions } from './server';
export { BlobStoreError, DirectoryBlobStore, MAX_BLOB_BYTES, assertBlobKey, type BlobStore } from './blobs';
export {
  ClaimCheckCodec,
  ClaimCheckError,
  MAX_REFERENCE_BYTES,
  REFERENCE_ENCODING,
  isReference,
  parseReference,
  type BlobReference,
} from './claim-check';
export { S3BlobStore, parseS3Url, type S3BlobStoreOptions } from './s3';

/**
 * The claim check of this process (src/codec/claim-check.ts), from `AGENT_JOBS_BLOB_STORE` and
 * `AGENT_JOBS_BLOB_THRESHOLD` (src/settings.ts `blobStoreSetting`, `blobThresholdBytes`), or
 * undefined for `AGENT_JOBS_BLOB_STORE=none`. Nothing is read or written until a payload needs it.
 * @throws Error naming the variable when a value is malformed
 */
export function claimCheckFromEnv(env: NodeJS.ProcessEnv = process.env): ClaimCheckCodec | undefined {
  const setting = blobStoreSetting(env);
  if (setting.kind === 'none') return undefined;
  const thresholdBytes = blobThresholdBytes(env);
  const store: BlobStore =
    setting.kind === 'dir'
      ? new DirectoryBlobStore(setting.root)
      : new S3BlobStore({
          ...parseS3Url(setting.url),
          ...(setting.endpoint ? { endpoint: setting.endpoint } : {}),
          ...(setting.region ? { region: setting.region } : {}),
        });
  return new ClaimCheckCodec({ store, thresholdBytes });
}

/**
 * The payload codecs of the product, in encoding order: {@link EncryptionCodec} with the keys
 * of {@link loadCodecKeys}, then the claim check of {@link claimCheckFromEnv} when it is on (so
 * it stores ciphertext; decoding runs them last first).
 * @throws CodecKeyError when the keys cannot be read (one line naming the path); Error for a malformed blob setting
 */
export function productCodecs(env: NodeJS.ProcessEnv, dataDir: string, onCreate?: (file: string) => void): PayloadCodec[] {
  const encryption = new EncryptionCodec(loadCodecKeys(env, dataDir, onCreate));
  const claimCheck = claimCheckFromEnv(env);
  return claimCheck ? [encryption, claimCheck] : [encryption];
}

/** The codecs of `chain` as one: encoding in order, decoding last first (what Temporal's data converter does with `payloadCodecs`), for the codec server. */
export function chainCodecs(chain: readonly PayloadCodec[]): PayloadCodec {
  return {
    encode: async (payloads) => {
      for (const c of chain) payloads = await c.encode(payloads);
      return payloads;
    },
    decode: async (payloads) => {
      for (const c of [...chain].reverse()) payloads = await c.decode(payloads);
      return payloads;
    },
  };
}

/**
 * The payload converter module of the product (`payloadConverterPath`): Temporal's default
 * converter that also remembers which values came sealed (src/codec/payload-converter.ts). The
 * workflow bundle is built with it (src/dev/scripts/bundle-workflows.ts).
 */
export const PAYLOAD_CONVERTER_PATH = require.resolve('./payload-converter');

/**
 * The data converter every client and worker of the product uses: the
 * default payload converter (remembering sealed values: {@link PAYLOAD_CONVERTER_PATH}), then
 * {@link productCodecs} (encryption, then the claim check).
 *
 * @param env the environment (`AGENT_JOBS_CODEC_KEYS`)
 * @param dataDir where the default keys file lives (`<data>/codec-keys`)
 * @param onCreate told the path when the default keys file was created now
 * @throws CodecKeyError when the keys cannot be read (one line naming the path); Error for a malformed blob setting
 */
export function productDataConverter(env: NodeJS.ProcessEnv, dataDir: string, onCreate?: (file: string) => void): DataConverter {
  return { payloadConverterPath: PAYLOAD_CONVERTER_PATH, payloadCodecs: productCodecs(env, dataDir, onCreate) };
}

/** The value of `AGENT_JOBS_CODEC_KEYS` that turns encryption off (payloads in plaintext, as Temporal's default converter writes them). */
export const CODEC_KEYS_OFF = 'none';

/** Whether `AGENT_JOBS_CODEC_KEYS` turns encryption off ({@link CODEC_KEYS_OFF}, any case, spaces around ignored). */
export function codecDisabled(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.AGENT_JOBS_CODEC_KEYS?.trim().toLowerCase() === CODEC_KEYS_OFF;
}

/** Where this process's codec keys are, for messages: the file or directory, or `none`. */
export function codecKeysSource(env: NodeJS.ProcessEnv = process.env): string {
  if (codecDisabled(env)) return CODEC_KEYS_OFF;
  return env.AGENT_JOBS_CODEC_KEYS || path.join(dataDir(env), 'codec-keys');
}

/** The one line a process prints when it created the default keys file (see {@link dataConverterFromEnv}). */
export function createdKeysMessage(file: string): string {
  return (
    `created payload encryption keys ${file} (mode 0600): every worker and CLI that reads these runs needs this file ` +
    '(AGENT_JOBS_CODEC_KEYS; docs/security.md, "Encryption")'
  );
}

/**
 * The data converter of this process: encryption is on by default. The
 * worker, the client module (and so the CLI), the demo, the benchmarks and
 * the tests all take it from here, so one variable sets it for every part.
 *
 * - `AGENT_JOBS_CODEC_KEYS` names a keys file or directory: {@link EncryptionCodec} over those keys (they must exist),
 *   then the claim check ({@link claimCheckFromEnv}: payloads over `AGENT_JOBS_BLOB_THRESHOLD` to `AGENT_JOBS_BLOB_STORE`);
 * - unset or empty: the default keys file `<data dir>/codec-keys` (src/settings.ts `dataDir`), created with one new
 *   key (mode 0600) when missing, and `onCreate` told its path then (default: one line on stderr);
 * - `none` ({@link CODEC_KEYS_OFF}): undefined, Temporal's default converter, payloads in plaintext (and no claim
 *   check: a blob store only ever holds ciphertext).
 *
 * Decoding passes payloads that are not encrypted through, so runs recorded
 * in plaintext still read and replay with encryption on.
 *
 * @throws CodecKeyError when the keys cannot be read or created (one line naming the path)
 */
export function dataConverterFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  onCreate: (file: string) => void = (file) => process.stderr.write(`agent-jobs: ${createdKeysMessage(file)}\n`),
): DataConverter | undefined {
  if (codecDisabled(env)) return undefined;
  return productDataConverter(env, dataDir(env), onCreate);
}
