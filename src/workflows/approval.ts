/**
 * The approval flow of one command: which rules decide (the policy on the
 * session's worker, or the old in-workflow rules for runs that started
 * before it), the pending state, the decision a human sends, the wait and
 * its timeout, and the record of what was applied. Deterministic (workflow
 * code).
 *
 * Round trip: the command asks (no approval rule matched) → `pending` is
 * set, status `awaiting_approval` → the `decide` Update (its validator
 * rejects anything that cannot apply) or the older `approve` signal
 * ({@link receiveDecision}: checked, ignored and logged when it cannot
 * apply) hands one decision for exactly that `tool_use` and hash →
 * {@link waitForApproval} wakes, records it in `state.decisions` → the
 * command (or the person's edit of it) runs in the shell, or Claude is told
 * it was denied. A pause holds the wait (and the approval timeout); the
 * timeout denies, ends the run or pauses it (`approvalTimeoutAction`).
 */
import { condition, log, patched, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  MAX_BY_CHARS,
  MAX_RULES,
  decideUpdate,
  type AppliedDecision,
  type ApprovalDecision,
  type ApprovalRule,
  type DecideAnswer,
  type DecideRequest,
  type DecisionKind,
  type PendingApproval,
  type PendingEdit,
} from '../contract';
import { temporalDuration } from '../contract/input';
import { TEXT_EDITOR_NAME, type EditRequest, type RunEditOutput } from '../contract/text-editor';
import { commandDetails, commandSummary, editWarningDetails, invisibleNameProblem, markdownText, pendingApproval } from '../shared/display';
import { isSealed } from '../shared/sealed';
import { sha256 } from '../shared/sha256';
import { MAX_PLAIN_COMMAND_CHARS, shellStateBuiltin, tokenize } from '../shared/words';
import { decideApproval as legacyDecideApproval } from './approval-policy';
import type { RunState } from './run-state';
import { type ApprovalState, type Decision } from './approval-state';
import type { RunSession, SessionOutcome } from './session';
import { BY_PATTERN, RejectedRequest, checkBy, checkObject, safePoint } from './steering';
import { deniedOutcome, describeDuration, editedOutcome, type ToolOutcome } from './tool-results';

/**
 * patched() id: under approval `policy`, the session's worker judges each
 * command (src/policy, on the parsed command and the workspace's real paths)
 * and runs allowed ones exactly, in one runCommand; before it, the workflow
 * judged the raw text itself (approval-policy.ts, kept for replay).
 */
export const POLICY_AT_SESSION_PATCH = 'policy-judged-at-session';

/**
 * patched() id: the `approve` signal drops a `by` that a person cannot see (U+3164 or a
 * variation selector passing for a letter, a lone combining mark), as the `decide` Update
 * rejects it; before it such a name was kept and reached status and Claude's tool_result.
 */
export const VISIBLE_BY_PATCH = 'signal-by-must-be-visible';

/**
 * patched() id: each approval wait has a number (`PendingApproval.wait`) that a `decide` may name
 * and its answer carries, and the Update's handler answers once the decision of THIS wait was
 * applied; before it, a decision was known by its `tool_use` id alone, which Claude may ask
 * again after a rewind (and the client's Update id with it, which Temporal deduplicates).
 */
export const APPROVAL_WAIT_PATCH = 'approval-wait-numbers';

/**
 * patched() id: in an encrypted run (its input came through the codec: src/shared/sealed.ts), the
 * `approve` signal is ignored unless it came through the codec too, names the pending command's
 * `commandSha256`, this workflow run (`runId`) and, when numbered, the wait; before it, a
 * signal applied by `tool_use` id alone, whoever sent it. Asked only when the two rules differ.
 */
export const SEALED_SIGNAL_PATCH = 'approve-signal-sealed';

/**
 * Registers the `decide` Update (validator and handler) on `state`.
 * @param sealed whether the run's own input came through the product's codec: then only a decision
 *   that did too, naming this run and wait, is accepted ({@link sealedDecisionProblem}) @default false
 */
export function setDecideHandler(state: RunState, sealed = false): void {
  setHandler(decideUpdate, (req) => applyDecideUpdate(state, req), {
    validator: (req: DecideRequest) => validateDecide(state, req, sealed),
  });
}

/** Why an encrypted run refuses a decision that did not come through its codec. */
const NOT_SEALED =
  'this run is encrypted: a decision is accepted only when sent with its codec keys (the agent-jobs CLI, or the codec server)';

