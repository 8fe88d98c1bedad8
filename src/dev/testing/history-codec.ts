/**
 * Histories as the product reads them: every encrypted payload (src/codec)
 * decrypted and every claim-check reference resolved, for the tests and benchmarks that look inside payloads of a
 * raw history (`fetchHistory` returns them as the server keeps them).
 */
import type { Payload } from '@temporalio/common';
import { isEncrypted, isReference } from '../../codec';
import { SEALED_METADATA_KEY } from '../../shared/sealed';
import { codecClientOptions } from './worker-process';

/**
 * `history` (a `History`, an event list, or any part of one) with every
 * encrypted payload decrypted (and claim-check reference resolved) in place by the codecs of
 * {@link codecClientOptions}; payloads in plaintext (search attributes,
 * patch markers, histories recorded before encryption) are left as they are, but for the codec's sealed mark
 * (src/shared/sealed.ts), which the codec strips from them too.
 * @returns `history` itself
 * @throws CodecDecodeError when a payload names a key the shared keys do not hold (ClaimCheckError: a blob is missing or altered)
 */
export async function decodedHistory<T extends object>(history: T): Promise<T> {
  const codecs = codecClientOptions().dataConverter?.payloadCodecs ?? [];
  const walk = async (v: unknown): Promise<unknown> => {
    if (v === null || typeof v !== 'object' || v instanceof Uint8Array) return v;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) v[i] = await walk(v[i]);
      return v;
    }
    const o = v as Record<string, unknown>;
    if (o['metadata'] && typeof o['metadata'] === 'object' && (isEncrypted(o) || isReference(o))) {
      let decoded: Payload[] = [o];
      for (const codec of [...codecs].reverse()) decoded = await codec.decode(decoded);
      return decoded[0];
    }
    // A plaintext payload cannot claim the codec's sealed mark (a sender forged it): the codec's decode strips it, so does this.
    if (o['metadata'] && typeof o['metadata'] === 'object') delete (o['metadata'] as Record<string, unknown>)[SEALED_METADATA_KEY];
    for (const k of Object.keys(o)) o[k] = await walk(o[k]);
    return o;
  };
  await walk(history);
  return history;
}
