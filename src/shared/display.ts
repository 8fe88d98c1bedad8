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
 * Escaping rules (docs/cli.md, "What you see is what runs", summarises them):
 * - A command with none of the characters below is shown verbatim (then
 *   `warnings` is empty and `text === command`, unless cut).
 * - Otherwise it is shown escaped, and every backslash of the command is
 *   doubled (`\\`), so in an escaped display each `\` starts an escape and a
 *   literal `\n` of the command (`\\n`) cannot pass for a newline (`\n`):
 *   `\n` `\r` `\t`; `\xHH` below U+0100 (`\x1b`, `\x00`, `\x7f`, `\x85`,
 *   `\xa0`); `\uHHHH` in the BMP (`\u202e`); `\u{HHHHH}` above it; lowercase hex.
 * - Escaped: C0 controls, DEL, C1 controls, U+2028 / U+2029, every format
 *   character (Unicode category Cf: bidi controls, zero-width characters,
 *   U+FEFF, tags, ...), every default-ignorable code point (Unicode's
 *   Default_Ignorable_Code_Point, DerivedCoreProperties.txt: fillers such
 *   as U+3164, variation selectors, U+180B-180F, the unassigned
 *   U+FFF0-FFF8 and U+E0000-E0FFF, ...), spaces other than U+0020
 *   (category Zs), private-use characters, lone surrogates, noncharacters,
 *   a combining mark standing alone (first, or after a character that is
 *   not a letter, digit or mark: it draws on a space or on `;`), and every
 *   non-ASCII look-alike of a character bash gives a meaning to (`；`
 *   U+FF1B, `‘` U+2018, `＃` U+FF03, `∖` U+2216, ...: the table in
 *   ./lookalikes.ts, generated from Unicode's confusables.txt and NFKC,
 *   and the hand-kept EXTRA_LOOKALIKES), and, since no table of pairs is
 *   complete, every other non-ASCII punctuation mark or symbol (Unicode
 *   categories P* and S*: `❛` U+275B, `╲` U+2572, `⎪` U+23AA, emoji too).
 *   Bash reads a look-alike as an ordinary letter: `echo ‘$(id)’` runs
 *   `id`, though it reads as a quoted string.
 * - In a command ({@link displayCommand}), every non-ASCII character of a
 *   word (letters, digits, marks) whose letters are of more than one Unicode
 *   script, but for the mixes Unicode TR39 allows (Latin with Han and kana,
 *   Bopomofo or Hangul): the Cyrillic `о` of `git push оrigin` names another
 *   remote than the `origin` a person reads. A word of one script stays
 *   readable (`echo привет`).
 * - In a command, whatever the scripts, every character whose Unicode TR39
 *   confusable skeleton is one ASCII character, or ASCII letters and digits
 *   (./ascii-lookalikes.ts, generated from confusables.txt), next to a Latin
 *   letter or digit of its word, or making up a word beside ASCII
 *   punctuation: `git\uFFDCab.com` (Hangul, in a mix TR39 allows) reads as
 *   gitlab.com, `7ЗЗ` as 733, `bꝏks` as books (so `œuvre` is flagged too).
 * - A run of 8 or more spaces becomes `⟨200 spaces⟩`; a run of 8 or more of
 *   one escaped character becomes `⟨20 × \t⟩`. The markers `⟨` and `⟩` in the
 *   command itself are escaped (`\u27e8`, `\u27e9`), so a marker in an
 *   escaped display is always one of ours.
 * - Warnings name each class found, in the whole command even when the text
 *   is cut: "contains a carriage return (\r)", "contains bidi control
 *   U+202E", "contains a look-alike of ";": U+FF1B (to bash an ordinary
 *   letter, not ";")", ...
 *
 * {@link safeText} (Claude's words, outputs, names) and {@link markdownCode}
 * (the UI's markdown) use the same classes: there is one escaper. Outside a
 * command, {@link safeText} doubles only the backslashes that would read as
 * an escape (its doc), so its display is unambiguous too.
 */
import { ASCII_LOOKALIKE_RUNS } from './ascii-lookalikes';
import { LOOKALIKE_GROUPS } from './lookalikes';
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
  | 'lookalike'
  | 'mixed-script'
  | 'ascii-lookalike'
  | 'mark-on-ascii'
  | 'right-to-left'
  | 'zero-width'
  | 'format'
  | 'separator'
  | 'c1'
  | 'control'
  | 'surrogate'
  | 'invisible'
  | 'combining'
  | 'space'
  | 'private-use'
  | 'unassigned'
  | 'line-feed'
  | 'tab';

const CLASS_ORDER: readonly CharClass[] = [
  'carriage-return',
  'escape',
  'bidi',
  'lookalike',
  'mixed-script',
  'ascii-lookalike',
  'mark-on-ascii',
  'right-to-left',
  'zero-width',
  'combining',
  'format',
  'separator',
  'c1',
  'control',
  'surrogate',
  'invisible',
  'space',
  'private-use',
  'unassigned',
  'line-feed',
  'tab',
];

const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069]);
const ZERO_WIDTH = new Set([0x180e, 0x200b, 0x200c, 0x200d, 0x2060, 0x2061, 0x2062, 0x2063, 0x2064, 0xfeff]);
/** Shown blank or not at all, though not Cf: fillers, combining grapheme joiner, Khmer inherent vowels, braille blank, an unassigned slot among the invisible operators, noncharacters. */
const INVISIBLE = new Set([0x034f, 0x115f, 0x1160, 0x17b4, 0x17b5, 0x2065, 0x2800, 0x3164, 0xffa0, 0xfffe, 0xffff]);
/**
 * Unicode's Default_Ignorable_Code_Point (DerivedCoreProperties.txt, Unicode
 * 16): code points a renderer shows as nothing when it cannot show them, so a
 * person never sees them; inclusive ranges. Includes unassigned ones
 * (U+2065, U+FFF0-FFF8, most of U+E0000-E0FFF) that a later font may draw
 * as nothing.
 */
const DEFAULT_IGNORABLE: readonly (readonly [number, number])[] = [
  [0x00ad, 0x00ad],
  [0x034f, 0x034f],
  [0x061c, 0x061c],
  [0x115f, 0x1160],
  [0x17b4, 0x17b5],
  [0x180b, 0x180f],
  [0x200b, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x206f],
  [0x3164, 0x3164],
  [0xfe00, 0xfe0f],
  [0xfeff, 0xfeff],
  [0xffa0, 0xffa0],
  [0xfff0, 0xfff8],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0000, 0xe0fff],
];

/** Whether `cp` is a Default_Ignorable_Code_Point ({@link DEFAULT_IGNORABLE}). */
export function isDefaultIgnorable(cp: number): boolean {
  for (const [lo, hi] of DEFAULT_IGNORABLE) if (cp >= lo && cp <= hi) return true;
  return false;
}

/** Non-ASCII look-alike code point → the ASCII character it looks like (./lookalikes.ts). */
/**
 * Look-alikes that Unicode's confusables.txt does not pair with the shell
 * character they are drawn like (box-drawing bars, the Hebrew geresh and
 * gershayim, the sharp sign, CJK strokes, ...), each shown in a real bash
 * session to be an ordinary letter where a person reads the symbol:
 * `echo done ♯; touch pwned` runs `touch`, `echo ׳$(id -un)׳` runs `id`.
 * Kept by hand beside the generated table; attack test
 * test/unit/attack/adversary-round4.test.ts.
 */
const EXTRA_LOOKALIKES: readonly (readonly [string, readonly number[]])[] = [
  ['|', [0x2502, 0x2503, 0x05c0, 0x2758, 0x23d0, 0x23b8, 0x0964]],
  [':', [0x02d0]],
  ['-', [0x2500, 0x3161, 0x4e00, 0x2014, 0x1806]],
  [';', [0x204f, 0x061b]],
  ['#', [0x266f, 0x22d5, 0x2317, 0x4e95]],
  ["'", [0x05f3, 0xa78b, 0x07f4]],
  ['"', [0x05f4]],
  ['*', [0x2731, 0x066d]],
  ['.', [0xa4f8]],
  ['/', [0x30ce, 0x4e3f]],
  ['~', [0x301c]],
  // Drawn as a backslash: shown verbatim it could pose as the first half of safeText's doubled one.
  ['\\', [0x2572]],
  // Letters, digits and marks (not punctuation or symbols, which are all flagged: isSymbolOrPunctuation),
  // found by a scan of the names of every such code point: a click letter, Arabic digits one, a
  // low tone apostrophe, a left half ring, a raised exclamation mark, colons, and overlay marks
  // that draw a bar or a slash.
  ['|', [0x01c1, 0x0661, 0x06f1, 0x20d2, 0x20d3, 0x20e6]],
  ["'", [0x07f5, 0x0559]],
  ['!', [0xa71d]],
  [':', [0x02d1, 0x10781]],
  ['\\', [0x20e5]],
  ['/', [0x0337, 0x0338, 0x20eb]],
  // More letters, digits and marks drawn as one (a later scan): Lisu tone letters drawn as `;` and
  // `:` (confusables maps U+A4FC to two letters, so the generated table skips it), letters and a
  // numeral drawn as a vertical stroke (confusables pairs them with `l`), Arabic and Persian zero
  // drawn as `.`, and a combining comma above right that draws an apostrophe on its letter.
  [';', [0xa4fc]],
  [':', [0xa4fd]],
  ['|', [0x04c0, 0x2d4f, 0x16c1, 0x3021, 0xa4f2, 0x2c92]],
  ['.', [0x0660, 0x06f0]],
  [',', [0xa4f9]],
  ["'", [0x0315]],
];

const LOOKALIKE = new Map<number, string>(
  [...LOOKALIKE_GROUPS, ...EXTRA_LOOKALIKES].flatMap(([target, cps]) => cps.map((cp) => [cp, target] as const)),
);

/** The ASCII character bash gives a meaning to that `ch` looks like, or undefined (ASCII itself, or no look-alike). */
export function lookalikeOf(ch: string): string | undefined {
  return LOOKALIKE.get(ch.codePointAt(0)!);
}

const FORMAT = /^\p{Cf}$/u;
const MARK = /^\p{M}$/u;
/** What a combining mark may follow and still be part of a visible letter: a letter, a digit or another mark. */
const MARK_BASE = /^[\p{L}\p{N}\p{M}]$/u;
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
  if (
    INVISIBLE.has(cp) ||
    isDefaultIgnorable(cp) ||
    (cp >= 0xe0100 && cp <= 0xe01ef) ||
    (cp >= 0xfdd0 && cp <= 0xfdef) ||
    (cp & 0xfffe) === 0xfffe
  )
    return 'invisible';
  if (SPACE_SEPARATOR.test(ch)) return 'space';
  if (PRIVATE_USE.test(ch)) return 'private-use';
  if (UNASSIGNED.test(ch)) return 'unassigned';
  if (LOOKALIKE.has(cp) || isSymbolOrPunctuation(ch)) return 'lookalike';
  return null;
}

/** A code point Unicode has not assigned (category Cn) in the runtime's Unicode data (Node 20: Unicode 15.1): no font draws it the same (adversary round 13). */
const UNASSIGNED = /^\p{Cn}$/u;

const SYMBOL_OR_PUNCTUATION = /^[\p{P}\p{S}]$/u;

/**
 * Whether `ch` is a non-ASCII punctuation mark or symbol (Unicode categories P* and S*). Each is
 * a look-alike in a command: bash gives none of them a meaning (to bash they are letters), and a
 * person may read any of them as the shell character it resembles (`❛` U+275B as `'`, `╲`
 * U+2572 as `\`, `⎪` U+23AA as `|`): no table of pairs is ever complete, so the whole categories
 * are flagged. Prose keeps them ({@link safeText}): there they bind nothing.
 */
function isSymbolOrPunctuation(ch: string): boolean {
  // The run markers have a warning of their own (displayCommand).
  return ch.codePointAt(0)! >= 0x80 && ch !== MARKER_OPEN && ch !== MARKER_CLOSE && SYMBOL_OR_PUNCTUATION.test(ch);
}

/**
 * {@link classOf} in context: a combining mark is `combining` (escaped) when
 * it stands alone, first or after a character that is not a letter, digit
 * or mark, or after one that is escaped (it would draw on the escape's last
 * character, or on nothing).
 * @param prev the code point before `ch`, or undefined at the start
 */
function classIn(ch: string, prev: string | undefined): CharClass | null {
  const cls = classOf(ch);
  if (cls !== null || ch.charCodeAt(0) < 0x300 || !MARK.test(ch)) return cls;
  return prev === undefined || !MARK_BASE.test(prev) || classOf(prev) !== null ? 'combining' : null;
}

/** The class of each code point of `chars` ({@link classIn}); a mark after a `combining` one is `combining` too. */
function classesOf(chars: readonly string[]): (CharClass | null)[] {
  const out: (CharClass | null)[] = [];
  for (let i = 0; i < chars.length; i++) {
    const prev = i === 0 ? undefined : chars[i - 1];
    out.push(out[i - 1] === 'combining' && MARK.test(chars[i]!) ? 'combining' : classIn(chars[i]!, prev));
  }
  return out;
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
  lookalike: { one: 'look-alike', many: 'look-alikes', listed: true }, // worded by warningFor
  'mixed-script': { one: 'mixed-script letter', many: 'mixed-script letters', listed: true }, // worded by warningFor
  'ascii-lookalike': { one: 'look-alike of an ASCII character', many: 'look-alikes of ASCII characters', listed: true }, // worded by warningFor
  combining: { one: 'combining mark standing alone', many: 'combining marks standing alone', listed: true },
  'mark-on-ascii': {
    one: 'combining mark on an ASCII letter',
    many: 'combining marks on ASCII letters',
    listed: true,
    shown: 'no accented letter: a terminal may draw it as the bare letter',
  },
  'right-to-left': {
    one: 'right-to-left letter',
    many: 'right-to-left letters',
    listed: true,
    shown: 'with other characters between them: a terminal or page may draw them in another order',
  },
  'zero-width': { one: 'zero-width character', many: 'zero-width characters', listed: true },
  format: { one: 'invisible format character', many: 'invisible format characters', listed: true },
  separator: { one: 'line/paragraph separator', many: 'line/paragraph separators', listed: true },
  c1: { one: 'C1 control character', many: 'C1 control characters', listed: true },
  control: { one: 'control character', many: 'control characters', listed: true },
  surrogate: { one: 'lone surrogate', many: 'lone surrogates', listed: true, shown: 'not valid UTF-16; sent as U+FFFD' },
  invisible: { one: 'invisible character', many: 'invisible characters', listed: true },
  space: { one: 'non-ASCII space', many: 'non-ASCII spaces', listed: true },
  'private-use': { one: 'private-use character', many: 'private-use characters', listed: true },
  unassigned: { one: 'unassigned code point', many: 'unassigned code points', listed: true, shown: 'drawn as the font pleases' },
  'line-feed': { one: 'a line break', many: 'line breaks', listed: false, shown: '\\n' },
  tab: { one: 'a tab', many: 'tabs', listed: false, shown: '\\t' },
};

/** What was found in a command, per class: how many, and the distinct code points in order of first appearance. */
interface Found {
  count: number;
  distinct: string[];
}

/** The first four distinct code points found, each named by `name`, then "and N more" when there are more. */
function firstFew(found: Found, name: (ch: string) => string): string {
  const more = found.distinct.length > 4 ? ` and ${found.distinct.length - 4} more` : '';
  return found.distinct.slice(0, 4).map(name).join(', ') + more;
}

function warningFor(cls: CharClass, found: Found): string {
  if (cls === 'mixed-script') {
    const list = firstFew(found, (ch) => `${codePointName(ch)} (${scriptOf(ch).replace(/_/g, ' ')})`);
    return `contains ${found.count === 1 ? 'a possible look-alike letter' : `${found.count} possible look-alike letters`} in a word of mixed scripts: ${list} (to every program another word than the one it may look like)`;
  }
  if (cls === 'ascii-lookalike') {
    const list = firstFew(found, (ch) => `${codePointName(ch)} drawn as ${JSON.stringify(asciiLookalikeOf(ch) ?? ch.normalize('NFKC'))}`);
    return `contains ${found.count === 1 ? 'a look-alike of an ASCII character' : `${found.count} look-alikes of ASCII characters`} in a word read as ASCII: ${list} (to every program another word than the one it looks like)`;
  }
  if (cls === 'lookalike') {
    // A punctuation mark or symbol outside the table looks like no one shell character in particular.
    const of = (ch: string): string => (lookalikeOf(ch) !== undefined ? JSON.stringify(lookalikeOf(ch)) : 'a shell character');
    if (found.distinct.length === 1) {
      const ch = found.distinct[0]!;
      if (lookalikeOf(ch) === undefined)
        return `contains ${found.count === 1 ? 'a possible look-alike' : `${found.count} possible look-alikes`} of a shell character: ${codePointName(ch)}, non-ASCII punctuation or symbol (to bash an ordinary letter)`;
      return `contains ${found.count === 1 ? 'a look-alike' : `${found.count} look-alikes`} of ${of(ch)}: ${codePointName(ch)} (to bash an ordinary letter, not ${of(ch)})`;
    }
    const list = firstFew(found, (ch) => (lookalikeOf(ch) !== undefined ? `${codePointName(ch)} of ${of(ch)}` : codePointName(ch)));
    return `contains ${found.count} look-alikes of shell characters: ${list} (to bash ordinary letters, not what they look like)`;
  }
  const w = CLASS_WORDS[cls];
  if (!w.listed) {
    const what = found.count === 1 ? w.one : `${found.count} ${w.many}`;
    return `contains ${what} (${w.shown})`;
  }
  return `contains ${found.count === 1 ? w.one : `${found.count} ${w.many}`} ${firstFew(found, codePointName)}${w.shown ? ` (${w.shown})` : ''}`;
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
  const classes = classesOf(chars);
  markMixedScriptWords(chars, classes);
  markAsciiLookalikes(chars, classes);
  markMarksOnAscii(chars, classes);
  markReorderedRightToLeft(chars, classes);
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
    const cls = classes[i]!;
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

  const tokens = warnings.length === 0 ? chars : escapedTokens(chars, classes);
  const { text, cut } = fit(tokens, options.maxChars ?? Infinity);
  return { text, warnings, length: chars.length, cut, sha256: sha256(command) };
}

/**
 * Unicode's scripts by their long names (PropertyValueAliases.txt, `sc`), each tested with the
 * regular expression engine's own `\p{Script=...}` data (ICU's, as Node ships it): a name this
 * Node does not know is left out. Common and Inherited (punctuation, digits, marks shared by
 * scripts) are no script of a word's own.
 */
const SCRIPT_NAMES = (
  'Latin Cyrillic Greek Armenian Georgian Cherokee Coptic Lisu Hebrew Arabic Syriac Thaana Nko Samaritan Mandaic Devanagari ' +
  'Bengali Gurmukhi Gujarati Oriya Tamil Telugu Kannada Malayalam Sinhala Thai Lao Tibetan Myanmar Hangul Ethiopic ' +
  'Canadian_Aboriginal Ogham Runic Khmer Mongolian Hiragana Katakana Bopomofo Han Yi Old_Italic Gothic Deseret Tagalog Hanunoo ' +
  'Buhid Tagbanwa Limbu Tai_Le Linear_B Ugaritic Shavian Osmanya Cypriot Braille Buginese New_Tai_Lue Glagolitic Tifinagh ' +
  'Syloti_Nagri Old_Persian Kharoshthi Balinese Cuneiform Phoenician Phags_Pa Sundanese Lepcha Ol_Chiki Vai Saurashtra Kayah_Li ' +
  'Rejang Lycian Carian Lydian Cham Tai_Tham Tai_Viet Avestan Egyptian_Hieroglyphs Imperial_Aramaic Inscriptional_Pahlavi ' +
  'Inscriptional_Parthian Javanese Kaithi Meetei_Mayek Old_South_Arabian Old_Turkic Bamum Batak Brahmi Chakma Meroitic_Cursive ' +
  'Meroitic_Hieroglyphs Miao Sharada Sora_Sompeng Takri Caucasian_Albanian Bassa_Vah Duployan Elbasan Grantha Pahawh_Hmong ' +
  'Khojki Linear_A Mahajani Manichaean Mende_Kikakui Modi Mro Old_North_Arabian Nabataean Palmyrene Pau_Cin_Hau Old_Permic ' +
  'Psalter_Pahlavi Siddham Khudawadi Tirhuta Warang_Citi Ahom Anatolian_Hieroglyphs Hatran Multani Old_Hungarian SignWriting ' +
  'Adlam Bhaiksuki Marchen Newa Osage Tangut Masaram_Gondi Nushu Soyombo Zanabazar_Square Dogra Gunjala_Gondi Makasar ' +
  'Medefaidrin Hanifi_Rohingya Sogdian Old_Sogdian Elymaic Nandinagari Nyiakeng_Puachue_Hmong Wancho Chorasmian Dives_Akuru ' +
  'Khitan_Small_Script Yezidi Cypro_Minoan Old_Uyghur Tangsa Toto Vithkuqi Kawi Nag_Mundari'
)
  .split(' ')
  .flatMap((name) => {
    try {
      return [[name, new RegExp(`^\\p{Script=${name}}$`, 'u')] as const];
    } catch {
      return [];
    }
  });
const SHARED_SCRIPT = /^[\p{Script=Common}\p{Script=Inherited}]$/u;
/** {@link scriptOf}'s answers so far (bounded: cleared when full). */
const SCRIPT_CACHE = new Map<number, string>();

/** The Unicode script of `ch` (one code point): `Latin`, `Cyrillic`, ...; `Common` for one shared by scripts (Common, Inherited); `Unknown` for none listed. */
function scriptOf(ch: string): string {
  const cp = ch.codePointAt(0)!;
  if (cp < 0x80) return /[A-Za-z]/.test(ch) ? 'Latin' : 'Common';
  const known = SCRIPT_CACHE.get(cp);
  if (known !== undefined) return known;
  const script = SHARED_SCRIPT.test(ch) ? 'Common' : (SCRIPT_NAMES.find(([, re]) => re.test(ch))?.[0] ?? 'Unknown');
  if (SCRIPT_CACHE.size >= 4096) SCRIPT_CACHE.clear();
  SCRIPT_CACHE.set(cp, script);
  return script;
}

/**
 * The sets of scripts a word may mix and still be shown as it is: Unicode TR39's "highly
 * restrictive" level (section 5.2): Latin with the scripts of Japanese, of Chinese with
 * Bopomofo, or of Korean, which have no letter drawn as a Latin one.
 */
const MIXES_ALLOWED: readonly ReadonlySet<string>[] = [
  new Set(['Latin', 'Han', 'Hiragana', 'Katakana']),
  new Set(['Latin', 'Han', 'Bopomofo']),
  new Set(['Latin', 'Han', 'Hangul']),
];

/** A character of a word: a letter, a digit or a mark (as in an identifier, a name, a host name's label). */
const WORD_CHAR = /^[\p{L}\p{M}\p{N}]$/u;

/**
 * Marks `mixed-script` (in place, in `classes`) every non-ASCII character shown as itself of a
 * word whose letters are of more than one script, but for a mix {@link MIXES_ALLOWED}: the Cyrillic
 * `о` (U+043E) of `оrigin` makes it another word to git than the `origin` a person reads (adversary
 * round 10), and no table of letter pairs is complete. A word wholly of one script (`привет`,
 * `日本語`) stays readable; one whose every letter is of another script but drawn as Latin ones (a
 * whole-script confusable, `аре` for `ape`) is not caught.
 */
function markMixedScriptWords(chars: readonly string[], classes: (CharClass | null)[]): void {
  for (let i = 0; i < chars.length;) {
    if (!WORD_CHAR.test(chars[i]!)) {
      i++;
      continue;
    }
    let j = i;
    const scripts = new Set<string>();
    let nonAscii = false;
    for (; j < chars.length && WORD_CHAR.test(chars[j]!); j++) {
      const script = scriptOf(chars[j]!);
      if (script !== 'Common') scripts.add(script);
      if (chars[j]!.codePointAt(0)! >= 0x80) nonAscii = true;
    }
    if (nonAscii && scripts.size > 1 && !MIXES_ALLOWED.some((allowed) => [...scripts].every((s) => allowed.has(s))))
      for (let k = i; k < j; k++) if (classes[k] === null && chars[k]!.codePointAt(0)! >= 0x80) classes[k] = 'mixed-script';
    i = j;
  }
}

/**
 * Code point → the ASCII it is drawn as (one printable character, or two or more letters and digits): its confusable skeleton under
 * Unicode TR39 (./ascii-lookalikes.ts, generated by src/dev/scripts/ascii-lookalikes-table.ts from
 * Unicode's confusables data, with what it adds and leaves out). Decoded once, on load.
 */
const ASCII_LOOKALIKE = new Map<number, string>(
  ASCII_LOOKALIKE_RUNS.flatMap(([target, runs]) =>
    runs.split(' ').flatMap((run) => {
      const [start, extra] = run.split('+').map((n) => parseInt(n, 36));
      return Array.from({ length: (extra ?? 0) + 1 }, (_, i) => [start! + i, target] as const);
    }),
  ),
);

/** The ASCII that `ch` (one non-ASCII code point) is drawn as ({@link ASCII_LOOKALIKE}: one printable character, or letters and digits), or undefined. */
export function asciiLookalikeOf(ch: string): string | undefined {
  return ASCII_LOOKALIKE.get(ch.codePointAt(0)!);
}

/**
 * Marks `ascii-lookalike` (in place, in `classes`) every character shown as itself whose TR39
 * skeleton is one ASCII character, or ASCII letters and digits (`ꝏ` "oo", `æ` "ae": adversary
 * round 14; {@link asciiLookalikeOf}) where it reads as part of an ASCII
 * word, whatever the scripts: next to an ASCII letter or digit or another Latin letter in its word
 * (with the look-alikes and marks between), as in the mixes {@link markMixedScriptWords} allows
 * (`git\uFFDCab.com`, Hangul, reads as gitlab.com, `\u3007rigin`, Han, as Origin; adversary round
 * 11) and in words of one script (`7ЗЗ`, Cyrillic and digits; `gıthub`, Latin); or as a word made
 * only of look-alikes that touches ASCII punctuation, quotes included (`-\u3007` read as `-O`,
 * `/\u3163/`, `'ѕгс'` as 'src': adversary round 12); and, anywhere, a fullwidth or mathematical
 * letter or digit ({@link isAsciiForm}). A mark after a marked character is marked `combining` (it would draw on the
 * escape). Elsewhere they stay as they are, so text is not flagged: `echo 수정`, `二〇二四年`,
 * `привет`, the `ー` of `レポートv2.txt`, a lone `ㅣ` (whole-script look-alikes, `аре` for `ape`,
 * stay open).
 */
function markAsciiLookalikes(chars: readonly string[], classes: (CharClass | null)[]): void {
  const asciiPunctuation = (ch: string | undefined): boolean => ch !== undefined && /^[!-/:-@[-`{-~]$/.test(ch);
  const latin = (ch: string | undefined): boolean =>
    ch !== undefined && (/^[0-9]$/.test(ch) || (WORD_CHAR.test(ch) && scriptOf(ch) === 'Latin'));
  const lookalikeOrMark = (k: number): boolean => asciiLookalikeOf(chars[k]!) !== undefined || MARK.test(chars[k]!);
  for (let i = 0; i < chars.length;) {
    if (!WORD_CHAR.test(chars[i]!)) {
      i++;
      continue;
    }
    let j = i;
    while (j < chars.length && WORD_CHAR.test(chars[j]!)) j++;
    const wholeWord = (a: number, b: number): boolean =>
      a === i && b === j && (asciiPunctuation(chars[i - 1]) || asciiPunctuation(chars[j]));
    // Each run of look-alikes (and marks) in the word, flagged when it touches a Latin character of the word or is the whole word.
    for (let a = i; a < j;) {
      if (!lookalikeOrMark(a)) {
        a++;
        continue;
      }
      let b = a;
      while (b < j && lookalikeOrMark(b)) b++;
      if ((a > i && latin(chars[a - 1])) || (b < j && latin(chars[b])) || wholeWord(a, b))
        for (let k = a; k < b; k++) {
          if (classes[k] !== null || chars[k]!.codePointAt(0)! < 0x80) continue;
          if (asciiLookalikeOf(chars[k]!) !== undefined) classes[k] = 'ascii-lookalike';
          else if (k > a && classes[k - 1] !== null) classes[k] = 'combining';
        }
      a = b;
    }
    i = j;
  }
  for (let k = 0; k < chars.length; k++) if (classes[k] === null && isAsciiForm(chars[k]!)) classes[k] = 'ascii-lookalike';
}