/**
 * Why a decision may not apply to an encrypted run; null when it may: it must have come through
 * the codec (only a holder of the codec keys can send that: a payload that was not decrypted is
 * never marked sealed), name this workflow run (`runId`) and, when the wait is numbered, this
 * wait, so that a decision copied from another run's history or an earlier wait does not apply
 * here, and name the reviewed command's hash.
 */
function sealedDecisionProblem(pending: PendingApproval, d: { runId?: unknown; wait?: unknown; commandSha256?: unknown }): string | null {
  if (!isSealed(d)) return NOT_SEALED;
  if (d.commandSha256 === undefined) return 'this run is encrypted: a decision must name commandSha256, the hash of the reviewed command';
  if (d.runId !== workflowInfo().runId)
    return 'this decision does not name this workflow run (runId): read the pending approval again (status) and decide on it';
  if (pending.wait !== undefined && d.wait !== pending.wait)
    return 'this decision does not name the pending approval wait (wait): read it again (status) and decide on it';
  return null;
}

/**
 * Runs a bash command through the run's approval mode: unasked when the
 * policy or one of the run's rules allows it, else after a human's
 * approval; a denial or the approval timeout becomes an `is_error` result,
 * an edit runs the person's command instead. Waits at a safe point before
 * the command runs while a pause is asked. Sets `state.current` as it goes,
 * so an early end can tell Claude how far the command got.
 */
export async function runWithApproval(state: RunState, session: RunSession, toolUseId: string, command: string): Promise<ToolOutcome> {
  let why: string;
  if (state.input.approval === 'policy' && patched(POLICY_AT_SESSION_PATCH)) {
    // The session's worker judges and, when the policy or a rule allows, runs it.
    await safePoint(state);
    state.setCurrent(toolUseId, 'running');
    const auto = await session.run(toolUseId, command, 'policy');
    if (!('needsApproval' in auto)) return ranUnasked(state, toolUseId, command, auto);
    why = auto.needsApproval;
  } else {
    // `auto` and `always` (run all, ask all), and `policy` in runs started before it moved to the session worker (replay).
    const policy = legacyDecideApproval(command, state.input.approval);
    if (policy.action === 'run') return runApproved(state, session, toolUseId, command);
    why = policy.reason;
    if (state.rules.length > 0) {
      // Only runs with rules get here (rules came with the `decide` Update): the worker matches them.
      await safePoint(state);
      state.setCurrent(toolUseId, 'running');
      const auto = await session.run(toolUseId, command, 'rules');
      if (!('needsApproval' in auto)) return ranUnasked(state, toolUseId, command, auto);
      why = auto.needsApproval;
    }
  }
  state.setCurrent(toolUseId, 'approval');
  const d = await waitForApproval(state, toolUseId, command, why);
  if (d.source === 'timeout' && state.input.approvalTimeoutAction === 'end') {
    const error = `no approval decision for tool_use ${toolUseId} within ${describeDuration(state.input.approvalTimeout)}`;
    state.endAfterTurn({ status: 'approval_timeout', error });
    return { text: `Command not run: ${error}, so the run ends here.`, isError: true };
  }
  if (!d.approved) return deniedOutcome(d, state.input.approvalTimeout);
  if (d.editedCommand !== undefined) return editedOutcome(d, await runApproved(state, session, toolUseId, d.editedCommand));
  return runApproved(state, session, toolUseId, command);
}

/** Records that approval rule `ruleId` let `toolUseId` run without a person (`what`: the command and its hash, for commands). */
function recordRuleDecision(
  state: RunState,
  toolUseId: string,
  ruleId: number,
  what: { command: string; commandSha256: string } | object,
): void {
  const rule = state.rules.find((r) => r.id === ruleId);
  recordDecision(state, {
    toolUseId,
    approved: true,
    decision: 'approved',
    source: 'rule',
    rule: ruleId,
    ...(rule ? { by: rule.by } : {}),
    ...what,
    at: new Date().toISOString(),
  });
}

/** A command the worker ran without asking: records the rule that let it, when one did. */
function ranUnasked(state: RunState, toolUseId: string, command: string, out: SessionOutcome): ToolOutcome {
  if (out.approvedByRule === undefined) return out;
  recordRuleDecision(state, toolUseId, out.approvedByRule, { command, commandSha256: sha256(command) });
  return { text: out.text, isError: out.isError };
}

