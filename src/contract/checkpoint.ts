/**
 * Checkpoints, rewind and fork: the shapes the workflow, the worker and the CLI share
 * (docs/rewind.md). Deterministic.
 */
import { defineUpdate } from '@temporalio/workflow';
import type { BoundRequest } from './steering';

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
export interface RewindRequest extends BoundRequest {
  /** The turn to go back to: the run continues from just before its model call. */
  toTurn: number;
  /** What the person tells Claude (optional). */
  text?: string;
  by: string;
}

/** A path a checkpoint's restore or copy changed: `A`dded, `M`odified (content or mode), `D`eleted, `T`ype changed (file ↔ symlink). */
export interface RestoredChange {
  status: 'A' | 'M' | 'D' | 'T';
  path: string;
}

/**
 * What a restore (rewind, fork) does not put back, so that neither the person nor Claude takes it
 * for restored: every `.git` (none is ever stored), the nested repositories (stored as their
 * commit only), and the paths the run's `exclude` leaves out. Workspace-relative paths.
 */
export interface NotRestored {
  /** Nested repositories (a folder below the top holding a `.git`), in the checkpoint or in the workspace before the restore; sorted. */
  nested: string[];
  /** How many there are in all, when more than `nested` lists (a report in the history lists at most {@link MAX_REPORTED_CHANGES}). */
  nestedCount?: number;
  /** Whether the workspace's top holds a `.git` (the repository itself: commits, branches, index, hooks). */
  git: boolean;
  /** The run's `exclude` entries (names or paths), as given. */
  excluded: string[];
  /** Paths git refuses to write on checkout (`git~1`, `.GIT`, …) that the restore left as they are or could not restore, each with why (absent when none). */
  refused?: string[];
  /** How many there are in all, when more than `refused` lists. */
  refusedCount?: number;
}

/** What a restore did, in `openSession`'s answer (src/activities/session.ts) and a rewind's answer. */
export interface RestoreReport {
  /** Commit id of the record of the workspace just before the restore, in the same store (`agent-jobs file` reads it). */
  before: string;
  /** What the restore changed, from the workspace before it to the checkpoint: at most {@link MAX_REPORTED_CHANGES}. */
  changes: RestoredChange[];
  /** How many paths it changed in all (more than `changes` holds when over the cap). */
  changeCount: number;
  notRestored: NotRestored;
  /**
   * The commit the workspace's own repository's HEAD names once the files are restored (`git rev-parse HEAD`, 40 or
   * 64 hex digits): a restore leaves `.git` as it is, so HEAD stays where the run left it and the files match it only
   * where the checkpoint's did. Null when the workspace is no git repository of its own (no `.git` folder) or HEAD
   * names no commit; absent from older workers.
   */
  gitHead?: string | null;
}

/** Most changes (and nested repositories) a {@link RestoreReport} lists (the rest are counted): it goes into the run's history. */
export const MAX_REPORTED_CHANGES = 200;

/** Most characters of paths a {@link RestoreReport} lists in each of its lists (a path may be 4,096 bytes): 32 KiB. */
export const MAX_REPORTED_CHARS = 32 * 1024;

/**
 * The first items of `paths` that fit {@link MAX_REPORTED_CHANGES} and {@link MAX_REPORTED_CHARS}:
 * a workspace of 100,000 nested repositories or long names must not make the answer too large for
 * the history (Temporal refuses a payload past 2 MB, and the rewind would fail).
 */
export function reportedPrefix<T>(items: readonly T[], pathOf: (item: T) => string): T[] {
  const out: T[] = [];
  let chars = 0;
  for (const item of items) {
    chars += pathOf(item).length;
    if (out.length >= MAX_REPORTED_CHANGES || chars > MAX_REPORTED_CHARS) break;
    out.push(item);
  }
  return out;
}

/**
 * One sentence naming what a restore left as it is (nothing when there is nothing to name), for
 * Claude's note and the CLI. `verb`: "left as it is" (rewind) or "not copied" (fork).
 */
export function notRestoredText(left: NotRestored, verb: 'left as it is now' | 'not copied'): string {
  const parts: string[] = [];
  if (left.git)
    parts.push(
      verb === 'not copied'
        ? '`.git` (this workspace has none: it is no git repository of its own)'
        : "`.git` (the repository's commits, branches and index were not rewound)",
    );
  if (left.nested.length > 0) {
    const shown = left.nested.slice(0, 20).join(', ');
    const all = Math.max(left.nestedCount ?? 0, left.nested.length);
    const more = all > 20 ? ` and ${all - 20} more` : '';
    parts.push(
      `the nested git repositories ${shown}${more} (${verb === 'not copied' ? 'empty folders here' : 'their files and commits as they are now'})`,
    );
  }
  if (left.excluded.length > 0) parts.push(`the excluded paths ${left.excluded.join(', ')}`);
  if (left.refused && left.refused.length > 0) {
    const all = Math.max(left.refusedCount ?? 0, left.refused.length);
    const shown = left.refused.slice(0, 20).join(', ');
    parts.push(`paths git refuses to write ${shown}${all > 20 ? ` and ${all - 20} more` : ''}`);
  }
  return parts.length === 0 ? '' : `Not restored, ${verb}: ${parts.join('; ')}.`;
}

/** Answer of the `rewind` Update. */
export interface RewindAnswer {
  toTurn: number;
  checkpoint: string;
  /** Messages dropped from the conversation (they stay in the history). */
  droppedMessages: number;
  by: string;
  at: string;
  /** What the restore did (absent in rewinds applied before it was reported). */
  restore?: RestoreReport;
}

/** A rewind applied, kept in the run's state (status; carried across continue-as-new, so without the list of changes). */
export interface RewindRecord extends Omit<RewindAnswer, 'restore'> {
  /** Checkpoint of the workspace as it was just before the restore (`agent-jobs file` reads it). */
  before?: string;
}

/** Default checkpoint cap: 1 GiB of regular files. */
export const DEFAULT_CHECKPOINT_MAX_BYTES = 1024 * 1024 * 1024;

/** Rewinds the run to just before a turn's model call (steering.ts has the other Updates). */
export const rewindUpdate = defineUpdate<RewindAnswer, [RewindRequest]>('rewind');
