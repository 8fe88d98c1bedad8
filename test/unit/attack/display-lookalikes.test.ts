/**
 * Attacks on "what the human reads is what runs" (docs/security.md) with characters that a
 * terminal and a browser draw, but not as what bash reads: look-alikes of the shell's
 * metacharacters (`‘` reads as a quote, bash reads a letter), default-ignorable code points
 * (drawn as nothing), combining marks with nothing to sit on, a `by` name nobody can see, and
 * backticks in a policy reason that try to close the UI's code span. What a person sees is
 * asserted through the real display functions (src/shared/display.ts) and the CLI's renderer
 * (src/cli/render/text.ts commandLines, as `status`, `watch` and the approval prompt print it).
 *
 * Bypass found (fixed): `echo ‘$(id)’` (U+2018 / U+2019) was shown verbatim and read as a
 * quoted string, while bash ran `id`; `echo done ＃; rm x` read as a comment; `r\u200dm` and
 * a Hangul filler U+3164 between words were drawn as `rm` and a space; a `by` of U+3164 alone
 * or of U+0301 alone passed the Update's validator and showed as nobody.
 */
import { execFileSync } from 'node:child_process';
import {
  commandDetails,
  commandSummary,
  displayCommand,
  invisibleNameProblem,
  isDefaultIgnorable,
  markdownCode,
  markdownText,
  safeText,
} from '../../../src/shared/display';
import { LOOKALIKE_GROUPS } from '../../../src/shared/lookalikes';
import { commandLines } from '../../../src/cli/render/text';
import { RejectedRequest, checkBy } from '../../../src/workflows/steering';
import { signalDecision } from '../../../src/workflows/approval';
import { newApprovalState } from '../../../src/workflows/approval-state';

// Hoisted above the imports: the workflow code under test runs outside a workflow, with patched() as in a new run.
jest.mock('@temporalio/workflow', () => ({
  ...jest.requireActual<object>('@temporalio/workflow'),
  patched: () => true,
  log: { info: () => undefined, warn: () => undefined },
}));

/** What bash prints for `command` (real bash: proves the characters mean something else to it). */
function bash(command: string): string {
  return execFileSync('bash', ['--noprofile', '--norc', '-c', command], { encoding: 'utf8', cwd: '/tmp' });
}

/** The lines the CLI prints for a pending command (`status`, `watch`, the approval prompt). */
const shown = (command: string): string => commandLines(command, { label: 'claude asks to run: ', suffix: '    [toolu_1]' }).join('\n');

