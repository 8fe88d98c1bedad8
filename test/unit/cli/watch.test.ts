/**
 * The pure parts of the live view of `watch`: command run times and exit
 * codes in result headings, the live line's text (spinner, elapsed time,
 * Claude's partial answer cut to the terminal's width, escaped), and the
 * partial text read from heartbeat details. The terminal itself is driven
 * in test/integration/watch-tty.test.ts.
 */
import { claudeProgressOf, partialTextOf, type ActivityProgress, type PendingCall } from '../../../src/cli/activity-progress';
import { claudeStatusOf, lostLine } from '../../../src/cli/render/events';
import { describeMessage, formatDuration } from '../../../src/cli/render/messages';
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

  test('show the exit code and the run time the run published, never a code read from the text', () => {
    const published = {
      durationsMs: { toolu_ok: 1_234, toolu_bad: 80, toolu_denied: 0 },
      exitCodes: { toolu_ok: 0, toolu_bad: 2 },
    };
    const lines = describeMessage(results, 3, published);
    expect(lines.filter((l) => l.includes('result for'))).toEqual([
      '→ result for toolu_ok (exit 0, 1.2 s):',
      '→ result for toolu_bad (exit 2, 0.1 s):',
      '! result for toolu_denied (error, 0.0 s):',
      '→ result for toolu_untimed:',
    ]);
    // A code without a time, and a time without a code (a run from before codes were published).
    expect(describeMessage(results, 3, { exitCodes: { toolu_bad: 2 } })[0]).toBe('→ result for toolu_ok:');
    expect(describeMessage(results, 3, { exitCodes: { toolu_bad: 2 } }).filter((l) => l.includes('toolu_bad'))).toEqual([
      '→ result for toolu_bad (exit 2):',
    ]);
    expect(describeMessage(results, 3, { durationsMs: published.durationsMs }).filter((l) => l.includes('toolu_bad'))).toEqual([
      '→ result for toolu_bad (0.1 s):',
    ]);
    // Nothing published (`transcript`, an old run): the headings are as they always were.
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
    const proto = JSON.parse('{"__proto__": "soon"}') as Record<string, number>;
    expect(describeMessage(m, 1, { durationsMs: proto, exitCodes: proto })[0]).toBe('→ result for __proto__:');
  });

  test('formatDuration', () => {
    expect(formatDuration(0)).toBe('0.0 s');
    expect(formatDuration(59_950)).toBe('60.0 s');
    expect(formatDuration(210_000)).toBe('3.5 min');
  });
});

