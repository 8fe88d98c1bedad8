/**
 * How a command is shown to people: what the human sees is what runs.
 * Pure and deterministic, no Node imports: used in the workflow
 * sandbox (activity summaries, current details, the pending approval) and
 * by the CLI (watch, status, approve, deny, transcript).
 *
 * A terminal or a browser does not show every character as itself: `\r`
 * and ANSI escapes overwrite what came before, bidi controls reorder the
 * text, zero-width and format characters are invisible, line separators
 * break the line, a run of spaces pushes the rest past the screen edge.
 * {@link displayCommand} shows such a command escaped, one line, with a
 * warning per class of character found, its full length and its hash.
 *
 * Escaping rules (the README's CLI section summarises them):
 * - A command with none of the characters below is shown verbatim (then
 *   `warnings` is empty and `text === command`, unless cut).
 * - Otherwise it is shown escaped, and every backslash of the command is
 *   doubled (`\\`), so in an escaped display each `\` starts an escape and a
 *   literal `\n` of the command (`\\n`) cannot pass for a newline (`\n`):
 *   `\n` `\r` `\t`; `\xHH` below U+0100 (`\x1b`, `\x00`, `\x7f`, `\x85`,
 *   `\xa0`); `\uHHHH` in the BMP (`\u202e`); `\u{HHHHH}` above it; lowercase hex.
 * - Escaped: C0 controls, DEL, C1 controls, U+2028 / U+2029, every format
 *   character (Unicode category Cf: bidi controls, zero-width characters,
 *   U+FEFF, tags, ...), spaces other than U+0020 (category Zs), invisible
 *   fillers and variation selectors, private-use characters, lone surrogates.
 * - A run of 8 or more spaces becomes `⟨200 spaces⟩`; a run of 8 or more of
 *   one escaped character becomes `⟨20 × \t⟩`. The markers `⟨` and `⟩` in the
 *   command itself are escaped (`\u27e8`, `\u27e9`), so a marker in an
 *   escaped display is always one of ours.
 * - Warnings name each class found, in the whole command even when the text
 *   is cut: "contains a carriage return (\r)", "contains bidi control
 *   U+202E", ...
 */
import { sha256 } from './sha256';
import type { PendingApproval, PendingEdit } from '../contract/run';

/** How {@link displayCommand} shows a command. */
export interface CommandDisplay {
  /** One line of visible text: the command verbatim when `warnings` is empty, else escaped (module doc); ends in `…` when `cut`. */
  text: string;
  /** One sentence per class of character that made the display escaped, most dangerous first; empty when `text` is the command as it is. */
  warnings: string[];
  /** Length of the whole command in Unicode code points (an astral character or a lone surrogate counts 1). */
  length: number;
  /** Whether `text` was cut to `maxChars`. */
  cut: boolean;
  /** SHA-256 of the command's UTF-8 bytes, 64 lowercase hex digits: what an approval is bound to. */
  sha256: string;
}

/** Options of {@link displayCommand}. */
export interface DisplayOptions {
  /** Longest `text`, in code points, including the `…` of a cut; an escape or a run marker is never split. @default Infinity (never cut) */
  maxChars?: number;
}

/** Hex digits of the short hash shown next to a command (and accepted by `approve --sha`). */
export const SHORT_HASH_CHARS = 12;

/** Runs of this many spaces (or of one escaped character) or more are shown as a count. */
export const MIN_RUN = 8;

/** How to read an escaped display, for people (printed by the CLI under the warnings). */
export const ESCAPE_LEGEND =
  'shown escaped: \\\\ is one backslash; \\n \\r \\t \\xHH \\uHHHH \\u{HHHHH} are single characters; ⟨…⟩ counts a run';

/** Classes of characters that are not shown as themselves, most dangerous first (the order of the warnings). */
type CharClass =
  | 'carriage-return'
  | 'escape'
  | 'bidi'
  | 'zero-width'
  | 'format'
  | 'separator'
  | 'c1'
  | 'control'
  | 'surrogate'
  | 'invisible'
  | 'space'
  | 'private-use'
  | 'line-feed'
  | 'tab';

const CLASS_ORDER: readonly CharClass[] = [
  'carriage-return',
  'escape',
  'bidi',
  'zero-width',
  'format',
  'separator',
  'c1',
  'control',
  'surrogate',
  'invisible',
  'space',
  'private-use',
  'line-feed',
  'tab',
];

