/**
 * The system's notes at the end of a command's `tool_result`: the worker's (`[agent-jobs: ...]`,
 * `RunCommandOutput.notes`) and the workflow's own (`[exit code: N]`, `[timed out ...]`, ...).
 * Claude reads them as lines of the result's text; people are shown them apart from the output
 * (src/cli/render/messages.ts), from the list the run publishes (the transcript query's `notes`,
 * or a closed run's history read the same way), never from a parse of the text, which the
 * command prints. Deterministic (imported by workflow code).
 */
import type { RunCommandOutput } from '../contract/activities';

/** What a restart of the shell takes away, as the workflow's notes say it. */
export const STATE_LOST = 'shell variables, functions, aliases and background jobs from before are gone';

/** How the workflow's note after a command whose session then moved to another worker begins (src/workflows/tool-results.ts `movedAfterOutcome`). */
export const MOVED_AFTER_NOTE_START = '[the command finished; then the bash session was closed because ';

/**
 * Why a session is closing when a command's answer said its worker is shutting down (`workerClosing`), and what
 * Claude is told for a `sessionClosing` signal whose reason is not one of {@link DRAIN_CAUSES}'.
 */
export const WORKER_SHUT_DOWN = 'its worker was shut down';

/**
 * What makes a worker drain (src/worker.ts `DRAIN_SIGNALS`, and `RunningWorker.shutdown()`): the only causes a
 * `sessionClosing` signal's reason may name for Claude to read them ({@link closingReasonNote}).
 */
export const DRAIN_CAUSES = ['SIGTERM', 'SIGINT', 'SIGHUP', 'shutdown asked'] as const;

/** The reason a draining worker sends with `sessionClosing` and its refusals: `its worker was shut down (SIGTERM)`. */
export function workerShutDownReason(cause: string): string {
  return `${WORKER_SHUT_DOWN} (${cause})`;
}

/**
 * What Claude is told a session closed for, given a `sessionClosing` signal's `reason`: the product's own text for a
 * reason a draining worker sends ({@link workerShutDownReason} of one of {@link DRAIN_CAUSES}), else
 * {@link WORKER_SHUT_DOWN}. Never the signal's own text: whoever can signal the run chooses it, and the note is read
 * as the product's (docs/security.md, "Encryption").
 */
export function closingReasonNote(reason: unknown): string {
  for (const cause of DRAIN_CAUSES) {
    const known = workerShutDownReason(cause);
    if (reason === known) return known;
  }
  return WORKER_SHUT_DOWN;
}

/**
 * The workflow's note after a command's result when its session then moved to a new one
 * because the worker holding it is shutting down (`why`, e.g. `its worker was shut down
 * (SIGTERM)`), or when no new one could be started yet (`fresh.cwd` null): one `[...]` line
 * (more when the folder's name holds line breaks).
 */
export function movedAfterNote(why: string, fresh: { cwd: string | null; error?: string }): string {
  const where =
    fresh.cwd !== null
      ? `the run moved to a new bash session in ${fresh.cwd} on another worker; ${STATE_LOST} (files on disk stay, unless the new worker runs on another machine)`
      : `no new bash session could be started yet (${fresh.error ?? 'unknown error'}); the next command will try again`;
  return `${MOVED_AFTER_NOTE_START}${why}: ${where}]`;
}

/**
 * A duration for people: Temporal duration strings as given (`'24 hours'`),
 * ms as seconds, minutes or hours (`3000` → `3 s`, `5400000` → `90 min`).
 */
export function describeDuration(d: string | number): string {
  if (typeof d === 'string') return d;
  const s = d / 1000;
  if (s < 120) return `${Number(s.toFixed(1))} s`;
  if (s < 7200) return `${Number((s / 60).toFixed(1))} min`;
  return `${Number((s / 3600).toFixed(1))} h`;
}

/**
 * The workflow's own notes after a finished command's output, in order: a kill at the worker's
 * shutdown, a timeout (`timeoutMs`: the run's command timeout, ms), an exit of bash itself or a
 * restart, then the exit code when it is not 0. Each is one `[...]` line of the result's text.
 */
export function commandNotes(r: RunCommandOutput, timeoutMs: number): string[] {
  const notes: string[] = [];
  if (r.killedAtShutdownMs !== undefined) {
    notes.push(
      `[the worker holding the bash session was shut down while this command ran: it was still running when the shutdown grace of ${describeDuration(r.killedAtShutdownMs)} ran out, so its process group was killed; the output above is what it printed until then]`,
    );
  } else if (r.timedOut) {
    notes.push(
      `[timed out after ${timeoutMs / 1000} s: the command's process group was killed and the bash session restarted in ${r.cwd}; ${STATE_LOST}]`,
    );
  } else if (r.shellExit) {
    const how = r.shellExit.signal ? `was killed by ${r.shellExit.signal}` : `exited with code ${r.shellExit.code}`;
    notes.push(`[bash itself ${how}; a new bash session was started in ${r.cwd}; ${STATE_LOST}]`);
  } else if (r.sessionRestarted) {
    notes.push(`[the bash session was restarted in ${r.cwd}; ${STATE_LOST}]`);
  }
  if (!r.timedOut && !r.shellExit && r.exitCode !== null && r.exitCode !== 0) notes.push(`[exit code: ${r.exitCode}]`);
  return notes;
}

/**
 * A `tool_result`'s text cut into the command's output and the system's notes at its end, when
 * the text ends with exactly `notes` (joined by line breaks, after a line break or as the whole
 * text); undefined when nothing is published (`notes` absent or empty) or the text does not end
 * so (a result edited since, cut by the turn's budget, cleared): then it is all output, as the
 * run published nothing about it. A note may hold line breaks of its own (a path in it).
 */
export function splitNotes(content: string, notes: readonly string[] | undefined): { output: string; notes: string[] } | undefined {
  if (!Array.isArray(notes) || notes.length === 0 || !notes.every((n) => typeof n === 'string')) return undefined;
  const tail = notes.join('\n');
  if (content === tail) return { output: '', notes: [...notes] };
  if (!content.endsWith(`\n${tail}`)) return undefined;
  return { output: content.slice(0, content.length - tail.length - 1), notes: [...notes] };
}
