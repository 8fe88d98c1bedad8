/**
 * What `watch` (and `start --follow`) prints as a run moves: the live
 * line's status, retries, lost answers, decisions, pauses, waits for the
 * worker or the server, and how to decide from another terminal. The loop
 * that polls and prints is src/cli/follow.ts. Every line is returned
 * escaped, each field from a run on one line ({@link oneLine}): print it
 * with shownText, not terminalText.
 */
import type { RunView } from '../../client';
import type { AppliedDecision, PendingApproval } from '../../contract';
import { shortHash } from '../../shared/display';
import type { ActivityProgress, LostAnswer } from '../activity-progress';
import { cliCommand } from '../invocation';
import type { LiveStatus } from '../live-line';
import { budgetPauseLine } from './run';
import { commandLines, oneLine } from './text';

/** A model call retried after a failure: the attempt now scheduled or running, and the last failure's message. */
export interface RetryingCall {
  attempt: number;
  reason: string;
}

/** The retry a pending model call shows (attempt over 1, with a failure message), else null. */
export function retryOf(activity: Pick<ActivityProgress, 'attempt' | 'lastFailure'>): RetryingCall | null {
  const attempt = activity.attempt ?? 1;
  return attempt > 1 && activity.lastFailure ? { attempt, reason: activity.lastFailure } : null;
}

/** `! the model call failed: Connection error.; Temporal retries it (attempt 3)`: the cut-to-one-line reason. */
export function retryLine(retry: RetryingCall): string {
  const reason = retry.reason.replace(/\s+/g, ' ').trim();
  const shown = reason.length > 300 ? `${reason.slice(0, 300)}…` : reason;
  return oneLine`! the model call failed: ${shown}; Temporal retries it (attempt ${retry.attempt})`;
}

/** The line `watch` prints when it starts waiting (see {@link waitingReason}). */
export function waitingLine(w: { on: 'worker' | 'server'; reason: string }): string {
  return oneLine`… waiting for the ${w.on === 'worker' ? 'worker' : 'Temporal server'} (${w.reason}); the run goes on, and this watch picks up when it answers`;
}

/** What `watch` prints when it stops on Ctrl-C: the run goes on, and how to watch it again. */
export function interruptedLines(workflowId: string): string[] {
  return [`stopped watching ${workflowId}; the run goes on.`, `watch it again: ${cliCommand()} watch ${workflowId}`];
}

/** What the live line says for the run's state: a command's or a model call's wait, an approval's, or nothing. */
export function liveStatusOf(view: RunView, activity: ActivityProgress | null): LiveStatus | null {
  if (view.pendingApproval) return { label: 'waiting for approval', sinceMs: Date.parse(view.pendingApproval.requestedAt) || Date.now() };
  if (!activity) return null;
  if (activity.kind === 'claude') return claudeStatusOf(activity);
  if (activity.kind === 'command') return { label: 'running command', sinceMs: activity.sinceMs };
  return {
    label: activity.type === 'openSession' ? 'starting the bash session' : `${activity.type} (bash session)`,
    sinceMs: activity.sinceMs,
  };
}

/**
 * The live line of a model call: while Claude thinks, `claude is thinking…`
 * with the seconds since the thinking started and the end of the
 * summarized thinking text (none when the thinking is omitted, so the line
 * is the steady elapsed time); while it writes, `claude is writing…` with
 * the end of its text (`claude is writing a command…` when a `tool_use`
 * streams with no text before it); after an attempt lost its answer, that
 * it is asked again; else `waiting on claude`. Progress of older workers (no `phase`)
 * shows the partial text when there is some.
 */
