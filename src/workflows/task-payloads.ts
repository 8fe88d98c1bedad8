/**
 * The bound on the payload bytes of one workflow task (C30): before `agentRun` commands a model
 * call or a continue-as-new whose payloads pass `MAX_TASK_PAYLOAD_BYTES`, it asks the worker
 * (local activity `payloadOffload`) whether its claim check moves big payloads out of history.
 * With it on, the task goes ahead (each payload over the threshold becomes a reference of about
 * 250 bytes); with it off, the run fails itself with a message that says why, instead of the
 * server failing or terminating it for a payload over 2 MiB or a message over 4 MB.
 * Deterministic (workflow code).
 */
import { patched, proxyLocalActivities } from '@temporalio/workflow';
import type { createPayloadActivities } from '../activities/payloads';
import { MAX_TASK_PAYLOAD_BYTES, PAYLOAD_OFFLOAD_OPTIONS } from '../config';

const { payloadOffload } = proxyLocalActivities<ReturnType<typeof createPayloadActivities>>(PAYLOAD_OFFLOAD_OPTIONS);

/**
 * patched() id: a workflow task whose payloads would pass `MAX_TASK_PAYLOAD_BYTES` asks the
 * worker whether its claim check is on, and without one the run fails itself (module doc).
 * Asked only past the bound, so runs that never got there replay with no marker.
 */
export const TASK_PAYLOAD_BOUND_PATCH = 'bounded-task-payloads';

/** `ApplicationFailure.type` of a model call the run did not make because its input passed the bound: the run ends `failed` with its message. */
export const TASK_PAYLOAD_TOO_LARGE = 'TaskPayloadTooLarge';

/** UTF-8 bytes of `s` (a lone surrogate counts 3, as the encoder writes U+FFFD). */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/** Bytes of JSON the payload converter writes for `values` (one payload each; `undefined` writes none). */
export function payloadBytes(values: unknown[]): number {
  return values.reduce<number>((n, v) => n + (v === undefined ? 0 : utf8Length(JSON.stringify(v))), 0);
}

/** `1966080` → `1,966,080` (no locale: workflow code). */
const figure = (n: number): string => String(n).replace(/\B(?=(\d{3})+$)/g, ',');

/**
 * Whether the task that commands `values` (the arguments of one model call, or of a
 * continue-as-new) may go to the server.
 * @param what what the task would command, for the message (`continue-as-new`, `the model call of turn 3`)
 * @returns null when it may; else the run's failure message: the bytes, the bound, the cause and what to do
 */
export async function taskPayloadProblem(what: string, values: unknown[]): Promise<string | null> {
  const bytes = payloadBytes(values);
  if (bytes <= MAX_TASK_PAYLOAD_BYTES) return null;
  // A run recorded before the bound commanded this task as it was; the server judged it.
  if (!patched(TASK_PAYLOAD_BOUND_PATCH)) return null;
  const { thresholdBytes } = await payloadOffload();
  if (thresholdBytes !== null) return null;
  return (
    `${what} would put ${figure(bytes)} bytes of payloads in one workflow task, over the bound of ` +
    `${figure(MAX_TASK_PAYLOAD_BYTES)} that keeps a task under Temporal's 2 MiB payload and 4 MB message limits ` +
    `(past them the server fails or terminates the run); the worker has no claim check (AGENT_JOBS_BLOB_STORE=none): ` +
    'turn it on, or start the run with a shorter task or system prompt'
  );
}
