/**
 * Following a run live until it ends, for `watch` and `start --follow` (and
 * the demo): polls the run, prints what is new through src/cli/render/, and
 * returns the final view.
 *
 * On a terminal (stdout a TTY, not `--json`) one line at the bottom is
 * redrawn in place (src/cli/live-line.ts): a spinner with the elapsed time
 * while the run waits on Claude or a command, and Claude's answer while it
 * streams (the partial text of the model call's last heartbeat, read from
 * `describe()`), replaced by the message once it is in the transcript. With
 * `prompt` and stdin a TTY too, a command waiting for approval gets an
 * inline prompt (src/cli/approval-prompt.ts). Without a TTY the output is
 * plain lines; `json` prints one JSON object per event.
 */
import { asTyped } from './invocation';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  NoAnswerError,
  NoWorkerError,
  isServerUnavailable,
  type AgentJobsClient,
  type DecideOptions,
  type RunHandle,
  type RunView,
} from '../client';
import { isToolResult } from '../contract';
import type { AppliedDecision, PendingApproval } from '../contract';
import { askDecision, type InlineDecision, type PromptTerminal } from './approval-prompt';
import { currentActivity, type LostAnswer } from './activity-progress';
import { toCliError } from './errors';
import { LiveLine } from './live-line';
import {
  decisionLines,
  hintLine,
  interruptedLines,
  liveStatusOf,
  lostLine,
  retryLine,
  retryOf,
  statusLine,
  waitingLine,
} from './render/events';
import { describeMessage, hanging } from './render/messages';
import { editDecisionLines, gitAtCloseLines, pendingCommandDisplay, statusJson } from './render/run';
import { commandLines, jsonText, oneLine, shownText, terminalText } from './render/text';

/** Exit code for a run that ended: 0 when it completed, 1 for any other end (failed, cancelled, budgets, refusal). */
export function exitCodeOf(view: RunView): number {
  return view.status === 'completed' ? 0 : 1;
}

/** Options of {@link watchRun}. */
export interface WatchOptions {
  /** JSON lines instead of text. */
  json: boolean;
  /** Time between polls, in ms. @default 1000 */
  intervalMs?: number;
  /** Called once per pending approval, after it was printed; the watch goes on when it resolves (the demo approves from here). */
  onPendingApproval?: (pending: PendingApproval) => Promise<void>;
  /**
   * The live line (spinner, elapsed time, Claude's partial answer), drawn
   * with carriage returns: only ever on a TTY, never with `json`.
   * @default true (so: whenever stdout is a TTY and `json` is off)
   */
  live?: boolean;
  /**
   * The inline approval prompt, when stdin and stdout are both TTYs and
   * `json` is off; `onPendingApproval` runs first. `watch` turns it on
   * (`--no-prompt` off), `start --follow` and the demo leave it off.
   * @default false
   */
  prompt?: boolean;
  /** Stops the watch (Ctrl-C): {@link watchRun} then returns null; the run goes on. */
  signal?: AbortSignal;
}

/**
 * Why the watch cannot read the run right now, when that is something to
 * wait out rather than fail on: no worker polls, a worker did not answer in
 * time (slow, stopped, restarting), or the Temporal server does not answer
 * (the connection reconnects by itself). Null for any other error.
 */
export function waitingReason(err: unknown): { on: 'worker' | 'server'; reason: string } | null {
  if (err instanceof NoWorkerError || err instanceof NoAnswerError) return { on: 'worker', reason: err.message };
  if (isServerUnavailable(err)) return { on: 'server', reason: 'the Temporal server does not answer' };
  return null;
}

/**
 * Watches `workflowId` as {@link watchRun} does, and stops on Ctrl-C
 * (SIGINT) with {@link interruptedLines} on stderr and exit code 130.
 * @returns the final view, or null when interrupted
 */
