/**
 * CLI error reporting: one line of what went wrong and one of what to do,
 * on stderr, exit code 1 (or the error's own code).
 */
import {
  DecisionNotAppliedError,
  HistoryUnreadableError,
  NoAnswerError,
  NoWorkerError,
  NothingPendingError,
  PendingMismatchError,
  RunClosedError,
  TemporalUnreachableError,
  UpdateRejectedError,
  UpdateTimeoutError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
} from '../client';
import { ClaimCheckError, CodecKeyError } from '../codec';
import { safeText } from '../shared/display';
import { asTyped } from './invocation';

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

/** The hint of a claim-check reference that cannot be resolved (src/codec/claim-check.ts). */
const BLOB_HINT =
  'AGENT_JOBS_BLOB_STORE must name the store the workers write to, and the blob must be there (docs/security.md, "Large payloads")';

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
  if (err instanceof NoWorkerError) return new CliError(err.message, 'start one with `agent-jobs worker`');
  if (err instanceof NoAnswerError) {
    return new CliError(
      err.message,
      err.reason === 'no-poller'
        ? 'start one with `agent-jobs worker`'
        : err.reason === 'task-failing'
          ? /blob [0-9a-f]{64}/.test(err.failure ?? '')
            ? BLOB_HINT
            : /codec keys|encrypted/.test(err.failure ?? '')
              ? 'give every worker and CLI the same keys: AGENT_JOBS_CODEC_KEYS (docs/security.md, "Encryption")'
              : 'the worker log says the same; the run goes on once a worker can run it'
          : 'is a worker running against this server? start one with `agent-jobs worker`',
    );
  }
  if (err instanceof UpdateRejectedError || err instanceof RunClosedError || err instanceof NothingPendingError) {
    const hint = err instanceof NothingPendingError ? 'see what it is doing with' : 'see';
    return new CliError(err.message, `${hint} \`agent-jobs status ${err.workflowId}\``);
  }
  if (err instanceof DecisionNotAppliedError) {
    return new CliError(err.message, `read the command that waits now with \`agent-jobs status ${err.workflowId}\` and decide again`);
  }
  if (err instanceof PendingMismatchError) {
    return new CliError(
      err.message,
      err.field === 'toolUseId'
        ? 'leave out --tool-use-id to decide on the pending command'
        : `review it with \`agent-jobs status ${err.workflowId}\` and pass the hash it shows`,
    );
  }
  if (err instanceof UpdateTimeoutError) return updateTimeoutError(err);
  if (err instanceof HistoryUnreadableError) return new CliError(err.message);
  if (err instanceof ClaimCheckError) return new CliError(err.message, BLOB_HINT);
  if (err instanceof CodecKeyError)
    return new CliError(err.message, 'AGENT_JOBS_CODEC_KEYS names the keys every worker and CLI share (docs/security.md, "Encryption")');
  const message = err instanceof Error ? err.message : String(err);
  // Temporal's default converter meeting a payload of the codec (src/codec): this process holds no keys.
  if (/Unknown encoding: binary\/encrypted/.test(message)) {
    return new CliError(
      "this run's payloads are encrypted, and this process has no codec keys",
      'set AGENT_JOBS_CODEC_KEYS to the keys its workers use (docs/security.md, "Encryption")',
    );
  }
  if (/no poller|did not receive a response|deadline exceeded|failed to query/i.test(message)) {
    return new CliError(`the run did not answer: ${message}`, 'is a worker running? start one with `agent-jobs worker`');
  }
  return new CliError(message);
}

/**
 * A request with no answer in time: what it may still do, how to check, and
 * how to wait for it without sending it twice (the same `--request-id`
 * gives the same Update id, which the run applies once). Exit code 2, so a
 * script can tell "maybe applied" from "refused" (1).
 */
function updateTimeoutError(err: UpdateTimeoutError): CliError {
  const check = `check with \`agent-jobs status ${err.workflowId}\``;
  const again = `to wait for it without applying it twice, run the same command again with --request-id ${err.requestId}`;
  if (err.stage === 'unknown')
    return new CliError(err.message, `is a worker running? start one with \`agent-jobs worker\`, then send it again`, 2);
  if (err.stage === 'completed') return new CliError(err.message, `${check}; ${again}`, 2);
  return new CliError(err.message, `${check}; ${again}; is a worker running? (\`agent-jobs worker\`)`, 2);
}

/** Prints the error (one line, plus the hint) to stderr and sets the exit code. */
export function reportError(err: unknown): void {
  const e = toCliError(err);
  // Messages may quote a run (a command, an API error): nothing reaches the terminal raw.
  // The commands it quotes are typed the way this CLI was run (`npx agent-jobs …` under npx).
  process.stderr.write(`agent-jobs: ${safeText(asTyped(e.message.split('\n')[0] ?? ''), false)}\n`);
  if (e.hint) process.stderr.write(`hint: ${safeText(asTyped(e.hint), false)}\n`);
  process.exitCode = e.exitCode;
}
