/**
 * Steering a run from outside: the `say`, `pause`, `resume`, `end` and
 * `removeRule` Updates (their validators and handlers), the safe points
 * where a pause takes effect, and the queued messages reaching Claude.
 * The `decide` Update lives with the approval flow (approval.ts).
 * Deterministic (workflow code).
 *
 * A validator throws to reject: the request never enters the history and
 * the caller gets the message. A handler applies the request and answers
 * at once; what it changes takes effect at the loop's next safe point.
 *
 * Every steering request (these, `extend` and `rewind`) is bound to one Update of one run, once
 * ({@link checkBinding}): a sealed request (one that came through the codec) proves only that a
 * holder of the keys made it once, and anyone who reads the history can copy its encrypted
 * payload and send it again, under any Update id, to this run or another. Its binding (inside
 * the encrypted payload, so the copier cannot change it) names the Update, the workflow id and
 * the chain's first run id, a single-use request id and when it was issued.
 */
import { isSealed } from '../shared/sealed';
import { condition, log, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  MAX_BY_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_QUEUED_CHARS,
  MAX_QUEUED_MESSAGES,
  MAX_REMEMBERED_REQUESTS,
  MAX_REQUEST_ID_CHARS,
  REQUEST_CLOCK_SKEW_MS,
  REQUEST_WINDOW_MS,
  endUpdate,
  pauseUpdate,
  removeRuleUpdate,
  resumeUpdate,
  sayUpdate,
  type ApprovalRule,
  type BoundRequest,
  type ByRequest,
  type RemoveRuleRequest,
  type RequestBinding,
  type SayRequest,
  type SteerAnswer,
  type SteeringUpdate,
  type TextBlock,
} from '../contract';
import { invisibleNameProblem } from '../shared/display';
import { msSince } from './limits';
import type { RunState } from './run-state';

/** Thrown by a validator: the request is rejected with this message (the SDK turns any error into the Update's failure). */
export class RejectedRequest extends Error {
  override name = 'RejectedRequest';
}

/**
 * What a `by` may hold: letters, marks and digits of any script, spaces and
 * `. _ @ + ' -` (user names, e-mail addresses, "Ana María"). Nothing a
 * terminal, the UI's markdown or a bidi algorithm acts on can be in a name
 * that is shown in status, `watch`, `pending` and the UI's current details.
 */
