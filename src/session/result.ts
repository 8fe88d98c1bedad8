/**
 * The result builder: what a finished command becomes for the caller, a
 * {@link CommandResult}. The session's own notes (`[agent-jobs: ...]` lines),
 * the shell's messages renumbered to the command's lines, what an exact run
 * that hit a limit is told, and the result's fields with their defaults.
 */
import type { ResolvedLimits } from './limits';
import type { ShellExit } from './shell';

/** What happened to one command. */
export interface CommandResult {
  /**
   * stdout and stderr interleaved as written, decoded as UTF-8 (invalid
   * bytes replaced by U+FFFD), escape sequences removed, `\r` overwrites
   * collapsed to what a terminal would show, secrets redacted, and capped
   * to `maxOutputBytes` (head + tail, with a `[... N bytes cut ...]` note).
   * Notes about the session (a deleted working directory, a process limit)
   * are appended as `[agent-jobs: ...]` lines.
   */
  output: string;
  /**
   * The notes appended to `output`, in order (each a `[agent-jobs: ...]` text, which may hold
   * line breaks of a path): so a reader can show them apart from what the command printed,
   * which may print the same words. Empty when none.
   */
  notes: string[];
  /** Exit status (0..255); for `exit N` the shell's code N; null when timed out, cancelled, or the shell was killed by a signal. */
  exitCode: number | null;
  /** The command ran past its timeout and was killed. */
  timedOut: boolean;
  /** `output` was cut. */
  truncated: boolean;
  /**
   * The shell was restarted because of this command (timeout, cancel, shell
   * exit, process limit, lowered resource limits) or just before it (the
   * shell had died while idle): variables, functions, aliases and
   * background jobs are gone; the working directory was restored.
   */
  sessionRestarted: boolean;
  /**
   * Working directory after the command. After a restart: the directory the
   * new shell started in (the last known good one, or its nearest existing
   * parent).
   */
  cwd: string;
  /** Wall time from sending the command to its end, ms. */
  durationMs: number;
  /** Bytes the command wrote to stdout and stderr, before any processing. */
  outputBytes: number;
  /** Set when bash itself exited during the command (`exit 3`, `exec sh` ending, `kill -9 $$`, process limit). */
  shellExit?: ShellExit;
  /** The command was cancelled through `RunOptions.signal` (or the session was closed while it ran). */
  cancelled: boolean;
}

/** What a run step knows once the command is over; the rest of its {@link CommandResult} has defaults ({@link commandResult}). */
export type FinishedCommand = Partial<CommandResult> &
  Pick<CommandResult, 'output' | 'exitCode' | 'cancelled' | 'outputBytes' | 'truncated'> & {
    /** The argv of an exact run (`BashSession.runExact`), for the audit line. */
    exactArgv?: string[];
  };

/**
 * The {@link CommandResult} of `r`: `timedOut` and `sessionRestarted` false unless set, `cwd` the
 * shell's after the command, `durationMs` (unless set) the time since `started` (`Date.now()` when
 * the call's turn came), `shellExit` only when set.
 */
export function commandResult(r: FinishedCommand, cwd: string, started: number): CommandResult {
  const result: CommandResult = {
    output: r.output,
    notes: r.notes ?? [],
    exitCode: r.exitCode,
    timedOut: r.timedOut ?? false,
    truncated: r.truncated,
    sessionRestarted: r.sessionRestarted ?? false,
    cwd,
    durationMs: r.durationMs ?? Date.now() - started,
    outputBytes: r.outputBytes,
    cancelled: r.cancelled,
  };
  if (r.shellExit) result.shellExit = r.shellExit;
  return result;
}

/** A command whose `RunOptions.signal` was aborted before its turn: nothing ran. */
export function cancelledBeforeStart(): FinishedCommand {
  const cancelled = note('cancelled before it started; nothing was run');
  return {
    output: cancelled,
    notes: [cancelled],
    exitCode: null,
    cancelled: true,
    outputBytes: 0,
    truncated: false,
  };
}

