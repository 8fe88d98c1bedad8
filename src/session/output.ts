/**
 * Turning what a command wrote (raw bytes in its capture file) into the
 * `output` string of a result: valid UTF-8, no terminal escape sequences,
 * carriage-return overwrites resolved, secrets redacted, capped head + tail.
 *
 * The bytes arrive through a pipe (see capture.ts) into an
 * {@link OutputCollector}, which keeps a bounded head and tail.
 *
 * Why each step: the result goes into Temporal history (2 MiB payload limit)
 * and back to the Messages API as text. Invalid UTF-8 would be mangled or
 * rejected on the way; ANSI colour codes and progress-bar redraws cost tokens
 * and carry no information; a huge log needs its start (what ran) and its end
 * (how it failed) more than its middle.
 */
import { redactPartialSecretAtEdge, redactSecrets, type SecretValue } from './env';

/** Default cap of `CommandResult.output`, in UTF-8 bytes (head + tail). */
export const DEFAULT_MAX_OUTPUT_BYTES = 30_000;

/**
 * Outputs up to this many times `maxOutputBytes` (and at least up to two
 * windows) are kept and cleaned whole,
 * so the cut note is exact; larger ones are read as a head window and a tail
 * window only (a 50 MB log costs 50 MB of copying, not 50 MB of regex work or memory).
 */
const FULL_READ_FACTOR = 4;
/** Raw bytes kept at each end of an output too large to keep whole. */
const WINDOW_MIN_BYTES = 64 * 1024;

// ECMA-48 sequences: CSI (colours, cursor moves, erase), OSC (titles,
// hyperlinks; ended by BEL or ST, or unterminated), DCS/SOS/PM/APC strings,
// two-byte escapes (charset selection, keypad modes), their 8-bit C1 forms,
// and any ESC left over.
const ANSI_RE = new RegExp(
  [
    '\\x1b\\[[0-?]*[ -/]*[@-~]',
    '\\x1b\\][^\\x07\\x1b\\n]*(?:\\x07|\\x1b\\\\)?',
    '\\x1b[PX^_][^\\x1b]*(?:\\x1b\\\\)?',
    '\\x1b[ -/]*[0-~]',
    '\\u009b[0-?]*[ -/]*[@-~]',
    '\\u009d[^\\x07\\u009c\\n]*(?:\\x07|\\u009c)?',
    '\\x1b',
  ].join('|'),
  'g',
);
// C0 controls other than \t, \n (and \r, \b, handled before), DEL, C1 controls.
const CONTROL_RE = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]/g;

/** Removes terminal escape sequences (colours, cursor movement, titles, hyperlinks). */
export function stripAnsi(text: string): string {
  return text.replace(ANSI_RE, '');
}

/**
 * Stand-ins for the erase-in-line sequences (ECMA-48 EL: `ESC [ K` / `ESC [
 * 0 K` erase to the end of the line, `ESC [ 2 K` the whole line), put in
 * before escapes are stripped so that {@link collapseLine} can apply them.
 * Both are C0 controls: whatever is left is removed with the others.
 */
const ERASE_TO_END = '\x00';
const ERASE_LINE = '\x01';

/**
 * Resolves what a terminal would show for one line containing `\r`, `\b`
 * or erase-in-line stand-ins: each `\r` returns to column 0 and the
 * following text overwrites (so a progress bar redrawn 100 times leaves its
 * last state), `\b` erases the character before it, an erase-to-end drops
 * what stood right of the cursor (`\r\x1b[K` then text shows just the text),
 * an erase-line blanks the whole line, the cursor staying where it was
 * (blanks left at the end of such a line are dropped).
 */
export function collapseLine(line: string): string {
  if (!/[\r\b\x00\x01]/.test(line)) return line;
  let result = '';
  let blanked = false;
  for (const segment of line.split('\r')) {
    let chars: string[] = [];
    let under = result;
    for (const ch of segment) {
      if (ch === '\b') chars.pop();
      else if (ch === ERASE_TO_END) under = '';
      else if (ch === ERASE_LINE) {
        under = '';
        chars = chars.map(() => ' ');
        blanked = true;
      } else chars.push(ch);
    }
    const seg = chars.join('');
    result = seg + under.slice(seg.length);
  }
  // Blanks an erased line left after its last text are not output.
  return blanked ? result.replace(/ +$/, '') : result;
}

/**
 * Cleans decoded output: strips escape sequences, turns `\r\n` into `\n`,
 * collapses `\r`/`\b` overwrites per line, removes other control characters
 * (keeps `\n` and `\t`). Idempotent.
 */