const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);
const ZERO_WIDTH = new Set([0x180e, 0x200b, 0x200c, 0x200d, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff]);
/** Shown blank or not at all, though not Cf: fillers, combining grapheme joiner, Khmer inherent vowels, braille blank, an unassigned slot among the invisible operators, noncharacters. */
const INVISIBLE = new Set([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2065, 0x2800, 0x3164, 0xffa0, 0xfffe, 0xffff]);
const FORMAT = /^\p{Cf}$/u;
const SPACE_SEPARATOR = /^\p{Zs}$/u;
const PRIVATE_USE = /^\p{Co}$/u;
const MARKER_OPEN = '⟨';
const MARKER_CLOSE = '⟩';

/**
 * The class of a character that must not reach a terminal or a page as
 * itself, or null for one shown as it is (printable ASCII and ordinary
 * letters, marks and symbols of any script; U+0020 too).
 * @param ch one code point (a lone surrogate is one UTF-16 unit)
 */
function classOf(ch: string): CharClass | null {
  const cp = ch.codePointAt(0)!;
  if (cp >= 0x20 && cp < 0x7f) return null; // the common case first
  if (cp === 0x0d) return 'carriage-return';
  if (cp === 0x0a) return 'line-feed';
  if (cp === 0x09) return 'tab';
  if (cp === 0x1b) return 'escape';
  if (cp < 0x20 || cp === 0x7f) return 'control';
  if (cp === 0x85 || cp === 0x2028 || cp === 0x2029) return 'separator';
  if (cp >= 0x80 && cp <= 0x9f) return 'c1';
  if (cp >= 0xd800 && cp <= 0xdfff) return 'surrogate';
  if (BIDI.has(cp)) return 'bidi';
  if (ZERO_WIDTH.has(cp)) return 'zero-width';
  if (FORMAT.test(ch)) return 'format';
  if (INVISIBLE.has(cp) || (cp >= 0xfe00 && cp <= 0xfe0f) || (cp >= 0xe0100 && cp <= 0xe01ef) || (cp >= 0xfdd0 && cp <= 0xfdef))
    return 'invisible';
  if (SPACE_SEPARATOR.test(ch)) return 'space';
  if (PRIVATE_USE.test(ch)) return 'private-use';
  return null;
}

/** The escape of one code point: `\n` `\r` `\t`, `\xHH`, `\uHHHH` or `\u{HHHHH}`. */
function escapeOf(ch: string): string {
  if (ch === '\n') return '\\n';
  if (ch === '\r') return '\\r';
  if (ch === '\t') return '\\t';
  const cp = ch.codePointAt(0)!;
  if (cp < 0x100) return `\\x${cp.toString(16).padStart(2, '0')}`;
  if (cp < 0x10000) return `\\u${cp.toString(16).padStart(4, '0')}`;
  return `\\u{${cp.toString(16)}}`;
}