/** Runs a command a human approved (or that needs no approval) in the shell, after the safe point. */
async function runApproved(state: RunState, session: RunSession, toolUseId: string, command: string): Promise<ToolOutcome> {
  await safePoint(state);
  state.setCurrent(toolUseId, 'running');
  const out = await session.run(toolUseId, command);
  return 'needsApproval' in out ? { text: 'internal error: approval asked for an approved command', isError: true } : out;
}

/** Records an applied decision (kept: the last `MAX_DECISIONS_KEPT`) and logs it. */
function recordDecision(state: RunState, applied: AppliedDecision): void {
  state.recordDecision(applied);
  log.info('approval decision applied', { ...applied });
}

/**
 * Handler of the `approve` signal (kept for runs started before the
 * `decide` Update, and for decisions sent from the Temporal UI or
 * `temporal workflow signal`). Accepts the decision only when it is well
 * formed, names the pending `tool_use`, none was accepted for it yet, and
 * its `commandSha256` (when given) is the pending command's hash. Anything
 * else is ignored and logged (a signal cannot answer its sender).
 */
export function receiveDecision(state: RunState, d: ApprovalDecision, sealed = false): void {
  const decision = signalDecision(state.approval, d, sealed);
  if (decision !== null) state.acceptDecision(decision);
}

/**
 * The decision an `approve` signal carries, as {@link receiveDecision} accepts it; null (logged) when it is ignored.
 * @param sealed whether the run is encrypted (then {@link sealedDecisionProblem} applies too, from {@link SEALED_SIGNAL_PATCH}) @default false
 */
export function signalDecision(approval: Readonly<ApprovalState>, d: ApprovalDecision, sealed = false): Decision | null {
  let problem = isDecision(d) ? decisionProblem(approval, d.toolUseId, d.commandSha256) : 'malformed payload';
  if (problem === null && sealed) {
    const refused = sealedDecisionProblem(approval.pending as PendingApproval, d);
    // Older histories applied such a signal: the marker is asked only when the new rule refuses it.
    if (refused !== null && patched(SEALED_SIGNAL_PATCH)) problem = refused;
  }
  if (problem !== null) {
    log.warn(`approval signal ignored: ${problem}`, { payload: d, pending: approval.pending?.toolUseId ?? null });
    return null;
  }
  return {
    approved: d.approved,
    source: 'signal',
    ...(d.reason ? { reason: d.reason } : {}),
    // A name that is not a plain name (control, markup or bidi characters), or one nobody can see, is dropped, not shown: the decision still applies.
    ...(d.by && d.by.length <= MAX_BY_CHARS && BY_PATTERN.test(d.by) && visibleOrOlder(d.by) ? { by: d.by } : {}),
    ...(d.commandSha256 !== undefined ? { commandSha256: d.commandSha256 } : {}),
  };
}

/**
 * Whether a signal's `by` (already a {@link BY_PATTERN} name) is kept: when a person can see it
 * ({@link invisibleNameProblem}), or in runs from before {@link VISIBLE_BY_PATCH}, which kept
 * it (the name reaches Claude's tool_result, so a workflow command). patched() is asked only
 * for a name the two rules judge differently, so other histories get no marker.
 */
function visibleOrOlder(by: string): boolean {
  return invisibleNameProblem(by) === null || !patched(VISIBLE_BY_PATCH);
}

/** Why a decision for `toolUseId` (naming `commandSha256`, when given) cannot apply now; null when it applies. */
function decisionProblem(approval: ApprovalState, toolUseId: string, commandSha256: string | undefined): string | null {
  const { pending } = approval;
  // The reasons name neither the pending tool_use id nor its command's hash: a rejection travels in plaintext, and an
  // unsalted hash of a short command names the command (docs/security.md, "Encryption").
  if (pending === null) return 'no command is waiting for approval (the tool_use named is not pending)';
  if (pending.toolUseId !== toolUseId) return 'the tool_use named is not pending (another one is: read status)';
  if (approval.decision !== null) return 'the tool_use named was already decided';
  if (commandSha256 !== undefined && commandSha256.toLowerCase() !== pending.commandSha256) {
    return 'commandSha256 is not the hash of the pending command';
  }
  return null;
}