export const BY_PATTERN = /^[\p{L}\p{M}\p{N} ._@+'-]+$/u;

/**
 * @throws RejectedRequest unless `by` is a non-empty {@link BY_PATTERN} name of at most
 *   {@link MAX_BY_CHARS} characters that a person can see ({@link invisibleNameProblem}: no
 *   default-ignorable letter such as U+3164, no variation selector, no combining mark alone).
 *   A validator that rejects writes nothing to the history, so this needs no patch.
 */
export function checkBy(by: unknown): void {
  if (typeof by !== 'string' || by.trim() === '') throw new RejectedRequest('by must name who sends this (a non-empty string)');
  if (by.length > MAX_BY_CHARS) throw new RejectedRequest(`by is longer than ${MAX_BY_CHARS} characters`);
  if (!BY_PATTERN.test(by)) {
    throw new RejectedRequest("by may hold only letters, digits, spaces and . _ @ + ' - (no control, markup or bidi characters)");
  }
  const invisible = invisibleNameProblem(by);
  if (invisible !== null) throw new RejectedRequest(`by must be a name a person can see: ${invisible}`);
}

/** @throws RejectedRequest unless `req` is an object (Update payloads are not typed on the wire) */
export function checkObject(req: unknown): asserts req is Record<string, unknown> {
  if (typeof req !== 'object' || req === null || Array.isArray(req)) throw new RejectedRequest('the request must be a JSON object');
}

/** Why an encrypted run refuses a request that did not come through its codec. */
export const NOT_SEALED_REQUEST =
  'this run is encrypted: a request is accepted only when sent with its codec keys (the agent-jobs CLI, or the codec server)';

/**
 * @param sealed whether the run is encrypted (its input came through the product's codec: src/shared/sealed.ts)
 * @throws RejectedRequest when the run is encrypted and `req` did not come through its codec (a client without the
 *   keys: it could otherwise steer, extend, rewind or end a run whose history it cannot read). A validator: a rejected
 *   Update is not in the history, so this needs no patch.
 */
export function checkSealed(sealed: boolean, req: unknown): void {
  if (sealed && !isSealed(req)) throw new RejectedRequest(NOT_SEALED_REQUEST);
}

/**
 * patched() id: the steering Updates' handlers remember the request id of each bound request they
 * apply (carried across continue-as-new), so that the validators refuse it when it comes again.
 * Asked only for a request that carries a binding: a history with none gets no marker.
 */
export const REQUESTS_ONCE_PATCH = 'steering-requests-once';

/** Why an encrypted run refuses a request without a binding. */
export const NOT_BOUND_REQUEST =
  'this run is encrypted: a request must name its run, a request id and when it was issued (binding); send it with the agent-jobs CLI or client of this version';

/**
 * @param sealed whether the run is encrypted: then a request without a binding is refused
 * @throws RejectedRequest when `req.binding` is absent in an encrypted run, is malformed, names another Update than
 *   `update` or another run (workflow id, first run id), was issued more than `REQUEST_WINDOW_MS` before the workflow
 *   time (or more than `REQUEST_CLOCK_SKEW_MS` after it), names a request id this run applied already, or the run
 *   remembers `MAX_REMEMBERED_REQUESTS` already. A plaintext run takes a request without one (older clients, the
 *   Temporal UI). A validator: a rejected Update is not in the history, so this needs no patch.
 */
export function checkBinding(state: RunState, update: SteeringUpdate, req: BoundRequest, sealed: boolean): void {
  const b = req.binding;
  if (b === undefined) {
    if (sealed) throw new RejectedRequest(NOT_BOUND_REQUEST);
    return;
  }
  if (!isBinding(b))
    throw new RejectedRequest(
      `binding must be an object of update, workflowId, firstRunId, requestId (at most ${MAX_REQUEST_ID_CHARS} characters) and issuedAt (ISO-8601 UTC, as toISOString writes it)`,
    );
  if (b.update !== update) throw new RejectedRequest(`this request is for the ${JSON.stringify(b.update)} Update, not ${update}`);
  const info = workflowInfo();
  if (b.workflowId !== info.workflowId || b.firstRunId !== info.firstExecutionRunId)
    throw new RejectedRequest('this request names another run (binding.workflowId, binding.firstRunId): send it again to this run');
  const age = msSince(b.issuedAt);
  if (age > REQUEST_WINDOW_MS || age < -REQUEST_CLOCK_SKEW_MS)
    throw new RejectedRequest(
      `this request was issued at ${b.issuedAt}, not within ${REQUEST_WINDOW_MS / 60_000} minutes of the run's time (${new Date().toISOString()}): send it again`,
    );
  const used = state.usedRequests();
  if (used.some((r) => r.requestId === b.requestId))
    throw new RejectedRequest('this request was applied already (its binding.requestId): a request applies once; send a new one');
  if (used.length >= MAX_REMEMBERED_REQUESTS)
    throw new RejectedRequest(
      `the run took ${MAX_REMEMBERED_REQUESTS} requests in the last ${REQUEST_WINDOW_MS / 60_000} minutes; send it again later`,
    );
}

/** An ISO-8601 UTC time as `Date.prototype.toISOString` writes it (no local time: workflow code reads no time zone). */
const UTC_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,3})?Z$/;

/** Whether `b` has the shape of a {@link RequestBinding} (Update payloads are not typed on the wire). */
function isBinding(b: unknown): b is RequestBinding {
  if (typeof b !== 'object' || b === null || Array.isArray(b)) return false;
  const o = b as Record<string, unknown>;
  const text = (v: unknown, max = MAX_REQUEST_ID_CHARS): v is string => typeof v === 'string' && v !== '' && v.length <= max;
  return (
    text(o.update) &&
    // Temporal's own bound on a workflow id (a sub-agent's id is its parent's and more: docs/subagents.md).
    text(o.workflowId, 1000) &&
    text(o.firstRunId) &&
    text(o.requestId) &&
    typeof o.issuedAt === 'string' &&
    UTC_TIME.test(o.issuedAt)
  );
}

/**
 * Called first by each steering handler (synchronously, so a copy of the request validated in the
 * same workflow task after it is refused): remembers the request id of a bound request
 * ({@link REQUESTS_ONCE_PATCH}). A request without a binding is not remembered.
 */
export function rememberBinding(state: RunState, req: BoundRequest): void {
  const b = req.binding;
  if (b === undefined || !patched(REQUESTS_ONCE_PATCH)) return;
  state.rememberRequest({ requestId: b.requestId, issuedAt: b.issuedAt });
}

/** @throws RejectedRequest once the run has ended (a request after the result would be lost) */
function checkOpen(state: RunState): void {
  if (state.result !== null) throw new RejectedRequest(`the run has ended (${state.result.status})`);
}

