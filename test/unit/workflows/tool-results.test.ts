import {
  commandOutcome,
  deniedOutcome,
  describeDuration,
  interruptedText,
  movedAfterOutcome,
  movedBeforeOutcome,
  parseBashInput,
  sessionLostOutcome,
} from '../../../src/workflows/tool-results';
import type { RunCommandOutput } from '../../../src/contract';

const ok: RunCommandOutput = {
  output: 'hi\n',
  exitCode: 0,
  timedOut: false,
  truncated: false,
  outputBytes: 3,
  sessionRestarted: false,
  shellExit: null,
  cwd: '/w',
  durationMs: 3,
};

describe('tool results', () => {
  test('a finished command reports its output, and a non-zero exit code without is_error', () => {
    expect(commandOutcome(ok, 1000)).toEqual({ text: 'hi', isError: false });
    expect(commandOutcome({ ...ok, output: '', exitCode: 0 }, 1000)).toEqual({ text: '(no output)', isError: false });
    expect(commandOutcome({ ...ok, output: 'nope\n', exitCode: 2 }, 1000)).toEqual({ text: 'nope\n[exit code: 2]', isError: false });
  });

  test('timeouts and shell exits are errors that say state was lost', () => {
    const t = commandOutcome({ ...ok, output: 'partial', exitCode: null, timedOut: true, sessionRestarted: true }, 2000);
    expect(t.isError).toBe(true);
    expect(t.text).toMatch(/^partial\n\[timed out after 2 s: .*process group was killed.*restarted in \/w; .*gone\]$/);
    const e = commandOutcome({ ...ok, output: '', exitCode: 3, shellExit: { code: 3, signal: null }, sessionRestarted: true }, 2000);
    expect(e).toEqual({
      isError: true,
      text: expect.stringMatching(/^\[bash itself exited with code 3; a new bash session was started in \/w/),
    });
  });

  test('denials carry the reason and who denied; a timeout says so', () => {
    expect(deniedOutcome({ toolUseId: 'a', approved: false, source: 'signal', at: '', reason: 'no', by: 'bob' }, '24 hours').text).toBe(
      'Command not run: denied by bob. Reason: no.',
    );
    expect(deniedOutcome({ toolUseId: 'a', approved: false, source: 'timeout', at: '' }, '24 hours').text).toBe(
      'Command not run: no approval decision came within 24 hours, so it was denied.',
    );
    expect(deniedOutcome({ toolUseId: 'a', approved: false, source: 'timeout', at: '' }, 3000).text).toBe(
      'Command not run: no approval decision came within 3 s, so it was denied.',
    );
  });

  test('a lost session says whether the command may have run and where the new session is', () => {
    expect(sessionLostOutcome({ kind: 'not-started', detail: 'gone' }, '/w').text).toMatch(
      /did not run\. A new bash session was started in \/w/,
    );
    expect(sessionLostOutcome({ kind: 'interrupted', detail: 'gone' }, null, 'no worker').text).toMatch(
      /may or may not have run.*No new session could be started yet \(no worker\)/,
    );
  });

  test.each([
    [{ command: 'ls' }, 'command'],
    [{ restart: true }, 'restart'],
    [{ restart: true, command: 'ls' }, 'restart'],
    [{}, 'invalid'],
    [{ command: '' }, 'invalid'],
    [{ command: 3 }, 'invalid'],
    [{ restart: 'yes' }, 'invalid'],
    [null, 'invalid'],
    ['ls', 'invalid'],
  ])('bash input %j is %s (C04)', (input, kind) => {
    expect(parseBashInput(input).kind).toBe(kind);
  });

  test('durations read as people write them', () => {
    expect([
      describeDuration(3000),
      describeDuration(90_000),
      describeDuration(5_400_000),
      describeDuration(86_400_000),
      describeDuration('24 hours'),
    ]).toEqual(['3 s', '90 s', '90 min', '24 h', '24 hours']);
  });

  test('a run that ends early says, per tool_use, whether it waited, ran or never started', () => {
    expect(interruptedText('cancelled', 'approval')).toBe('The run was cancelled while this command waited for approval; it did not run.');
    expect(interruptedText('cancelled', 'running')).toMatch(/process group was killed, so it may have partly run/);
    expect(interruptedText('failed', null)).toBe('The run failed before this command started; it did not run.');
    // A restart cut short may have happened: never "did not run".
    expect(interruptedText('cancelled', 'restarting')).toBe(
      'The run was cancelled while the bash session restarted: the restart may or may not have happened.',
    );
    expect(interruptedText('cancelled', 'restarting')).not.toMatch(/did not run/);
  });

  test('a lost session never says "did not run" and "files may be missing" together', () => {
    const t = sessionLostOutcome({ kind: 'not-started', detail: 'gone' }, '/w').text;
    expect(t).toMatch(/The command did not run\./);
    expect(t).not.toMatch(/written by the command/);
  });

  test('a command killed when the shutdown grace ran out: its output, then why, as an error (never a plain restart note)', () => {
    const r = commandOutcome({ ...ok, output: 'partial\n', exitCode: null, sessionRestarted: true, killedAtShutdownMs: 2_000 }, 1000);
    expect(r.isError).toBe(true);
    expect(r.text).toBe(
      'partial\n[the worker holding the bash session was shut down while this command ran: it was still running when the shutdown grace of 2 s ran out, so its process group was killed; the output above is what it printed until then]',
    );
  });

  test('a session moved off a worker that was shut down: said after the output, or before a command that ran in the new one', () => {
    const why = 'its worker was shut down (SIGTERM)';
    expect(movedAfterOutcome({ text: 'done', isError: false }, why, { cwd: '/w/x' })).toEqual({
      text: 'done\n[the command finished; then the bash session was closed because its worker was shut down (SIGTERM): the run moved to a new bash session in /w/x on another worker; shell variables, functions, aliases and background jobs from before are gone (files on disk stay, unless the new worker runs on another machine)]',
      isError: true,
    });
    expect(movedAfterOutcome({ text: 'done', isError: false }, why, { cwd: null, error: 'no worker' }).text).toContain(
      'no new bash session could be started yet (no worker); the next command will try again',
    );
    expect(movedBeforeOutcome({ text: 'hi', isError: false }, why, '/w/x')).toEqual({
      text: '[before this command ran, the bash session was restarted because its worker was shut down (SIGTERM): the command ran in a new bash session in /w/x on another worker; shell variables, functions, aliases and background jobs from before are gone]\nhi',
      isError: true,
    });
  });
});
