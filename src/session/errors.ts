/**
 * Errors thrown by the bash session. Each class says when it is thrown; all
 * carry the session id (when known) and the underlying `cause`.
 *
 * A command that fails, times out, is cancelled or kills its shell is NOT an
 * error: `run()` resolves with a {@link CommandResult} that says so. Errors are
 * for misuse (closed session, bad input) and for a shell that cannot be
 * started at all.
 */

/** Base class of every error thrown by `src/session`. */
export class SessionError extends Error {
  /** Id of the session concerned, when there is one. */
  readonly sessionId: string | undefined;

  constructor(message: string, options: { sessionId?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = new.target.name;
    this.sessionId = options.sessionId;
  }
}

/**
 * Thrown by `BashSession.start()` and by `restart()` (and by a `run()` that has
 * to restart a dead shell first) when bash cannot be started: the working
 * directory does not exist or is not a directory, the bash executable is
 * missing, the resource limits cannot be applied, or the shell does not
 * report ready within the start timeout (10 s). `cause` holds the spawn error
 * and `stderr` the last bytes bash wrote to its standard error.
 */
export class SessionStartError extends SessionError {
  /** Tail (up to 4 KiB) of what bash printed on stderr while starting. */
  readonly stderr: string;

  constructor(message: string, options: { sessionId?: string; cause?: unknown; stderr?: string } = {}) {
    super(message, options);
    this.stderr = options.stderr ?? '';
  }
}

/**
 * Thrown by `BashSession.start()` when the working directory cannot be
 * honoured: bash would not really be in it (in the sandbox a mount covers
 * it, such as the private /tmp or a hidden path, or bash started
 * elsewhere), or it is in the workspace and the session's user cannot
 * write it. `cwd` is the directory asked for.
 */
export class SessionCwdError extends SessionStartError {
  readonly cwd: string;

  constructor(message: string, cwd: string, options: { sessionId?: string } = {}) {
    super(message, options);
    this.cwd = cwd;
  }
}

/**
 * Thrown by `run()` and `restart()` once `close()` has been called, including
 * calls that were queued behind a command that was running when the session
 * was closed. (The command that was running resolves with `cancelled: true`.)
 */
export class SessionClosedError extends SessionError {}

/**
 * Thrown by `run()` when the command cannot be given to bash faithfully: it
 * is not a string, or it contains a NUL character (bash strings are C
 * strings). Nothing was run and the session is unchanged.
 */
export class InvalidCommandError extends SessionError {
  /** The rejected command (NUL characters shown as `\0`), at most 200 characters. */
  readonly command: string;

  constructor(message: string, command: unknown, options: { sessionId?: string } = {}) {
    super(message, options);
    this.command = typeof command === 'string' ? command.replace(/\0/g, '\\0').slice(0, 200) : String(command);
  }
}

/**
 * Thrown synchronously-in-promise by `BashSession.start()` when an option is
 * out of range (for example a non-positive `timeoutMs` or `maxOutputBytes`),
 * and by `run()` for a bad per-command `timeoutMs`. `option` names it.
 */
export class InvalidSessionOptionError extends SessionError {
  /** Name of the offending option, e.g. `timeoutMs` or `limits.maxProcesses`. */
  readonly option: string;

  constructor(option: string, message: string, options: { sessionId?: string } = {}) {
    super(`invalid option ${option}: ${message}`, options);
    this.option = option;
  }
}
