/**
 * `agent-jobs watch` as a person sees it in a real terminal (tmux, on a
 * private socket): Claude's answer appears while it streams, a spinner with
 * the elapsed time while the run waits on Claude or a command, the inline
 * approval prompt, a key press that approves, the command's run time. Next
 * to it, the same run watched without a terminal prints plain lines (no
 * spinner, no control sequences) and `--json` prints `partial` events.
 */
import { userInfo } from 'node:os';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { workspaceFolderName } from '../../src/activities/session';
import { transcriptQuery } from '../../src/contract';
import { PROMPT_TEXT } from '../../src/cli/approval-prompt';
import { SPINNER_FRAMES } from '../../src/cli/live-line';
import { cli, spawnCli } from './cli-process';
import { release, TestBed, toolUse, UNTIL_GO, waitFor } from './harness';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'bin', 'agent-jobs.js');
/** A private tmux server for this file: its own socket name, killed in afterAll. */
const SOCKET = `agent-jobs-watch-tty-${process.pid}`;
const SESSION = 'watch';

/** Forty 16-character words: the answer streams as forty deltas, 300 ms apart (about 12 s, so several heartbeats land mid-answer). */
const WORDS = Array.from({ length: 40 }, (_, i) => `streamed-w${String(i).padStart(2, '0')}-ok `);
const ANSWER = WORDS.join('').trimEnd();
/** Notes when it started (ms since the epoch), then runs until the test has seen the spinner for it (see UNTIL_GO). */
const COMMAND = `date +%s%3N > started; ${UNTIL_GO}; echo slept-ok`;

function tmux(...args: string[]): string {
  return execFileSync('tmux', ['-u', '-L', SOCKET, ...args], { encoding: 'utf8' });
}

/** The visible screen of the watch pane, as text (tmux's rendering: no escape sequences). */
function screen(session = SESSION): string {
  return tmux('capture-pane', '-p', '-t', session);
}

/**
 * Waits until the screen of `session` passes `test` (read every 100 ms) and returns it.
 * @throws Error with the last screen, when it did not within `timeoutMs`
 */