/**
 * Whether `ch` (one non-ASCII code point) is a compatibility form of ASCII letters or digits: its
 * NFKC normalisation (Unicode UAX #15) is made of them only. Fullwidth forms (`ｏ`), Mathematical
 * Alphanumeric Symbols (`𝗌`, `𝟣`), ligatures (`ﬁ`, `ﬆ`), Roman numerals (`ⅵ`), segmented digits
 * (`🯹`) and superscripts (`²`) are drawn as the ASCII they stand for in most fonts, whatever stands
 * beside them (adversary rounds 12 and 13: `rm -rf ｓｒｃ`, `cat ~/.ssh/conﬁg`, `ⅵ notes.txt`).
 */
function isAsciiForm(ch: string): boolean {
  return ch.codePointAt(0)! >= 0x80 && /^[0-9A-Za-z]+$/.test(ch.normalize('NFKC'));
}

/**
 * Marks `mark-on-ascii` (in place) the combining marks after an ASCII letter or digit that Unicode
 * composition (NFC, UAX #15) does not merge into one letter: `origi\u0307n` is no accented word a
 * person knows, and many terminals draw the dot over an `i` as the `i` itself (adversary round 13);
 * `cafe\u0301` composes to `café` and stays as it is.
 */
function markMarksOnAscii(chars: readonly string[], classes: (CharClass | null)[]): void {
  for (let i = 0; i < chars.length; i++) {
    if (!/^[0-9A-Za-z]$/.test(chars[i]!)) continue;
    let j = i + 1;
    while (j < chars.length && classes[j] === null && MARK.test(chars[j]!)) j++;
    if (j > i + 1 && /\p{M}/u.test(chars.slice(i, j).join('').normalize('NFC')))
      for (let k = i + 1; k < j; k++) classes[k] = 'mark-on-ascii';
    i = j - 1;
  }
}

