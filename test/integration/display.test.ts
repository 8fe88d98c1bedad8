/**
 * "What the human sees is what runs" (docs/security.md), end to end: a real dev
 * server, a real worker and the scripted model, which asks for a command
 * holding a carriage return, an ANSI erase-line and a right-to-left override
 * under approval `always`. status (JSON and text), watch, transcript and the
 * UI's summaries and details show it escaped, with warnings and its hash;
 * a decision bound to another hash is refused by the CLI (`--sha`) or
 * ignored by the run (signal); the approval of the hash shown runs it.
 *
 * Then look-alikes and invisible code points under approval `policy`: a
 * "quoted" `$(...)` (U+2018 / U+2019, which bash reads as letters, so it runs
 * the substitution), a fullwidth `＃` "comment", a zero-width joiner inside
 * `rm` and a Hangul filler for a space. `status`, `pending`, `watch` and the
 * UI's summaries and details show them escaped and flagged, the model's
 * text (the command, the policy's reason) only in code spans; a `by` of
 * U+200B is refused, and one of U+3164 in the `approve` signal is dropped.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { approveSignal } from '../../src/contract';
import { isDefaultIgnorable } from '../../src/shared/display';
import { sha256 } from '../../src/shared/sha256';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { cli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';
import { boundTo } from './steering-helpers';

const EventType = temporal.api.enums.v1.EventType;

/** Looks like `echo safe > ran.txt` on a terminal whatever follows; the rest is a bash comment. */
const COMMAND = 'echo safe > ran.txt #\r\x1b[2K\u202e txt.live';
const DISPLAY = 'echo safe > ran.txt #\\r\\x1b[2K\\u202e txt.live';
const WARNINGS = [
  'contains a carriage return (\\r)',
  'contains an escape character (\\x1b, starts terminal escape sequences)',
  'contains bidi control U+202E',
];
const SHA = sha256(COMMAND);
const SHORT = SHA.slice(0, 12);
const LENGTH = Array.from(COMMAND).length;

/** Characters that must never reach a terminal raw (line breaks and tabs are fine in text output). */
const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u200b-\u200f\u202a-\u202e\u2066-\u2069]/;