async function seenOn(
  session: string,
  what: string,
  test: (s: string) => boolean,
  timeoutMs = 30_000,
  each?: (s: string) => void,
): Promise<string> {
  let last = '';
  try {
    return await waitFor(
      what,
      () => {
        last = screen(session);
        each?.(last);
        return test(last) ? last : null;
      },
      timeoutMs,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; the screen:\n${last}`, { cause: err });
  }
}

/** Any raw ESC, CSI or carriage return: what the plain output must never hold. */
const RAW_CONTROL = /[\x1b\x9b\r]/;
const SPINNER = new RegExp(`[${SPINNER_FRAMES.join('')}]`);

/** Starts `watch <id>` in a new tmux session of the private server; the pane stays after it exits, with its exit code. */
function watchInTerminal(session: string, address: string, id: string): void {
  const args = ['new-session', '-d', '-s', session, '-x', '200', '-y', '50', '-c', ROOT, '-e', `TEMPORAL_ADDRESS=${address}`];
  tmux(...args, `${process.execPath} ${CLI} watch ${id}; echo "[watch exited $?]"; sleep 600`);
}

describe('watch in a terminal', () => {
  // One bed at a time: the workers of another bed poll the same queues and would answer with another script.
  const beds: TestBed[] = [];
  afterEach(async () => {
    for (const b of beds.splice(0)) await b.close();
  });
  afterAll(() => {
    try {
      tmux('kill-server');
    } catch {
      /* never started */
    }
  });

  test('partial answer while it streams, spinner, inline prompt, approve with a key, duration; plain lines without a TTY', async () => {
    const bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [{ type: 'text', text: ANSWER }, toolUse('toolu_sleep', COMMAND)],
            stop_reason: 'tool_use',
            delta_delay_ms: 300,
          },
          { content: [{ type: 'text', text: 'All done after the nap.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    beds.push(bed);
    const handle = await bed.start({ task: 'stream slowly, then nap', approval: 'always' });
    const id = handle.workflowId;

    watchInTerminal(SESSION, bed.address, id);
    // The same run, watched with pipes for stdout and stdin (no TTY), in text and JSON.
    const plain = spawnCli(bed.address, ['watch', id]);
    const json = cli(bed.address, 'watch', id, '--json');

    // Every screen seen, in order, until the prompt shows.
    const screens: string[] = [];
    const seen = (what: string, test: (s: string) => boolean, timeoutMs = 30_000): Promise<string> =>
      seenOn(SESSION, what, test, timeoutMs, (s) => {
        if (screens[screens.length - 1] !== s) screens.push(s);
      });

    // Claude's answer appears on the live line before the message is complete (no `claude:` line yet).
    const partial = await seen('the partial answer on the live line', (s) => /claude is writing… \(\d+s\) {2}.*streamed-w\d\d-ok/.test(s));
    expect(partial).not.toContain('claude: streamed-w00-ok');
    const shownWords = [...partial.matchAll(/streamed-w(\d\d)-ok/g)].map((m) => Number(m[1]));
    expect(Math.max(...shownWords)).toBeLessThan(WORDS.length - 1); // the end of the answer had not streamed yet

    // The message replaces the live line; then the command waits and the prompt shows.
    const prompted = await seen('the inline prompt', (s) => s.includes(PROMPT_TEXT.trimEnd()));
    expect(prompted).toContain(`claude: ${ANSWER.slice(0, 60)}`);
    expect(prompted).toContain(`⏸ waiting for approval: ${COMMAND}    [toolu_sleep]`);
    expect(prompted).not.toContain('claude is writing…');
    // A spinner with the elapsed time was drawn while the run waited on Claude.
    expect(screens.some((s) => new RegExp(`${SPINNER.source} (waiting on claude|claude is writing…) \\(\\d+s\\)`).test(s))).toBe(true);

    // The plain watch shows the wait too before it ends (a CLI process slow to start on a busy machine
    // would otherwise first see the run after the approval, and print no hint).
    await waitFor(
      'the plain watch to print the approve hint',
      () => plain.stdout().includes(`  approve: agent-jobs approve ${id} --sha `) || null,
      60_000,
    );
    // The key press approves: decide() sends the full hash of the command shown.
    tmux('send-keys', '-t', SESSION, 'a');
    const approved = await seen(
      'the approval confirmed',
      (s) => s.includes(`approved toolu_sleep by ${userInfo().username}: ${COMMAND}`),
      15_000,
    );
    expect(approved).toContain(`${PROMPT_TEXT.trimEnd()} a`);
    await seen('the spinner while the command runs', (s) => new RegExp(`${SPINNER.source} running command \\(\\d+s\\)`).test(s), 15_000);
    const ws = path.join(bed.workspaces, workspaceFolderName(id));
    const startedAt = await waitFor('the command to start', () => Number(readFileSync(path.join(ws, 'started'), 'utf8').trim()) || null);
    const releasedAt = release(ws);
    const ended = await seen('watch to exit', (s) => s.includes('[watch exited 0]'), 30_000);
    expect(ended).toMatch(/run .* ended: completed after 2 turns/);
    expect(ended).toContain('final answer: All done after the nap.');
    expect(ended).toContain('    slept-ok');
    expect(bed.audit().map((a) => a.command)).toEqual([COMMAND]);
    const decisions = (await bed.status(handle)).decisions;
    expect(decisions).toEqual([expect.objectContaining({ toolUseId: 'toolu_sleep', approved: true })]);
    // No live line is left behind on the screen.
    expect(ended).not.toMatch(new RegExp(`${SPINNER.source} `));

    // The run time is shown exactly when the run published it in the transcript query (durationsMs).
    const durations = (await handle.query(transcriptQuery, 0)).durationsMs ?? {};
    if (durations['toolu_sleep'] !== undefined) {
      // The command ran at least from its start to its release by the test.
      expect(durations['toolu_sleep']).toBeGreaterThanOrEqual(releasedAt - startedAt);
      expect(ended).toMatch(/→ result for toolu_sleep \(exit 0, \d+\.\d s\):/);
    } else {
      expect(ended).toContain('→ result for toolu_sleep:');
    }

    // Without a TTY: the same events as plain lines, the hint instead of the prompt, nothing drawn in place.
    const p = { code: await plain.exited, stdout: plain.stdout() };
    expect(p.code).toBe(0);
    expect(RAW_CONTROL.test(p.stdout)).toBe(false);
    expect(SPINNER.test(p.stdout)).toBe(false);
    expect(p.stdout).not.toContain('claude is writing');
    expect(p.stdout).not.toContain(PROMPT_TEXT.trimEnd());
    expect(p.stdout).toContain(`claude: ${ANSWER}\n`);
    expect(p.stdout).toContain(`  approve: agent-jobs approve ${id} --sha `);
    expect(p.stdout).toMatch(/run .* ended: completed after 2 turns/);

    // --json: partial events carry the end of the answer so far, before its message event.
    const j = await json;
    expect(j.code).toBe(0);
    expect(RAW_CONTROL.test(j.stdout)).toBe(false);
    const events = j.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; text?: string; index?: number });
    const firstPartial = events.findIndex((e) => e.event === 'partial');
    const answerMessage = events.findIndex((e) => e.event === 'message' && e.index === 1);
    expect(firstPartial).toBeGreaterThanOrEqual(0);
    expect(firstPartial).toBeLessThan(answerMessage);
    const partials = events.filter((e) => e.event === 'partial').map((e) => e.text!);
    // Each is a prefix of the answer (it is shorter than the 2,000-character cap); one came mid-answer
    // (the last may hold all of it: the text is complete while the tool_use input still streams).
    for (const text of partials) expect(ANSWER.startsWith(text)).toBe(true);
    expect(partials.some((text) => text.length < ANSWER.length)).toBe(true);
  });

  test('omitted thinking (empty text, slow stream): a steady "thinking" line whose seconds go up, then the text', async () => {
    const bed = await TestBed.create({
      script: {
        responses: [
          {
            // At display "omitted" a thinking block streams no text: one empty thinking_delta, then its signature.
            content: [
              { type: 'thinking', thinking: '' },
              // One delta (16 characters): only the thinking needs to take its time, not the answer after it.
              { type: 'text', text: 'Thought it over.' },
            ],
            stop_reason: 'end_turn',
            delta_delay_ms: 4_000,
          },
        ],
      },
    });
    beds.push(bed);
    const handle = await bed.start({ task: 'think quietly', approval: 'always' });
    const session = 'think-omitted';
    watchInTerminal(session, bed.address, handle.workflowId);
    const json = cli(bed.address, 'watch', handle.workflowId, '--json');
    const thinkingLine = /claude is thinking… \((\d+)s\)[ 	]*$/m;
    const first = await seenOn(session, 'the thinking line', (s) => thinkingLine.test(s));
    const firstSeconds = Number(thinkingLine.exec(first)![1]);
    expect(first).not.toContain('claude: Thought it over');
    // The line stays and its seconds are redrawn as they pass, with nothing else on it.
    const later = await seenOn(
      session,
      'the thinking seconds going up',
      (s) => Number(thinkingLine.exec(s)?.[1] ?? -1) > firstSeconds,
      10_000,
    );
    expect(later).not.toContain('waiting on claude');
    const ended = await seenOn(session, 'watch to exit', (s) => s.includes('[watch exited 0]'), 40_000);
    expect(ended).toContain('claude: Thought it over.');
    expect(ended).not.toContain('claude is thinking');
    const events = (await json).stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event: string; chars?: number; text?: string; since?: string });
    const thinking = events.filter((e) => e.event === 'thinking');
    expect(thinking.length).toBeGreaterThanOrEqual(1);
    for (const e of thinking) expect(e).toMatchObject({ chars: 0, text: '', since: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
  });

  test('summarized thinking: its text streams on the live line before the answer', async () => {
    const THOUGHT = Array.from({ length: 30 }, (_, i) => `pondering-w${String(i).padStart(2, '0')}-ok `).join('');
    const bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [
              { type: 'thinking', thinking: THOUGHT },
              { type: 'text', text: 'Decided after pondering.' },
            ],
            stop_reason: 'end_turn',
            delta_delay_ms: 300,
          },
        ],
      },
    });
    beds.push(bed);
    const handle = await bed.start({ task: 'think aloud', approval: 'always' });
    const session = 'think-summarized';
    watchInTerminal(session, bed.address, handle.workflowId);
    const shown = await seenOn(session, 'the thinking summary on the live line', (s) =>
      /claude is thinking… \(\d+s\) {2}.*pondering-w\d\d-ok/.test(s),
    );
    expect(shown).not.toContain('claude: Decided');
    const words = [...shown.matchAll(/pondering-w(\d\d)-ok/g)].map((m) => Number(m[1]));
    expect(Math.max(...words)).toBeLessThan(29); // the thinking had not finished streaming
    const ended = await seenOn(session, 'watch to exit', (s) => s.includes('[watch exited 0]'), 40_000);
    expect(ended).toContain('claude: Decided after pondering.');
    expect(ended).not.toContain('claude is thinking');
  });

  test('deny through the prompt: the reason typed reaches Claude; enter on a later prompt keeps watching', async () => {
    const bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_rm', 'rm -rf build')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_ls', 'ls')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'Left build alone.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    beds.push(bed);
    const handle = await bed.start({ task: 'clean up', approval: 'always' });
    const session = 'deny';
    watchInTerminal(session, bed.address, handle.workflowId);
    const seen = (what: string, test: (s: string) => boolean): Promise<string> => seenOn(session, what, test);

    await seen('the prompt for rm', (s) => s.includes('[toolu_rm]') && s.trimEnd().endsWith(PROMPT_TEXT.trimEnd()));
    tmux('send-keys', '-t', session, 'd');
    await seen('the reason question', (s) => s.includes('reason (sent to Claude):'));
    tmux('send-keys', '-t', session, '-l', 'keep the build');
    tmux('send-keys', '-t', session, 'Enter');
    await seen('the denial confirmed', (s) => s.includes(`denied toolu_rm by ${userInfo().username} (keep the build): rm -rf build`));

    // The next command's prompt: enter dismisses it and prints how to decide from elsewhere.
    await seen('the prompt for ls', (s) => s.includes('[toolu_ls]') && s.trimEnd().endsWith(PROMPT_TEXT.trimEnd()));
    tmux('send-keys', '-t', session, 'Enter');
    await seen('the hint after enter', (s) => s.includes(`approve: agent-jobs approve ${handle.workflowId} --sha`));
    expect((await bed.status(handle)).pendingApproval?.toolUseId).toBe('toolu_ls');
    const approved = await cli(bed.address, 'approve', handle.workflowId);
    expect(approved.code).toBe(0);
    const ended = await seen('watch to exit', (s) => s.includes('[watch exited 0]'));
    expect(ended).toContain('! result for toolu_rm (error');
    expect(ended).toContain('Command not run: denied by');
    expect(ended).toContain('Reason: keep the build.');
    expect(bed.audit().map((a) => a.command)).toEqual(['ls']);
    expect(bed.resultsSentIn(1)).toEqual([
      expect.objectContaining({ tool_use_id: 'toolu_rm', is_error: true, content: expect.stringContaining('Reason: keep the build.') }),
    ]);
  });
});