/** Whether `cp` lies in the blocks of the right-to-left scripts (Hebrew to Arabic Extended, the presentation forms, the SMP's RTL ranges): Unicode's Bidi_Class R and AL ranges (DerivedBidiClass.txt's defaults). */
function isRightToLeft(cp: number): boolean {
  return (
    (cp >= 0x0590 && cp <= 0x08ff) ||
    (cp >= 0xfb1d && cp <= 0xfdff) ||
    (cp >= 0xfe70 && cp <= 0xfeff) ||
    (cp >= 0x10800 && cp <= 0x10fff) ||
    (cp >= 0x1e800 && cp <= 0x1efff)
  );
}

/**
 * A letter that ends a right-to-left stretch: any letter but a modifier letter (`\p{Lm}`). The
 * bidirectional algorithm forgets a right-to-left letter only at a strong left-to-right character
 * (Bidi_Class L); 26 modifier letters are neutral (Bidi_Class ON: U+02B9-02BA, U+02C6-02CF, U+02EC,
 * U+0374, U+2E2F, U+A67F, U+A717-A71F, U+A788), and JavaScript's expressions have no Bidi_Class,
 * so every modifier letter counts as neutral (adversary round 15: `sort א ˌ> 2024.csv`).
 */
const LEFT_TO_RIGHT_LETTER = /^(?!\p{Lm})\p{L}$/u;
const NUMBER = /^\p{N}$/u;

