/**
 * Signal and query definitions of the agentRun workflow, shared by the
 * workflow and the CLI: no string names at call sites.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ApprovalDecision, StatusView, TranscriptView } from './types';

/**
 * `approve` signal: a human's decision on the pending command. Applies only
 * when `toolUseId` names the `tool_use` that is waiting right now and no
 * decision was applied to it yet; any other decision (early, unknown id,
 * duplicate) is ignored and logged (C14).
 */
export const approveSignal = defineSignal<[ApprovalDecision]>('approve');

/** `status` query: where the run is (see {@link StatusView}). */
export const statusQuery = defineQuery<StatusView>('status');

/**
 * `transcript` query: the conversation as it will next be sent to Claude.
 * Argument: index of the first message wanted (default 0), so a follower
 * can fetch only what is new.
 */
export const transcriptQuery = defineQuery<TranscriptView, [number?]>('transcript');