/** Whether a signal payload has the shape of {@link ApprovalDecision} (signals are not validated by the SDK). */
function isDecision(d: unknown): d is ApprovalDecision {
  if (typeof d !== 'object' || d === null) return false;
  const o = d as Record<string, unknown>;
  const optionalString = (v: unknown): boolean => v === undefined || typeof v === 'string';
  return (
    typeof o.toolUseId === 'string' &&
    typeof o.approved === 'boolean' &&
    optionalString(o.reason) &&
    optionalString(o.by) &&
    optionalString(o.commandSha256) &&
    optionalString(o.runId) &&
    (o.wait === undefined || typeof o.wait === 'number')
  );
}

/** Longest `reason` or `edit` a `decide` Update may carry, in characters: 10,000 (the last 20 decisions are kept in status, whose answer must stay well under gRPC's 4 MB). */
const MAX_DECISION_TEXT = 10_000;

/**
 * Validator of the `decide` Update: rejects (with the reason the CLI
 * prints) a malformed request, one for a `tool_use` that is not pending or
 * already decided, one whose hash is not the pending command's, an edit or
 * a rule with a denial, and a rule that could never match; in an encrypted run (`sealed`), one
 * that did not come through the codec or does not name this run and wait ({@link sealedDecisionProblem}).
 * @throws RejectedRequest
 */
function validateDecide(state: RunState, req: DecideRequest, sealed: boolean): void {
  checkObject(req);
  // Next (only a non-object, which no payload makes sealed, is told apart first), so that a sender without the keys learns nothing of the run.
  if (sealed && !isSealed(req)) throw new RejectedRequest(NOT_SEALED);
  checkBy(req.by);
  if (typeof req.toolUseId !== 'string' || req.toolUseId === '') throw new RejectedRequest('toolUseId must be a non-empty string');
  if (typeof req.approved !== 'boolean') throw new RejectedRequest('approved must be true or false');
  if (typeof req.commandSha256 !== 'string' || !/^[0-9a-f]{64}$/.test(req.commandSha256)) {
    throw new RejectedRequest('commandSha256 must be the 64 lowercase hex digits of the reviewed command');
  }
  for (const field of ['reason', 'edit', 'alwaysPrefix'] as const) {
    const v = req[field];
    if (v !== undefined && (typeof v !== 'string' || v.length > MAX_DECISION_TEXT)) {
      throw new RejectedRequest(`${field} must be a string of at most ${MAX_DECISION_TEXT} characters`);
    }
  }
  if (req.always !== undefined && typeof req.always !== 'boolean') throw new RejectedRequest('always must be true or false');
  if (req.wait !== undefined && (typeof req.wait !== 'number' || !Number.isSafeInteger(req.wait) || req.wait < 1)) {
    throw new RejectedRequest("wait must be a positive integer (the pending approval's wait)");
  }
  if (!req.approved && (req.edit !== undefined || req.always === true || req.alwaysPrefix !== undefined)) {
    throw new RejectedRequest('edit, always and alwaysPrefix go with an approval, not a denial');
  }
  if (req.edit !== undefined && req.edit.trim() === '') throw new RejectedRequest('edit must be a command, not empty');
  if (req.edit !== undefined && (req.always === true || req.alwaysPrefix !== undefined)) {
    throw new RejectedRequest('a rule cannot come with an edit: it would approve a command nobody reviewed as it is');
  }
  if (req.always === true && req.alwaysPrefix !== undefined)
    throw new RejectedRequest('give always (--always) or alwaysPrefix (--always-prefix), not both');
  const problem = decisionProblem(state.approval, req.toolUseId, req.commandSha256);
  if (problem !== null) throw new RejectedRequest(problem);
  const pending = state.approval.pending as PendingApproval;
  if (req.wait !== undefined && req.wait !== pending.wait) {
    throw new RejectedRequest(
      `this decision is for approval wait ${String(req.wait)}, which is over; the wait now is ${pending.wait === undefined ? 'unnumbered' : String(pending.wait)}: read it again (status) and decide on it`,
    );
  }
  if (pending.edit !== undefined) checkEditDecision(state, req, pending.edit);
  else {
    if (req.always === true) checkRule(state, 'exact', pending.command, pending.command);
    if (req.alwaysPrefix !== undefined) checkRule(state, 'prefix', req.alwaysPrefix, pending.command);
  }
  // Last: what the request asks is judged first (its reasons name nothing of the run), then whether it binds to this run.
  const unbound = sealed ? sealedDecisionProblem(pending, req) : null;
  if (unbound !== null) throw new RejectedRequest(unbound);
}

