/**
 * What the CLI prints from a run is terminal-safe (what the human approves
 * is what runs: docs/security.md): commands are
 * shown by commandLines (escaped, warnings, hash), Claude's text and
 * outputs are escaped by describeMessage, JSON keeps its value but not the
 * raw characters; --sha takes a hex prefix.
 */
import { InvalidArgumentError } from 'commander';
import { describeMessage } from '../../../src/cli/render/messages';
import { commandLines, jsonText, terminalText } from '../../../src/cli/render/text';
import { hexPrefix } from '../../../src/cli/parse';
import { sha256 } from '../../../src/shared/sha256';
import type { Message } from '../../../src/contract';

const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]/;

describe('the CLI shows runs terminal-safe', () => {
  test('commandLines: a plain command is one line; an escaped one gets warnings, the legend and its hash', () => {
    expect(commandLines('ls -la', { label: 'run: ' })).toEqual(['run: ls -la']);
    expect(commandLines('ls -la', { label: 'run: ', indent: '  ', alwaysHash: true })).toEqual([
      'run: ls -la',
      `  sha256 ${sha256('ls -la').slice(0, 12)} · 6 characters`,
    ]);
    const lines = commandLines('git status\u2028rm -rf x', { label: 'run: ', suffix: ' [t1]' });
    expect(lines[0]).toBe('run: git status\\u2028rm -rf x [t1]');
    expect(lines.slice(1)).toEqual([
      '    ⚠ contains line/paragraph separator U+2028',
      expect.stringMatching(/^ {4}\(shown escaped: \\\\ is one backslash/),
      `    sha256 ${sha256('git status\u2028rm -rf x').slice(0, 12)} · 19 characters`,
    ]);
  });

  test("describeMessage: commands escaped, Claude's words and outputs without raw escape sequences", () => {
    const messages: Message[] = [
      { role: 'user', content: 'task \x1b]0;title\x07' },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'look \x1b[2J' },
          { type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'cat a\r\x1b[Kb' } },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'line 1\n\x1b[31mred\x1b[0m\n\u202eevil' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_2', name: 'bash', input: { command: 7, note: '\x1b[2J' } }] },
    ];
    const lines = messages.flatMap((m, i) => describeMessage(m, i));
    expect(lines.some((l) => RAW.test(l))).toBe(false);
    expect(lines).toEqual(
      expect.arrayContaining([
        'task: task \\x1b]0;title\\x07',
        'claude: look \\x1b[2J',
        'claude asks to run: cat a\\r\\x1b[Kb    [toolu_1]',
        '    ⚠ contains a carriage return (\\r)',
        '    line 1\n    \\x1b[31mred\\x1b[0m\n    \\u202eevil',
        'claude asks to run: {"command":7,"note":"\\u001b[2J"}    [toolu_2]',
      ]),
    );
  });

  test('jsonText: same value, no raw control, bidi or separator character', () => {
    const value = { command: 'a\r\x1b[2K\u202e\u2028\x7f\x9b', ok: 'é 日本語' };
    const text = jsonText(value, 2);
    expect(RAW.test(text)).toBe(false);
    expect(JSON.parse(text)).toEqual(value);
    expect(text).toContain('é 日本語');
  });

  test('terminalText keeps line breaks and tabs', () => {
    expect(terminalText('a\n\tb\x1b[0m')).toBe('a\n\tb\\x1b[0m');
  });

  test('--sha takes 4 to 64 hex digits, lowercased', () => {
    expect(hexPrefix('3F2A9b0c1d2e')).toBe('3f2a9b0c1d2e');
    for (const bad of ['wrongprefix', 'abc', '', 'g123', 'a'.repeat(65)]) expect(() => hexPrefix(bad)).toThrow(InvalidArgumentError);
  });
});
