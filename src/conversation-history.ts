/**
 * The durable copy of a conversation: the workflow history. Every
 * `callClaude` input holds the conversation's change since the previous
 * call (or, in older runs, the whole transcript), so folding the inputs of
 * a run and of the runs it continued from rebuilds the conversation
 * exactly as the workflow holds it (src/contract/conversation.ts). Used by
 * `callClaude` when its worker has no copy (a new worker, a restart, an
 * eviction) and by `agent-jobs transcript` for the messages a continued run
 * no longer holds.
 */
import type { Client } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { foldCallInputs, type Conversation, type ConversationPart } from './contract';

const { EventType } = temporal.api.enums.v1;

/** The activity type whose inputs carry the conversation. */
const CALL_CLAUDE = 'callClaude';

/** One run of a chain: its `callClaude` inputs in order, and the run it continued from. */
interface RunCalls {
  inputs: ConversationPart[];
  continuedFrom: string | null;
}

/**
 * Reads one run's history: the `callClaude` inputs scheduled in it, in order,
 * up to (not including) the one with activity id `stopAt` when given.
 * @throws the client's error when the history cannot be read (unknown run, server down)
 */
async function readRun(client: Client, workflowId: string, runId: string, stopAt?: string): Promise<RunCalls> {
  const inputs: ConversationPart[] = [];
  let continuedFrom: string | null = null;
  let nextPageToken: Uint8Array | undefined;
  const converter = client.options.loadedDataConverter.payloadConverter;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const event of page.history?.events ?? []) {
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
        continuedFrom = event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || null;
      } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
        const attrs = event.activityTaskScheduledEventAttributes;
        if (attrs?.activityType?.name !== CALL_CLAUDE) continue;
        if (stopAt !== undefined && attrs.activityId === stopAt) return { inputs, continuedFrom };
        const payload = attrs.input?.payloads?.[0];
        if (payload) inputs.push(converter.fromPayload<ConversationPart>(payload));
      }
    }
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { inputs, continuedFrom };
}

/**
 * Rebuilds a conversation from the histories of run `runId` of `workflowId`
 * and of every run it continued from (oldest first).
 * @param stopAt activity id of a `callClaude` of run `runId`: only the calls scheduled before it count (the caller applies its own change)
 * @returns the conversation, or why the histories do not chain
 * @throws the client's error when a history cannot be read
 */
export async function conversationFromHistory(
  client: Client,
  workflowId: string,
  runId: string,
  stopAt?: string,
): Promise<{ ok: true; conversation: Conversation } | { ok: false; problem: string }> {
  const runs: ConversationPart[][] = [];
  let run: string | null = runId;
  let first = true;
  const seen = new Set<string>();
  while (run !== null && !seen.has(run)) {
    seen.add(run);
    const calls = await readRun(client, workflowId, run, first ? stopAt : undefined);
    runs.unshift(calls.inputs);
    run = calls.continuedFrom;
    first = false;
  }
  return foldCallInputs(runs.flat());
}
