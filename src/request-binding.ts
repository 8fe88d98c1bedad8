/**
 * The client side of bound steering requests (docs/security.md, "Encryption"): a Temporal client
 * interceptor that adds a {@link RequestBinding} to each steering Update it sends (`say`, `pause`,
 * `resume`, `end`, `extend`, `removeRule`, `rewind`). The binding names the Update, the workflow id,
 * the first run id of the run's chain (from the handle, else from `describe`), a single-use request
 * id (the Update id, made random here when the caller gave none) and the time it was made. The
 * codec encrypts it with the rest of the request, so a copy of the stored payload cannot be bound
 * to anything else; the run refuses a copy sent again (src/workflows/steering.ts `checkBinding`).
 * {@link AgentJobsClient} installs it; so does the integration tests' keyed client.
 */
import { randomUUID } from 'node:crypto';
import type { Connection, WorkflowClientInterceptor, WorkflowStartUpdateInput } from '@temporalio/client';
import { STEERING_UPDATES, type RequestBinding, type SteeringUpdate } from './contract';

/** Whether `name` is a steering Update whose request carries a binding. */
function isSteeringUpdate(name: string): name is SteeringUpdate {
  return (STEERING_UPDATES as readonly string[]).includes(name);
}

/**
 * `input` with a {@link RequestBinding} added to its request, when it is a steering Update whose request (a JSON
 * object) has none yet; else `input` as it is. The Update id is the binding's request id (a random UUID when
 * `input` names none, set on the returned input too), so a resend with the same Update id is the same request.
 * @param firstRunId the first run id of the run's chain, asked only when `input` does not name it
 */
export async function bindRequest(input: WorkflowStartUpdateInput, firstRunId: () => Promise<string>): Promise<WorkflowStartUpdateInput> {
  const [req, ...rest] = input.args;
  if (!isSteeringUpdate(input.updateName) || typeof req !== 'object' || req === null || Array.isArray(req) || 'binding' in req)
    return input;
  const updateId = input.options.updateId ?? randomUUID();
  const binding: RequestBinding = {
    update: input.updateName,
    workflowId: input.workflowExecution.workflowId,
    firstRunId: input.firstExecutionRunId ?? (await firstRunId()),
    requestId: updateId,
    issuedAt: new Date().toISOString(),
  };
  return { ...input, args: [{ ...req, binding }, ...rest], options: { ...input.options, updateId } };
}

/**
 * The first run id of the chain of workflow `workflowId` (its latest execution, or `runId`), from `describe`.
 * @throws Error when the server does not report it (an older Temporal server)
 */
export async function firstRunIdOf(connection: Connection, namespace: string, workflowId: string, runId?: string): Promise<string> {
  const d = await connection.workflowService.describeWorkflowExecution({
    namespace,
    execution: { workflowId, ...(runId ? { runId } : {}) },
  });
  const first = d.workflowExecutionInfo?.firstRunId;
  if (!first) throw new Error(`the Temporal server does not report the first run id of ${workflowId}: a steering request cannot be bound`);
  return first;
}

/** The interceptor that binds every steering Update a client sends in `namespace` over `connection` ({@link bindRequest}). */
export function requestBindingInterceptor(connection: Connection, namespace: string): WorkflowClientInterceptor {
  return {
    async startUpdate(input, next) {
      const { workflowId, runId } = input.workflowExecution;
      return next(await bindRequest(input, () => firstRunIdOf(connection, namespace, workflowId, runId)));
    },
  };
}