export function sanitizeText(text: string): string {
  // Real NUL and SOH bytes go first (they would be removed anyway), so the stand-ins mean only what was put in.
  let t = /[\x00\x01]/.test(text) ? text.replace(/[\x00\x01]/g, '') : text;
  if (t.includes('\x1b[')) t = t.replace(/\x1b\[0?K/g, ERASE_TO_END).replace(/\x1b\[2K/g, ERASE_LINE);
  if (t.includes('\x1b') || t.includes('\u009b') || t.includes('\u009d')) t = stripAnsi(t);
  if (/[\r\b\x00\x01]/.test(t)) {
    t = t.replace(/\r+\n/g, '\n');
    t = t.split('\n').map(collapseLine).join('\n');
  }
  return t.replace(CONTROL_RE, '');
}

/**
 * Decodes bytes as UTF-8, invalid sequences replaced by U+FFFD. With
 * `partialStart`/`partialEnd`, bytes of a character cut by a window boundary
 * (leading continuation bytes, a trailing incomplete sequence) are dropped
 * rather than shown as replacement characters.
 */
export function decodeUtf8(buf: Buffer, options: { partialStart?: boolean; partialEnd?: boolean } = {}): string {
  let start = 0;
  let end = buf.length;
  if (options.partialStart) {
    while (start < end && start < 3 && isContinuation(buf[start]!)) start++;
  }
  if (options.partialEnd) end = completeUtf8End(buf, start, end);
  return buf.toString('utf8', start, end);
}

function isContinuation(byte: number): boolean {
  return (byte & 0xc0) === 0x80;
}

/** Index just past the last complete UTF-8 character in buf[start, end). */
function completeUtf8End(buf: Buffer, start: number, end: number): number {
  // Walk back over up to 3 continuation bytes to the lead byte of the last char.
  let i = end - 1;
  let cont = 0;
  while (i >= start && cont < 3 && isContinuation(buf[i]!)) {
    i--;
    cont++;
  }
  if (i < start) return end;
  const lead = buf[i]!;
  const need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  return need > cont + 1 && lead >= 0xc0 ? i : end;
}

/** Cut point in `buf` at most `limit` bytes in, on a character boundary, preferring a line end. */
function headCut(buf: Buffer, limit: number): number {
  if (limit >= buf.length) return buf.length;
  let cut = limit;
  while (cut > 0 && isContinuation(buf[cut]!)) cut--;
  if (cut <= 0) return 0;
  const nl = buf.lastIndexOf(0x0a, cut - 1);
  if (nl >= 0 && nl + 1 >= cut * 0.8) cut = nl + 1;
  return cut;
}

/** Start of a tail of at most `limit` bytes of `buf`, on a character boundary, preferring a line start. */
function tailCut(buf: Buffer, limit: number): number {
  if (limit >= buf.length) return 0;
  let cut = buf.length - limit;
  while (cut < buf.length && isContinuation(buf[cut]!)) cut++;
  const nl = buf.indexOf(0x0a, cut);
  if (nl >= 0 && nl + 1 <= cut + limit * 0.2) cut = nl + 1;
  return cut;
}

function formatBytes(n: number): string {
  return n.toLocaleString('en-US');
}

/** The line inserted where output was cut. */
export function cutNote(omittedBytes: number, totalBytes: number, approximate: boolean): string {
  return `[... ${approximate ? 'about ' : ''}${formatBytes(omittedBytes)} bytes cut from the middle; the command printed ${formatBytes(totalBytes)} bytes ...]`;
}

/** Result of {@link capText} and {@link processOutput}. */
export interface CappedOutput {
  /** The text to return: at most about `maxBytes` UTF-8 bytes plus the cut note. */
  text: string;
  /** Whether anything was cut. */
  truncated: boolean;
}

function joinCut(head: string, tail: string, note: string, secrets: readonly SecretValue[]): string {
  const h = redactPartialSecretAtEdge(head, secrets, 'end');
  const t = redactPartialSecretAtEdge(tail, secrets, 'start');
  return `${h}${h === '' || h.endsWith('\n') ? '' : '\n'}${note}\n${t}`;
}

/**
 * Caps cleaned text to `maxBytes` UTF-8 bytes: the first half and the last
 * half are kept (cut on character boundaries, on line boundaries when one is
 * near), with a note in between saying how many bytes were cut out of
 * `totalBytes` (the command's raw output size, for the note only).
 */
export function capText(text: string, maxBytes: number, totalBytes: number, secrets: readonly SecretValue[] = []): CappedOutput {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return { text, truncated: false };
  const half = Math.floor(maxBytes / 2);
  const headEnd = headCut(buf, half);
  const tailStart = tailCut(buf, maxBytes - half);
  const omitted = tailStart - headEnd;
  const head = buf.toString('utf8', 0, headEnd);
  const tail = buf.toString('utf8', tailStart);
  return { text: joinCut(head, tail, cutNote(omitted, totalBytes, false), secrets), truncated: true };
}

/**
 * Cleans, redacts and caps raw output bytes held in memory. `maxBytes` is the
 * cap in UTF-8 bytes of the result, not counting the cut note.
 */
export function processOutput(raw: Buffer, maxBytes: number, secrets: readonly SecretValue[] = []): CappedOutput {
  const text = redactSecrets(sanitizeText(decodeUtf8(raw)), secrets);
  return capText(text, maxBytes, raw.length, secrets);
}

/** Result of {@link OutputCollector.finish}. */
export interface CapturedOutput extends CappedOutput {
  /** Bytes the command wrote (stdout + stderr), before any processing. */
  outputBytes: number;
}

/**
 * Collects a stream of output bytes in bounded memory: all of it up to
 * 4 x `maxBytes` (at least 128 KiB), beyond that the first and the last
 * window (64 KiB or `maxBytes`, whichever is larger) and a byte count.
 * `finish` cleans, redacts and caps: exact cut note when everything was
 * kept, approximate (and saying so) when only the windows were.
 */
export class OutputCollector {
  private readonly window: number;
  private readonly fullLimit: number;
  private head: Buffer[] = [];
  private headBytes = 0;
  private tail: Buffer[] = [];
  private tailBytes = 0;
  private total = 0;

  constructor(private readonly maxBytes: number) {
    this.window = Math.max(WINDOW_MIN_BYTES, maxBytes);
    this.fullLimit = Math.max(maxBytes * FULL_READ_FACTOR, 2 * this.window);
  }

  /** Adds bytes (the buffer is copied when kept). */
  push(chunk: Buffer): void {
    if (chunk.length === 0) return;
    this.total += chunk.length;
    let rest = chunk;
    if (this.headBytes < this.fullLimit) {
      const take = Math.min(rest.length, this.fullLimit - this.headBytes);
      this.head.push(Buffer.from(rest.subarray(0, take)));
      this.headBytes += take;
      rest = rest.subarray(take);
    }
    if (rest.length === 0) return;
    if (rest.length >= this.window) {
      this.tail = [Buffer.from(rest.subarray(rest.length - this.window))];
      this.tailBytes = this.window;
      return;
    }
    this.tail.push(Buffer.from(rest));
    this.tailBytes += rest.length;
    while (this.tail.length > 1 && this.tailBytes - this.tail[0]!.length >= this.window) {
      this.tailBytes -= this.tail.shift()!.length;
    }
  }

  /** Cleans, redacts and caps what was collected. */
  finish(secrets: readonly SecretValue[] = []): CapturedOutput {
    const head = Buffer.concat(this.head);
    if (this.total <= this.fullLimit) return { ...processOutput(head, this.maxBytes, secrets), outputBytes: this.total };
    const headRaw = head.subarray(0, this.window);
    const tailAll = Buffer.concat(this.tail);
    // The tail window: last `window` bytes of the stream (part of it may still be in the head buffer).
    const fromHead = Math.max(0, this.window - tailAll.length);
    const tailRaw =
      fromHead > 0 ? Buffer.concat([head.subarray(head.length - fromHead), tailAll]) : tailAll.subarray(tailAll.length - this.window);
    const half = Math.floor(this.maxBytes / 2);
    const headText = Buffer.from(redactSecrets(sanitizeText(decodeUtf8(headRaw, { partialEnd: true })), secrets), 'utf8');
    const tailText = Buffer.from(redactSecrets(sanitizeText(decodeUtf8(tailRaw, { partialStart: true })), secrets), 'utf8');
    const headEnd = headCut(headText, half);
    const tailStart = tailCut(tailText, this.maxBytes - half);
    const shown = headEnd + (tailText.length - tailStart);
    const note = cutNote(Math.max(0, this.total - shown), this.total, true);
    const text = joinCut(headText.toString('utf8', 0, headEnd), tailText.toString('utf8', tailStart), note, secrets);
    return { text, truncated: true, outputBytes: this.total };
  }
}
