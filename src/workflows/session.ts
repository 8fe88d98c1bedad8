/**
 * The workflow side of a run's bash session: open it on the shared queue
 * (whichever worker takes `openSession` holds the bash process), route every
 * command to that worker's own queue (session affinity), tell a lost worker
 * from a failed command, open a replacement, close it at the end.
 * Deterministic (workflow code).
 */
import {
  ActivityFailure,
  ApplicationFailure,
  TimeoutFailure,
  isCancellation,
  log,
  patched,
  proxyActivities,
  type ActivityInterfaceFor,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import type { LivenessActivities } from '../activities/liveness';
import type { SessionActivities } from '../activities/session';
import {
  SESSION_NOT_FOUND,
  WORKDIR_UNUSABLE,
  WORKER_SHUTTING_DOWN,
  type CreateWorktreeOutput,
  type OpenSessionOutput,
  type RunCommandInput,
  type RunCommandOutput,
  type SessionClosing,
  type SessionRef,
} from '../contract';
import { commandDetails, commandSummary, editSummary } from '../shared/display';
import type { EditRequest, RunEditOutput } from '../contract/text-editor';
import type { CheckpointRequest, RestoreRequest } from '../contract/checkpoint';
import { WORKER_SHUT_DOWN, closingReasonNote, commandNotes } from '../shared/notes';
import { isSealed } from '../shared/sealed';
import {
  COMMAND_TIMEOUT_SLACK_MS,
  OPEN_SESSION_ACTIVITY_OPTIONS,
  SLOW_WORKER_MAX_WAITS,
  WORKER_LIVENESS_ACTIVITY_OPTIONS,
  sessionActivityOptions,
} from '../config';
import { failureMessage } from './failures';
import type { ApprovalRule } from '../contract/steering';
import type { RunState } from './run-state';
import {
  commandOutcome,
  movedAfterNote,
  movedAfterOutcome,
  movedBeforeOutcome,
  restartedOutcome,
  editLostOutcome,
  sessionLostOutcome,
  type SessionLoss,
  type ToolOutcome,
} from './tool-results';

/**
 * patched() id: a session whose worker says it is shutting down (the
 * `sessionClosing` signal, `workerClosing` on an answer, a `WorkerShuttingDown`
 * refusal) is replaced at once instead of being used until a timeout: after
 * the command that was running, or before the next one (which then runs in
 * the new session), and is not closed at the end (its worker closes it).
 */
export const WORKER_DRAIN_PATCH = 'move-off-draining-worker';

/**
 * patched() id: a command on the session's queue that timed out waiting to
 * start (schedule-to-start) or for a heartbeat counts as lost only when its
 * worker is really gone: the run first asks the server whether that worker
 * still lives (`sessionWorkerLiveness`), and while it does, sends the
 * command again (when it provably did not start) or asks the worker for its
 * outcome (`commandOutcome`, when it may have started), up to
 * `SLOW_WORKER_MAX_WAITS` times. At most once: a dispatch that may have
 * started is never sent again; the worker gives up one it never saw.
 */
export const SLOW_WORKER_PATCH = 'slow-worker-is-not-lost';

/**
 * patched() id: a command that provably never started (schedule-to-start timeout) on a worker
 * that said it is shutting down (`sessionClosing`) and is gone is run in a new session with the
 * moved notice, as a command after a drain is, instead of being reported as lost.
 */
export const DRAINED_NOT_STARTED_PATCH = 'drained-not-started-moves';

/**
 * patched() id: before every tool call that may write (a command the read-only policy does not
 * run exactly, an edit other than `view`), the worker records the workspace (src/checkpoint) and
 * the answer carries the checkpoint, which the run keeps by turn (rewind, fork: docs/rewind.md).
 */
export const CHECKPOINT_PATCH = 'workspace-checkpoints';

/**
 * patched() id: a session that cannot open because the run's working directory cannot be one
 * (`WorkdirUnusable`: a file, a path under /proc, no permission) ends the run `failed` saying
 * why, after this turn; before it, each turn's commands failed the same way until the turn budget.
 */
export const WORKDIR_ENDS_RUN_PATCH = 'unusable-workdir-ends-run';

/**
 * patched() id: the `sessionClosing` signal applies only when it names the session's worker too
 * and, in an encrypted run (its input came through the codec: src/shared/sealed.ts), came through
 * the codec; Claude is told the product's own wording for its reason (`closingReasonNote`), never
 * the signal's text. Before it, anyone knowing the workflow id and session id could put words of
 * their choosing into Claude's next tool_result as the product's note. Asked only when the two
 * rules differ.
 */
export const CLOSING_SIGNAL_PATCH = 'session-closing-checked';

/**
 * Why a `sessionClosing` signal naming `session` may not apply; null when it may: it must name the
 * worker holding the session and, in an encrypted run (`sealed`), have come through the codec (only
 * a holder of the codec keys can send that: src/shared/sealed.ts).
 */
function closingSignalProblem(session: SessionRef, signal: SessionClosing, sealed: boolean): string | null {
  if (sealed && !isSealed(signal)) return 'this run is encrypted and the signal did not come through its codec';
  if (signal.workerId !== session.workerId) return 'it does not name the worker holding the session';
  return null;
}

/** The checkpoint a tool call of the current turn asks for, when the run takes them. */
function checkpointAsk(state: RunState): { checkpoint?: CheckpointRequest } {
  const c = state.input.checkpoints;
  if (!c.enabled || !patched(CHECKPOINT_PATCH)) return {};
  return { checkpoint: { turn: state.turns, maxBytes: c.maxBytes, exclude: c.exclude } };
}

/** What Claude is told the session closed for when the worker's answer gave no reason. */
const SHUT_DOWN = WORKER_SHUT_DOWN;

const { openSession } = proxyActivities<Pick<SessionActivities, 'openSession'>>(OPEN_SESSION_ACTIVITY_OPTIONS);
const { sessionWorkerLiveness } = proxyActivities<LivenessActivities>(WORKER_LIVENESS_ACTIVITY_OPTIONS);

/** The session activities on one worker's queue: one proxy per option set; call sites add only `summary` and what varies. */
function onQueue(taskQueue: string): ActivityInterfaceFor<SessionActivities> {
  return proxyActivities<SessionActivities>(sessionActivityOptions(taskQueue));
}

/** Answer of {@link RunSession.run} with `autoApprove` when the worker's policy wants a human: nothing ran. */
export interface NeedsApproval {
  needsApproval: string;
}

/** What a command that ran gives back: what Claude is told, and the approval rule that let it run unasked, if one did. */
export type SessionOutcome = ToolOutcome & { approvedByRule?: number };

/** The run's bash session, as the workflow sees it; its ref lives in `state.session` (carried across continue-as-new). */
export class RunSession {
  constructor(private readonly state: RunState) {}

  /**
   * Runs one command on the session's worker (opening a session first when
   * there is none). With `autoApprove: 'policy'`, the worker first judges it
   * under the `policy` rules (src/policy, on what bash would run, with the
   * workspace's real paths) and runs it exactly (no shell) when they allow;
   * with `'policy'` or `'rules'`, a command one of the run's approval rules
   * matches runs in the shell (`approvedByRule` names the rule); else nothing
   * runs and the answer is {@link NeedsApproval}. Records the command's
   * duration. A lost session is replaced and reported; cancellation is
   * rethrown after the worker killed the command's process group.
   */
  async run(toolUseId: string, command: string, autoApprove?: 'policy' | 'rules', moved = false): Promise<SessionOutcome | NeedsApproval> {
    const { state } = this;
    const closing = state.session?.closing;
    if (closing !== undefined && !moved && patched(WORKER_DRAIN_PATCH)) {
      // Its worker is shutting down: this command starts in a new session on another worker.
      const fresh = await this.replace(state.session!.cwd);
      if (fresh.cwd === null)
        return {
          text: `Command not run: the bash session was closed because ${closing}, and no new one could be started (${fresh.error}).`,
          isError: true,
        };
      const ran = await this.run(toolUseId, command, autoApprove, true);
      return 'needsApproval' in ran ? ran : { ...ran, ...movedBeforeOutcome(ran, closing, fresh.cwd) };
    }
    const session = state.session ?? (await this.openOrReport());
    if ('text' in session) return session;
    state.setDetails(`running ${commandDetails(command)}`);
    // The policy check runs an allowed command too; one that needs a human runs later as plain `bash #n`.
    const summary = commandSummary(command, state.conversation.toolUseOrdinal(toolUseId), autoApprove !== undefined);
    const timeoutMs = state.input.commandTimeoutMs;
    const request: RunCommandInput = {
      sessionId: session.sessionId,
      command,
      timeoutMs,
      workflowId: state.workflowId,
      toolUseId,
      ...(autoApprove ? { autoApprove } : {}),
      ...(autoApprove ? rulesFor(state) : {}),
      ...checkpointAsk(state),
    };
    const options = { startToCloseTimeout: timeoutMs + COMMAND_TIMEOUT_SLACK_MS, summary };
    try {
      let out: RunCommandOutput;
      try {
        out = await onQueue(session.taskQueue).runCommand.executeWithOptions(options, [request]);
      } catch (err) {
        // A slow worker is not a lost one: wait for it while it lives (or rethrow what it is not about).
        if (sessionLossTimeout(err) === undefined || !patched(SLOW_WORKER_PATCH)) throw err;
        const waited = await outlastSlowWorker(session, request, options, err);
        if ('loss' in waited) {
          if (waited.loss.kind === 'not-started' && session.closing !== undefined && !moved && patched(DRAINED_NOT_STARTED_PATCH)) {
            // Sent to a worker that drained and stopped polling before it took the command: it never started, so it runs
            // in the new session as any command after a drain does (rolling-restart.test caught it reported as lost).
            log.info('command never started on a worker that shut down; moving to a new session', { toolUseId });
            return this.run(toolUseId, command, autoApprove);
          }
          log.warn('bash session lost', { toolUseId, detail: waited.loss.detail });
          const fresh = await this.replace(session.cwd);
          return sessionLostOutcome(waited.loss, fresh.cwd, fresh.error);
        }
        if ('error' in waited) throw waited.error;
        out = waited.out;
      }
      if (out.needsApproval !== undefined) return { needsApproval: out.needsApproval };
      return await this.answered(toolUseId, session, out, timeoutMs);
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (!moved && isShutdownRefusal(err) && patched(WORKER_DRAIN_PATCH)) {
        // Refused before it ran (the worker drains; its signal had not reached the run yet).
        session.closing ??= SHUT_DOWN;
        return this.run(toolUseId, command, autoApprove);
      }
      const loss = sessionLoss(err);
      if (!loss) return { text: `The command could not be run: ${failureMessage(err)}.`, isError: true };
      log.warn('bash session lost', { toolUseId, detail: loss.detail });
      const fresh = await this.replace(session.cwd);
      return sessionLostOutcome(loss, fresh.cwd, fresh.error);
    }
  }

  /**
   * What a command the worker ran becomes: its checkpoint, cwd, duration and exit code recorded,
   * the outcome Claude is told, and the system's notes at its end published (query state); the
   * run moves to a new session first when the worker holding this one is shutting down.
   */
  private async answered(toolUseId: string, session: SessionRef, out: RunCommandOutput, timeoutMs: number): Promise<SessionOutcome> {
    const { state } = this;
    state.recordCheckpoint(toolUseId, out.checkpoint);
    session.cwd = out.cwd;
    state.recordCommand(toolUseId, out);
    let outcome: ToolOutcome = commandOutcome(out, timeoutMs);
    // The lines the system wrote at the end of the result, for people (query state only, as the exit code).
    const notes = [...(out.notes ?? []), ...commandNotes(out, timeoutMs)];
    if (out.workerClosing) session.closing ??= SHUT_DOWN;
    if (session.closing !== undefined && state.session === session && patched(WORKER_DRAIN_PATCH)) {
      // Move now, so Claude knows before it asks for the next command.
      log.info('bash session closing: its worker is shutting down; moving to a new session', { toolUseId });
      const fresh = await this.replace(out.cwd);
      outcome = movedAfterOutcome(outcome, session.closing, fresh);
      notes.push(movedAfterNote(session.closing, fresh));
    }
    if (out.notes !== undefined) state.recordNotes(toolUseId, notes);
    return out.approvedByRule !== undefined ? { ...outcome, approvedByRule: out.approvedByRule } : outcome;
  }

  /**
   * Runs one text editor command on the session's worker (`runEdit`; opening a session first
   * when there is none, or moving off a worker that is shutting down). `autoApprove` and
   * `approvedSha256` as in `RunEditInput`. Never retried: a lost session is replaced and
   * Claude is told the edit may or may not have been made; cancellation is rethrown.
   * @returns the worker's answer, or the `is_error` outcome when it could not be asked
   */
  async edit(
    toolUseId: string,
    edit: EditRequest,
    opts: { autoApprove?: 'policy' | 'rules'; approvedSha256?: string } = {},
  ): Promise<RunEditOutput | ToolOutcome> {
    const { state } = this;
    if (state.session?.closing !== undefined) await this.replace(state.session.cwd);
    const session = state.session ?? (await this.openOrReport());
    if ('text' in session) return session;
    state.setDetails(`text editor: ${edit.command} ${commandDetails(edit.path)}`);
    const summary = editSummary(edit.command, edit.path, state.conversation.toolUseOrdinal(toolUseId));
    try {
      const out = await onQueue(session.taskQueue).runEdit.executeWithOptions({ summary }, [
        {
          sessionId: session.sessionId,
          workflowId: state.workflowId,
          toolUseId,
          edit,
          ...(opts.autoApprove ? { autoApprove: opts.autoApprove } : {}),
          ...(opts.autoApprove ? rulesFor(state) : {}),
          ...(opts.approvedSha256 !== undefined ? { approvedSha256: opts.approvedSha256 } : {}),
          ...(edit.command !== 'view' ? checkpointAsk(state) : {}),
        },
      ]);
      state.recordCheckpoint(toolUseId, out.checkpoint);
      // The worker's notes at the end of its text, for people (query state only, as a command's).
      if (out.notes !== undefined && out.needsApproval === undefined) state.recordNotes(toolUseId, out.notes);
      return out;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const loss = sessionLoss(err);
      if (!loss)
        return {
          text: `The edit could not be made: ${failureMessage(err)}. It may or may not have been written; view the file before trying again.`,
          isError: true,
        };
      log.warn('bash session lost during an edit', { toolUseId, detail: loss.detail });
      const fresh = await this.replace(session.cwd);
      return editLostOutcome(loss, fresh.cwd, fresh.error);
    }
  }

  /** `{"restart": true}`: a new bash process in the same working directory (a new session when the old one is gone). */
  async restart(): Promise<ToolOutcome> {
    const session = this.state.session;
    const replaced = (fresh: { cwd: string | null; error?: string }): ToolOutcome =>
      fresh.cwd !== null ? restartedOutcome(fresh.cwd) : { text: `No bash session could be started (${fresh.error}).`, isError: true };
    if (!session) return replaced(await this.replace(undefined));
    if (session.closing !== undefined && patched(WORKER_DRAIN_PATCH)) return replaced(await this.replace(session.cwd));
    this.state.setDetails('restarting the bash session');
    try {
      const out = await onQueue(session.taskQueue).restartSession.executeWithOptions({ summary: 'bash: restart' }, [
        { sessionId: session.sessionId },
      ]);
      session.cwd = out.cwd;
      return restartedOutcome(out.cwd);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return replaced(await this.replace(session.cwd));
    }
  }

  /**
   * Makes a sub-agent's git worktree of the run's workspace on the worker that holds the run's
   * session (opening a session first when there is none), for the child `childWorkflowId`.
   * @returns the child's workdir, or one line saying why there is none
   */
  async worktree(childWorkflowId: string): Promise<CreateWorktreeOutput> {
    const { state } = this;
    try {
      const session = state.session ?? (await this.open(undefined));
      const { workdir } = state.input;
      return await onQueue(session.taskQueue).createWorktree.executeWithOptions({ summary: 'session: sub-agent worktree' }, [
        { workflowId: state.workflowId, ...(workdir !== undefined ? { workdir } : {}), childWorkflowId },
      ]);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return { error: `The sub-agent was not started: its git worktree could not be made (${failureMessage(err)}).` };
    }
  }

  /** Closes the session and kills its process group; a worker that is gone is logged, not an error. */
  async close(): Promise<void> {
    const session = this.state.session;
    if (!session) return;
    this.state.sessionGone();
    // Its worker closes it on the way out (and may be gone already: the close would wait out the schedule-to-start timeout).
    if (session.closing !== undefined && patched(WORKER_DRAIN_PATCH)) return;
    try {
      await onQueue(session.taskQueue).closeSession.executeWithOptions({ summary: 'session: close' }, [{ sessionId: session.sessionId }]);
    } catch (err) {
      log.warn('could not close the bash session (its worker may be gone)', { error: failureMessage(err) });
    }
  }

  /**
   * The `sessionClosing` signal: marks the run's session as closing when it
   * is the one named (a signal about an earlier session is ignored). The
   * next use of the session moves the run to a new one (see {@link run}).
   * From {@link CLOSING_SIGNAL_PATCH}: in an encrypted run (`sealed`) only a
   * signal that came through the codec applies, it must name the session's
   * worker too, and Claude is told the product's own reason
   * ({@link closingReasonNote}), never the signal's text. A payload that is
   * not an object, or names no session while the run has none, is ignored
   * (either used to fail every workflow task, so no history holds it applied).
   * @param sealed whether the run's input came through the product's codec @default false
   */
  closing(signal: SessionClosing, sealed = false): void {
    if (typeof signal !== 'object' || signal === null) {
      log.warn('sessionClosing signal ignored: its payload is not an object');
      return;
    }
    const session = this.state.session;
    // No session and no sessionId: ignored too (it used to fail every workflow task).
    if (!session || session.sessionId !== signal.sessionId) {
      log.info('sessionClosing signal for another session ignored', { sessionId: signal.sessionId });
      return;
    }
    const problem = closingSignalProblem(session, signal, sealed);
    const reason = closingReasonNote(signal.reason);
    if ((problem !== null || reason !== signal.reason) && patched(CLOSING_SIGNAL_PATCH)) {
      if (problem !== null) {
        log.warn(`sessionClosing signal ignored: ${problem}`, { sessionId: session.sessionId });
        return;
      }
      session.closing ??= reason;
    } else session.closing ??= signal.reason;
    log.info('bash session closing: its worker is shutting down', { sessionId: signal.sessionId, workerId: signal.workerId });
  }

  /**
   * A rewind's session: closes the current one (its processes must not write on), then opens a
   * new one whose worker first restores the workspace to `restore`.
   * @throws the open's failure (the workspace may or may not have been restored; the caller says so)
   */
  async reopenRestored(restore: RestoreRequest): Promise<OpenSessionOutput> {
    await this.close();
    const ref = await this.open(undefined, restore);
    return this.restored ? { ...ref, restored: this.restored } : ref;
  }

  /** What the last session opened restored (`openSession`'s report), kept out of the run's state. */
  private restored: OpenSessionOutput['restored'];

  /**
   * Opens a session on the shared queue; the worker that takes it holds it. `restoreCwd`: where
   * to start when it still exists. `restore` (or a fork's pending checkpoint): restored into the
   * workspace before bash starts.
   */
  private open(restoreCwd: string | undefined, restore?: RestoreRequest): Promise<SessionRef> {
    // Sub-agent worktrees are made at once for every call of an answer: those calls share one opening.
    this.opening ??= this.openNow(restoreCwd, restore).finally(() => {
      this.opening = null;
    });
    return this.opening;
  }

  /** The open that is under way, which a concurrent {@link open} waits for instead of opening a second session. */
  private opening: Promise<SessionRef> | null = null;

  /** {@link open}'s work: the session, the very object the run's state holds (without its restore report, kept in {@link restored}). */
  private async openNow(restoreCwd: string | undefined, restore?: RestoreRequest): Promise<SessionRef> {
    const { state } = this;
    state.setDetails(restore ? 'restoring the workspace to a checkpoint and starting a bash session' : 'starting a bash session');
    const { workdir, network, worktreeGit } = state.input;
    const toRestore = restore ?? state.pendingRestore ?? undefined;
    const opened = await openSession.executeWithOptions({ summary: toRestore ? 'session: restore checkpoint and open' : 'session: open' }, [
      {
        workflowId: state.workflowId,
        ...(workdir !== undefined ? { workdir } : {}),
        ...(restoreCwd !== undefined && !toRestore ? { restoreCwd } : {}),
        ...(network ? { network: true } : {}),
        ...(toRestore ? { restore: toRestore } : {}),
        // Only a sub-agent's input has it, and only since SUBAGENT_WORKTREE_GIT_PATCH (subagent.ts): older runs send what they sent.
        ...(worktreeGit !== undefined ? { worktreeGit } : {}),
      },
    ]);
    this.restored = opened.restored;
    delete opened.restored;
    state.sessionOpened(opened);
    return opened;
  }

  /** Opens the first session (or one after a failed replacement), or says why a command cannot run. */
  private async openOrReport(): Promise<SessionRef | ToolOutcome> {
    try {
      // A replacement that failed left state.session null; the last known cwd is gone with it (as before).
      return await this.open(undefined);
    } catch (err) {
      if (isCancellation(err)) throw err;
      if (isWorkdirUnusable(err) && patched(WORKDIR_ENDS_RUN_PATCH)) {
        // Every later session would meet the same path: the run ends now rather than spend its turns.
        const error = `no bash session could be started: ${failureMessage(err)}`;
        this.state.endAfterTurn({ status: 'failed', error });
        return { text: `Command not run: ${error}, so the run ends here.`, isError: true };
      }
      return { text: `Command not run: no bash session could be started (${failureMessage(err)}).`, isError: true };
    }
  }

  /** Opens a replacement after a loss; returns its cwd, or null with the error when none could be opened. */
  private async replace(restoreCwd: string | undefined): Promise<{ cwd: string | null; error?: string }> {
    this.state.sessionGone();
    try {
      return { cwd: (await this.open(restoreCwd)).cwd };
    } catch (err) {
      if (isCancellation(err)) throw err;
      return { cwd: null, error: failureMessage(err) };
    }
  }
}

/** Whether `err` is `openSession` failing on a working directory that cannot be one ({@link WORKDIR_UNUSABLE}). */
function isWorkdirUnusable(err: unknown): boolean {
  let current: unknown = err;
  while (current instanceof ActivityFailure && current.cause) current = current.cause;
  return current instanceof ApplicationFailure && current.type === WORKDIR_UNUSABLE;
}

/** The run's approval rules as the worker matches them (`{rules}`), or nothing when there are none. */
function rulesFor(state: RunState): { rules?: Array<Pick<ApprovalRule, 'id' | 'kind' | 'text'>> } {
  return state.rules.length > 0 ? { rules: state.rules.map(({ id, kind, text }) => ({ id, kind, text })) } : {};
}

/** The timeout of a session activity that may mean its worker is gone (schedule-to-start or heartbeat), or undefined. */
function sessionLossTimeout(err: unknown): TimeoutType | undefined {
  if (!(err instanceof ActivityFailure) || !(err.cause instanceof TimeoutFailure)) return undefined;
  const type = err.cause.timeoutType;
  return type === TimeoutType.SCHEDULE_TO_START || type === TimeoutType.HEARTBEAT ? type : undefined;
}

/**
 * After `first`, a schedule-to-start or heartbeat timeout of `request` on
 * the session's queue: asks the server whether the session's worker lives;
 * while it does, sends the command again when its last dispatch provably
 * did not start (schedule-to-start, or the worker says `not-started`, which
 * also makes sure that dispatch never starts), or asks the worker for the
 * outcome of the dispatch that may have started (heartbeat). Gives up after
 * {@link SLOW_WORKER_MAX_WAITS} waits.
 * @returns the command's output; or the loss (`not-started` when no dispatch
 *   may have run); or `error`, a failure that is no timeout, for the caller
 *   to handle as it handles one of the first dispatch (e.g. a drain refusal:
 *   nothing ran)
 */
async function outlastSlowWorker(
  session: SessionRef,
  request: RunCommandInput,
  options: { startToCloseTimeout: number; summary: string },
  first: unknown,
): Promise<{ out: RunCommandOutput } | { loss: SessionLoss } | { error: unknown }> {
  const queue = onQueue(session.taskQueue);
  let dispatch = request.dispatch ?? 1;
  // Whether dispatch `dispatch` may have started (then it is asked about, never sent again).
  let mayHaveStarted = sessionLossTimeout(first) === TimeoutType.HEARTBEAT;
  const lost = (detail: string): { loss: SessionLoss } => ({ loss: { kind: mayHaveStarted ? 'interrupted' : 'not-started', detail } });
  let waited = 0;
  for (;;) {
    let alive: { alive: boolean; evidence: string };
    try {
      alive = await sessionWorkerLiveness.executeWithOptions({ summary: `session: is worker ${session.workerId} alive?` }, [
        { workerId: session.workerId, taskQueue: session.taskQueue },
      ]);
    } catch (err) {
      if (isCancellation(err)) throw err;
      return lost(`its worker did not answer in time, and whether it is alive could not be checked (${failureMessage(err)})`);
    }
    if (!alive.alive) return lost(`the worker holding it is gone (${alive.evidence})`);
    if (++waited > SLOW_WORKER_MAX_WAITS)
      return lost(
        `the worker holding it is alive (${alive.evidence}) but did not ${mayHaveStarted ? 'finish' : 'start'} the command through ${SLOW_WORKER_MAX_WAITS} waits`,
      );
    log.info('the worker holding the bash session is slow, not gone: waiting for it', {
      toolUseId: request.toolUseId,
      dispatch,
      mayHaveStarted,
      evidence: alive.evidence,
    });
    // Until the worker does not answer in time again: then the liveness check comes first.
    for (;;) {
      try {
        if (!mayHaveStarted) {
          dispatch++;
          return { out: await queue.runCommand.executeWithOptions(options, [{ ...request, dispatch }]) };
        }
        const outcome = await queue.commandOutcome.executeWithOptions(
          { startToCloseTimeout: options.startToCloseTimeout, summary: 'bash: outcome after a timeout' },
          [{ sessionId: request.sessionId, toolUseId: request.toolUseId, dispatch }],
        );
        if (outcome.state === 'done') return { out: outcome.output };
        // It never started, and now never will: send it again at once (the worker just answered).
        mayHaveStarted = false;
      } catch (err) {
        if (isCancellation(err)) throw err;
        const timeout = sessionLossTimeout(err);
        if (timeout === undefined) {
          if (!mayHaveStarted) return { error: err };
          const loss = sessionLoss(err);
          return lost(loss ? loss.detail : `its worker could not say what became of the command (${failureMessage(err)})`);
        }
        if (timeout === TimeoutType.HEARTBEAT) mayHaveStarted = true;
        break;
      }
    }
  }
}

/** Classifies a session activity failure as a lost session (worker gone or session unknown), or null for anything else. */
export function sessionLoss(err: unknown): SessionLoss | null {
  if (!(err instanceof ActivityFailure)) return null;
  const cause = err.cause;
  if (cause instanceof TimeoutFailure) {
    if (cause.timeoutType === TimeoutType.SCHEDULE_TO_START) {
      return { kind: 'not-started', detail: 'no worker picked up the command (the worker holding the session is gone)' };
    }
    return {
      kind: 'interrupted',
      detail: `the worker holding it stopped responding (${(cause.timeoutType ?? 'activity').toLowerCase()} timeout)`,
    };
  }
  if (cause instanceof ApplicationFailure && cause.type === SESSION_NOT_FOUND) {
    return { kind: 'interrupted', detail: 'the worker no longer holds it' };
  }
  return null;
}

/** Whether a session activity failed because its worker is shutting down and refused it before anything ran. */
function isShutdownRefusal(err: unknown): boolean {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure && err.cause.type === WORKER_SHUTTING_DOWN;
}
