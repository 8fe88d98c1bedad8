/**
 * The `rewind` Update (docs/rewind.md): the run goes back to just before a turn's model call.
 * The validator refuses what cannot be done (no checkpoint for the turn, a decision pending
 * mid-turn); the handler asks, and the loop applies it at the start of the next turn (a command
 * that runs meanwhile is waited for): the workspace is restored to the turn's checkpoint in a new
 * session, the conversation cut to what Claude had then (the messages before stay byte for byte),
 * and Claude is told. Deterministic (workflow code).
 */
import { condition, log, patched, setHandler } from '@temporalio/workflow';
import { MAX_MESSAGE_CHARS } from '../contract';
import { notRestoredText, rewindUpdate, type NotRestored, type RewindAnswer, type RewindRequest } from '../contract/checkpoint';
import { failureMessage } from './failures';
import type { RunState } from './run-state';
import type { RunSession } from './session';
import { RejectedRequest, checkBy, checkObject, steeringHandler, steeringValidator } from './steering';

/** patched() id: a rewind is applied (session reopened on the restored checkpoint, conversation cut). */
export const REWIND_PATCH = 'rewind-to-checkpoint';

/**
 * patched() id: the rewind's answer carries what the restore did (the record of the workspace
 * before it, the paths it changed, what it left as it is) and Claude's note names what it left.
 */
export const REWIND_REPORT_PATCH = 'rewind-reports-restore';

/**
 * Registers the `rewind` Update; an encrypted run (`sealed`) takes it only through its codec (`checkSealed`,
 * steering.ts), bound to this run, once (`checkBinding`).
 */
export function setRewindHandler(state: RunState, sealed = false): void {
  setHandler(rewindUpdate, steeringHandler(state, rewind), { validator: steeringValidator(state, 'rewind', sealed, validateRewind) });
}

function validateRewind(state: RunState, req: RewindRequest): void {
  checkObject(req);
  checkBy(req.by);
  if (state.result !== null)
    throw new RejectedRequest(
      `the run has ended (${state.result.status}); fork it instead: agent-jobs fork ${state.workflowId} --at-turn N`,
    );
  if (!Number.isInteger(req.toTurn) || req.toTurn < 1) throw new RejectedRequest('toTurn must be a turn number (1, 2, ...)');
  if (req.text !== undefined && (typeof req.text !== 'string' || req.text.length > MAX_MESSAGE_CHARS))
    throw new RejectedRequest(`text must be a string of at most ${MAX_MESSAGE_CHARS} characters`);
  if (state.rewindAsked !== null)
    throw new RejectedRequest(`a rewind to turn ${state.rewindAsked.req.toTurn} is already waiting to be applied`);
  checkpointOf(state, req.toTurn);
  if (state.inflight !== null && (state.status === 'awaiting_approval' || state.status === 'paused'))
    throw new RejectedRequest(
      `the run waits in the middle of turn ${state.turns} (${state.status === 'paused' ? 'paused before a tool call' : 'for an approval'}): ${state.status === 'paused' ? 'resume it' : 'decide the pending approval'} first, then rewind`,
    );
}

/** The checkpoint of `turn`. @throws RejectedRequest saying which turns have one */
function checkpointOf(state: RunState, turn: number) {
  const record = state.checkpoints.find((c) => c.turn === turn);
  const held = state.checkpoints.filter((c) => c.messageIndex >= state.conversation.base).map((c) => c.turn);
  const which = held.length > 0 ? `turns with a checkpoint: ${held.join(', ')}` : 'no turn of this run has a checkpoint yet';
  if (!record)
    throw new RejectedRequest(
      turn > state.turns
        ? `turn ${turn} has not happened yet (the run is at turn ${state.turns}); ${which}`
        : `turn ${turn} has no checkpoint (it ran no command or edit that may write, or a rewind dropped it); ${which}`,
    );
  if (record.messageIndex < state.conversation.base)
    throw new RejectedRequest(
      `turn ${turn} is before this run continued as new, and its conversation is no longer held here; fork it instead: agent-jobs fork ${state.workflowId} --at-turn ${turn}`,
    );
  return record;
}

/** Asks for the rewind and answers once the loop applied it. @throws the reason it could not be applied */
async function rewind(state: RunState, req: RewindRequest): Promise<RewindAnswer> {
  const n = state.askRewind(req);
  log.info('rewind asked', { toTurn: req.toTurn, by: req.by });
  await condition(() => state.rewindDone?.n === n || state.result !== null);
  const done = state.rewindDone;
  if (done?.n !== n) throw new RejectedRequest(`the run ended before the rewind could be applied (${state.result?.status ?? ''})`);
  if (done.error !== undefined) throw new RejectedRequest(done.error);
  return done.answer!;
}

/**
 * What Claude is told after a rewind (at the end of the last user message it had before the turn).
 * `left`: what the restore did not put back (named so that Claude does not take it for restored);
 * absent in rewinds applied before {@link REWIND_REPORT_PATCH}.
 */
export function rewindNote(req: RewindRequest, turn: number, left?: NotRestored): string {
  const said = req.text !== undefined && req.text.trim() !== '' ? ` ${req.by} says: ${req.text}` : '';
  const kept = left ? notRestoredText(left, 'left as it is now') : '';
  return `[rewound by ${req.by}] The run was rewound to just before turn ${turn}: what you did from then on was undone, the workspace files are as they were at that point, and the bash session was restarted in the workspace directory (working directory, variables and background jobs are gone).${kept ? ` ${kept}` : ''}${said}`;
}

/**
 * Applies the rewind asked, if any (at the start of a turn, before the model call): a new session
 * on the restored checkpoint, then the conversation cut and the note appended. A restore that
 * fails leaves the conversation as it was, and the Update says why.
 */
export async function applyRewind(state: RunState, session: RunSession): Promise<void> {
  const asked = state.takeRewindAsked();
  if (asked === null) return;
  const { req, n } = asked;
  patched(REWIND_PATCH);
  let record;
  try {
    record = checkpointOf(state, req.toTurn);
  } catch (err) {
    state.rewindFailed(n, (err as Error).message);
    return;
  }
  state.setDetails(`rewinding to turn ${req.toTurn} (asked by ${req.by})`);
  let opened;
  try {
    opened = await session.reopenRestored({ store: record.store, id: record.id, exclude: state.input.checkpoints.exclude });
  } catch (err) {
    state.rewindFailed(n, `the workspace could not be restored to turn ${req.toTurn}'s checkpoint: ${failureMessage(err)}`);
    return;
  }
  const report = patched(REWIND_REPORT_PATCH) ? opened.restored : undefined;
  const dropped = state.conversation.length - record.messageIndex;
  state.conversation.rewindTo(record.messageIndex);
  state.conversation.appendUserBlocks([{ type: 'text', text: rewindNote(req, req.toTurn, report?.notRestored) }]);
  const answer: RewindAnswer = {
    toTurn: req.toTurn,
    checkpoint: record.id,
    droppedMessages: dropped,
    by: req.by,
    at: new Date().toISOString(),
    ...(report ? { restore: report } : {}),
  };
  state.rewound(n, answer);
  log.info('rewound', { toTurn: req.toTurn, by: req.by, droppedMessages: dropped });
  state.setDetails(`rewound to turn ${req.toTurn} by ${req.by}`);
}
