/**
 * Adversary round 4: attacks on the protections of 1ea9379..HEAD.
 *
 * Bypass (display, src/shared/display.ts + lookalikes.ts): characters drawn as the shell's
 * `|`, `:` and `-` that the look-alike table does not hold are shown verbatim, with no warning,
 * while bash reads each as an ordinary letter. `echo hi │ tr a-z A-Z` (U+2502) reads as a pipe
 * to a reviewer; bash runs one echo with four words. U+2223 (also drawn as `|`) is escaped and
 * flagged, these are not. Also `;` `#` `'` `"` `*` `.` `/` `~` look-alikes (U+204F, U+266F, U+05F3,
 * U+05F4, ...): `echo done ♯; touch pwned` reads as a comment and touches pwned; `echo ׳$(id -un)׳`
 * reads as a single-quoted literal and runs id (the class of the fixed U+2018 bypass).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { displayCommand } from '../../../src/shared/display';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** Code points drawn as a shell metacharacter (or an option's dash), not in the look-alike table. */
const UNFLAGGED: Array<[number, string]> = [
  [0x2502, '|'], // BOX DRAWINGS LIGHT VERTICAL
  [0x05c0, '|'], // HEBREW PUNCTUATION PASEQ
  [0x2758, '|'], // LIGHT VERTICAL BAR
  [0x23d0, '|'], // VERTICAL LINE EXTENSION
  [0x23b8, '|'], // LEFT VERTICAL BOX LINE
  [0x0964, '|'], // DEVANAGARI DANDA
  [0x2503, '|'], // BOX DRAWINGS HEAVY VERTICAL
  [0x02d0, ':'], // MODIFIER LETTER TRIANGULAR COLON
  [0x2500, '-'], // BOX DRAWINGS LIGHT HORIZONTAL
  [0x3161, '-'], // HANGUL LETTER EU
  [0x4e00, '-'], // CJK UNIFIED IDEOGRAPH-4E00
  [0x2014, '-'], // EM DASH
  [0x1806, '-'], // MONGOLIAN TODO SOFT HYPHEN
  [0x204f, ';'], // REVERSED SEMICOLON
  [0x061b, ';'], // ARABIC SEMICOLON
  [0x266f, '#'], // MUSIC SHARP SIGN
  [0x22d5, '#'], // EQUAL AND PARALLEL TO
  [0x2317, '#'], // VIEWDATA SQUARE
  [0x4e95, '#'], // CJK UNIFIED IDEOGRAPH-4E95
  [0x05f3, "'"], // HEBREW PUNCTUATION GERESH
  [0xa78b, "'"], // LATIN CAPITAL LETTER SALTILLO
  [0x07f4, "'"], // NKO HIGH TONE APOSTROPHE
  [0x05f4, '"'], // HEBREW PUNCTUATION GERSHAYIM
  [0x2731, '*'], // HEAVY ASTERISK
  [0x066d, '*'], // ARABIC FIVE POINTED STAR
  [0xa4f8, '.'], // LISU LETTER TONE MYA TI
  [0x30ce, '/'], // KATAKANA LETTER NO
  [0x4e3f, '/'], // CJK UNIFIED IDEOGRAPH-4E3F
  [0x301c, '~'], // WAVE DASH
];

describe('round 4: look-alikes missing from the table', () => {
  test.each(UNFLAGGED.map(([cp, looksLike]) => ({ cp, looksLike, hex: cp.toString(16).toUpperCase().padStart(4, '0') })))(
    'U+$hex (drawn as $looksLike) is escaped and flagged by displayCommand',
    ({ cp, looksLike }) => {
      const ch = String.fromCodePoint(cp);
      const d = displayCommand(`echo hi ${ch} tr a-z A-Z`);
      expect({ cp: cp.toString(16), looksLike, shownVerbatim: d.text.includes(ch), warned: d.warnings.length > 0 }).toEqual({
        cp: cp.toString(16),
        looksLike,
        shownVerbatim: false,
        warned: true,
      });
    },
  );

  test('U+2502 between two commands: what bash runs is not the pipe the display shows, and the display says so', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir });
    const command = 'echo hi \u2502 tr a-z A-Z';
    const r = await s.run(command);
    // bash: one echo of four words, no pipe.
    expect(r.output).toBe('hi \u2502 tr a-z A-Z\n');
    // The honest display: the bar escaped and a look-alike warning.
    const d = displayCommand(command);
    expect(d.text).not.toContain('\u2502');
    expect(d.warnings.join('\n')).toContain('look-alike');
  });

  test('a sharp sign drawn as "#": the rest of the line reads as a comment, bash runs it; the display must say so', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir });
    const command = 'echo done \u266f; touch pwned';
    await s.run(command);
    expect(fs.existsSync(path.join(dir, 'pwned'))).toBe(true); // bash ran the "comment"
    const d = displayCommand(command);
    expect({ shownVerbatim: d.text.includes('\u266f'), warned: d.warnings.length > 0 }).toEqual({ shownVerbatim: false, warned: true });
  });

  test('Hebrew geresh drawn as a quote: echo \u05f3$(id -un)\u05f3 reads as a literal, bash runs id; the display must say so', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir });
    const command = 'echo \u05f3$(id -un)\u05f3';
    const r = await s.run(command);
    expect(r.output).not.toContain('$(id -un)'); // bash substituted: no quoting took place
    const d = displayCommand(command);
    expect({ shownVerbatim: d.text.includes('\u05f3'), warned: d.warnings.length > 0 }).toEqual({ shownVerbatim: false, warned: true });
  });
});