export async function watchUntilInterrupted(jobs: AgentJobsClient, workflowId: string, opts: WatchOptions): Promise<RunView | null> {
  const stop = new AbortController();
  const onSigint = (): void => stop.abort();
  process.once('SIGINT', onSigint);
  try {
    const view = await watchRun(jobs, workflowId, { ...opts, signal: stop.signal });
    if (view === null) {
      process.stderr.write(`\n${interruptedLines(workflowId).join('\n')}\n`);
      process.exitCode = 130;
    }
    return view;
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/**
 * Prints a run's new messages, approvals and final result as they happen
 * (text, or JSON lines with `json`), polling every `intervalMs`. On a TTY
 * it also draws the live line and, with `prompt`, asks for the approval
 * inline (see {@link WatchOptions}).
 *
 * JSON events, one object per line: `message` (`index`, `message`,
 * `durationMs` of a command whose result it holds, when the run published
 * it), `pending_approval` (the pending approval's fields), `partial`
 * (`text`: the end of Claude's answer so far, at most 2,000 characters;
 * each supersedes the one before, and the `message` follows once the answer
 * is complete; only when it changed since the last poll), `thinking`
 * (`since`, ISO time the thinking started; `chars` of thinking streamed, 0
 * when omitted; `text`, the end of the summarized thinking, at most 1,000
 * characters; when one of them changed), `partial_dropped` (`attempt`,
 * `outputChars`, `thinkingChars`, `reason`: that attempt's partial answer
 * is gone, the call is tried again; the `partial` events before it are
 * void; once per attempt), `retrying` (`attempt`, `reason`: the model call
 * failed and Temporal tries it again; once per attempt), `note`, `waiting` (`on`: `worker` or `server`,
 * `reason`: the watch cannot read the run now and keeps trying; once per
 * spell), `reconnected` (it can again) and a final `result` (the `status --json` shape).
 *
 * A worker that is slow to answer (a query past its 10 s deadline), gone or
 * restarting, and a Temporal server that does not answer, do not end the
 * watch: it prints `waiting` and asks again every `intervalMs`.
 * @returns the final view once the run has ended; null when `signal` stopped the watch
 * @throws WorkflowNotFoundError for an unknown id; any error that is not one to wait out
 */
export async function watchRun(jobs: AgentJobsClient, workflowId: string, opts: WatchOptions): Promise<RunView | null> {
  const run = jobs.run(workflowId);
  const signal = opts.signal;
  const stopped = new Promise<never>((_, reject) => {
    if (!signal) return;
    const abort = (): void => reject(new WatchStopped());
    if (signal.aborted) abort();
    else signal.addEventListener('abort', abort, { once: true });
  });
  stopped.catch(() => undefined);
  /** `p`, or WatchStopped as soon as the signal fires. */
  const until = <T>(p: Promise<T>): Promise<T> => (signal ? Promise.race([p, stopped]) : p);
  const live = opts.live !== false && !opts.json && process.stdout.isTTY === true ? new LiveLine(process.stdout) : null;
  const term: PromptTerminal | null =
    opts.prompt === true && live && process.stdin.isTTY === true ? { input: process.stdin, output: process.stdout } : null;
  /** Prints `text`: raw lines (`shown` false), or lines whose parts are already escaped (commandLines, describeMessage). */
  const emit = (event: Record<string, unknown>, text: string[], shown = false): void => {
    const out = shown ? shownText(text.join('\n')) : terminalText(text.join('\n'));
    if (opts.json) process.stdout.write(`${jsonText(event)}\n`);
    else if (live) live.print(out);
    else process.stdout.write(`${out}\n`);
  };
  let next = 0;
  let announced: string | null = null;
  let lastPartial = '';
  let lastThinking = '';
  // The attempt whose partial answer or thinking the viewer saw last; attempts whose loss was printed.
  let shown: Omit<LostAnswer, 'reason'> | null = null;
  const lostAttempts = new Set<number>();
  const retriedAttempts = new Set<number>();
  const seenDecisions = new Set<string>();
  /** `d`, once; with why a rule that matched its command did not apply (`ruleNotApplied`: a closed run's, from its history). */
  const emitDecision = (d: AppliedDecision, ruleNotApplied?: string): void => {
    // One decision is applied per tool_use. Not keyed by `at`: a closed run's view reads it from history
    // (the Update's completion time), which differs from the time the running workflow gave it.
    const key = `${d.toolUseId}|${d.source}|${d.decision ?? (d.approved ? 'approved' : 'denied')}`;
    if (seenDecisions.has(key)) return;
    seenDecisions.add(key);
    // As status says it while the command waits (its `now:` line): the rule matched, and why it did not decide.
    const why = ruleNotApplied !== undefined && d.source !== 'rule' ? [oneLine`  it waited for a person: ${ruleNotApplied}`] : [];
    emit({ event: 'decision', ...d, ...(why.length > 0 ? { ruleNotApplied } : {}) }, [...decisionLines(d), ...why], true);
  };
  let lastStatus = '';
  let waiting: { on: 'worker' | 'server'; reason: string; sinceMs: number } | null = null;
  let noted = false;
  try {
    for (;;) {
      let view: RunView;
      let t: Awaited<ReturnType<RunHandle['transcript']>>;
      try {
        // An open run is asked (a worker answers); a closed one is read from its history (no worker needed).
        view = await until(run.status());
        t = await until(run.transcript(next));
      } catch (err) {
        const why = waitingReason(err);
        if (!why) throw err;
        if (!waiting) {
          waiting = { ...why, sinceMs: Date.now() };
          emit({ event: 'waiting', on: why.on, reason: why.reason }, [waitingLine(why)], true);
        }
        live?.set({ label: `waiting for the ${why.on === 'worker' ? 'worker' : 'Temporal server'}…`, sinceMs: waiting.sinceMs });
        await sleep(opts.intervalMs ?? 1_000, undefined, signal ? { signal } : {});
        continue;
      }
      if (waiting) {
        emit({ event: 'reconnected' }, [`▶ the ${waiting.on === 'worker' ? 'worker' : 'Temporal server'} answers again`]);
        waiting = null;
      }
      const open = view.executionStatus === 'RUNNING';
      // Read after the transcript, so an answer that just landed there is not shown again as partial text.
      const activity = open ? await until(currentActivity(run)).catch(() => null) : null;
      live?.set(open ? liveStatusOf(view, activity) : null);
      const durations = t.durationsMs ?? {};
      t.messages.forEach((m, i) => {
        const results = typeof m.content === 'string' ? [] : m.content.filter(isToolResult);
        // A decision shows before the result it led to.
        for (const b of results)
          for (const d of view.decisions) if (d.toolUseId === b.tool_use_id) emitDecision(d, view.ruleNotApplied?.[d.toolUseId]);
        const timed = results.filter((b) => typeof durations[b.tool_use_id] === 'number');
        const durationMs = Object.fromEntries(timed.map((b) => [b.tool_use_id, durations[b.tool_use_id]]));
        const withNotes = results.filter((b) => t.notes !== undefined && Object.hasOwn(t.notes, b.tool_use_id));
        const notes = Object.fromEntries(withNotes.map((b) => [b.tool_use_id, t.notes![b.tool_use_id]]));
        emit(
          {
            event: 'message',
            index: t.from + i,
            message: m,
            ...(timed.length ? { durationMs } : {}),
            ...(withNotes.length ? { notes } : {}),
          },
          describeMessage(m, t.from + i, t, undefined, workflowId),
          true,
        );
      });
      next = t.from + t.messages.length;
      if (t.incomplete && !noted) {
        noted = true;
        emit({ event: 'note', text: t.incomplete }, [`(${t.incomplete})`]);
      }
      const claude = activity?.kind === 'claude' ? activity : null;
      // What the viewer saw of an attempt that failed is gone: say so once per attempt.
      const lost: LostAnswer | undefined =
        claude?.lost ?? (claude && shown && (claude.attempt ?? 1) > shown.attempt ? { ...shown, reason: '' } : undefined);
      if (lost && !lostAttempts.has(lost.attempt)) {
        lostAttempts.add(lost.attempt);
        emit({ event: 'partial_dropped', ...lost }, [lostLine(lost)], true);
      }
      // A model call that keeps failing (an unreachable API, a bad key's retries) is said, once per attempt, with why.
      const retry = claude ? retryOf(claude) : null;
      if (retry && !retriedAttempts.has(retry.attempt)) {
        retriedAttempts.add(retry.attempt);
        emit({ event: 'retrying', ...retry }, [retryLine(retry)], true);
      }
      const partial = claude?.partialText ?? '';
      if (opts.json && partial && partial !== lastPartial) emit({ event: 'partial', text: partial }, []);
      lastPartial = partial;
      const thinking = claude?.thinking;
      const thinkingKey = thinking ? `${thinking.sinceMs}:${thinking.chars}:${thinking.text}` : '';
      if (opts.json && thinking && thinkingKey !== lastThinking)
        emit({ event: 'thinking', since: new Date(thinking.sinceMs).toISOString(), chars: thinking.chars, text: thinking.text }, []);
      lastThinking = thinkingKey;
      if (claude && (partial || thinking))
        shown = {
          attempt: claude.attempt ?? 1,
          outputChars: claude.streamed?.outputChars ?? partial.length,
          thinkingChars: claude.streamed?.thinkingChars ?? 0,
        };
      else if (!claude) shown = null;
      const pending = view.pendingApproval;
      if (pending && pending.toolUseId !== announced) {
        announced = pending.toolUseId;
        emit(
          { event: 'pending_approval', ...pending },
          [
            ...commandLines(pendingCommandDisplay(pending), { label: '⏸ waiting for approval: ', suffix: `    [${pending.toolUseId}]` }),
            ...(term ? [] : [hintLine(workflowId, pending)]),
          ],
          true,
        );
        if (opts.onPendingApproval) {
          live?.set(null);
          await until(opts.onPendingApproval(pending));
        }
        if (term && live) await until(decideInline(run, pending, term, live, opts.intervalMs ?? 1_000));
      }
      for (const d of view.decisions) emitDecision(d, view.ruleNotApplied?.[d.toolUseId]);
      if (open && view.status !== lastStatus) {
        const line = statusLine(workflowId, view, lastStatus);
        if (line) emit({ event: 'status', status: view.status, pause: view.pause ?? null }, [line], true);
        lastStatus = view.status;
      }
      if (!open) {
        const r = view.result;
        emit(
          { event: 'result', ...statusJson(view) },
          [
            ...[
              `run ${workflowId} ended: ${view.status} after ${view.turns} turn${view.turns === 1 ? '' : 's'} (${view.usage.inputTokens} input / ${view.usage.outputTokens} output / ${view.usage.cacheCreationInputTokens} cache write / ${view.usage.cacheReadInputTokens} cache read tokens${typeof view.costUsd === 'number' ? `, $${view.costUsd.toFixed(4)}` : ''})`,
              ...(r?.text ? [hanging('final answer: ', r.text)] : []),
              ...(r?.error ? [hanging('reason: ', r.error)] : []),
            ].map(terminalText),
            // Escaped line by line: a path's line break stays in its line.
            ...gitAtCloseLines(view),
          ],
          true,
        );
        return view;
      }
      await sleep(opts.intervalMs ?? 1_000, undefined, signal ? { signal } : {});
    }
  } catch (err) {
    if (signal?.aborted) return null;
    throw err;
  } finally {
    live?.stop();
  }
}

/** The watch was stopped through its signal. */
class WatchStopped extends Error {
  override name = 'WatchStopped';
}

/**
 * The inline prompt for `pending`, and the decision it yields sent with
 * {@link decide} (bound to the command's full sha256). The prompt goes
 * away when the run stops waiting on this command (decided elsewhere, timed
 * out, ended), checked every `intervalMs`. A decision that fails (the run
 * moved on, the hash changed) is printed as `! …` and the watch goes on.
 */
async function decideInline(
  run: RunHandle,
  pending: PendingApproval,
  term: PromptTerminal,
  live: LiveLine,
  intervalMs: number,
): Promise<void> {
  live.set(null);
  const gone = new AbortController();
  const watcher = (async () => {
    while (!gone.signal.aborted) {
      await sleep(intervalMs);
      const now = await run.queryStatus().catch(() => null);
      if (!gone.signal.aborted && now?.pendingApproval?.toolUseId !== pending.toolUseId) gone.abort();
    }
  })();
  let choice: InlineDecision | null;
  try {
    choice = await askDecision(term, gone.signal);
  } finally {
    gone.abort();
    await watcher;
  }
  if (!choice) return;
  if (choice.kind === 'dismiss') {
    live.print(shownText(hintLine(run.workflowId, pending)));
    return;
  }
  const sha = pending.commandSha256;
  const options: DecideOptions =
    choice.kind === 'deny' ? { sha, reason: choice.reason } : choice.kind === 'edit' ? { sha, edit: choice.command } : { sha };
  try {
    const { answer, command } = await run.decide(choice.kind !== 'deny', options);
    const label = `${answer.decision} ${answer.toolUseId} by ${answer.by}${choice.kind === 'deny' ? ` (${choice.reason})` : ''}: `;
    live.print(
      shownText(
        [
          ...(pending.edit ? editDecisionLines(label, pending) : commandLines(command, { label, indent: '  ' })),
          ...(answer.decision === 'edited' ? commandLines(answer.command, { label: '  runs instead: ', indent: '    ' }) : []),
        ].join('\n'),
      ),
    );
  } catch (err) {
    // The run moved on, the hash changed, no answer in time: say so, and the watch goes on.
    const e = toCliError(err);
    live.print(terminalText(asTyped(`! ${e.message}${e.hint ? `\n  ${e.hint}` : ''}`)));
  }
}