/**
 * The validator of steering Update `update`: checks the request's shape first, then that it came through the codec
 * ({@link checkSealed}), then its binding ({@link checkBinding}: before what it asks, whose reasons name the run's
 * state, which a request copied from another run must not learn), then what it asks (`check`).
 * @throws RejectedRequest
 */
export function steeringValidator<R extends BoundRequest>(
  state: RunState,
  update: SteeringUpdate,
  sealed: boolean,
  check: (state: RunState, req: R) => void,
): (req: R) => void {
  return (req: R): void => {
    checkObject(req);
    checkSealed(sealed, req);
    checkBinding(state, update, req, sealed);
    check(state, req);
  };
}

/** The handler of a steering Update: remembers the request's binding first ({@link rememberBinding}), then `apply`. */
export function steeringHandler<R extends BoundRequest, A>(state: RunState, apply: (state: RunState, req: R) => A): (req: R) => A {
  return (req: R): A => {
    rememberBinding(state, req);
    return apply(state, req);
  };
}

/**
 * Registers the steering Updates on `state`.
 * @param sealed whether the run is encrypted: then each is accepted only through its codec ({@link checkSealed}) and
 *   bound to this run, once ({@link checkBinding}) @default false
 */
export function setSteeringHandlers(state: RunState, sealed = false): void {
  const validator = <R extends BoundRequest>(update: SteeringUpdate, check: (state: RunState, req: R) => void) => ({
    validator: steeringValidator(state, update, sealed, check),
  });
  setHandler(sayUpdate, steeringHandler(state, say), validator('say', validateSay));
  setHandler(pauseUpdate, steeringHandler(state, pause), validator('pause', validatePause));
  setHandler(resumeUpdate, steeringHandler(state, resume), validator('resume', validateResume));
  setHandler(endUpdate, steeringHandler(state, end), validator('end', validateEnd));
  setHandler(removeRuleUpdate, steeringHandler(state, removeRule), validator('removeRule', validateRemoveRule));
}

function validateSay(state: RunState, req: SayRequest): void {
  checkObject(req);
  checkBy(req.by);
  checkOpen(state);
  if (typeof req.text !== 'string' || req.text.trim() === '') throw new RejectedRequest('text must be a non-empty string');
  if (req.text.length > MAX_MESSAGE_CHARS) throw new RejectedRequest(`text is longer than ${MAX_MESSAGE_CHARS} characters`);
  if (state.queued.length >= MAX_QUEUED_MESSAGES) throw new RejectedRequest(`${MAX_QUEUED_MESSAGES} messages are already queued`);
  const queuedChars = state.queued.reduce((n, m) => n + m.text.length, 0);
  if (queuedChars + req.text.length > MAX_QUEUED_CHARS) {
    throw new RejectedRequest(
      `${queuedChars} characters are already queued; with this message it would be more than ${MAX_QUEUED_CHARS} (Claude reads them at the next turn boundary)`,
    );
  }
  if (state.endRequestedBy !== null) throw new RejectedRequest(`the run is ending (end asked by ${state.endRequestedBy})`);
}

function say(state: RunState, req: SayRequest): { queued: true; queuedMessages: number; at: string } {
  const at = new Date().toISOString();
  const queuedMessages = state.queueMessage({ text: req.text, by: req.by, at });
  log.info('message queued', { by: req.by, chars: req.text.length });
  return { queued: true, queuedMessages, at };
}

function validatePause(state: RunState, req: ByRequest): void {
  checkObject(req);
  checkBy(req.by);
  checkOpen(state);
  if (state.pause !== null) {
    const why = state.pause.by
      ? `by ${state.pause.by}`
      : state.pause.reason === 'budget'
        ? `its ${state.pause.budget ?? ''} budget is spent`
        : state.pause.reason;
    throw new RejectedRequest(`the run is already paused (${why})`);
  }
}

/**
 * Asks for a pause. A run waiting for a person (approval, next message) is
 * paused in the same workflow task and the answer says `paused`; a run in a
 * model call or a command answers `running` and pauses at the next safe point.
 */
async function pause(state: RunState, req: ByRequest): Promise<SteerAnswer> {
  const at = new Date().toISOString();
  state.askPause({ reason: 'human', by: req.by, at });
  log.info('pause asked', { by: req.by });
  if (state.status === 'awaiting_approval' || state.status === 'awaiting_message') {
    await condition(() => state.status === 'paused' || state.pause === null || state.result !== null);
  }
  return { status: state.status, by: req.by, at };
}