/** A note of the session in a command's output: `[agent-jobs: text]`. */
export function note(text: string): string {
  return `[agent-jobs: ${text}]`;
}

/** `output` with `notes` appended, each on a line of its own. */
export function appendNotes(output: string, notes: string[]): string {
  if (notes.length === 0) return output;
  const sep = output === '' || output.endsWith('\n') ? '' : '\n';
  return output + sep + notes.join('\n');
}

/** How bash ended, for a note: `killed by SIGKILL`, `exit code 3`. */
export function describeExit(exit: ShellExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

/**
 * What to tell about an exact run that ran into one of the session's limits
 * (limits.ts limitedArgv), or undefined: the signal the kernel sends past
 * the CPU or file-size limit, SIGKILL (the OOM killer, or the pids cgroup),
 * or the program's own report that an allocation failed past the address-space limit.
 */
export function exactLimitNote(
  run: { signal: string | null; exitCode: number | null; timedOut: boolean; cancelled: boolean },
  output: string,
  limits: ResolvedLimits,
): string | undefined {
  if (run.timedOut || run.cancelled) return undefined;
  // In the sandbox the program's death by signal N arrives as bwrap's exit code 128 + N, as a shell reports it.
  const signal = run.signal ?? ({ 137: 'SIGKILL', 152: 'SIGXCPU', 153: 'SIGXFSZ' } as Record<number, string>)[run.exitCode ?? -1] ?? null;
  if (signal === 'SIGXCPU') return `the program used up the session's CPU limit (${limits.maxCpuSeconds} s) and was killed`;
  if (signal === 'SIGXFSZ') return `the program wrote past the session's file size limit (${limits.maxFileSizeBytes} bytes) and was killed`;
  if (signal === 'SIGKILL') return "the program was killed (SIGKILL: out of memory, or the session's process limit)";
  if (run.exitCode !== 0 && /memory exhausted|cannot allocate memory|out of memory|MemoryError/i.test(output))
    return `the program ran out of memory under the session's memory limit (${limits.maxMemoryBytes} bytes of address space)`;
  return undefined;
}

/**
 * bash numbers the lines of eval'd code from the control line's position in
 * its input, which grows with every command ("bash: eval: line 4711: syntax
 * error ...", "bash: line 25: nosuchcmd: command not found"; assigning
 * LINENO does not reset it). Renumbers the shell's own messages from the
 * command's first line, as if the command were a script: "bash: line 2: ...",
 * and the start line in "here-document at line N delimited by end-of-file".
 *
 * Runtime errors are renumbered only when the line falls inside the command
 * (1..`commandLines`), so a `bash -c` the command started, whose messages
 * look alike but count from 1, is left alone. Errors inside functions
 * (bash prefixes those `main:` and counts from the input line where the
 * function was defined) are left as they are.
 * @param controlLineNo bash's input line number of the command's control line (0: unknown, nothing renumbered)
 * @param commandLines lines of the command text (newlines + 1)
 */
export function renumberShellErrors(text: string, controlLineNo: number, commandLines: number): string {
  if (controlLineNo <= 0 || !text.includes('line ')) return text;
  const own = (n: string): number => Number(n) - controlLineNo + 1;
  return text.replace(
    /^([^\s:]*bash): (eval: )?line (\d+):(.*)$/gm,
    (whole, shell: string, evalPrefix: string | undefined, n: string, rest: string) => {
      const line = own(n);
      // Syntax errors (eval: line N) can name the line after the last one (unexpected end of file).
      if (line < 1 || (!evalPrefix && line > commandLines)) return whole;
      const body = rest.replace(/^( warning: here-document at line )(\d+)( delimited)/, (w, a: string, m: string, b: string) => {
        const start = own(m);
        return start >= 1 && start <= line ? `${a}${start}${b}` : w;
      });
      return `${shell}: line ${line}:${body}`;
    },
  );
}
