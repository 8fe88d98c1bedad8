/**
 * Sending a steering Update to a run and reading its answer: the CLI side
 * of src/contract/steering.ts. An Update is answered by the worker that
 * holds the run, once it has applied the request; a rejected one (its
 * validator threw) fails with the reason, which becomes a CliError (exit 1).
 */
import { userInfo } from 'node:os';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, isGrpcServiceError, type Client } from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { requireWorker, runHandle } from './runs';
import { CliError } from './errors';

/** How long the CLI waits for an Update's answer, in ms: 30 s (a worker applies it within one workflow task). */
export const UPDATE_DEADLINE_MS = 30_000;

/** gRPC NOT_FOUND: the run, or its open execution, does not exist (an Update to a closed run). */
const GRPC_NOT_FOUND = 5;

/** Who the CLI says sends a request: `--by`, else the OS user running it, else `cli`. */
export function whoami(by?: string): string {
  if (by !== undefined) return by;
  try {
    return userInfo().username;
  } catch {
    return 'cli';
  }
}

/**
 * Sends `def(arg)` to run `workflowId` and waits for its answer.
 * @param what what is asked, for errors (e.g. "the decision on toolu_1")
 * @throws CliError when no worker polls, the run rejected it (with the run's
 *   reason), the run is closed, or no answer came within {@link UPDATE_DEADLINE_MS}
 */
export async function sendUpdate<Ret, Arg>(
  client: Client,
  workflowId: string,
  def: UpdateDefinition<Ret, [Arg]>,
  arg: Arg,
  what: string,
): Promise<Ret> {
  await requireWorker(client, what);
  try {
    return await client.withDeadline(Date.now() + UPDATE_DEADLINE_MS, () =>
      runHandle(client, workflowId).executeUpdate(def, { args: [arg] }),
    );
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError) {
      throw new CliError(`${workflowId} rejected ${what}: ${err.cause?.message ?? err.message}`, `see \`agent-jobs status ${workflowId}\``);
    }
    if (err instanceof WorkflowNotFoundError && /completed|closed/i.test(err.message)) {
      throw new CliError(`${workflowId} is not open: ${what} cannot apply to a run that ended`, `see \`agent-jobs status ${workflowId}\``);
    }
    const cause = err instanceof Error && 'cause' in err ? (err as { cause: unknown }).cause : err;
    if (isGrpcServiceError(cause) && (cause.code as number) === GRPC_NOT_FOUND && /completed|closed|not found/i.test(cause.details ?? '')) {
      throw new CliError(`${workflowId} is not open: ${what} cannot apply to a run that ended`, `see \`agent-jobs status ${workflowId}\``);
    }
    if (/deadline/i.test(err instanceof Error ? err.message : String(err))) {
      throw new CliError(
        `no answer to ${what} from ${workflowId} within ${UPDATE_DEADLINE_MS / 1000} s`,
        'is a worker running? start one with `agent-jobs worker`',
      );
    }
    throw err;
  }
}
