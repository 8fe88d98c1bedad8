/**
 * The pure parts of the live view of `watch`: command run times and exit
 * codes in result headings, the live line's text (spinner, elapsed time,
 * Claude's partial answer cut to the terminal's width, escaped), and the
 * partial text read from heartbeat details. The terminal itself is driven
 * in test/integration/watch-tty.test.ts.
 */
import { partialTextOf } from '../../../src/cli/activity-progress';
import { describeMessage, exitCodeOfResult, formatDuration } from '../../../src/cli/commands/watch';
import { cellsOfText, fitHead, fitTail, liveText, oneLine, SPINNER_FRAMES } from '../../../src/cli/live-line';
import type { Message } from '../../../src/contract';

const RAW = /[\u0000-\u0008\u000a-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

describe('result headings', () => {
  const results: Message = {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 'toolu_ok', content: 'fine' },
      { type: 'tool_result', tool_use_id: 'toolu_bad', content: 'nope\n[exit code: 2]' },
      { type: 'tool_result', tool_use_id: 'toolu_denied', content: 'Command not run: denied by bob.', is_error: true },
      { type: 'tool_result', tool_use_id: 'toolu_untimed', content: 'old' },
    ],
  };

  test('show the exit code and the run time of commands the run timed, and the old heading for the others', () => {
    const lines = describeMessage(results, 3, { toolu_ok: 1_234, toolu_bad: 80, toolu_denied: 0 });
    expect(lines.filter((l) => l.includes('result for'))).toEqual([
      '→ result for toolu_ok (exit 0, 1.2 s):',
      '→ result for toolu_bad (exit 2, 0.1 s):',
      '! result for toolu_denied (error, 0.0 s):',
      '→ result for toolu_untimed:',
    ]);
    // Without durations (a run before they were published) the headings are as they always were.
    expect(describeMessage(results, 3).filter((l) => l.includes('result for'))).toEqual([
      '→ result for toolu_ok:',
      '→ result for toolu_bad:',
      '! result for toolu_denied (error):',
      '→ result for toolu_untimed:',
    ]);
  });

  test('a duration that is not a finite number is not shown; a key like __proto__ is no duration', () => {
    const m: Message = { role: 'user', content: [{ type: 'tool_result', tool_use_id: '__proto__', content: 'x' }] };
    expect(describeMessage(m, 1, {})[0]).toBe('→ result for __proto__:');
    expect(describeMessage(m, 1, JSON.parse('{"__proto__": "soon"}') as Record<string, number>)[0]).toBe('→ result for __proto__:');
  });

  test('formatDuration and exitCodeOfResult', () => {
    expect(formatDuration(0)).toBe('0.0 s');
    expect(formatDuration(59_950)).toBe('60.0 s');
    expect(formatDuration(210_000)).toBe('3.5 min');
    expect(exitCodeOfResult({ type: 'tool_result', tool_use_id: 't', content: '[exit code: 127]' })).toBe(127);
    expect(exitCodeOfResult({ type: 'tool_result', tool_use_id: 't', content: '[exit code: 1] then more' })).toBe(0);
    expect(exitCodeOfResult({ type: 'tool_result', tool_use_id: 't', content: 'x', is_error: true })).toBeNull();
  });
});

describe('the live line', () => {
  const now = 1_700_000_000_000;

  test('spinner frame, label and whole seconds since the wait began', () => {
    expect(liveText({ label: 'running command', sinceMs: now - 12_300 }, 0, now, 80)).toBe(`${SPINNER_FRAMES[0]} running command (12s)`);
    expect(liveText({ label: 'running command', sinceMs: now + 500 }, 11, now, 80)).toBe(`${SPINNER_FRAMES[1]} running command (0s)`);
  });

  test("Claude's partial answer: its end, on one line, escaped, never wider than the terminal", () => {
    const tail = `first line\nsecond\tline \x1b[2J\x1b]0;owned\x07 ${'x'.repeat(300)}THE END`;
    const text = liveText({ label: 'claude is writing…', sinceMs: now - 3_000, tail }, 2, now, 60);
    expect(text.startsWith(`${SPINNER_FRAMES[2]} claude is writing… (3s)  …`)).toBe(true);
    expect(text.endsWith('THE END')).toBe(true);
    expect(cellsOfText(text)).toBe(59);
    expect(RAW.test(text)).toBe(false);
    const short = liveText({ label: 'claude is writing…', sinceMs: now, tail }, 0, now, 400);
    expect(short).toContain('first line second line \\x1b[2J\\x1b]0;owned\\x07 x');
    expect(RAW.test(short)).toBe(false);
  });

  test('wide characters count two columns; a narrow terminal cuts the label', () => {
    expect(cellsOfText('日本')).toBe(4);
    expect(fitTail('日本語のテキスト', 7)).toBe('…キスト');
    expect(fitHead('running command', 8)).toBe('running…');
    expect(fitTail('abc', 0)).toBe('');
    expect(oneLine('a\r\nb')).toBe('a b');
    expect(cellsOfText(liveText({ label: 'running command', sinceMs: now }, 0, now, 12))).toBeLessThanOrEqual(11);
  });
});

describe('partial text in heartbeat details', () => {
  test("is read from a ClaudeProgress and is '' for anything else", () => {
    expect(partialTextOf({ turn: 2, outputChars: 5, partialText: 'hello' })).toBe('hello');
    expect(partialTextOf({ turn: 2, outputChars: 5 })).toBe('');
    expect(partialTextOf({ partialText: 7 })).toBe('');
    expect(partialTextOf(null)).toBe('');
    expect(partialTextOf('text')).toBe('');
  });
});