describe('commands shown escaped and approvals bound to their hash', () => {
  let bed: TestBed;
  afterAll(async () => bed?.close());

  test('\\r, ESC and U+202E under approval always: shown escaped everywhere; a wrong hash approves nothing; the right one runs it', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [{ type: 'text', text: 'Running \x1b[31mthis\x1b[0m now.' }, toolUse('toolu_x', COMMAND)], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const a = bed.address;
    const id = `display-${Date.now()}`;
    // Started through the bed so its history is replayed (and saved with AGENT_JOBS_SAVE_HISTORIES=1).
    const handle = await bed.start({ task: 'hide a command', approval: 'always' }, 'display-escaped', id);
    const ranTxt = path.join(bed.workspaces, id, 'ran.txt');

    // status --json: the raw command (as JSON escapes), its display, warnings and full hash; details escaped too.
    const json = await waitFor('approval pending', async () => {
      const r = await cli(a, 'status', id, '--json');
      return (JSON.parse(r.stdout) as { status: string }).status === 'awaiting_approval' ? r.stdout : null;
    });
    expect(RAW.test(json)).toBe(false);
    const status = JSON.parse(json) as { pendingApproval: unknown; details: string };
    expect(status.pendingApproval).toEqual({
      toolUseId: 'toolu_x',
      wait: 1,
      // The run a decision names (an encrypted run requires it).
      runId: (await handle.describe()).runId,
      command: COMMAND,
      requestedAt: expect.any(String),
      display: DISPLAY,
      warnings: WARNINGS,
      commandSha256: SHA,
    });
    expect(status.details).toContain(
      `waiting for approval of \`${DISPLAY}\` (${LENGTH} characters, sha256 ${SHORT}; ⚠ \`${WARNINGS.join('; ')}\`) (tool_use \`toolu_x\`; \`approval mode is always\`)`,
    );

    // status for people: the escaped command, one warning a line, the hash, and the approve line bound to it.
    const text = await cli(a, 'status', id);
    expect(text.code).toBe(0);
    expect(RAW.test(text.stdout)).toBe(false);
    expect(text.stdout).toContain(`  pending approval: ${DISPLAY}  [toolu_x, since `);
    for (const w of WARNINGS) expect(text.stdout).toContain(`    ⚠ ${w}\n`);
    expect(text.stdout).toContain(`    sha256 ${SHORT} · ${LENGTH} characters\n`);
    expect(text.stdout).toContain(`agent-jobs approve ${id} --sha ${SHORT}`);

    // approve --sha that is not the pending command's hash: refused, nothing sent, nothing run.
    const notHex = await cli(a, 'approve', id, '--sha', 'wrongprefix');
    expect(notHex.code).toBe(1);
    expect(notHex.stderr).toMatch(/--sha.*wrongprefix.*hex digits/);
    const other = `${SHA[0] === '0' ? '1' : '0'}${SHA.slice(1, 12)}`;
    const wrong = await cli(a, 'approve', id, '--sha', other);
    expect(wrong).toMatchObject({ code: 1, stdout: '' });
    expect(wrong.stderr).toBe(
      `agent-jobs: the pending command (toolu_x, sha256 ${SHORT}) is not the one you reviewed (sha256 ${other}…); nothing was approved\nhint: review it with \`agent-jobs status ${id}\` and pass the hash it shows\n`,
    );
    expect((await cli(a, 'deny', id, '--sha', other, '--reason', 'x')).code).toBe(1);

    // A signal bound to other bytes (the run and wait it names are the pending ones) is ignored by the run: the command
    // still waits after the run has handled it.
    await handle.signal(approveSignal, {
      toolUseId: 'toolu_x',
      approved: true,
      by: 'mallory',
      ...boundTo((await bed.status(handle)).pendingApproval),
      commandSha256: sha256('echo safe > ran.txt'),
    });
    await waitFor('the signal handled by a workflow task', async () => {
      const events = (await handle.fetchHistory()).events ?? [];
      const signalled = events.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
      return signalled >= 0 && events.slice(signalled).some((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED);
    });
    const after = await bed.status(handle);
    expect(after).toMatchObject({ status: 'awaiting_approval', pendingApproval: { toolUseId: 'toolu_x' }, decisions: [] });
    expect(bed.audit()).toEqual([]);
    expect(existsSync(ranTxt)).toBe(false);

    // The approval of the hash shown: confirmed with the escaped command and its hash, and the exact bytes run.
    const approved = await cli(a, 'approve', id, '--sha', SHORT, '--by', 'tester');
    expect(approved.code).toBe(0);
    expect(RAW.test(approved.stdout)).toBe(false);
    expect(approved.stdout).toMatch(
      new RegExp(`^approved toolu_x in ${id} by tester: ${DISPLAY.replace(/[\\[\]]/g, '\\$&')}\n  ⚠ contains a carriage return`),
    );
    expect(approved.stdout).toContain(`\n  sha256 ${SHORT} · ${LENGTH} characters\n`);
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((x) => x.command)).toEqual([COMMAND]);
    expect(existsSync(ranTxt)).toBe(true);
    const final = await bed.status(handle);
    expect(final.decisions).toEqual([
      expect.objectContaining({ toolUseId: 'toolu_x', approved: true, by: 'tester', commandSha256: SHA, hashChecked: true }),
    ]);

    // watch and transcript: the command escaped with its warnings and hash, Claude's escape sequences shown, not obeyed.
    const watched = await cli(a, 'watch', id);
    expect(watched.code).toBe(0);
    expect(RAW.test(watched.stdout)).toBe(false);
    expect(watched.stdout).toContain('claude: Running \\x1b[31mthis\\x1b[0m now.');
    expect(watched.stdout).toContain(`claude asks to run: ${DISPLAY}    [toolu_x]\n    ⚠ ${WARNINGS[0]}\n`);
    expect(watched.stdout).toContain(`    sha256 ${SHORT} · ${LENGTH} characters\n`);
    const watchedJson = await cli(a, 'watch', id, '--json');
    expect(RAW.test(watchedJson.stdout)).toBe(false);
    const events = watchedJson.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; message?: { content: unknown } });
    expect(JSON.stringify(events)).toContain(JSON.stringify(COMMAND)); // JSON keeps the exact bytes
    const transcript = await cli(a, 'transcript', id);
    expect(RAW.test(transcript.stdout)).toBe(false);
    expect(transcript.stdout).toContain(`claude asks to run: ${DISPLAY}    [toolu_x]`);

    // The UI: the command's activity summary, escaped, key part first.
    // Encrypted like every payload: read through the codec.
    const summaries = ((await decodedHistory(await handle.fetchHistory())).events ?? [])
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => JSON.parse(Buffer.from(e.userMetadata!.summary!.data!).toString()) as string);
    expect(summaries).toContain(`bash #1: \`${DISPLAY}\``);
    expect(summaries.every((s) => !RAW.test(s) && Array.from(s).length < 100)).toBe(true);
  });
});