function validateResume(state: RunState, req: ByRequest): void {
  checkObject(req);
  checkBy(req.by);
  checkOpen(state);
  if (state.pause === null)
    // Status lags a resume accepted earlier in the same workflow task: it still says `paused`.
    throw new RejectedRequest(
      state.status === 'paused' ? 'the run is not paused: a resume is already under way' : `the run is not paused (status ${state.status})`,
    );
  if (state.pause.reason === 'budget') {
    const kind = state.pause.budget ?? 'turns';
    throw new RejectedRequest(
      `the run is paused because its ${kind} budget is spent, and resume gives no more: raise it with \`agent-jobs extend ${state.workflowId} --${kind} ...\`, or stop the run with \`agent-jobs cancel ${state.workflowId}\``,
    );
  }
}

/**
 * patched() id: a resume also answers when a pause asked after it (in the
 * same workflow task, before the run left `paused`) keeps the run paused;
 * its answer then says `paused`. Before, the resume waited for the status
 * to leave `paused`, which that second pause never let happen: the caller
 * got no answer until a later resume.
 */
export const RESUME_ANSWERS_REPAUSED_PATCH = 'resume-answers-when-paused-again';

/**
 * Clears the pause; answers with the status the run goes on in: once it has
 * left `paused` (in the same workflow task), or `paused` when a later pause
 * took over first ({@link RESUME_ANSWERS_REPAUSED_PATCH}).
 */
async function resume(state: RunState, req: ByRequest): Promise<SteerAnswer> {
  const at = new Date().toISOString();
  state.clearPause();
  log.info('resumed', { by: req.by });
  const pausedAgain = patched(RESUME_ANSWERS_REPAUSED_PATCH) ? () => state.pause !== null : () => false;
  await condition(() => state.status !== 'paused' || pausedAgain() || state.result !== null);
  return { status: state.result?.status ?? state.status, by: req.by, at };
}

function validateEnd(state: RunState, req: ByRequest): void {
  checkObject(req);
  checkBy(req.by);
  checkOpen(state);
  if (!state.input.chat) throw new RejectedRequest('the run is not a conversation (start --chat); stop it with `agent-jobs cancel`');
  if (state.endRequestedBy !== null) throw new RejectedRequest(`end was already asked by ${state.endRequestedBy}`);
}

/** Asks a chat run to end; a run waiting for a message completes at once, and the answer says `completed`. */
async function end(state: RunState, req: ByRequest): Promise<SteerAnswer> {
  const at = new Date().toISOString();
  state.requestEnd(req.by);
  log.info('end asked', { by: req.by });
  if (state.status === 'awaiting_message') await condition(() => state.result !== null);
  return { status: state.result?.status ?? state.status, by: req.by, at };
}

function validateRemoveRule(state: RunState, req: RemoveRuleRequest): void {
  checkObject(req);
  checkBy(req.by);
  checkOpen(state);
  if (!Number.isInteger(req.id)) throw new RejectedRequest('id must be the number of a rule (see `agent-jobs rules <workflowId>`)');
  if (!state.rules.some((r) => r.id === req.id)) {
    throw new RejectedRequest(`no rule ${req.id} in this run (rules: ${state.rules.map((r) => r.id).join(', ') || 'none'})`);
  }
}

function removeRule(state: RunState, req: RemoveRuleRequest): ApprovalRule[] {
  const rules = state.removeRule(req.id);
  log.info('approval rule removed', { id: req.id, by: req.by });
  return [...rules];
}

/**
 * A safe point: before a model call or a command. While a pause is asked,
 * the run waits here (status `paused`) until `resume`; nothing runs. The
 * session and workspace stay as they are. `wake`: returns early while still paused (a rewind
 * asked at the turn's start is applied during the pause).
 */
export async function safePoint(state: RunState, wake: () => boolean = () => false): Promise<void> {
  if (state.pause === null || wake()) return;
  const before = state.status;
  state.setStatus('paused');
  state.setDetails(`paused by ${state.pause.by ?? 'a person'}; resume with \`agent-jobs resume ${state.workflowId}\``);
  await condition(() => state.pause === null || wake());
  state.setStatus(before);
  state.setDetails('resumed');
}

/**
 * The queued messages as text blocks, oldest first, each naming its sender,
 * and empties the queue. They go at the end of the next user message (after
 * that turn's `tool_result` blocks), never between a `tool_use` and its result.
 */
export function drainMessages(state: RunState): TextBlock[] {
  return state.takeQueued().map((m): TextBlock => ({ type: 'text', text: `[message from ${m.by}] ${m.text}` }));
}
