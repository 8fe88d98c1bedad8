/**
 * The keys of the payload codec (src/codec/codec.ts): where they come from,
 * how they are written, which one encrypts.
 *
 * `AGENT_JOBS_CODEC_KEYS` names either
 * - a **keys file**: one key per line, `<key id> <32 bytes in base64>`;
 *   blank lines and lines starting with `#` are ignored; the **first** key
 *   encrypts, every key decrypts (rotate by putting a new line on top);
 * - or a **keys directory**: one file per key, `<key id>.key`, holding the
 *   32 bytes in base64; the key whose id sorts **last** encrypts (name keys
 *   by date, `2026-12-02.key`), every key decrypts.
 *
 * Unset, the keys file is `<data dir>/codec-keys`, created with one new
 * random key (mode 0600, in a 0700 folder) the first time a worker, the CLI
 * or the demo needs it, so encryption is on for everyone; every process that
 * reads the same runs needs the same file. A key id is 1–64 characters of
 * `[A-Za-z0-9._-]`, as it is written into each payload's metadata.
 */
import { randomBytes } from 'node:crypto';
import { linkSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** AES-256: a key is 32 bytes. */
export const KEY_BYTES = 32;

/** What a key id may be (it is written into every payload's metadata). */
export const KEY_ID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;

/** One key: its id and its 32 bytes. */
export interface CodecKey {
  id: string;
  key: Buffer;
}

/** The keys one process holds: the one that encrypts, and all that decrypt (by id). */
export interface CodecKeys {
  /** Where they were read from (a file or a directory), for messages. */
  source: string;
  /** The key new payloads are encrypted with. */
  current: CodecKey;
  /** Every key, the current one included, by id. */
  byId: ReadonlyMap<string, Buffer>;
}

/** The keys could not be read: the message is one line that names the path and what is wrong. */
export class CodecKeyError extends Error {
  override name = 'CodecKeyError';
}

function parseKey(id: string, base64: string, where: string): CodecKey {
  if (!KEY_ID_PATTERN.test(id)) throw new CodecKeyError(`${where}: key id ${JSON.stringify(id)} is not 1–64 of [A-Za-z0-9._-]`);
  const text = base64.trim();
  const key = Buffer.from(text, 'base64');
  if (key.length !== KEY_BYTES || key.toString('base64') !== text) {
    throw new CodecKeyError(`${where}: key ${id} is not ${KEY_BYTES} bytes in base64 (AES-256 needs exactly ${KEY_BYTES})`);
  }
  return { id, key };
}

function collect(source: string, keys: CodecKey[], current: CodecKey | undefined): CodecKeys {
  if (!current) throw new CodecKeyError(`${source}: holds no key (see docs/security.md, "Encryption")`);
  const byId = new Map<string, Buffer>();
  for (const k of keys) {
    if (byId.has(k.id)) throw new CodecKeyError(`${source}: key id ${k.id} appears twice`);
    byId.set(k.id, k.key);
  }
  return { source, current, byId };
}

/**
 * Reads a keys file or a keys directory (see the module doc).
 * @throws CodecKeyError when the path is missing or unreadable, holds no key, or a key or id is malformed
 */
export function readCodecKeys(source: string): CodecKeys {
  let isDir: boolean;
  try {
    isDir = statSync(source).isDirectory();
  } catch (err) {
    throw new CodecKeyError(
      `codec keys ${source}: ${(err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file or directory' : (err as Error).message}`,
    );
  }
  try {
    if (isDir) {
      const names = readdirSync(source)
        .filter((n) => n.endsWith('.key'))
        .sort();
      const keys = names.map((n) => parseKey(n.slice(0, -'.key'.length), readFileSync(path.join(source, n), 'utf8'), `${source}/${n}`));
      return collect(source, keys, keys[keys.length - 1]);
    }
    const keys: CodecKey[] = [];
    for (const [i, raw] of readFileSync(source, 'utf8').split('\n').entries()) {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      const parts = line.split(/\s+/);
      if (parts.length !== 2) throw new CodecKeyError(`${source}:${i + 1}: expected "<key id> <base64 key>"`);
      keys.push(parseKey(parts[0]!, parts[1]!, `${source}:${i + 1}`));
    }
    return collect(source, keys, keys[0]);
  } catch (err) {
    if (err instanceof CodecKeyError) throw err;
    throw new CodecKeyError(`codec keys ${source}: ${(err as Error).message}`);
  }
}

/** A new key id: `k` and the UTC date and time, with random hex so two made in one second differ. */
export function newKeyId(now: Date = new Date()): string {
  return `k${now.toISOString().replace(/[-:]/g, '').slice(0, 15)}-${randomBytes(3).toString('hex')}`;
}

/**
 * Writes a new keys file with one random key, only if `file` does not exist.
 * The file is written aside and then hard-linked into place, so a process
 * reading it at the same moment sees either no file or the whole key, and
 * two processes starting at once end up with the same file.
 * @returns whether this call created it
 * @throws CodecKeyError when the folder or file cannot be written
 */
export function createKeysFile(file: string): boolean {
  const aside = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const line = `${newKeyId()} ${randomBytes(KEY_BYTES).toString('base64')}\n`;
    writeFileSync(aside, `${KEYS_FILE_HEADER}\n${line}`, { mode: 0o600, flag: 'wx' });
    linkSync(aside, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw new CodecKeyError(`cannot create codec keys ${file}: ${(err as Error).message}`);
  } finally {
    rmSync(aside, { force: true });
  }
}

/** The first line of a keys file this module writes. */
const KEYS_FILE_HEADER =
  '# agent-jobs payload codec keys: "<key id> <base64 AES-256 key>", the first encrypts, all decrypt (docs/security.md)';

/**
 * The keys this process uses: `AGENT_JOBS_CODEC_KEYS` when set (it must
 * exist), else `<dataDir>/codec-keys`, created when missing.
 *
 * @param env the environment to read (default `process.env`)
 * @param dataDir the data folder of the default keys file
 * @param onCreate told the path when this call created the default file
 * @throws CodecKeyError as {@link readCodecKeys}
 */
export function loadCodecKeys(env: NodeJS.ProcessEnv, dataDir: string, onCreate?: (file: string) => void): CodecKeys {
  const configured = env.AGENT_JOBS_CODEC_KEYS;
  if (configured) return readCodecKeys(configured);
  const file = path.join(dataDir, 'codec-keys');
  if (createKeysFile(file)) onCreate?.(file);
  return readCodecKeys(file);
}