/** Looks like `echo '$(...)' # ...`: a quoted string and a comment; bash runs the substitution (the quotes are letters to it). */
const LOOKALIKE_COMMAND = 'echo \u2018$(echo PWNED > pwned.txt)\u2019 \uff03 r\u200dm\u3164x';
const LOOKALIKE_DISPLAY = 'echo \\u2018$(echo PWNED > pwned.txt)\\u2019 \\uff03 r\\u200dm\\u3164x';
/** Every look-alike and invisible character of the command: none may reach a person raw. */
const HIDDEN = /\u2018|\u2019|\uff03|\u200d|\u3164|\u200b/;

/** The text around the first raw look-alike or invisible character of `text` (for the failure message), or null. */
function hiddenIn(text: string): string | null {
  const i = text.search(HIDDEN);
  return i < 0 ? null : JSON.stringify(text.slice(Math.max(0, i - 40), i + 40));
}

/** Whether `text` holds a raw default-ignorable code point. */
function hasIgnorable(text: string): boolean {
  return Array.from(text).some((ch) => isDefaultIgnorable(ch.codePointAt(0)!));
}

describe('look-alikes and invisible code points', () => {
  let bed: TestBed;
  afterAll(async () => bed?.close());

  test('shown escaped and flagged in status, pending, watch and the UI; model text only in code spans; invisible by names refused or dropped', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_y', LOOKALIKE_COMMAND)], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const a = bed.address;
    const id = `display-lookalikes-${Date.now()}`;
    const handle = await bed.start({ task: 'show\u200b look-alikes', approval: 'policy' }, 'display-lookalikes', id);
    const sha = sha256(LOOKALIKE_COMMAND);

    const json = await waitFor('approval pending', async () => {
      const r = await cli(a, 'status', id, '--json');
      return (JSON.parse(r.stdout) as { status: string }).status === 'awaiting_approval' ? r.stdout : null;
    });
    expect(hiddenIn(json)).toBeNull();
    const status = JSON.parse(json) as { pendingApproval: { display: string; warnings: string[] }; details: string };
    expect(status.pendingApproval.display).toBe(LOOKALIKE_DISPLAY);
    expect(status.pendingApproval.warnings).toEqual([
      'contains 3 look-alikes of shell characters: U+2018 of "\'", U+2019 of "\'", U+FF03 of "#" (to bash ordinary letters, not what they look like)',
      'contains zero-width character U+200D',
      'contains invisible character U+3164',
    ]);
    // The UI's current details: the command and the policy's reason each in one code span, the warnings too; nothing raw.
    expect(hasIgnorable(status.details)).toBe(false);
    expect(status.details).toContain(`waiting for approval of \`${LOOKALIKE_DISPLAY}\` (`);
    expect(status.details).toMatch(/; ⚠ `contains 3 look-alikes[^`]*`\) \(tool_use `toolu_y`; `non-ASCII character U\+2018 [^`\n]+`\)$/);

    // status and watch for people: escaped, one ⚠ line per warning, the hash.
    const text = await cli(a, 'status', id);
    expect(hiddenIn(text.stdout)).toBeNull();
    expect(text.stdout).toContain(`  pending approval: ${LOOKALIKE_DISPLAY}  [toolu_y, since `);
    expect(text.stdout).toContain('    ⚠ contains 3 look-alikes of shell characters: U+2018 of "\'"');
    // pending: the wait named by its kind (visibility holds no command text, nor its hash), never the command's text.
    const pending = await waitFor('listed by pending', async () => {
      const r = await cli(a, 'pending');
      return r.stdout.includes(id) ? r.stdout : null;
    });
    expect(hiddenIn(pending)).toBeNull();
    expect(pending).toContain('approval of bash');
    expect(pending).not.toContain(sha.slice(0, 12));

    // A by nobody can see: refused by the Update's validator, with the reason; nothing approved.
    const invisible = await cli(a, 'approve', id, '--sha', sha.slice(0, 12), '--by', '\u200b');
    expect(invisible.code).toBe(1);
    expect(invisible.stderr).toContain('by may hold only letters');
    const filler = await cli(a, 'approve', id, '--sha', sha.slice(0, 12), '--by', '\u3164');
    expect(filler.code).toBe(1);
    expect(filler.stderr).toContain('by must be a name a person can see');
    expect(hiddenIn(filler.stderr)).toBeNull();
    expect((await bed.status(handle)).decisions).toEqual([]);

    // The approve signal with the Hangul filler as its by: the decision applies, the name is dropped.
    await handle.signal(approveSignal, {
      toolUseId: 'toolu_y',
      approved: true,
      by: '\u3164',
      ...boundTo((await bed.status(handle)).pendingApproval),
    });
    expect((await handle.result()).status).toBe('completed');
    const final = await bed.status(handle);
    expect(final.decisions).toEqual([
      expect.objectContaining({ toolUseId: 'toolu_y', approved: true, source: 'signal', commandSha256: sha }),
    ]);
    expect(final.decisions[0]).not.toHaveProperty('by');
    // What ran is what was shown escaped: bash ran the substitution inside the "quotes".
    expect(bed.audit().map((x) => x.command)).toEqual([LOOKALIKE_COMMAND]);
    expect(existsSync(path.join(bed.workspaces, id, 'pwned.txt'))).toBe(true);
    const watched = await cli(a, 'watch', id);
    // The command's output is text, not a command: its look-alikes stay (they bind nothing), its invisible characters do not.
    expect(hasIgnorable(watched.stdout)).toBe(false);
    expect(watched.stdout).toContain('\n    \u2018\u2019 \uff03 r\\u200dm\\u3164x\n');
    expect(
      hiddenIn(
        watched.stdout
          .split('\n')
          .filter((l) => l.includes('asks to run'))
          .join('\n'),
      ),
    ).toBeNull();
    expect(watched.stdout).toContain(`claude asks to run: ${LOOKALIKE_DISPLAY}    [toolu_y]\n    ⚠ contains 3 look-alikes`);

    // The history the UI reads: every summary (activities, timers, the run's static summary and details) without a raw
    // invisible or look-alike character, the command inside a code span (read through the codec, as the UI does with the codec server).
    const events = (await decodedHistory(await handle.fetchHistory())).events ?? [];
    const texts = events.flatMap((e) =>
      [e.userMetadata?.summary, e.userMetadata?.details]
        .filter((p) => p?.data)
        .map((p) => JSON.parse(Buffer.from(p!.data!).toString()) as string),
    );
    expect(texts.length).toBeGreaterThan(3);
    for (const t of texts) expect([t, hasIgnorable(t) || HIDDEN.test(t)]).toEqual([t, false]);
    expect(texts).toContain(`bash #1 (policy): \`${LOOKALIKE_DISPLAY}\``);
    expect(texts).toContain(`bash #1: \`${LOOKALIKE_DISPLAY}\``);
    // The task's escape in the run's static summary: its backslash written `\\` in the markdown source, which the UI
    // renders as one (markdownBackslashes), so the page shows `\u200b` and the typed text `\u200b` would show `\\u200b`.
    expect(texts.some((t) => t.startsWith('show\\\\u200b look-alikes'))).toBe(true);
  });
});
