/**
 * Checkpoints, rewind and fork: the shapes the workflow, the worker and the CLI share
 * (docs/rewind.md). Deterministic.
 */
import { defineUpdate } from '@temporalio/workflow';

/** What the run asks the worker to do before a tool call that may write (`runCommand` / `runEdit` input). */
export interface CheckpointRequest {
  /** The model call (1-based, as `status` counts turns) whose tool call this is. */
  turn: number;
  /** Largest workspace recorded, bytes of regular files. */
  maxBytes: number;
  /** Names or workspace-relative paths left out. */
  exclude: string[];
}

/**
 * A checkpoint the worker took (in the tool call's answer, so in the history with its turn), or why none was.
 * `leftOut`: the paths it left out because git refuses to write them on checkout (`git~1/`, `.GIT/`, a symlink
 * `.gitmodules`: a checkpoint holding one could not be restored), how many and the first 20; absent when none.
 */
export type CheckpointResult =
  | {
      turn: number;
      id: string;
      store: string;
      workspace: string;
      bytes: number;
      files: number;
      leftOut?: { count: number; paths: string[] };
    }
  | { turn: number; skipped: string };

/** A checkpoint the run holds, by turn (the first one taken in that turn: the workspace as it was before the turn's tools). */
export interface CheckpointRecord {
  turn: number;
  id: string;
  store: string;
  workspace: string;
  /** Whole-conversation index of the turn's assistant message: the conversation before the turn's model call is the messages before it. */
  messageIndex: number;
  /** `tool_use` id of the call it was taken before. */
  toolUseId: string;
}

/** `openSession` restores this checkpoint into the workspace before bash starts (rewind; a fork's first session). */
export interface RestoreRequest {
  store: string;
  id: string;
  exclude: string[];
}

/** Input of the `rewind` Update. */
export interface RewindRequest {
  /** The turn to go back to: the run continues from just before its model call. */
  toTurn: number;
  /** What the person tells Claude (optional). */
  text?: string;
  by: string;
}

/** Answer of the `rewind` Update. */
export interface RewindAnswer {
  toTurn: number;
  checkpoint: string;
  /** Messages dropped from the conversation (they stay in the history). */
  droppedMessages: number;
  by: string;
  at: string;
}

/** A rewind applied, kept in the run's state (status, checkpoints listing). */
export interface RewindRecord extends RewindAnswer {
  /** Checkpoint of the workspace as it was just before the restore (the rewind can be undone from it). */
  before?: string;
}

/** Default checkpoint cap: 1 GiB of regular files. */
export const DEFAULT_CHECKPOINT_MAX_BYTES = 1024 * 1024 * 1024;

/** Rewinds the run to just before a turn's model call (steering.ts has the other Updates). */
export const rewindUpdate = defineUpdate<RewindAnswer, [RewindRequest]>('rewind');