/**
 * The `decide` checks of a pending text editor command: no replacement (`edit`: the reviewer
 * approves or denies the diff as it is); a rule is one for edits, `--always` for this command
 * and file, `--always-prefix` a word prefix of `str_replace_based_edit_tool <command> <path>`.
 * @throws RejectedRequest
 */
function checkEditDecision(state: RunState, req: DecideRequest, edit: PendingEdit): void {
  if (req.edit !== undefined)
    throw new RejectedRequest('a text editor change cannot be replaced by the reviewer: approve it as shown, or deny it with a reason');
  if (req.always !== true && req.alwaysPrefix === undefined) return;
  if (state.rules.length >= MAX_RULES) throw new RejectedRequest(`the run already has ${MAX_RULES} rules; remove one first`);
  if (req.alwaysPrefix === undefined) return;
  const words = tokenize(req.alwaysPrefix);
  const subject = [TEXT_EDITOR_NAME, edit.command, edit.path];
  if (!words.ok || words.argv.length === 0 || words.argv.length > 3 || words.argv.some((w, i) => w !== subject[i])) {
    throw new RejectedRequest(
      `a rule for edits is a word prefix of ${JSON.stringify(edit.ruleSubject)} (e.g. ${JSON.stringify(`${TEXT_EDITOR_NAME} ${edit.command}`)})`,
    );
  }
}

/**
 * @throws RejectedRequest when a rule of `kind` with `text` could never
 *   approve anything (not plain literal words, by the strict tokenizer the
 *   worker's literal-word test also applies), a prefix the pending command
 *   does not start with (word by word), a text longer than
 *   `MAX_PLAIN_COMMAND_CHARS`, a rule for a shell builtin that
 *   changes the session shell (`cd`, `source`, `printf -v`, …; the worker
 *   never lets one match), a rule whose first word is the text editor's name
 *   (the worker reads it as a rule for edits), or the run already holds `MAX_RULES`
 */
function checkRule(state: RunState, kind: ApprovalRule['kind'], text: string, pendingCommand: string): void {
  if (state.rules.length >= MAX_RULES) throw new RejectedRequest(`the run already has ${MAX_RULES} rules; remove one first`);
  const what = kind === 'exact' ? 'the command' : `the prefix ${JSON.stringify(text)}`;
  if (text.length > MAX_PLAIN_COMMAND_CHARS) {
    // The worker never matches a command that long; kept, it would only weigh on the state, every status and continue-as-new.
    throw new RejectedRequest(
      `no rule for ${kind === 'exact' ? 'the command' : 'the prefix'}: it is longer than ${MAX_PLAIN_COMMAND_CHARS} characters`,
    );
  }
  const words = tokenize(text);
  if (!words.ok || words.argv.length === 0) {
    throw new RejectedRequest(
      `no rule for ${what}: rules approve only plain words (no operator, redirection, expansion or glob)${words.ok ? '' : `: ${words.reason}`}`,
    );
  }
  const builtin = shellStateBuiltin(words.argv);
  if (builtin !== undefined) {
    throw new RejectedRequest(
      `no rule for ${what}: the shell builtin ${builtin} would change the session shell for every later command; approve it once instead`,
    );
  }
  if (words.argv[0] === TEXT_EDITOR_NAME || text.startsWith(`${TEXT_EDITOR_NAME} `)) {
    // The worker reads such a rule as one for text editor edits: it would never approve this bash command, and would approve edits nobody reviewed.
    throw new RejectedRequest(
      `no rule for ${what}: a rule starting with ${TEXT_EDITOR_NAME} is a rule for text editor edits, never for a bash command; approve it once instead`,
    );
  }
  if (kind === 'prefix') {
    const command = tokenize(pendingCommand);
    if (!command.ok) {
      throw new RejectedRequest(
        `no prefix rule for this command: it is not plain words (${command.reason}), and a rule matches only commands that are; approve it once, without a rule`,
      );
    }
    if (words.argv.length > command.argv.length || words.argv.some((w, i) => w !== command.argv[i])) {
      throw new RejectedRequest(`the pending command does not start with the words ${JSON.stringify(words.argv.join(' '))}`);
    }
  }
}

