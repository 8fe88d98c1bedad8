/**
 * Encryption of what Temporal keeps: the payload codec, its keys and the
 * codec server (docs/security.md, "Encryption").
 */
import type { DataConverter } from '@temporalio/common';
import { EncryptionCodec } from './codec';
import { loadCodecKeys, readCodecKeys } from './keys';

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

/**
 * The data converter for this process when encryption is configured: with
 * `AGENT_JOBS_CODEC_KEYS` set, {@link EncryptionCodec} over the keys it names;
 * unset, undefined (Temporal's default converter: payloads in plaintext). The
 * worker, the client module (and so the CLI) and the test harness all take it
 * from here, so one variable turns encryption on for every part alike.
 *
 * @throws CodecKeyError when the variable names keys that cannot be read (one line naming the path)
 */
export function dataConverterFromEnv(env: NodeJS.ProcessEnv = process.env): DataConverter | undefined {
  const keys = env.AGENT_JOBS_CODEC_KEYS;
  return keys ? { payloadCodecs: [new EncryptionCodec(readCodecKeys(keys))] } : undefined;
}
