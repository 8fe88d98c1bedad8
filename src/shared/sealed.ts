/**
 * Which values came to the workflow inside a payload the product's codec decrypted ("sealed"):
 * the codec's decode sets {@link SEALED_METADATA_KEY} on every payload it decrypted and strips
 * it from every other one (src/codec/codec.ts), and the payload converter of the workflow
 * bundle ({@link markSealed}, src/codec/payload-converter.ts) remembers each object it made
 * from a marked payload. The approval handlers of an encrypted run (its own input came
 * sealed) refuse a decision that did not: only a sender holding the codec keys can send one.
 * No Node built-ins: the workflow bundle imports it.
 */

/** Payload metadata key the codec's decode sets on a payload it decrypted (value `1`), and removes from any other payload. */
export const SEALED_METADATA_KEY = 'agent-jobs-sealed';

/**
 * The objects made from a sealed payload; weak, so a value kept by nobody else is not held. One set per copy of this
 * module: the payload converter and the workflows must be bundled together (the workflow bundle; a replay passes the
 * converter's path beside the workflows', as the tests do).
 */
const sealedValues = new WeakSet<object>();

/** Remembers `value` (an object or array; other values are ignored) as made from a sealed payload. */
export function markSealed(value: unknown): void {
  if (typeof value === 'object' && value !== null) sealedValues.add(value);
}

/** Whether `value` is the very object a sealed payload was converted to (a copy of it is not). */
export function isSealed(value: unknown): boolean {
  return typeof value === 'object' && value !== null && sealedValues.has(value);
}