/**
 * Marks `right-to-left` (in place) every right-to-left character shown as itself when two of them
 * stand with other characters between them but no left-to-right letter, or when a number follows
 * one before any left-to-right letter: the Unicode bidirectional algorithm (UAX #9) then draws the
 * whole stretch right to left (rule N1; numbers count as right-to-left there, and W7 keeps a number
 * after a right-to-left letter a number), so `cat א > ב` reads `cat ב < א`, the words of
 * `cp -f גיבוי נתונים` trade places (adversary round 13), `sort א > 2024.csv` reads
 * `sort 2024 < א.csv` and `rm -rf א/1` reads `rm -rf 1/א` (round 14). A single right-to-left word
 * with left-to-right text after it (`grep -r مرحبا .`, `grep -r שלום src`) is drawn where it
 * stands and stays as it is.
 */
function markReorderedRightToLeft(chars: readonly string[], classes: (CharClass | null)[]): void {
  let last = -1; // the last right-to-left character, while no left-to-right letter came after it
  let reordered = false;
  for (let i = 0; i < chars.length && !reordered; i++) {
    const cp = chars[i]!.codePointAt(0)!;
    if (isRightToLeft(cp)) {
      if (last >= 0 && last < i - 1) reordered = true;
      last = i;
    } else if (NUMBER.test(chars[i]!)) {
      if (last >= 0) reordered = true;
    } else if (LEFT_TO_RIGHT_LETTER.test(chars[i]!)) last = -1;
  }
  if (reordered)
    for (let k = 0; k < chars.length; k++)
      if (classes[k] === null && isRightToLeft(chars[k]!.codePointAt(0)!)) classes[k] = 'right-to-left';
}

