/**
 * Encryption of what Temporal keeps: the payload codec, its keys and the
 * codec server (docs/security.md, "Encryption").
 */
import path from 'node:path';
import type { DataConverter } from '@temporalio/common';
import { dataDir } from '../settings';
import { EncryptionCodec } from './codec';
import { loadCodecKeys } from './keys';

export { CodecDecodeError, ENCRYPTED_ENCODING, EncryptionCodec, isEncrypted } from './codec';
export { CodecKeyError, KEY_BYTES, createKeysFile, loadCodecKeys, newKeyId, readCodecKeys, type CodecKey, type CodecKeys } from './keys';
export { MAX_BODY_BYTES, startCodecServer, type CodecServer, type CodecServerOptions } from './server';

/**
 * The data converter every client and worker of the product uses: the
 * default payload converter, then {@link EncryptionCodec} with the keys of
 * {@link loadCodecKeys}.
 *
 * @param env the environment (`AGENT_JOBS_CODEC_KEYS`)
 * @param dataDir where the default keys file lives (`<data>/codec-keys`)
 * @param onCreate told the path when the default keys file was created now
 * @throws CodecKeyError when the keys cannot be read (one line naming the path)
 */
export function productDataConverter(env: NodeJS.ProcessEnv, dataDir: string, onCreate?: (file: string) => void): DataConverter {
  return { payloadCodecs: [new EncryptionCodec(loadCodecKeys(env, dataDir, onCreate))] };
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
 * - `AGENT_JOBS_CODEC_KEYS` names a keys file or directory: {@link EncryptionCodec} over those keys (they must exist);
 * - unset or empty: the default keys file `<data dir>/codec-keys` (src/settings.ts `dataDir`), created with one new
 *   key (mode 0600) when missing, and `onCreate` told its path then (default: one line on stderr);
 * - `none` ({@link CODEC_KEYS_OFF}): undefined, Temporal's default converter, payloads in plaintext.
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