/** `U+202E` */
function codePointName(ch: string): string {
  return `U+${ch.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
}

const CLASS_WORDS: Record<CharClass, { one: string; many: string; listed: boolean; shown?: string }> = {
  'carriage-return': { one: 'a carriage return', many: 'carriage returns', listed: false, shown: '\\r' },
  escape: { one: 'an escape character', many: 'escape characters', listed: false, shown: '\\x1b, starts terminal escape sequences' },
  bidi: { one: 'bidi control', many: 'bidi controls', listed: true },
  'zero-width': { one: 'zero-width character', many: 'zero-width characters', listed: true },
  format: { one: 'invisible format character', many: 'invisible format characters', listed: true },
  separator: { one: 'line/paragraph separator', many: 'line/paragraph separators', listed: true },
  c1: { one: 'C1 control character', many: 'C1 control characters', listed: true },
  control: { one: 'control character', many: 'control characters', listed: true },
  surrogate: { one: 'lone surrogate', many: 'lone surrogates', listed: true, shown: 'not valid UTF-16; sent as U+FFFD' },
  invisible: { one: 'invisible character', many: 'invisible characters', listed: true },
  space: { one: 'non-ASCII space', many: 'non-ASCII spaces', listed: true },
  'private-use': { one: 'private-use character', many: 'private-use characters', listed: true },
  'line-feed': { one: 'a line break', many: 'line breaks', listed: false, shown: '\\n' },
  tab: { one: 'a tab', many: 'tabs', listed: false, shown: '\\t' },
};

/** What was found in a command, per class: how many, and the distinct code points in order of first appearance. */
interface Found {
  count: number;
  distinct: string[];
}

function warningFor(cls: CharClass, found: Found): string {
  const w = CLASS_WORDS[cls];
  if (!w.listed) {
    const what = found.count === 1 ? w.one : `${found.count} ${w.many}`;
    return `contains ${what} (${w.shown})`;
  }
  const names = found.distinct.slice(0, 4).map(codePointName).join(', ');
  const more = found.distinct.length > 4 ? ` and ${found.distinct.length - 4} more` : '';
  return `contains ${found.count === 1 ? w.one : `${found.count} ${w.many}`} ${names}${more}${w.shown ? ` (${w.shown})` : ''}`;
}

/**
 * Shows a command so that what a person sees is what runs: verbatim when it
 * holds nothing a terminal or browser would hide, alter or reorder, else
 * escaped on one line with warnings (rules in the module doc). Pure.
 * @param command the command exactly as it will run
 * @param options `maxChars`: cut `text` to this many code points (default: never)
 */
export function displayCommand(command: string, options: DisplayOptions = {}): CommandDisplay {
  const chars = Array.from(command); // code points; a lone surrogate stays one element
  const found = new Map<CharClass, Found>();
  let spaceRuns = 0;
  let longestSpaceRun = 0;
  let markers = 0;
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    if (ch === ' ') {
      let j = i;
      while (j < chars.length && chars[j] === ' ') j++;
      if (j - i >= MIN_RUN) {
        spaceRuns++;
        longestSpaceRun = Math.max(longestSpaceRun, j - i);
      }
      i = j - 1;
      continue;
    }
    if (ch === MARKER_OPEN || ch === MARKER_CLOSE) markers++;
    const cls = classOf(ch);
    if (cls === null) continue;
    const f = found.get(cls) ?? { count: 0, distinct: [] };
    f.count++;
    if (!f.distinct.includes(ch)) f.distinct.push(ch);
    found.set(cls, f);
  }

  const warnings = CLASS_ORDER.filter((c) => found.has(c)).map((c) => warningFor(c, found.get(c)!));
  if (spaceRuns > 0)
    warnings.push(
      spaceRuns === 1
        ? `contains a run of ${longestSpaceRun} spaces`
        : `contains ${spaceRuns} runs of ${MIN_RUN} or more spaces (the longest ${longestSpaceRun})`,
    );
  if (markers > 0)
    warnings.push(`contains ${MARKER_OPEN} or ${MARKER_CLOSE} (shown as \\u27e8, \\u27e9: the display marks runs with them)`);

  const tokens = warnings.length === 0 ? chars : escapedTokens(chars);
  const { text, cut } = fit(tokens, options.maxChars ?? Infinity);
  return { text, warnings, length: chars.length, cut, sha256: sha256(command) };
}

/** The escaped display of a command, one token per escape, character or run (never split by a cut). */
function escapedTokens(chars: string[]): string[] {
  const tokens: string[] = [];
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    const cls = ch === ' ' ? null : classOf(ch);
    if (ch === ' ' || cls !== null) {
      let j = i;
      while (j < chars.length && chars[j] === ch) j++;
      const n = j - i;
      if (n >= MIN_RUN) {
        tokens.push(ch === ' ' ? `${MARKER_OPEN}${n} spaces${MARKER_CLOSE}` : `${MARKER_OPEN}${n} × ${escapeOf(ch)}${MARKER_CLOSE}`);
        i = j - 1;
        continue;
      }
    }
    if (cls !== null) tokens.push(escapeOf(ch));
    else if (ch === '\\') tokens.push('\\\\');
    else if (ch === MARKER_OPEN || ch === MARKER_CLOSE) tokens.push(escapeOf(ch));
    else tokens.push(ch);
  }
  return tokens;
}

/** Joins tokens, cutting before the first that would pass `maxChars` code points (the `…` included). */
function fit(tokens: string[], maxChars: number): { text: string; cut: boolean } {
  const whole = tokens.join('');
  if (codePoints(whole) <= maxChars) return { text: whole, cut: false };
  let text = '';
  let used = 0;
  for (const t of tokens) {
    const n = codePoints(t);
    if (used + n > maxChars - 1) break;
    text += t;
    used += n;
  }
  return { text: `${text}…`, cut: true };
}

/** Length of `s` in code points. */
export function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** The first {@link SHORT_HASH_CHARS} hex digits of a sha256. */
export function shortHash(sha: string): string {
  return sha.slice(0, SHORT_HASH_CHARS);
}

/** Whether a display shows something other than the command as it is (escaped or cut), so its hash should be shown. */
export function isAltered(d: CommandDisplay): boolean {
  return d.cut || d.warnings.length > 0;
}

/**
 * Escapes, in text that is not a command (Claude's words, command output,
 * reasons, details), every character {@link displayCommand} escapes, so
 * nothing printed to a terminal can move the cursor, recolour, reorder or
 * hide. Line breaks and tabs stay as they are when `multiline` is set
 * (outputs, messages); backslashes are not doubled and runs not counted:
 * this text binds nothing.
 */
export function safeText(text: string, multiline = true): string {
  let out = '';
  for (const ch of text) {
    const cls = classOf(ch);
    out += cls === null || (multiline && (cls === 'line-feed' || cls === 'tab')) ? ch : escapeOf(ch);
  }
  return out;
}

/**
 * The `\uXXXX` JSON escape of a character that must not reach a terminal
 * raw, or null for any other (JSON.stringify already escapes C0 controls,
 * not DEL, C1, U+2028, bidi or format characters). Used to make JSON output
 * terminal-safe without changing what it parses to.
 */
export function jsonEscapeOf(ch: string): string | null {
  if (ch === '\n' || ch === '\t' || ch === '\r') return null; // outside strings these are JSON whitespace; inside, JSON.stringify escaped them
  if (classOf(ch) === null) return null;
  let out = '';
  for (let i = 0; i < ch.length; i++) out += `\\u${ch.charCodeAt(i).toString(16).padStart(4, '0')}`;
  return out;
}

/**
 * A CommonMark code span holding `text` (one line), for the Temporal UI's
 * markdown details: the fence is one backtick longer than the longest run
 * of backticks inside, so no backtick of a command can end it and turn the
 * rest into markup.
 */
export function markdownCode(text: string): string {
  if (!text.includes('`')) return `\`${text}\``;
  const longest = Math.max(...(text.match(/`+/g) ?? ['']).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  // One space inside each fence, which CommonMark strips again, so a backtick at either end cannot join the fence.
  return `${fence} ${text} ${fence}`;
}

/** Longest activity summary, in code points (C26: under 100). */
export const SUMMARY_MAX_CHARS = 99;

/**
 * The activity summary of a command (C26): `bash #17: <command>`, the key
 * part first, escaped, at most {@link SUMMARY_MAX_CHARS} code points.
 * @param ordinal the tool call's 1-based position in the run, or null (`bash: ...`)
 * @param policyCheck the session's worker judges it first (`bash #17 (policy): ...`): it runs only if the policy allows
 */
export function commandSummary(command: string, ordinal: number | null, policyCheck = false): string {
  const tag = policyCheck ? ' (policy)' : '';
  const prefix = ordinal === null ? `bash${tag}: ` : `bash #${ordinal}${tag}: `;
  return `${prefix}${displayCommand(command, { maxChars: SUMMARY_MAX_CHARS - prefix.length }).text}`;
}

/** Longest command text in the current details, in code points. */
export const DETAILS_COMMAND_CHARS = 200;

/**
 * A command in the UI's current details (markdown, one line): a code span
 * with the escaped command, cut at {@link DETAILS_COMMAND_CHARS}, followed,
 * when it is escaped or cut, by its full length, short hash and warnings.
 */
export function commandDetails(command: string): string {
  const d = displayCommand(command, { maxChars: DETAILS_COMMAND_CHARS });
  if (!isAltered(d)) return markdownCode(d.text);
  return `${markdownCode(d.text)} (${d.length} characters, sha256 ${shortHash(d.sha256)}${d.warnings.length > 0 ? `; ⚠ ${d.warnings.join('; ')}` : ''})`;
}

/**
 * The pending approval as the `status` query answers it: the command, and
 * how it is shown with its warnings and hash (the hash the `approve`
 * signal's `commandSha256` must match). Also used by the CLI to fill these
 * in for runs of older workers.
 */
export function pendingApproval(p: { toolUseId: string; command: string; requestedAt: string; edit?: PendingEdit }): PendingApproval {
  const d = displayCommand(p.command);
  if (p.edit !== undefined) {
    // A diff is many lines: kept as lines (tabs too), every other hidden character escaped and warned about.
    return {
      toolUseId: p.toolUseId,
      command: p.command,
      requestedAt: p.requestedAt,
      display: safeText(p.command, true),
      warnings: displayCommand(p.command.replace(/[\n\t]/g, ' ')).warnings,
      commandSha256: d.sha256,
      edit: p.edit,
    };
  }
  return {
    toolUseId: p.toolUseId,
    command: p.command,
    requestedAt: p.requestedAt,
    display: d.text,
    warnings: d.warnings,
    commandSha256: d.sha256,
  };
}

/** One line of at most `max` characters (whitespace collapsed, `…` where cut), for summaries and tables. */
export function oneLineSummary(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** A text editor command in an activity summary: `edit #3: str_replace /ws/src/a.ts` (cut to fit). */
export function editSummary(command: string, path: string, ordinal: number | null): string {
  const prefix = ordinal === null ? `edit: ${command} ` : `edit #${ordinal}: ${command} `;
  return `${prefix}${displayCommand(path, { maxChars: SUMMARY_MAX_CHARS - prefix.length }).text}`;
}
