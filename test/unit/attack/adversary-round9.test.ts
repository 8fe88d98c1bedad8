/**
 * Adversary round 9: attacks that worked on the code they were written against. Each test asserts
 * the safe behaviour, so it fails on that code; they are skipped (OPEN) until a fix lands.
 *
 * Kind 5 (what the human reads is not what runs): letters, digits and marks (Unicode L*, N*, M*,
 * which bash reads as word characters and display.ts does not flag by category) drawn as a shell
 * character, in neither confusables.txt's single-character pairs nor EXTRA_LOOKALIKES: the Lisu
 * tone letters drawn as `;` and `:`, a Cyrillic palochka, a Tifinagh letter, a runic letter and a
 * Hangzhou numeral drawn as `|`, Arabic and Persian digit zero drawn as `.`, a combining
 * comma above right that draws an apostrophe on the letter before it. A command holding
 * them is shown verbatim, with no warning.
 *
 * Kind 5, a display path that bypasses the one-line rule: a `tool_result`'s heading in
 * `transcript` and `watch` prints its `tool_use_id` raw (through terminalText, which keeps line
 * breaks), while the `tool_use` line escapes the same id (commandLines' suffix, safeText). The id
 * is the Messages API's, copied into the result; nothing checks its shape (activities/claude.ts),
 * so an endpoint that answers with its own ids (a proxy in ANTHROPIC_BASE_URL, a run started
 * from given `messages`) adds lines of its choosing under the CLI's own.
 */
import { describeMessage } from '../../../src/cli/render/messages';
import type { Message } from '../../../src/contract';
import { displayCommand } from '../../../src/shared/display';
import { type LookalikeCase, expectFlaggedEverywhere } from './lookalikes';

const OPEN = false;
const t = OPEN ? test.skip : test;

describe('adversary round 9, kind 5: letters drawn as shell characters', () => {
  // Each `ch` is a letter or digit (so the P*/S* rule of display.ts isSymbolOrPunctuation misses
  // it) drawn as `looksLike`. confusables.txt pairs U+A4FC with the two letters U+A4F8 U+A4F9 and
  // U+04C0, U+2D4F, U+16C1, U+3021 with `l`, so the generated table (single-character targets that
  // bash gives a meaning to) has none of them; EXTRA_LOOKALIKES neither. Found by checking the
  // letters, digits and marks whose glyph is a dot, comma, colon or vertical stroke against
  // displayCommand. Fix: add them to EXTRA_LOOKALIKES (`;` U+A4FC, `:` U+A4FD, `|` U+04C0 U+2D4F
  // U+16C1 U+3021 U+A4F2 U+2C92, `.` U+0660 U+06F0, `'` U+0315, `,` U+A4F9 if `,` counts), and better, derive
  // the table also from confusables' mappings to `l`/`I` (already done for U+01C0, U+2160, U+FF29)
  // and from skeletons of two characters (U+A4FC → U+A4F8 U+A4F9, itself `.,`).
  const cases: LookalikeCase[] = [
    // A "second command" that is arguments (and the reverse: a "separated" command that is not run).
    { command: 'echo a \ua4fc echo PWNED', ch: '\ua4fc', looksLike: ';', bashSays: 'a \ua4fc echo PWNED\n' },
    { command: 'echo a\ua4fd\ua4fc echo PWNED', ch: '\ua4fd', looksLike: ':', bashSays: 'a\ua4fd\ua4fc echo PWNED\n' },
    // A "pipe" that is an argument.
    { command: 'echo x \u04c0 echo PWNED', ch: '\u04c0', looksLike: '|', bashSays: 'x \u04c0 echo PWNED\n' },
    { command: 'echo x \u2d4f echo PWNED', ch: '\u2d4f', looksLike: '|', bashSays: 'x \u2d4f echo PWNED\n' },
    { command: 'echo x \u16c1 echo PWNED', ch: '\u16c1', looksLike: '|', bashSays: 'x \u16c1 echo PWNED\n' },
    { command: 'echo x \u3021 echo PWNED', ch: '\u3021', looksLike: '|', bashSays: 'x \u3021 echo PWNED\n' },
    // A "source" (`. file`) or "parent directory" that is a word.
    { command: 'echo \u0660 ./x \u06f0\u06f0', ch: '\u0660', looksLike: '.', bashSays: '\u0660 ./x \u06f0\u06f0\n' },
    // A combining comma above right after a letter draws `x'`: a "single-quoted" substitution
    // that bash runs (a mark after a letter is not escaped as standing alone, classIn).
    { command: 'echo x\u0315$(echo PWNED)x\u0315', ch: '\u0315', looksLike: "'", bashSays: 'x\u0315PWNEDx\u0315\n' },
  ];

  // Guard: the table flags the look-alikes it does know, so a failure below is the table's gap.
  test('the table knows U+A4F8 (`.`) and U+01C0 (`|`): the same kind of letters are flagged', () => {
    expect(displayCommand('echo \ua4f8').warnings.join('\n')).toContain('look-alike');
    expect(displayCommand('echo \u01c0').warnings.join('\n')).toContain('look-alike');
  });

  t.each(cases)('$command: bash reads $ch as a letter; the display must flag it as a look-alike of $looksLike', expectFlaggedEverywhere);
});

describe('adversary round 9, kind 5: a tool_result heading prints its tool_use id raw', () => {
  // The id breaks the heading and writes a forged "result" of a harmless command with exit 0, in
  // the CLI's own layout, under which the real output follows. Fix: build the heading with
  // oneLine (safeText(id, false)), as the tool_use line's suffix already is, or refuse a
  // tool_use id outside [A-Za-z0-9_-] where the model's answer is taken (activities/claude.ts).
  t('a tool_use id with a line break cannot add a line to the transcript', () => {
    const id = 'toolu_01:\n    all tests passed\n→ result for toolu_02 (exit 0, 0.1 s)';
    const messages: Message[] = [
      { role: 'user', content: 'run the tests' },
      { role: 'assistant', content: [{ type: 'tool_use', id, name: 'bash', input: { command: 'npm test' } }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: id, content: 'FAIL 3 tests' }] },
    ];
    const lines = messages
      .flatMap((m, i) => describeMessage(m, i))
      .join('\n')
      .split('\n');
    // The tool_use line keeps it on one line: the guard that the id is what the heading shows.
    expect(lines.some((l) => l.startsWith('claude asks to run: npm test') && l.includes('toolu_01:\\n'))).toBe(true);
    expect(lines.filter((l) => l.startsWith('→ result for'))).toHaveLength(1);
    expect(lines).not.toContain('    all tests passed');
  });
});
