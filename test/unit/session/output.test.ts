/**
 * Output of every shape comes back at once, with the true exit code, as
 * capped, valid UTF-8 without escape sequences (C06, C10 in docs/cases.md).
 */
import { capText, collapseLine, decodeUtf8, processOutput, sanitizeText, stripAnsi } from '../../../src/session/output';
import { closeSessions, startSession, timed } from './helpers';

afterEach(closeSessions);

/** Well under Temporal's 2 MiB payload limit, with room for the rest of a result. */
const PAYLOAD_BUDGET = 64 * 1024;

function isValidUtf8(s: string): boolean {
  return Buffer.from(s, 'utf8').toString('utf8') === s && !/[\ud800-\udfff]/u.test(s);
}

describe('C06: output without a trailing newline, and no output', () => {
  // "At once" means not waiting for a newline or for the command timeout (the fault of C06): with a
  // 20 s timeout, that fault takes 20 s; a busy machine takes well under half of it for these commands.
  const TIMEOUT_MS = 20_000;
  test('printf abc returns abc at once, exit code 0', async () => {
    const s = await startSession({ timeoutMs: TIMEOUT_MS });
    const [r, ms] = await timed(() => s.run('printf abc'));
    expect(r).toMatchObject({ output: 'abc', exitCode: 0, timedOut: false, truncated: false, sessionRestarted: false, outputBytes: 3 });
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  });

  test('true returns at once with empty output', async () => {
    const s = await startSession({ timeoutMs: TIMEOUT_MS });
    const [r, ms] = await timed(() => s.run('true'));
    expect(r).toMatchObject({ output: '', exitCode: 0, outputBytes: 0, timedOut: false });
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  });

  test('exit codes are reported truly', async () => {
    const s = await startSession();
    expect((await s.run('false')).exitCode).toBe(1);
    expect((await s.run('(exit 42)')).exitCode).toBe(42);
    expect((await s.run('nonexistent-command-xyz')).exitCode).toBe(127);
    expect((await s.run('echo err >&2; echo out')).output).toBe('err\nout\n');
  });
});

describe('output that looks like the protocol', () => {
  test('text resembling an end marker, NUL bytes and fake records do not end the command early', async () => {
    const s = await startSession();
    const r = await s.run(
      "printf 'AJ0123456789abcdef0123456789abcdef\\0000\\0\\0\\0/tmp\\0'; echo; printf 'bash: line 1: /proc/AJ0123456789abcdef0123456789abcdef.0.: No such file or directory\\n'; set | grep -c '^__aj_m'; sleep 0.2; echo done",
    );
    expect(r.exitCode).toBe(0);
    // the markers of the running command are in no variable (set shows none)
    expect(r.output).toMatch(/\n0\ndone\n$/);
    expect(r.output).toContain('AJ0123456789abcdef0123456789abcdef0/tmp');
  });
});

describe('C10: large, binary and terminal output', () => {
  test('50 MB of output returns quickly, capped head + tail with a note of what was cut', async () => {
    const s = await startSession({ timeoutMs: 60_000 });
    // The same program with its output thrown away, in the same session, is the baseline: capturing may cost
    // a few times that, never the command timeout (a busy machine slows both alike).
    const [, baselineMs] = await timed(() => s.run('seq 1 7000000 > /dev/null'));
    const [r, ms] = await timed(() => s.run('seq 1 7000000'));
    expect(r.exitCode).toBe(0);
    expect(r.outputBytes).toBeGreaterThan(50_000_000);
    expect(r.truncated).toBe(true);
    expect(r.output.startsWith('1\n2\n3\n')).toBe(true);
    expect(r.output.endsWith('6999999\n7000000\n')).toBe(true);
    expect(r.output).toMatch(/\[\.\.\. about [\d,]+ bytes cut from the middle; the command printed [\d,]+ bytes \.\.\.\]/);
    expect(Buffer.byteLength(r.output)).toBeLessThan(31_000);
    expect(JSON.stringify(r).length).toBeLessThan(PAYLOAD_BUDGET);
    expect(ms).toBeLessThan(Math.max(5000, 5 * baselineMs));
  }, 120_000);

  test('one line of 300 KB is capped, valid, and the result small', async () => {
    const s = await startSession({ maxOutputBytes: 10_000 });
    const r = await s.run("head -c 300000 /dev/zero | tr '\\0' x; echo END");
    expect(r.truncated).toBe(true);
    expect(r.outputBytes).toBe(300_004);
    // (boolean checks: a failure should not print 10 KB of x)
    expect(/^x{4000,5000}\n\[\.\.\. about [\d,]+ bytes cut/.test(r.output)).toBe(true);
    expect(r.output.endsWith('xEND\n')).toBe(true);
    expect(Buffer.byteLength(r.output)).toBeLessThan(10_200);
  });

  test('4 KB of random bytes come back as valid UTF-8 without control characters', async () => {
    const s = await startSession();
    const r = await s.run('head -c 4096 /dev/urandom');
    expect(r.exitCode).toBe(0);
    expect(r.outputBytes).toBe(4096);
    expect(isValidUtf8(r.output)).toBe(true);
    expect(r.output).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f\x1b]/);
    expect(JSON.stringify(r).length).toBeLessThan(PAYLOAD_BUDGET);
  });

  test('ANSI colours and a \\r progress bar collapse to the final text', async () => {
    const s = await startSession();
    const script = [
      "printf '\\033[1;32mgreen bold\\033[0m and \\033[38;5;208mcolour\\033[m\\n'",
      "for i in 0 25 50 75 100; do printf '\\r\\033[K[%-20s] %3d%%' \"$(printf '#%.0s' $(seq 0 $((i/5))))\" $i; done; printf '\\n'",
      "printf '\\033]0;window title\\007\\033]8;;http://x\\033\\\\link\\033]8;;\\033\\\\\\n'",
      "printf 'windows line\\r\\n'",
      'echo done',
    ].join('; ');
    const r = await s.run(script);
    expect(r.output).toBe('green bold and colour\n[#####################] 100%\nlink\nwindows line\ndone\n');
  });

  test('a progress bar of 200k redraws (no newline) stays small', async () => {
    const s = await startSession();
    const r = await s.run("for i in $(seq 1 200000); do printf '\\rprogress %d' $i; done; echo; echo finished");
    expect(r.output).toMatch(/finished\n$/);
    expect(r.output).toMatch(/progress 200000\n/);
    expect(Buffer.byteLength(r.output)).toBeLessThan(31_000);
  });
});

