/**
 * "What the human sees is what runs" (README, Security), end to end: a real dev
 * server, a real worker and the scripted model, which asks for a command
 * holding a carriage return, an ANSI erase-line and a right-to-left override
 * under approval `always`. status (JSON and text), watch, transcript and the
 * UI's summaries and details show it escaped, with warnings and its hash;
 * a decision bound to another hash is refused by the CLI (`--sha`) or
 * ignored by the run (signal); the approval of the hash shown runs it.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { temporal } from '@temporalio/proto';
import { approveSignal } from '../../src/contract';
import { sha256 } from '../../src/contract/sha256';
import { decodedHistory } from '../../src/testing/history-codec';
import { cli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';

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
      command: COMMAND,
      requestedAt: expect.any(String),
      display: DISPLAY,
      warnings: WARNINGS,
      commandSha256: SHA,
    });
    expect(status.details).toContain(
      `waiting for approval of \`${DISPLAY}\` (${LENGTH} characters, sha256 ${SHORT}; ⚠ ${WARNINGS.join('; ')})`,
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

    // A signal bound to other bytes is ignored by the run: the command still waits after the run has handled it.
    await handle.signal(approveSignal, {
      toolUseId: 'toolu_x',
      approved: true,
      by: 'mallory',
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
    expect(summaries).toContain(`bash #1: ${DISPLAY}`);
    expect(summaries.every((s) => !RAW.test(s) && Array.from(s).length < 100)).toBe(true);
  });
});
