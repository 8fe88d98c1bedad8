/**
 * CLI error reporting: one line of what went wrong and one of what to do,
 * on stderr, exit code 1 (or the error's own code).
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { TemporalUnreachableError } from '../temporal';
import { TemporalCliMissingError } from '../devserver';
import { safeText } from '../contract/display';

/** An error meant for the person at the terminal: `message` says what went wrong, `hint` what to do. */
export class CliError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
    readonly exitCode = 1,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

/** Turns known failures into a CliError with a hint; anything else keeps its message. */
export function toCliError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  if (err instanceof TemporalUnreachableError) {
    return new CliError(
      err.message,
      'start a dev server with `agent-jobs server` (or `npm run demo`), or point TEMPORAL_ADDRESS at your cluster',
    );
  }
  if (err instanceof WorkflowNotFoundError) {
    return new CliError(`no run with id ${err.workflowId ?? '?'} in this namespace`, 'list runs with `agent-jobs list`');
  }
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return new CliError(`a run with id ${err.workflowId} already exists`, 'choose another --id, or leave it out for a fresh one');
  }
  if (err instanceof TemporalCliMissingError) return new CliError(err.message);
  const message = err instanceof Error ? err.message : String(err);
  if (/no poller|did not receive a response|deadline exceeded|failed to query/i.test(message)) {
    return new CliError(`the run did not answer: ${message}`, 'is a worker running? start one with `agent-jobs worker`');
  }
  return new CliError(message);
}

/** Prints the error (one line, plus the hint) to stderr and sets the exit code. */
export function reportError(err: unknown): void {
  const e = toCliError(err);
  // Messages may quote a run (a command, an API error): nothing reaches the terminal raw.
  process.stderr.write(`agent-jobs: ${safeText(e.message.split('\n')[0] ?? '', false)}\n`);
  if (e.hint) process.stderr.write(`hint: ${safeText(e.hint, false)}\n`);
  process.exitCode = e.exitCode;
}