describe('output processing (pure functions)', () => {
  test('stripAnsi removes CSI, OSC, charset and C1 sequences', () => {
    expect(stripAnsi('\x1b[31mred\x1b[0m \x1b]0;title\x07x \x1b(Bq \x1b=k \u009b1mC')).toBe('red x q k C');
  });

  test('collapseLine applies \\r and \\b as a terminal would', () => {
    expect(collapseLine('10%\r20%\r100%')).toBe('100%');
    expect(collapseLine('abcdef\rXY')).toBe('XYcdef');
    expect(collapseLine('done\r')).toBe('done');
    expect(collapseLine('N\bNA\bAM\bME\bE')).toBe('NAME');
  });

  test('erase-in-line sequences apply before escapes go: a redrawn status line shows what a terminal shows', () => {
    expect(sanitizeText('Downloading 100/100 files\r\x1b[KDone\n')).toBe('Done\n');
    expect(sanitizeText('Downloading 100/100 files\r\x1b[0KDone\n')).toBe('Done\n');
    expect(sanitizeText('Downloading 100/100 files\x1b[2K\rDone\n')).toBe('Done\n');
    expect(sanitizeText('\x1b[31mred\x1b[0m 10%\r\x1b[K50%\r100%')).toBe('100%');
    expect(sanitizeText('abcdef\rab\x1b[Kcd')).toBe('abcd');
    // Without an erase the old text still shows through, as on a terminal.
    expect(sanitizeText('abcdef\rXY')).toBe('XYcdef');
    // Real NUL and SOH bytes are dropped, never taken for erases.
    expect(sanitizeText('abc\x00def\x01g\rXY')).toBe('XYcdefg');
  });

  test('sanitizeText keeps tabs and newlines, drops other controls, turns CRLF into LF', () => {
    expect(sanitizeText('a\tb\r\nc\x00d\x07e\x7f\n')).toBe('a\tb\ncde\n');
  });

  test('decodeUtf8 replaces invalid bytes and drops characters cut by a window', () => {
    const euro = Buffer.from('€', 'utf8'); // e2 82 ac
    expect(decodeUtf8(Buffer.from([0x61, 0xff, 0x62]))).toBe('a\ufffdb');
    expect(decodeUtf8(Buffer.concat([Buffer.from('ab'), euro.subarray(0, 2)]), { partialEnd: true })).toBe('ab');
    expect(decodeUtf8(Buffer.concat([euro.subarray(1), Buffer.from('cd')]), { partialStart: true })).toBe('cd');
    expect(decodeUtf8(Buffer.concat([Buffer.from('x'), euro]), { partialEnd: true })).toBe('x€');
  });

  test('capText keeps head and tail on character and line boundaries', () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `line ${i} ✓`).join('\n') + '\n';
    const c = capText(lines, 1000, Buffer.byteLength(lines));
    expect(c.truncated).toBe(true);
    expect(c.text.startsWith('line 0 ✓\n')).toBe(true);
    expect(c.text.endsWith('line 999 ✓\n')).toBe(true);
    expect(c.text).toMatch(/✓\n\[\.\.\. [\d,]+ bytes cut from the middle; the command printed [\d,]+ bytes \.\.\.\]\nline \d+ ✓\n/);
    expect(isValidUtf8(c.text)).toBe(true);
    expect(capText('short', 1000, 5)).toEqual({ text: 'short', truncated: false });
  });

  test('processOutput cleans before capping, so escape codes do not count', () => {
    const colored = Buffer.from('\x1b[32m' + 'x'.repeat(500) + '\x1b[0m\n');
    expect(processOutput(colored, 600)).toEqual({ text: 'x'.repeat(500) + '\n', truncated: false });
  });
});
