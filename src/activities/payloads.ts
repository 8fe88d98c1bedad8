/**
 * What this worker's codec does with a big payload, asked by the workflow when a workflow task
 * would carry more than `MAX_TASK_PAYLOAD_BYTES` of payloads (src/workflows/task-payloads.ts,
 * C30). A local activity: it runs in the worker whose codec encodes that very task.
 */
import type { PayloadOffload } from '../contract';

/**
 * The `payloadOffload` local activity.
 * @param thresholdBytes the claim check's threshold (encoded bytes over which a payload goes to the blob store), or null when this worker has no claim check
 */
export function createPayloadActivities(thresholdBytes: number | null): { payloadOffload(): Promise<PayloadOffload> } {
  return {
    payloadOffload(): Promise<PayloadOffload> {
      return Promise.resolve({ thresholdBytes });
    },
  };
}