describe('text editor requests', () => {
  const use = (input: unknown): Message => ({
    role: 'assistant',
    content: [{ type: 'tool_use', id: 'toolu_e', name: 'str_replace_based_edit_tool', input: input as Record<string, unknown> }],
  });

  test('name the editor command and the path (a transcript used to print "asks to run: str_replace" with no path)', () => {
    expect(describeMessage(use({ command: 'str_replace', path: '/ws/a.ts', old_str: 'x', new_str: 'y' }), 1)).toEqual([
      'claude asks to edit: str_replace /ws/a.ts    [toolu_e]',
    ]);
    expect(describeMessage(use({ command: 'view', path: '/ws/src' }), 1)).toEqual(['claude asks to view: /ws/src    [toolu_e]']);
  });

  test('an input without a command or path of text is shown whole, and escaped', () => {
    expect(describeMessage(use({ command: 'create' }), 1)).toEqual(['claude asks the editor: {"command":"create"}    [toolu_e]']);
    const [line] = describeMessage(use({ command: 'create', path: '/ws/\u001b[2Jx' }), 1);
    expect(line).not.toMatch(RAW);
    expect(line).toContain('claude asks to edit: create /ws/');
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

describe('the live line of a model call: never silent while Claude thinks', () => {
  const now = 1_700_000_000_000;
  const call: PendingCall = { attempt: 1, startedMs: now - 20_000, heartbeatMs: now - 1_000, lastFailure: '' };
  const base = { kind: 'claude', type: 'callClaude', sinceMs: now - 20_000 } as const;
  const view = (details: unknown, pending: PendingCall = call): ActivityProgress => ({
    ...base,
    attempt: pending.attempt,
    ...claudeProgressOf(details, pending),
  });
  const line = (a: ActivityProgress, at = now): string => liveText(claudeStatusOf(a), 0, at, 100);

  test('omitted thinking: a steady "thinking" line whose seconds count from the thinking start, and go up', () => {
    const details = {
      turn: 1,
      outputChars: 0,
      partialText: '',
      attempt: 1,
      phase: 'thinking',
      thinkingSinceMs: now - 12_000,
      thinkingChars: 0,
      thinkingText: '',
    };
    expect(line(view(details))).toBe(`${SPINNER_FRAMES[0]} claude is thinking… (12s)`);
    expect(line(view(details), now + 3_000)).toBe(`${SPINNER_FRAMES[0]} claude is thinking… (15s)`);
  });

  test('summarized thinking: its end streams on the line; then the text replaces it', () => {
    const thinking = {
      turn: 1,
      outputChars: 0,
      partialText: '',
      attempt: 1,
      phase: 'thinking',
      thinkingSinceMs: now - 4_000,
      thinkingChars: 60,
      thinkingText: 'Look at the failing test.\nThen fix it.',
    };
    expect(line(view(thinking))).toBe(`${SPINNER_FRAMES[0]} claude is thinking… (4s)  Look at the failing test. Then fix it.`);
    const text = { ...thinking, phase: 'text', outputChars: 9, partialText: 'I will do' };
    expect(line(view(text))).toBe(`${SPINNER_FRAMES[0]} claude is writing… (20s)  I will do`);
  });

  test('a tool_use that streams with no text before it says so', () => {
    const details = { turn: 1, outputChars: 0, partialText: '', attempt: 1, phase: 'tool_use', thinkingChars: 0, thinkingText: '' };
    expect(line(view(details))).toBe(`${SPINNER_FRAMES[0]} claude is writing a command… (20s)`);
  });

  test('thinking text is escaped like the answer', () => {
    const details = {
      turn: 1,
      outputChars: 0,
      partialText: '',
      attempt: 1,
      phase: 'thinking',
      thinkingSinceMs: now,
      thinkingChars: 9,
      thinkingText: 'a\x1b[2Jb',
    };
    expect(RAW.test(line(view(details)))).toBe(false);
  });

  test('old heartbeat details (no phase, no thinking, no attempt) still render as before', () => {
    expect(line(view({ turn: 2, outputChars: 5, partialText: 'hello' }))).toBe(`${SPINNER_FRAMES[0]} claude is writing… (20s)  hello`);
    expect(line(view({ turn: 2, outputChars: 0, partialText: '' }))).toBe(`${SPINNER_FRAMES[0]} waiting on claude (20s)`);
    // Older details from before this attempt started are not this attempt's text.
    expect(line(view({ turn: 2, outputChars: 5, partialText: 'hello' }, { ...call, heartbeatMs: call.startedMs - 1 }))).toBe(
      `${SPINNER_FRAMES[0]} waiting on claude (20s)`,
    );
    expect(line(view(null))).toBe(`${SPINNER_FRAMES[0]} waiting on claude (20s)`);
  });

  test('details of garbage shape give no thinking and no text', () => {
    const a = view({ phase: 'thinking', thinkingSinceMs: 'soon', partialText: 3, attempt: 1 });
    expect(a.thinking).toBeUndefined();
    expect(a.partialText).toBe('');
    expect(view({ phase: 'dreaming', attempt: 1, partialText: 'x' }).phase).toBeUndefined();
  });
});

describe('a lost partial answer is marked as gone (C27)', () => {
  const now = 1_700_000_000_000;
  const second: PendingCall = {
    attempt: 2,
    startedMs: now - 2_000,
    heartbeatMs: now - 3_000,
    lastFailure: "Claude's answer stream broke (terminated)",
  };

  test('details of a failed earlier attempt: no partial text, and the loss with its size and reason', () => {
    const details = {
      turn: 1,
      outputChars: 1_234,
      partialText: 'half an answer',
      attempt: 1,
      phase: 'tool_use',
      thinkingChars: 0,
      thinkingText: '',
    };
    const got = claudeProgressOf(details, second);
    expect(got.partialText).toBe('');
    expect(got.thinking).toBeUndefined();
    expect(got.lost).toEqual({ attempt: 1, outputChars: 1_234, thinkingChars: 0, reason: "Claude's answer stream broke (terminated)" });
    const a: ActivityProgress = { kind: 'claude', type: 'callClaude', sinceMs: now - 2_000, attempt: 2, ...got };
    expect(liveText(claudeStatusOf(a), 0, now, 100)).toBe(
      `${SPINNER_FRAMES[0]} claude's answer was cut off, asking again (attempt 2) (2s)`,
    );
    expect(lostLine(got.lost!)).toBe(
      "✗ claude's answer was cut off (attempt 1; 1,234 characters of text dropped: Claude's answer stream broke (terminated)); asking again",
    );
  });

  test("an earlier attempt that streamed nothing lost nothing; the current attempt's details are not a loss", () => {
    expect(claudeProgressOf({ turn: 1, outputChars: 0, partialText: '', attempt: 1, thinkingChars: 0 }, second).lost).toBeUndefined();
    expect(claudeProgressOf({ turn: 1, outputChars: 10, partialText: 'new text', attempt: 2 }, second)).toMatchObject({
      partialText: 'new text',
    });
    expect(claudeProgressOf({ turn: 1, outputChars: 10, partialText: 'new text', attempt: 2 }, second).lost).toBeUndefined();
    expect(lostLine({ attempt: 3, outputChars: 0, thinkingChars: 40, reason: '' })).toBe(
      "✗ claude's answer was cut off (attempt 3; 40 of thinking dropped); asking again",
    );
  });
});
