/**
 * The workflow's own SHA-256 (no node:crypto in the sandbox) agrees with
 * node:crypto on the UTF-8 bytes of any string: known vectors, every length
 * around the padding boundaries, and random strings of ASCII, BMP, astral
 * characters and lone surrogates.
 */
import { createHash, randomInt } from 'node:crypto';
import { sha256, sha256Bytes, utf8Bytes } from '../../../src/shared/sha256';

const nodeSha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

/** A random string of `n` UTF-16 units drawn from ASCII, controls, the BMP, astral pairs and lone surrogates. */
function randomString(n: number): string {
  let s = '';
  while (s.length < n) {
    const kind = randomInt(6);
    if (kind === 0) s += String.fromCharCode(randomInt(0x20, 0x7f));
    else if (kind === 1) s += String.fromCharCode(randomInt(0, 0x20));
    else if (kind === 2) s += String.fromCharCode(randomInt(0x80, 0xd800));
    else if (kind === 3) s += String.fromCodePoint(randomInt(0x10000, 0x110000));
    else if (kind === 4)
      s += String.fromCharCode(randomInt(0xd800, 0xe000)); // a lone surrogate, or half of a pair by chance
    else s += String.fromCharCode(randomInt(0xe000, 0x10000));
  }
  return s;
}

describe('sha256 (pure TypeScript)', () => {
  test('known vectors (FIPS 180-4 examples)', () => {
    expect(sha256('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(sha256('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq')).toBe(
      '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
    );
  });

  test('every length from 0 to 300 bytes (padding crosses block boundaries at 55/56 and 119/120)', () => {
    for (let n = 0; n <= 300; n++) {
      const s = 'x'.repeat(n);
      expect(sha256(s)).toBe(nodeSha(s));
    }
  });

  test('UTF-8 encoding matches Buffer, lone surrogates becoming U+FFFD', () => {
    for (const s of ['é', '€', '😀', '\u202e', '\ud800', 'a\udc00b', '\udbff\udfff', '\ud83d', '\u0000\u007f\u0080\u07ff\u0800\uffff']) {
      expect(Buffer.from(utf8Bytes(s)).equals(Buffer.from(s, 'utf8'))).toBe(true);
    }
  });

  test('1,000 random strings (ASCII, controls, BMP, astral, lone surrogates) hash as node:crypto hashes them', () => {
    for (let i = 0; i < 1_000; i++) {
      const s = randomString(randomInt(0, 400));
      expect(sha256(s)).toBe(nodeSha(s));
    }
  });

  test('a large input (1 MB)', () => {
    const s = randomString(1 << 20);
    expect(sha256(s)).toBe(nodeSha(s));
  });

  test('raw bytes', () => {
    const bytes = Uint8Array.from({ length: 1000 }, (_, i) => (i * 37) & 0xff);
    expect(sha256Bytes(bytes)).toBe(createHash('sha256').update(bytes).digest('hex'));
  });
});
