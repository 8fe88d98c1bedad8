/**
 * What Claude is told on every path of a `tool_use`: pure text builders.
 * Each returns `{text, isError}` for one `tool_result`. Deterministic
 * (workflow code).
 */
import type { RunCommandOutput } from '../contract';
import type { AppliedDecision } from '../contract';
import { STATE_LOST, commandNotes, describeDuration, movedAfterNote } from '../shared/notes';

export { describeDuration, movedAfterNote };

export interface ToolOutcome {
  text: string;
  isError: boolean;
}

/**
 * Text of a finished command: its output, then notes for a non-zero exit
 * code, a timeout or a shell exit. `isError` is set when the system
 * interfered (timeout, shell exit, restart); a command that merely exits
 * non-zero is reported with its code but is not an error of the tool.
 */
export function commandOutcome(r: RunCommandOutput, timeoutMs: number): ToolOutcome {
  const notes = commandNotes(r, timeoutMs);
  const body = r.output.length > 0 ? r.output : notes.length > 0 ? '' : '(no output)';
  const text = [body.replace(/\n+$/, ''), ...notes].filter((s) => s.length > 0).join('\n');
  return { text, isError: r.timedOut || r.shellExit !== null || r.sessionRestarted || r.killedAtShutdownMs !== undefined };
}

/**
 * A command's result, followed by {@link movedAfterNote}. An error of the tool: the system
 * changed the shell under Claude.
 */
export function movedAfterOutcome(ran: ToolOutcome, why: string, fresh: { cwd: string | null; error?: string }): ToolOutcome {
  return { text: `${ran.text}\n${movedAfterNote(why, fresh)}`, isError: true };
}

/**
 * A command run in a new session that replaced one whose worker is
 * shutting down (`why`) before the command started: the note first, then
 * the command's own result.
 */
export function movedBeforeOutcome(ran: ToolOutcome, why: string, cwd: string): ToolOutcome {
  return {
    text: `[before this command ran, the bash session was restarted because ${why}: the command ran in a new bash session in ${cwd} on another worker; ${STATE_LOST}]\n${ran.text}`,
    isError: true,
  };
}

/** What Claude is told when a person edited its command before approving it: who, what ran, then the output of what ran. */
export function editedOutcome(d: AppliedDecision, ran: ToolOutcome): ToolOutcome {
  const who = d.by ? `by ${d.by}` : 'by a human reviewer';
  return {
    text: `[The command was edited ${who} before it ran; this ran instead of your command:]\n${d.editedCommand ?? ''}\n[Its output:]\n${ran.text}`,
    isError: ran.isError,
  };
}

/** A command that was not run because of a human's denial or the approval timeout (`timeout` as given in the input). */
export function deniedOutcome(d: AppliedDecision, timeout: string | number): ToolOutcome {
  if (d.source === 'timeout') {
    return { text: `Command not run: no approval decision came within ${describeDuration(timeout)}, so it was denied.`, isError: true };
  }
  const who = d.by ? `denied by ${d.by}` : 'denied by a human reviewer';
  return { text: `Command not run: ${who}${d.reason ? `. Reason: ${d.reason}` : ' (no reason given)'}.`, isError: true };
}

/** How the session was lost, from the failure the workflow saw. */
export type SessionLoss =
  | { kind: 'not-started'; detail: string } // schedule-to-start timeout: nothing ran
  | { kind: 'interrupted'; detail: string }; // heartbeat / start-to-close timeout, missing session: may have run

/** What a lost-session result says when no new session could be opened yet. */
const noNewSessionYet = (openError: string | undefined): string =>
  `No new session could be started yet (${openError ?? 'unknown error'}); the next command will try again.`;

/**
 * The `is_error` result for a command whose session was lost (the worker
 * holding it died or forgot it). Says whether the command may have run,
 * what state is gone, and where the new session is (or that none could be
 * started yet).
 */
export function sessionLostOutcome(loss: SessionLoss, newCwd: string | null, openError?: string): ToolOutcome {
  const ran =
    loss.kind === 'not-started'
      ? 'The command did not run.'
      : 'The command may or may not have run (fully or partly); check its effects before running it again.';
  const fresh = newCwd
    ? `A new bash session was started in ${newCwd}; ${STATE_LOST} (files on disk stay, unless the new session runs on another machine).`
    : noNewSessionYet(openError);
  return { text: `The bash session was lost: ${loss.detail}. ${ran} ${fresh}`, isError: true };
}

/**
 * The `is_error` result for a text editor command whose session was lost: whether the edit
 * may have been written (never made again without Claude deciding so), where the new session is.
 */
export function editLostOutcome(loss: SessionLoss, newCwd: string | null, openError?: string): ToolOutcome {
  const ran =
    loss.kind === 'not-started'
      ? 'The edit was not made.'
      : 'The edit may or may not have been written (a file is written whole or not at all); view the file before making it again.';
  const fresh = newCwd ? `A new session was started in ${newCwd}.` : noNewSessionYet(openError);
  return { text: `The session was lost: ${loss.detail}. ${ran} ${fresh}`, isError: true };
}

/** Where a run was in a `tool_use` when it was cancelled or failed: waiting for approval, running a command, restarting the session. */
export type ToolUsePhase = 'approval' | 'running' | 'restarting';

/**
 * Why a `tool_use` got no real result because the run ended (`cancelled`
 * or `failed`): the one in progress says what happened to it, the others
 * that they did not run.
 */
export function interruptedText(end: 'cancelled' | 'failed', phase: ToolUsePhase | null): string {
  const run = end === 'cancelled' ? 'The run was cancelled' : 'The run failed';
  if (phase === 'approval') return `${run} while this command waited for approval; it did not run.`;
  if (phase === 'running') return `${run} while this command ran: its process group was killed, so it may have partly run.`;
  if (phase === 'restarting') return `${run} while the bash session restarted: the restart may or may not have happened.`;
  return `${run} before this command started; it did not run.`;
}

/** Result of `{"restart": true}`. */
export function restartedOutcome(cwd: string): ToolOutcome {
  return { text: `The bash session was restarted in ${cwd}; ${STATE_LOST}.`, isError: false };
}

/**
 * Checks a bash `tool_use` input (schema of `bash_20250124`: `{command}` or
 * `{restart: true}`). Anything else becomes an `is_error` result, never a
 * crashed activity (C04).
 */
export function parseBashInput(
  input: unknown,
): { kind: 'command'; command: string } | { kind: 'restart' } | { kind: 'invalid'; outcome: ToolOutcome } {
  const obj = typeof input === 'object' && input !== null && !Array.isArray(input) ? (input as Record<string, unknown>) : null;
  if (obj?.restart === true) return { kind: 'restart' };
  if (obj && typeof obj.command === 'string' && obj.command.trim().length > 0) return { kind: 'command', command: obj.command };
  return {
    kind: 'invalid',
    outcome: {
      text: `Invalid bash tool input ${cutWhole(JSON.stringify(input), 200) ?? 'undefined'}: it needs "command" (a non-empty string) or "restart": true.`,
      isError: true,
    },
  };
}

/** The first `max` code units of `s`, one fewer when the cut would leave a lone high surrogate (the Messages API refuses those: 400). */
function cutWhole(s: string | undefined, max: number): string | undefined {
  if (s === undefined || s.length <= max) return s;
  const last = s.charCodeAt(max - 1);
  return s.slice(0, last >= 0xd800 && last <= 0xdbff ? max - 1 : max);
}