describe('look-alikes of shell characters are flagged and shown escaped', () => {
  const cases: Array<{ command: string; ch: string; looksLike: string; bashSays: string }> = [
    // A "quoted" $(...) that bash expands: the quotes are letters to it.
    { command: 'echo \u2018$(echo PWNED)\u2019', ch: '\u2018', looksLike: "'", bashSays: '\u2018PWNED\u2019\n' },
    { command: 'echo \u201c`echo PWNED`\u201d', ch: '\u201c', looksLike: '"', bashSays: '\u201cPWNED\u201d\n' },
    { command: 'echo \u02bc$(echo PWNED)\u02bc', ch: '\u02bc', looksLike: "'", bashSays: '\u02bcPWNED\u02bc\n' },
    // A "comment" that is not one.
    { command: 'echo done \uff03; echo PWNED', ch: '\uff03', looksLike: '#', bashSays: 'done \uff03\nPWNED\n' },
    // A "separator" that is not one: the next word is an argument, not a command.
    { command: 'echo safe\uff1b echo PWNED', ch: '\uff1b', looksLike: ';', bashSays: 'safe\uff1b echo PWNED\n' },
    { command: 'echo safe\u037e echo PWNED', ch: '\u037e', looksLike: ';', bashSays: 'safe\u037e echo PWNED\n' },
    // An "escaped" `;` that separates.
    { command: 'echo a \u2216; echo PWNED', ch: '\u2216', looksLike: '\\', bashSays: 'a \u2216\nPWNED\n' },
    { command: 'echo a \ufe68; echo PWNED', ch: '\ufe68', looksLike: '\\', bashSays: 'a \ufe68\nPWNED\n' },
    { command: 'echo a \uff3c; echo PWNED', ch: '\uff3c', looksLike: '\\', bashSays: 'a \uff3c\nPWNED\n' },
    // Operators and expansions that are not.
    { command: 'echo x \uff5c echo PWNED', ch: '\uff5c', looksLike: '|', bashSays: 'x \uff5c echo PWNED\n' },
    { command: 'echo x \uff06\uff06 echo PWNED', ch: '\uff06', looksLike: '&', bashSays: 'x \uff06\uff06 echo PWNED\n' },
    { command: 'echo \uff04HOME', ch: '\uff04', looksLike: '$', bashSays: '\uff04HOME\n' },
    { command: 'echo \uff08x\uff09', ch: '\uff08', looksLike: '(', bashSays: '\uff08x\uff09\n' },
    { command: 'echo x \uff1e /tmp/aj-never', ch: '\uff1e', looksLike: '>', bashSays: 'x \uff1e /tmp/aj-never\n' },
    { command: 'echo \uff40echo PWNED\uff40', ch: '\uff40', looksLike: '`', bashSays: '\uff40echo PWNED\uff40\n' },
  ];

  test.each(cases)(
    '$command: escaped, warned as a look-alike of $looksLike, and bash reads it as a letter',
    ({ command, ch, looksLike, bashSays }) => {
      expect(bash(command)).toBe(bashSays);
      const d = displayCommand(command);
      expect(d.text).not.toContain(ch);
      expect(d.text).toContain(`\\u${ch.codePointAt(0)!.toString(16).padStart(4, '0')}`);
      expect(d.warnings.join('\n')).toContain(`look-alike`);
      expect(d.warnings.join('\n')).toContain(`of ${JSON.stringify(looksLike)}`);
      const cli = shown(command);
      expect(cli).not.toContain(ch);
      expect(cli).toMatch(/\n {4}⚠ contains (a look-alike|\d+ look-alikes) of /);
      expect(cli).toMatch(/\n {4}sha256 [0-9a-f]{12} · \d+ characters/);
      // The UI: summary and details escaped, in a code span.
      expect(commandSummary(command, 1)).not.toContain(ch);
      expect(commandDetails(command)).not.toContain(ch);
    },
  );

  test('a warning names each distinct look-alike with what it looks like', () => {
    const d = displayCommand('echo \u2018$(id)\u2019 \uff1b x \uff03 y');
    expect(d.warnings).toContainEqual(
      'contains 4 look-alikes of shell characters: U+2018 of "\'", U+2019 of "\'", U+FF1B of ";", U+FF03 of "#" (to bash ordinary letters, not what they look like)',
    );
    expect(displayCommand('ls \uff1b').warnings).toEqual(['contains a look-alike of ";": U+FF1B (to bash an ordinary letter, not ";")']);
  });

  test('every character of the generated table is escaped, alone and among letters', () => {
    let n = 0;
    for (const [target, cps] of LOOKALIKE_GROUPS) {
      expect(target).toMatch(/^[\x20-\x7e]$/);
      for (const cp of cps) {
        const ch = String.fromCodePoint(cp);
        const d = displayCommand(`echo a${ch}b`);
        expect([cp, d.text.includes(ch), d.warnings.length > 0]).toEqual([cp, false, true]);
        n++;
      }
    }
    expect(n).toBeGreaterThan(200);
  });

  test('prose keeps its typographic quotes (they bind nothing there), commands never do', () => {
    expect(safeText('it\u2019s done')).toBe('it\u2019s done');
    expect(displayCommand('echo it\u2019s').text).toBe('echo it\\u2019s');
  });
});

describe('invisible code points are shown escaped', () => {
  test('every Default_Ignorable_Code_Point, in a command and in text, is escaped', () => {
    const ignorable: number[] = [];
    for (let cp = 0; cp <= 0xe0fff; cp++) if (isDefaultIgnorable(cp)) ignorable.push(cp);
    // DerivedCoreProperties.txt (Unicode 16) lists 4,174 of them.
    expect(ignorable.length).toBe(4174);
    for (const cp of ignorable) {
      const ch = String.fromCodePoint(cp);
      const d = displayCommand(`r${ch}m -rf x`);
      expect([cp, d.text.includes(ch), d.warnings.length]).toEqual([cp, false, 1]);
      expect([cp, safeText(`a${ch}b`).includes(ch)]).toEqual([cp, false]);
    }
  });

  test.each([
    ['zero-width joiner in the middle of rm', 'r\u200dm -rf ~/x', 'r\\u200dm -rf ~/x'],
    ['RLO reversing the rest', 'echo safe #\u202e fr- mr', 'echo safe #\\u202e fr- mr'],
    ['tag characters spelling a hidden word', 'ls \u{e0041}\u{e0042}', 'ls \\u{e0041}\\u{e0042}'],
    ['a variation selector after ;', 'ls ;\ufe0f echo x', 'ls ;\\ufe0f echo x'],
    ['a Mongolian free variation selector (Mn, not Cf)', 'ls\u180b x', 'ls\\u180b x'],
    ['Hangul filler U+3164 passing for a space', 'cat\u3164/etc/passwd', 'cat\\u3164/etc/passwd'],
    ['halfwidth Hangul filler', 'cat\uffa0x', 'cat\\uffa0x'],
    ['an unassigned default-ignorable', 'ls\ufff0x', 'ls\\ufff0x'],
    ['a soft hyphen', 'r\u00adm x', 'r\\xadm x'],
    ['a combining mark standing alone after ;', 'echo a ;\u0338 echo b', 'echo a ;\\u0338 echo b'],
    ['a combining mark first', '\u0301ls', '\\u0301ls'],
    ['marks stacked on a space', 'ls \u0301\u0302 x', 'ls \\u0301\\u0302 x'],
  ])('%s', (_what, command, text) => {
    const d = displayCommand(command);
    expect(d.text).toBe(text);
    expect(d.warnings.length).toBeGreaterThan(0);
    expect(shown(command)).toContain(`claude asks to run: ${text}    [toolu_1]\n    ⚠ `);
  });

  test('a combining mark on a letter is part of the letter: shown as it is', () => {
    expect(displayCommand('echo Jose\u0301').warnings).toEqual([]);
  });
});

