/**
 * Text search attribute values PostgreSQL visibility accepts: each one is a
 * single quoted tsvector lexeme, and decodes back to the text. (That
 * PostgreSQL parses them is checked on a real one by test:cluster's
 * approval case, which lists the waiting run with `agent-jobs pending`.)
 */
import { fromSearchText, toSearchText } from '../../../src/shared/search-text';

/** PostgreSQL's tsvector input for one quoted lexeme: `'`, then characters where `'` and `\` come only doubled, then `'`. */
const ONE_QUOTED_LEXEME = /^'(?:[^'\\]|''|\\\\)*'$/u;

describe('toSearchText / fromSearchText', () => {
  const hostile = [
    'approval of bash: ls -la',
    'paused by alice; approval of bash: echo \'a:b\' \\ "q"',
    'a\\',
    "'",
    "''",
    'x:1A',
    ':',
    "back\\slash\\'",
    'tab\there  new\nline',
    'ünïcødé: 🎉',
    '(a & b) | !c <-> d',
    "'already quoted'",
    "\\'",
  ];

  test.each(hostile)('%j encodes to one quoted lexeme and decodes back', (text) => {
    const encoded = toSearchText(text);
    expect(encoded).toMatch(ONE_QUOTED_LEXEME);
    expect(fromSearchText(encoded)).toBe(text);
  });

  test('the empty string stays empty (no wait); a value from before the encoding is shown as it is', () => {
    expect(toSearchText('')).toBe('');
    expect(fromSearchText('')).toBe('');
    expect(fromSearchText('approval of bash: ls')).toBe('approval of bash: ls');
    expect(fromSearchText("'")).toBe("'");
  });
});