export function claudeStatusOf(activity: ActivityProgress): LiveStatus {
  const { thinking, partialText, phase, lost, sinceMs } = activity;
  const again = (activity.attempt ?? 1) > 1 ? ` (attempt ${activity.attempt})` : '';
  if (thinking)
    return { label: `claude is thinking…${again}`, sinceMs: thinking.sinceMs, ...(thinking.text ? { tail: thinking.text } : {}) };
  if (partialText && phase !== 'waiting') return { label: 'claude is writing…', sinceMs, tail: partialText };
  if (phase === 'tool_use') return { label: 'claude is writing a command…', sinceMs };
  if (lost) return { label: `claude's answer was cut off, asking again${again}`, sinceMs };
  return { label: `waiting on claude${again}`, sinceMs };
}

/**
 * The line `watch` prints when an attempt's partial answer is gone (its
 * stream broke, or the call failed and is retried): nothing of it enters
 * the transcript, and the answer is streamed again from the start.
 */
export function lostLine(lost: LostAnswer): string {
  const parts: string[] = [];
  if (lost.outputChars > 0) parts.push(`${lost.outputChars.toLocaleString('en-US')} characters of text`);
  if (lost.thinkingChars > 0) parts.push(`${lost.thinkingChars.toLocaleString('en-US')} of thinking`);
  const what = parts.length ? parts.join(' and ') : 'the partial answer';
  return (
    oneLine`✗ claude's answer was cut off (attempt ${lost.attempt}; ${what} dropped` +
    (lost.reason ? oneLine`: ${lost.reason}` : '') +
    '); asking again'
  );
}

/**
 * What `watch` prints when a decision is applied: what, by whom (`by`), and for an edit what runs
 * instead. Escaped already (oneLine, commandLines): print with shownText.
 */
export function decisionLines(d: AppliedDecision): string[] {
  // Every field on one line (oneLine): a reason or a name with a line break would print lines of its own.
  if (d.source === 'rule')
    return [oneLine`✓ ${d.toolUseId} approved by rule ${d.rule ?? '?'}` + (d.by ? oneLine` (added by ${d.by})` : '')];
  if (d.source === 'timeout') return [oneLine`✗ ${d.toolUseId} not run: ${d.reason ?? 'the approval wait ran out'}`];
  const by = d.by ? oneLine` by ${d.by}` : '';
  if (d.decision === 'edited' && d.editedCommand !== undefined)
    return [oneLine`✎ ${d.toolUseId} edited` + by, ...commandLines(d.editedCommand, { label: '  runs instead: ', indent: '    ' })];
  if (d.approved)
    return [
      oneLine`✓ ${d.toolUseId} approved` + by + (d.rule !== undefined ? oneLine` (and rule ${d.rule} added, for this run only)` : ''),
    ];
  return [oneLine`✗ ${d.toolUseId} denied` + by + (d.reason ? oneLine`: ${d.reason}` : '')];
}

/** A line for a change of status that a person caused or must act on (paused, resumed, waiting for a message); null for the others. */
export function statusLine(workflowId: string, view: RunView, before: string): string | null {
  if (view.status === 'paused') {
    if (view.pause?.reason === 'budget')
      return oneLine`⏸ paused: ${budgetPauseLine(view.pause)}; go on: ${cliCommand()} extend ${workflowId} --${view.pause.budget ?? 'turns'} ...`;
    const why = view.pause?.reason === 'approval_timeout' ? ' (the approval wait ran out)' : oneLine` by ${view.pause?.by ?? 'a person'}`;
    return oneLine`⏸ paused` + why + oneLine`; resume: ${cliCommand()} resume ${workflowId}`;
  }
  if (view.status === 'awaiting_message')
    return oneLine`… waiting for the next message: ${cliCommand()} say ${workflowId} <text>   (end: ${cliCommand()} end ${workflowId})`;
  if (before === 'paused') return '▶ resumed';
  return null;
}

/** How to decide on `pending` from another terminal (the plain-lines form of the prompt). */
export function hintLine(workflowId: string, pending: PendingApproval): string {
  const sha = shortHash(pending.commandSha256);
  const cmd = cliCommand();
  return oneLine`  approve: ${cmd} approve ${workflowId} --sha ${sha}    deny: ${cmd} deny ${workflowId} --sha ${sha} --reason "..."`;
}