/** The escaped display of a command, one token per escape, character or run (never split by a cut). */
function escapedTokens(chars: string[], classes: (CharClass | null)[]): string[] {
  const tokens: string[] = [];
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i]!;
    const cls = ch === ' ' ? null : classes[i]!;
    if (ch === ' ' || cls !== null) {
      let j = i;
      while (j < chars.length && chars[j] === ch && (ch === ' ' || classes[j] === cls)) j++;
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
 * a diff, reasons, details, names), every character {@link displayCommand}
 * escapes but look-alikes, so nothing printed to a terminal can move the
 * cursor, recolour, reorder or hide: every invisible code point and every
 * combining mark standing alone comes out as `\xHH`, `\uHHHH` or
 * `\u{HHHHH}`, a carriage return as `\r`. Line breaks and tabs stay as they
 * are when `multiline` is set (outputs, messages, diffs), else `\n`, `\t`.
 *
 * Unambiguous: a backslash of the text is doubled (`\\`) when what follows
 * it would otherwise read as one of these escapes, that is before a letter
 * that starts one (`x`, `u`, `r`, and `n`, `t` when not `multiline`), before
 * another backslash, before a character shown escaped, and at the end of the
 * text (which another escaped part may follow). So the text
 * `\x1b` (four characters) shows as `\\x1b` and a real ESC as `\x1b`; a
 * backslash anywhere else (`\d+`, `"\n"` in a multi-line output) is shown as
 * it is. Look-alikes of the backslash (`∖` U+2216, `＼` U+FF3C, ...) are
 * escaped, so none can pose as the first half of a doubled one. Other
 * look-alikes stay (Claude's "it’s"): this text binds nothing; commands and
 * paths go through {@link displayCommand}. Not idempotent (no unambiguous
 * escaping is): apply it once, to the raw text; {@link hiddenEscaped} is the
 * pass over text already made of escaped parts.
 * @param alsoEscaped code points escaped as well, e.g. a mark that starts lines of the caller's own
 *   (`↳`, src/cli/render/messages.ts), so no text shown with it can hold one @default none
 */
export function safeText(text: string, multiline = true, alsoEscaped: readonly string[] = []): string {
  return safeTokens(text, multiline, alsoEscaped).join('');
}

/**
 * {@link safeText} as tokens, one per code point of `text` (an escape, a doubled backslash or the
 * character), for cutting; the code points in `alsoEscaped` are escaped too (a mark the caller
 * keeps for its own lines), and so are those at the code point indices `alsoAt` (a diff line's
 * trailing blanks, {@link diffDisplay}).
 */
function safeTokens(
  text: string,
  multiline: boolean,
  alsoEscaped: readonly string[] = [],
  alsoAt: ReadonlySet<number> = new Set(),
): string[] {
  const chars = Array.from(text);
  const classes = classesOf(chars);
  const starts = multiline ? 'xur' : 'xurnt';
  const escaped = (i: number): boolean => {
    if (alsoEscaped.includes(chars[i]!) || alsoAt.has(i)) return true;
    const cls = classes[i]!;
    if (cls === null || (multiline && (cls === 'line-feed' || cls === 'tab'))) return false;
    return cls !== 'lookalike' || lookalikeOf(chars[i]!) === '\\';
  };
  return chars.map((ch, i) => {
    if (escaped(i)) return escapeOf(ch);
    if (ch !== '\\') return ch;
    // At the end too: the text may be followed by another escaped part.
    const next = chars[i + 1];
    return next === undefined || next === '\\' || starts.includes(next) || escaped(i + 1) ? '\\\\' : ch;
  });
}

/**
 * Text escaped by {@link safeText} for the UI's markdown outside a code span (the run's static
 * summary and details): every backslash written `\\`, which CommonMark renders as one, so the
 * page shows the escapes as a terminal does (else a doubled backslash would render single, and
 * the typed `\x1b` as a real ESC's escape).
 */
export function markdownBackslashes(text: string): string {
  return text.replace(/\\/g, '\\\\');
}

/**
 * The last pass over terminal text whose parts from a run were already made
 * safe ({@link safeText}, {@link displayCommand}, JSON): escapes what
 * {@link safeText} escapes but leaves every backslash as it is, so it
 * changes nothing in such text (it is idempotent) and only catches a
 * character a caller let through raw: that one can no longer act on the
 * terminal, though its escape is not told from the same text typed.
 * @param multiline keep line breaks and tabs @default true
 */
export function hiddenEscaped(text: string, multiline = true): string {
  const chars = Array.from(text);
  const classes = classesOf(chars);
  let out = '';
  for (let i = 0; i < chars.length; i++) {
    const cls = classes[i]!;
    out += cls === null || cls === 'lookalike' || (multiline && (cls === 'line-feed' || cls === 'tab')) ? chars[i]! : escapeOf(chars[i]!);
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
 * A CommonMark code span holding `text`, for the Temporal UI's markdown
 * (summaries and details): the only way text from the model (a command, a
 * path, a policy reason) reaches that markdown. The fence is one backtick
 * longer than the longest run of backticks inside, so no backtick of the
 * text can end it and turn the rest into markup; the text is first made
 * one line with {@link safeText} (a line break, which could end the
 * paragraph and so the span, comes out as `\n`; every hidden character
 * escaped). An empty text becomes a span of one space, never a bare fence.
 */
export function markdownCode(raw: string): string {
  return codeSpan(safeText(raw, false));
}

/** A CommonMark code span of `text` that is already one safe line (escaped once: {@link displayCommand}, {@link safeText}, our warnings). */
function codeSpan(text: string): string {
  if (text === '') return '` `';
  if (!text.includes('`')) return `\`${text}\``;
  const longest = Math.max(...(text.match(/`+/g) ?? ['']).map((r) => r.length));
  const fence = '`'.repeat(longest + 1);
  // One space inside each fence, which CommonMark strips again, so a backtick at either end cannot join the fence.
  return `${fence} ${text} ${fence}`;
}

/** Longest activity summary, in code points (C26: under 100). */
export const SUMMARY_MAX_CHARS = 99;

/**
 * `prefix` and a code span ({@link markdownCode}) of the display of `text`
 * ({@link displayCommand}), cut so the whole is at most `max` code points:
 * a summary the UI renders as markdown, with the model's text only inside
 * the span.
 */
function summaryWithCode(prefix: string, text: string, max: number): string {
  for (let budget = max - codePoints(prefix) - 2; budget > 0; budget--) {
    const line = `${prefix}${codeSpan(displayCommand(text, { maxChars: budget }).text)}`;
    if (codePoints(line) <= max) return line;
  }
  return `${prefix}${codeSpan('…')}`;
}

/**
 * The activity summary of a command (C26): `` bash #17: `<command>` ``, the
 * key part first, escaped, in a code span (the UI renders summaries as
 * markdown), at most {@link SUMMARY_MAX_CHARS} code points.
 * @param ordinal the tool call's 1-based position in the run, or null (`bash: ...`)
 * @param policyCheck the session's worker judges it first (`bash #17 (policy): ...`): it runs only if the policy allows
 */
export function commandSummary(command: string, ordinal: number | null, policyCheck = false): string {
  const tag = policyCheck ? ' (policy)' : '';
  const prefix = ordinal === null ? `bash${tag}: ` : `bash #${ordinal}${tag}: `;
  return summaryWithCode(prefix, command, SUMMARY_MAX_CHARS);
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
  if (!isAltered(d)) return codeSpan(d.text);
  // The warnings quote characters (`\\`, a backtick) that markdown would act on: in a code span too.
  return `${codeSpan(d.text)} (${d.length} characters, sha256 ${shortHash(d.sha256)}${d.warnings.length > 0 ? `; ⚠ ${codeSpan(d.warnings.join('; '))}` : ''})`;
}

/** Code point indices, in `chars` (a unified diff), of the spaces, tabs and carriage returns that end a `+` or `-` line. */
function trailingBlanks(chars: readonly string[]): Set<number> {
  const at = new Set<number>();
  let start = 0;
  for (let i = 0; i <= chars.length; i++) {
    if (i < chars.length && chars[i] !== '\n') continue;
    if (chars[start] === '+' || chars[start] === '-')
      for (let j = i - 1; j > start && (chars[j] === ' ' || chars[j] === '\t' || chars[j] === '\r'); j--) at.add(j);
    start = i + 1;
  }
  return at;
}

/**
 * How an edit's unified diff is shown to the person who approves it (`status`, `approve`, the `status` query's
 * `display`): {@link safeText} with its lines and tabs kept, and every space, tab or carriage return that ends a `+`
 * or `-` line (the headers too) escaped as `\x20`, `\t`, `\r`, with a backslash before it doubled as for any escape.
 * A terminal shows a trailing blank as nothing, and bash reads `&& \` and `&& \ ` apart: the first joins the next
 * line, the second escapes a space and ends the `&&` list (what git colours as `blank-at-eol`).
 */
export function diffDisplay(diff: string): string {
  const chars = Array.from(diff);
  return safeTokens(diff, true, [], trailingBlanks(chars)).join('');
}

/** A line's text with every whitespace, format and other invisible character left out: what a person can tell apart. */
function visiblePart(line: string): string {
  return line.replace(/[\s\p{Cf}\p{Zs}]/gu, '');
}

/** Changed runs of a unified diff (consecutive `-`/`+` lines between context lines), with the new file's line each starts at. */
function changeRuns(diff: string): { removed: string[]; added: string[]; newLine: number }[] {
  const runs: { removed: string[]; added: string[]; newLine: number }[] = [];
  let inHunk = false;
  let newLine = 0;
  let run: { removed: string[]; added: string[]; newLine: number } | null = null;
  for (const line of diff.split('\n')) {
    const header = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (header) {
      inHunk = true;
      newLine = Number(header[1]);
      run = null;
    } else if (inHunk && (line.startsWith('-') || line.startsWith('+'))) {
      if (run === null) runs.push((run = { removed: [], added: [], newLine }));
      if (line.startsWith('-')) run.removed.push(line.slice(1));
      else {
        run.added.push(line.slice(1));
        newLine++;
      }
    } else if (inHunk && !line.startsWith('\\')) {
      run = null;
      newLine++;
    }
  }
  return runs;
}

/** Lines listed in a warning before `and N more`. */
const LISTED_LINES = 5;

/** `line 3` or `lines 3, 5 and 2 more` ({@link LISTED_LINES} at most listed). */
function linesNamed(lines: readonly number[]): string {
  const listed = lines.slice(0, LISTED_LINES).join(', ');
  const more = lines.length > LISTED_LINES ? ` and ${lines.length - LISTED_LINES} more` : '';
  return `${lines.length === 1 ? 'line' : 'lines'} ${listed}${more}`;
}

/**
 * Where `a` and `b` differ, as code points: each one's part between their longest common start and end, named
 * `U+00E9`, at most 6 each (`["U+00E9"], ["U+0065", "U+0301"]` for `café` against `cafe` + U+0301).
 */
function codePointsApart(a: string, b: string): [string[], string[]] {
  const x = Array.from(a);
  const y = Array.from(b);
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let end = 0;
  while (end < x.length - start && end < y.length - start && x[x.length - 1 - end] === y[y.length - 1 - end]) end++;
  const part = (z: string[]): string[] =>
    z
      .slice(start, z.length - end)
      .slice(0, 6)
      .map(codePointName);
  return [part(x), part(y)];
}

/**
 * The `+` lines of `diff` (numbered in the new file; those in `skip` left out) that differ from a `-` line of their run
 * only in how Unicode encodes the same text: equal after NFKC normalization, different before (`é` U+00E9 written as
 * `e` U+0301, `Å` as U+212B ANGSTROM SIGN, a fullwidth or ligature letter). A terminal draws both alike, and bash, git
 * and most programs compare bytes, so a guard's `[ "$1" = "café" ]` stops matching (adversary round 34, F3).
 * `first` names the first such pair's differing code points (`-U+00E9 +U+0065 U+0301`).
 */
function normalizedTwins(diff: string, skip: ReadonlySet<number>): { lines: number[]; first: string } {
  const lines: number[] = [];
  let first = '';
  for (const run of changeRuns(diff)) {
    const removed = new Map(run.removed.map((l) => [l.normalize('NFKC'), l] as const));
    run.added.forEach((line, i) => {
      const twin = removed.get(line.normalize('NFKC'));
      if (twin === undefined || twin === line || skip.has(run.newLine + i) || run.removed.includes(line)) return;
      lines.push(run.newLine + i);
      if (first === '') {
        const [minus, plus] = codePointsApart(twin, line);
        first = `-${minus.join(' ')} +${plus.join(' ')}`;
      }
    });
  }
  return { lines, first };
}

/**
 * Warnings about what an edit's diff shows but a person may not see (for {@link pendingApproval}): a changed line
 * that differs from a removed one of its run only in whitespace or invisible characters (a space added after a
 * line-ending `\`, spaces turned into a tab, a carriage return), or a run whose removed and added lines are the
 * same text once those are left out (a line split or joined, a blank line added after a `\`); a changed line that is
 * the same text as a removed one once Unicode-normalized ({@link normalizedTwins}); and a `+`/`-` line that
 * ends in a space or tab ({@link diffDisplay} shows it escaped; a carriage return alone there, every line of a CRLF
 * file, is no such line). Lines are named by their number in the new file.
 * Empty when neither is found; pure.
 */
export function diffWarnings(diff: string): string[] {
  const lines: number[] = [];
  for (const run of changeRuns(diff)) {
    const removed = new Set(run.removed);
    const removedVisible = new Set(run.removed.map(visiblePart));
    const before = lines.length;
    run.added.forEach((line, i) => {
      if (!removed.has(line) && removedVisible.has(visiblePart(line))) lines.push(run.newLine + i);
    });
    const same = visiblePart(run.removed.join('')) === visiblePart(run.added.join(''));
    const changed = run.removed.length !== run.added.length || run.removed.some((l, i) => l !== run.added[i]);
    if (lines.length === before && same && changed) lines.push(run.newLine);
  }
  const warnings: string[] = [];
  if (lines.length > 0) {
    warnings.push(
      `the change at ${linesNamed(lines)} of the new file is whitespace or invisible characters only: compare its - and + lines character by character (a space after a line-ending \\ ends the command there)`,
    );
  }
  const twins = normalizedTwins(diff, new Set(lines));
  if (twins.lines.length > 0) {
    warnings.push(
      `the change at ${linesNamed(twins.lines)} of the new file reads the same as the line it replaces but its characters differ (the same text once Unicode-normalized, NFKC: ${twins.first}): programs compare the bytes, so a test of that text no longer matches`,
    );
  }
  // A carriage return alone was always shown escaped and has its own warning: a CRLF file's every line is not noise here.
  const chars = Array.from(diff);
  if ([...trailingBlanks(chars)].some((i) => chars[i] !== '\r'))
    warnings.push('a changed line ends in a blank, shown escaped: \\x20 a space, \\t a tab, \\r a carriage return');
  return warnings;
}

/** How a unified diff's carriage returns stand: {@link diffCarriageReturns}. */
export type DiffCarriageReturns = 'none' | 'line-endings' | 'mixed' | 'lone';

/**
 * Where the carriage returns of a unified diff are: `none`; `line-endings` when each ends a line of a hunk before its
 * line break and every such line (context, `-` and `+`, a last line without a line break left out) ends so, a CRLF file
 * edited in its own endings; `mixed` when some of those lines end in `\r\n` and others in `\n` alone (the edit mixes
 * the file's endings, or changes them); `lone` when one stands anywhere else (inside a line, at the end of a file's
 * last line, in a header), which a terminal draws as going back to the start of the line. Pure.
 */
export function diffCarriageReturns(diff: string): DiffCarriageReturns {
  const lines = diff.split('\n');
  let inHunk = false;
  let cr = 0;
  let lf = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    if (/^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@/.test(line)) inHunk = true;
    const body = inHunk && /^[ +-]/.test(line);
    // A line without a line break after it: the diff's end, or one git marks `\ No newline at end of file`.
    const ended = i < lines.length - 1 && !(lines[i + 1] ?? '').startsWith('\\');
    const ending = body && ended && line.endsWith('\r');
    if ((ending ? line.slice(0, -1) : line).includes('\r')) return 'lone';
    if (body && ended && line !== '') {
      if (ending) cr++;
      else lf++;
    }
  }
  if (cr > 0 && lf > 0) return 'mixed';
  return cr > 0 ? 'line-endings' : 'none';
}

/** The generic warning of {@link displayCommand} about carriage returns (`contains a carriage return (\r)`). */
const CARRIAGE_RETURN_WARNING = /^contains (?:a carriage return|\d+ carriage returns) \(\\r\)$/;

/**
 * `warnings` ({@link displayCommand}'s, of an edit's diff `diff`) with its carriage returns judged by
 * {@link diffCarriageReturns}: the generic warning left out for a CRLF file whose edit keeps its endings (every line of
 * it would carry one), made one that names the mix when the edit mixes or changes them, kept for a carriage return
 * anywhere else. The other warnings as they are, in order. Pure.
 */
export function carriageReturnsJudged(diff: string, warnings: readonly string[]): string[] {
  switch (diffCarriageReturns(diff)) {
    case 'line-endings':
      return warnings.filter((w) => !CARRIAGE_RETURN_WARNING.test(w));
    case 'mixed':
      return warnings.map((w) =>
        CARRIAGE_RETURN_WARNING.test(w)
          ? 'mixes line endings: some lines of the diff end in a carriage return (\\r\\n, CRLF), others in \\n alone (LF)'
          : w,
      );
    default:
      return [...warnings];
  }
}

/**
 * The warnings of a pending edit ({@link diffWarnings} and hidden characters) for the UI's current details, after the
 * edit's path: ` (⚠ `<warnings>`)` in a code span, or an empty string when there are none.
 */
export function editWarningDetails(warnings: readonly string[]): string {
  return warnings.length > 0 ? ` (⚠ ${codeSpan(warnings.join('; '))})` : '';
}

/**
 * The pending approval as the `status` query answers it: the command, and
 * how it is shown with its warnings and hash (the hash the `approve`
 * signal's `commandSha256` must match). Also used by the CLI to fill these
 * in for runs of older workers.
 */
export function pendingApproval(p: {
  toolUseId: string;
  command: string;
  requestedAt: string;
  edit?: PendingEdit;
  wait?: number;
  runId?: string;
}): PendingApproval {
  const d = displayCommand(p.command);
  // The wait and the run a decision names (src/contract/run.ts `PendingApproval`), when the run publishes them.
  const wait = { ...(p.wait !== undefined ? { wait: p.wait } : {}), ...(p.runId !== undefined ? { runId: p.runId } : {}) };
  if (p.edit !== undefined) {
    // A diff is many lines: kept as lines (tabs too), every other hidden character escaped and warned about, the blanks
    // that end a changed line escaped, and a change of whitespace alone warned about.
    return {
      toolUseId: p.toolUseId,
      command: p.command,
      requestedAt: p.requestedAt,
      display: diffDisplay(p.command),
      warnings: [
        ...diffWarnings(p.command),
        ...carriageReturnsJudged(p.command, displayCommand(p.command.replace(/[\n\t]/g, ' ')).warnings),
      ],
      commandSha256: d.sha256,
      edit: p.edit,
      ...wait,
    };
  }
  return {
    toolUseId: p.toolUseId,
    command: p.command,
    requestedAt: p.requestedAt,
    display: d.text,
    warnings: d.warnings,
    commandSha256: d.sha256,
    ...wait,
  };
}

/**
 * Why a name (the `by` of a decision, a pause, a rule) cannot be shown as
 * someone a person can see, or null when it can: it holds a character
 * {@link safeText} escapes (a control, bidi or other format character, any
 * default-ignorable code point such as U+200B or the Hangul filler U+3164
 * that passes for a letter, a non-ASCII space, a private-use character) or
 * a combining mark standing alone (U+0301 with nothing to sit on), or it is
 * empty once spaces and marks are set aside. A look-alike letter (`ǀ`)
 * stays allowed: a name is never run.
 */
export function invisibleNameProblem(name: string): string | null {
  const chars = Array.from(name);
  const classes = classesOf(chars);
  const bad = chars.filter((_, i) => classes[i] !== null && classes[i] !== 'lookalike');
  if (bad.length > 0) {
    const listed = [...new Set(bad)].slice(0, 4).map(codePointName).join(', ');
    return `it holds characters a person cannot see as themselves (${listed})`;
  }
  if (chars.every((ch) => ch === ' ' || MARK.test(ch))) return 'nothing of it is visible (only spaces or combining marks)';
  return null;
}

/** One line of at most `max` characters (whitespace collapsed, `…` where cut), for summaries and tables. */
export function oneLineSummary(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/**
 * The summary of a command or an edit as runs from before the
 * `AgentAwaiting` search attribute dropped the command's text wrote it
 * there: `bash: <command>` or `edit: <command> <path>`, escaped, no code
 * span (a search attribute is not markdown). Kept so those histories
 * replay with the same upserts.
 */
export function legacyAwaitingSummary(command: string, edit?: { command: string; path: string }): string {
  const prefix = edit ? `edit: ${edit.command} ` : 'bash: ';
  return `${prefix}${displayCommand(edit ? edit.path : command, { maxChars: SUMMARY_MAX_CHARS - prefix.length }).text}`;
}

/**
 * The static summary of a sub-agent's child workflow: `` sub-agent: `<description>` ``, the
 * description (the model's text) escaped and in a code span, as every summary the UI renders as
 * markdown, at most {@link SUMMARY_MAX_CHARS} code points.
 */
export function subagentSummary(description: string): string {
  return summaryWithCode('sub-agent: ', description, SUMMARY_MAX_CHARS);
}

/** A text editor command in an activity summary: `` edit #3: str_replace `/ws/src/a.ts` `` (the path escaped, in a code span, cut to fit). */
export function editSummary(command: string, path: string, ordinal: number | null): string {
  const prefix = ordinal === null ? `edit: ${command} ` : `edit #${ordinal}: ${command} `;
  return summaryWithCode(prefix, path, SUMMARY_MAX_CHARS);
}

/**
 * Text from the model that is not a command (a policy reason that quotes
 * the command's words, a tool_use id) in the UI's markdown: one line,
 * escaped ({@link safeText}), in a code span ({@link markdownCode}); cut to
 * `maxChars` code points of text (default 300).
 */
export function markdownText(text: string, maxChars = 300): string {
  // Cut between escapes, never inside one (a cut `\\` or `\u20` would read as something else).
  return codeSpan(fit(safeTokens(text, false), maxChars).text);
}