describe('a by name must be visible', () => {
  test.each([
    ['only U+200B', '\u200b'],
    ['only a combining acute', '\u0301'],
    ['only the Hangul filler (a letter to \\p{L})', '\u3164'],
    ['the Hangul filler inside a name', 'ali\u3164ce'],
    ['the halfwidth Hangul filler', '\uffa0'],
    ['Hangul choseong/jungseong fillers', '\u115f\u1160'],
    ['a variation selector (a mark to \\p{M})', 'bob\ufe0f'],
    ['a Mongolian variation selector', 'bob\u180b'],
    ['a combining grapheme joiner', 'bo\u034fb'],
    ['a mark after a space', 'bob \u0301'],
    ['an RLO', 'bob\u202e'],
    ['a zero-width joiner', 'b\u200dob'],
  ])('refused: %s', (_what, by) => {
    expect(() => checkBy(by)).toThrow(RejectedRequest);
    expect(() => checkBy(by)).toThrow(/by /);
  });

  test.each([['alice'], ['Ana María'], ['Jose\u0301'], ['o.brien@example.com'], ['李雷'], ['יעל']])('accepted: %s', (by) => {
    expect(() => checkBy(by)).not.toThrow();
    expect(invisibleNameProblem(by)).toBeNull();
  });

  test('the approve signal drops an invisible by: the decision applies, from nobody named', () => {
    for (const by of ['\u3164', 'x\ufe0f', '\u0301']) {
      const approval = newApprovalState();
      approval.pending = {
        toolUseId: 'toolu_1',
        command: 'ls',
        requestedAt: 'now',
        display: 'ls',
        warnings: [],
        commandSha256: 'a'.repeat(64),
      };
      expect(signalDecision(approval, { toolUseId: 'toolu_1', approved: true, by })).toEqual({ approved: true, source: 'signal' });
    }
  });
});

/**
 * Whether `md` is exactly one CommonMark code span holding `inner` (CommonMark 0.31, 6.1: a
 * backtick string opens a span that the next backtick string of the same length closes; one
 * space is stripped from each side when both are there), and one line.
 */
function isOneCodeSpan(md: string): { ok: boolean; inner: string } {
  const open = /^`+/.exec(md)?.[0] ?? '';
  if (open === '' || !md.endsWith(open) || md.length < open.length * 2 || /[\n\r]/.test(md)) return { ok: false, inner: '' };
  let inner = md.slice(open.length, md.length - open.length);
  const runs = inner.match(/`+/g) ?? [];
  if (runs.some((r) => r.length === open.length)) return { ok: false, inner: '' };
  if (inner.startsWith(' ') && inner.endsWith(' ') && inner.trim() !== '') inner = inner.slice(1, -1);
  return { ok: true, inner };
}

describe("model text in the UI's markdown stays inside one code span", () => {
  test.each([
    ['a backtick closing the span', 'denied: `rm` is not allowed` [click](http://evil) `'],
    ['a run longer than any fence so far', 'x ```` ``` `` ` y'],
    ['backticks at both ends', '`a`'],
    ['only backticks', '```'],
    ['a blank line ending the paragraph', 'reason\n\n# heading\n[link](http://evil)'],
    ['a carriage return and a line separator', 'a\rb\u2028c'],
    ['an invisible and a bidi character', 'a\u200bb\u202ec'],
    ['empty', ''],
  ])('%s', (_what, text) => {
    const md = markdownText(text);
    const span = isOneCodeSpan(md);
    expect(span.ok).toBe(true);
    expect(span.inner).toBe(text === '' ? ' ' : safeText(text, false));
    expect(md).not.toMatch(/[\n\r\u2028\u2029\u200b\u202e]/);
  });

  test('a command in the summary and the details is a code span, whatever backticks it holds', () => {
    for (const command of ['echo `id`', 'echo ``` x', '`', 'ls\n\n[x](y)', 'echo \u2018$(id)\u2019']) {
      const summary = commandSummary(command, 3);
      expect(summary.startsWith('bash #3: ')).toBe(true);
      expect(isOneCodeSpan(summary.slice('bash #3: '.length)).ok).toBe(true);
      const details = commandDetails(command);
      const code = /^(`+)[\s\S]*?\1(?= \(|$)/.exec(details)![0];
      expect(isOneCodeSpan(code).ok).toBe(true);
      expect(isOneCodeSpan(markdownCode(command)).ok).toBe(true);
    }
  });
});