/** Handler of the `decide` Update: adds the rule asked for, hands the decision to the wait, answers once it was applied. */
async function applyDecideUpdate(state: RunState, req: DecideRequest): Promise<DecideAnswer> {
  const { approval } = state;
  const pending = approval.pending as PendingApproval;
  let rule: ApprovalRule | undefined;
  if (req.always === true || req.alwaysPrefix !== undefined) {
    rule = state.addRule({
      kind: req.always === true ? 'exact' : 'prefix',
      text: req.alwaysPrefix ?? pending.edit?.ruleSubject ?? pending.command,
      by: req.by,
      at: new Date().toISOString(),
      toolUseId: req.toolUseId,
    });
    log.info('approval rule added', { ...rule });
  }
  state.acceptDecision({
    approved: req.approved,
    source: 'update',
    by: req.by,
    commandSha256: req.commandSha256,
    ...(req.reason !== undefined && req.reason !== '' ? { reason: req.reason } : {}),
    ...(req.edit !== undefined ? { edit: req.edit } : {}),
    ...(rule ? { rule: rule.id } : {}),
  });
  const toolUseId = req.toolUseId;
  // A numbered wait is told apart from an earlier one of the same tool_use (asked again after a rewind).
  const wait = pending.wait;
  await condition(() => (wait !== undefined ? approval.lastApplied?.wait === wait : approval.lastApplied?.toolUseId === toolUseId));
  const applied = approval.lastApplied as AppliedDecision;
  return {
    applied: true,
    toolUseId,
    ...(wait !== undefined ? { wait } : {}),
    decision: applied.decision ?? (applied.approved ? 'approved' : 'denied'),
    by: req.by,
    ...(rule ? { rule } : {}),
    command: applied.editedCommand ?? pending.edit?.ruleSubject ?? pending.command,
  };
}

/**
 * Waits for a human's decision on one command. Publishes status
 * `awaiting_approval` while it waits (`paused` while a pause holds it) and
 * `running` after; records what was applied in `state.decisions`.
 * @returns the decision applied; `source: 'timeout'` (a denial) when the approval timeout ran out under `deny` or `end`
 */
export async function waitForApproval(
  state: RunState,
  toolUseId: string,
  command: string,
  why: string,
  edit?: PendingEdit,
): Promise<AppliedDecision> {
  const { input } = state;
  const wait = patched(APPROVAL_WAIT_PATCH) ? { wait: state.nextApprovalWait() } : {};
  // The run a decision must name in an encrypted run (status only: no workflow command).
  const { runId } = workflowInfo();
  const waiting = pendingApproval({ toolUseId, command, requestedAt: new Date().toISOString(), ...(edit ? { edit } : {}), ...wait, runId });
  state.askApproval(waiting);
  const what = edit
    ? `the edit ${edit.command} ${commandDetails(edit.path)}${editWarningDetails(waiting.warnings)}`
    : commandDetails(command);
  state.setDetails(`waiting for approval of ${what} (tool_use ${markdownText(toolUseId)}; ${markdownText(why)})`);
  try {
    const d = await awaitDecision(state, toolUseId);
    const { commandSha256 } = waiting;
    const at = new Date().toISOString();
    const kind: DecisionKind = d === null || !d.approved ? 'denied' : d.edit !== undefined ? 'edited' : 'approved';
    const applied: AppliedDecision = d
      ? {
          toolUseId,
          approved: d.approved,
          decision: kind,
          source: d.source,
          at,
          ...(d.reason ? { reason: d.reason } : {}),
          ...(d.by ? { by: d.by } : {}),
          command: edit ? edit.ruleSubject : command,
          ...(d.edit !== undefined ? { editedCommand: d.edit } : {}),
          ...(d.rule !== undefined ? { rule: d.rule } : {}),
          commandSha256,
          hashChecked: d.commandSha256 !== undefined,
          ...wait,
        }
      : {
          toolUseId,
          approved: false,
          decision: 'denied',
          source: 'timeout',
          at,
          reason: `no decision within ${describeDuration(input.approvalTimeout)}`,
          command: edit ? edit.ruleSubject : command,
          commandSha256,
          ...wait,
        };
    recordDecision(state, applied);
    return applied;
  } finally {
    state.closeApproval();
  }
}

/**
 * The wait itself: for a decision, up to the approval timeout, held (no
 * timer) while a pause is asked. After a pause ends the wait starts again
 * with the full timeout. At the timeout, `pause` pauses the run (a
 * decision or `resume` ends that pause); `deny` and `end` return null.
 */
