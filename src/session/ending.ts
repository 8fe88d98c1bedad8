/**
 * How a command ended, as the worker may believe it: what woke the session
 * up ({@link Outcome}), and what the command's records prove
 * ({@link judgeRecords}): its exit status, or why they prove nothing. The
 * reasoning is the header of protocol.ts.
 */
import type { CommandRecords } from './protocol';
import type { ShellExit } from './shell';

/** What ended the wait for a command: its records, the shell's exit, the timeout, the caller's abort, or `close()`. */
export type Outcome =
  | { kind: 'record' }
  | { kind: 'unconfirmed' }
  | { kind: 'exit'; exit: ShellExit }
  | { kind: 'timeout' }
  | { kind: 'abort' }
  | { kind: 'closed' };

/** What the records of one command prove: its exit status, or why they prove nothing. */
export type RecordVerdict =
  | { kind: 'ok'; status: number }
  /** `foreignOutput`: the shell never read the command, so what its FIFO holds was written by another process. */
  | { kind: 'not-run' | 'tampered'; note: string; foreignOutput?: boolean };

/**
 * Judges one command's records (protocol.ts): exactly one status record,
 * followed by the housekeeping record, with bash's control pipes intact.
 * Anything else means the shell's state kept the command from running
 * safely, or something forged a record, and the exit status is unknown.
 * @param housekeepingCame whether the housekeeping record followed in time
 * @param pipesIntact whether bash's stdin/stdout are still the pipes it started with
 * @param kernel from /proc: `readLine`, bash itself read at least the control line's bytes; `idle`, bash is back reading its stdin (undefined: not known)
 */
export function judgeRecords(
  records: CommandRecords,
  housekeepingCame: boolean,
  pipesIntact: boolean,
  kernel: { readLine?: boolean | undefined; idle?: boolean | undefined } = {},
): RecordVerdict {
  const [first, ...more] = records.statuses;
  if (first === 'noposix') {
    return {
      kind: 'not-run',
      note: 'the command was NOT run: an earlier command made POSIXLY_CORRECT read-only or a reference, which stops the session from running commands safely; the shell was restarted (variables, functions and background jobs are gone), run it again',
    };
  }
  const status = first !== undefined && /^\d{1,3}$/.test(first) ? Number(first) : NaN;
  const problems: string[] = [];
  if (Number.isNaN(status) || status > 255) problems.push('no valid end-of-command record came');
  if (more.length > 0) problems.push(`${more.length + 1} end-of-command records came where one was due (one was forged)`);
  if (!housekeepingCame)
    problems.push(
      'the shell did not finish its bookkeeping after the command (it was still busy, or a function named like a builtin intercepted it)',
    );
  if (!pipesIntact) problems.push("the shell's own control pipes were replaced");
  if (records.overflow)
    problems.push("over a mebibyte of one unfinished record came on the shell's record pipe (another process wrote it)");
  if (kernel.readLine === false) problems.push('the shell never read the command (another process read it from the control pipe)');
  if (housekeepingCame && kernel.idle === false) problems.push('the shell was still busy (or stopped) after its end-of-command records');
  if (problems.length > 0) {
    const foreignOutput = kernel.readLine === false;
    return {
      kind: 'tampered',
      note: `the end of this command could not be confirmed (${problems.join('; ')}): its exit status is unknown, it may still have been running; the shell was killed and restarted (variables, functions and background jobs are gone)${foreignOutput ? '; its output was withheld, since another process wrote it' : ''}`,
      ...(foreignOutput ? { foreignOutput } : {}),
    };
  }
  return { kind: 'ok', status };
}

/** How a command ended, as the session tells it (`BashSession.runNow`). */
export interface Ending {
  /** The exit status, when known. */
  exitCode: number | null;
  /** Set when bash itself exited during the command. */
  shellExit?: ShellExit;
  /** The shell is unusable after the command (or its end is unknown) and is restarted. */
  restartAfter: boolean;
  cancelled: boolean;
  timedOut: boolean;
  /** The records proved the command's end: its fence follows, nothing needs killing. */
  ended: boolean;
  /** Its output is withheld: another process wrote it (the shell never read the command). */
  withheld: boolean;
  /** `[agent-jobs: ...]` notes for the output, in order. */
  notes: string[];
}

/** An ending with nothing proven yet: no status, nothing to restart, no notes. */
export function notEnded(): Ending {
  return { exitCode: null, restartAfter: false, cancelled: false, timedOut: false, ended: false, withheld: false, notes: [] };
}