async function awaitDecision(state: RunState, toolUseId: string): Promise<Decision | null> {
  const { approval, input } = state;
  for (;;) {
    if (approval.decision !== null) return approval.decision;
    if (state.pause !== null) {
      state.setStatus('paused');
      state.setDetails(
        `${state.pause.reason === 'approval_timeout' ? 'approval timed out, run paused' : `paused by ${state.pause.by ?? 'a person'}`}; ${commandDetails(approval.pending?.command ?? '')} still waits for approval (tool_use ${markdownText(toolUseId)})`,
      );
      await condition(() => state.pause === null || approval.decision !== null);
      if (approval.decision !== null && state.pause?.reason === 'approval_timeout') state.clearPause();
      if (state.pause === null) {
        state.setStatus('awaiting_approval');
        state.setDetails(
          `waiting for approval of ${commandDetails(approval.pending?.command ?? '')} (tool_use ${markdownText(toolUseId)}; resumed)`,
        );
      }
      continue;
    }
    const summary = `approval wait: ${commandSummary(approval.pending?.command ?? '', null)}`;
    const woke = await condition(() => approval.decision !== null || state.pause !== null, temporalDuration(input.approvalTimeout), {
      summary,
    });
    if (woke) continue;
    if (input.approvalTimeoutAction !== 'pause') return null;
    state.askPause({ reason: 'approval_timeout', at: new Date().toISOString() });
    log.info('approval timed out; run paused', { toolUseId });
  }
}

/** Largest diff a person is asked to approve, in characters: 100,000 (it travels in the activity result, the status query and the history). */
export const MAX_EDIT_REVIEW_CHARS = 100_000;

/**
 * Runs a text editor command through the run's approval mode, as {@link runWithApproval} does
 * a command: `auto` applies it; under `policy` a `view` runs unasked and a change runs when a
 * rule matches, else waits for a person, who sees the exact change as a unified diff bound by
 * its SHA-256; `always` asks for every command a rule does not match. The approved change is
 * applied only if the diff made at that moment is the approved one. A denial or the approval
 * timeout becomes an `is_error` result.
 */
export async function runEditWithApproval(
  state: RunState,
  session: RunSession,
  toolUseId: string,
  edit: EditRequest,
): Promise<ToolOutcome> {
  const mode = state.input.approval;
  await safePoint(state);
  state.setCurrent(toolUseId, 'running');
  const first = await session.edit(toolUseId, edit, mode === 'auto' ? {} : { autoApprove: mode === 'policy' ? 'policy' : 'rules' });
  if (!('applied' in first) || first.needsApproval === undefined) return ranEditUnasked(state, toolUseId, first);
  const ask = first.needsApproval;
  if (ask.review.length > MAX_EDIT_REVIEW_CHARS) {
    return {
      text: `Error: this change is ${ask.review.length} characters as a diff; a change that needs approval must stay under ${MAX_EDIT_REVIEW_CHARS}: make it in smaller edits.`,
      isError: true,
    };
  }
  const pendingEdit: PendingEdit = {
    command: edit.command,
    path: ask.ruleSubject.split(' ').slice(2).join(' '),
    ruleSubject: ask.ruleSubject,
  };
  state.setCurrent(toolUseId, 'approval');
  const d = await waitForApproval(state, toolUseId, ask.review, ask.reason, pendingEdit);
  if (d.source === 'timeout' && state.input.approvalTimeoutAction === 'end') {
    const error = `no approval decision for tool_use ${toolUseId} within ${describeDuration(state.input.approvalTimeout)}`;
    state.endAfterTurn({ status: 'approval_timeout', error });
    return { text: `Edit not made: ${error}, so the run ends here.`, isError: true };
  }
  if (!d.approved) {
    const denied = deniedOutcome(d, state.input.approvalTimeout);
    return { ...denied, text: denied.text.replace(/^Command not run/, 'Edit not made') };
  }
  await safePoint(state);
  state.setCurrent(toolUseId, 'running');
  const out = await session.edit(toolUseId, edit, { approvedSha256: d.commandSha256 ?? sha256(ask.review) });
  return { text: out.text, isError: out.isError };
}

/** An edit the worker answered without asking: records the rule that let it, when one did. */
function ranEditUnasked(state: RunState, toolUseId: string, out: RunEditOutput | ToolOutcome): ToolOutcome {
  if ('approvedByRule' in out && out.approvedByRule !== undefined) recordRuleDecision(state, toolUseId, out.approvedByRule, {});
  return { text: out.text, isError: out.isError };
}
