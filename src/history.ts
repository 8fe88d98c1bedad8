/**
 * Reading a run's workflow history: the conversation folded from its
 * `callClaude` inputs (and the runs it continued from), the `decide` Updates
 * applied, how long commands ran, its checkpoints and rewinds. Payloads are
 * decoded with the client's own data converter (the encryption codec).
 * Used by the client module (closed runs, transcripts, checkpoints) and by
 * `callClaude` when its worker holds no copy of the conversation; apart
 * from the client so that activities need not import it (or the workflows
 * it names).
 */
import { createHash } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { temporal, type google } from '@temporalio/proto';
import {
  decideUpdate,
  foldCallInputs,
  removeRuleUpdate,
  isText,
  isToolResult,
  isToolUse,
  publishedExitCode,
  type AgentRunInput,
  type ApprovalRule,
  type CallClaudeOutput,
  type CarriedState,
  type Conversation,
  type ConversationPart,
  type DecideAnswer,
  type DecideRequest,
  type Message,
  type OpenSessionInput,
  type OpenSessionOutput,
  type RunCommandInput,
  type RunCommandOutput,
  type StatusView,
} from './contract';
import { WORKER_SHUT_DOWN, commandNotes, movedAfterNote, splitNotes } from './shared/notes';
import { DEFAULT_COMMAND_TIMEOUT_MS } from './config';
import { rewindUpdate, type CheckpointResult, type RestoreReport, type RewindAnswer, type RewindRequest } from './contract/checkpoint';

/** A closed run's conversation could not be rebuilt from its history (the histories do not chain). */
export class HistoryUnreadableError extends Error {
  constructor(
    readonly workflowId: string,
    readonly problem: string,
  ) {
    super(`the transcript of ${workflowId} cannot be rebuilt from its history: ${problem}`);
    this.name = 'HistoryUnreadableError';
  }
}

/** ms since the epoch of a protobuf Timestamp (seconds may be a Long); 0 when unset. */
export function msOf(ts: google.protobuf.ITimestamp | null | undefined): number {
  if (!ts) return 0;
  return Number(String(ts.seconds ?? 0)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

/** The stop reasons after which the workflow appends the answer to the conversation (src/workflows/agent-run.ts `takeTurn`). */
export const KEPT_STOP_REASONS = new Set(['tool_use', 'end_turn', 'stop_sequence', 'pause_turn']);

const { EventType } = temporal.api.enums.v1;

/** The activity type whose inputs carry the conversation. */
const CALL_CLAUDE = 'callClaude';

/** The activity type of a command, whose answer carries its run time. */
const RUN_COMMAND = 'runCommand';

/** The activity type of a text editor command, whose answer names the approval rule that let it run unasked. */
const RUN_EDIT = 'runEdit';

/** The activity type that closes a bash session, whose answer says what the git audit moved at close. */
const CLOSE_SESSION = 'closeSession';

/** The activity type that opens a bash session, whose answer says where it started. */
const OPEN_SESSION = 'openSession';

/** The rule probe's reason a matching rule did not apply (src/activities/session.ts `ruleHolds`): `rule 1 matches, but …`. */
const RULE_NOT_APPLIED = /^rule \d+ matches, but /;

/** Where a run's workspace is: a folder on the machine of a worker. */
export interface RunWorkspace {
  /** Absolute path of the folder on the worker's machine: the run's `workdir` as a worker resolved it. */
  path: string;
  /** The worker process that opened the run's last session (`SessionRef.workerId`). */
  workerId: string;
  /**
   * The sandbox modes of the sessions the run opened (`SessionRef.sandbox`), each once, in the order first seen (newest
   * execution first); empty when the sessions were recorded before workers reported it.
   */
  sandboxes: ('bwrap' | 'none')[];
}

/** What this module reads of one execution's history. */
export interface RunHistory {
  /** `callClaude` inputs scheduled, in order (up to `stopAt` when given). */
  inputs: ConversationPart[];
  /** The run it continued from. */
  continuedFrom: string | null;
  /** The workflow input (the first argument of the started event). */
  input: AgentRunInput | null;
  /** The answer of the last `callClaude` that completed, when it was the last one scheduled. */
  lastOutput: CallClaudeOutput | null;
  /**
   * Decisions, oldest first: those that came through the `decide` Update, and those an approval rule made (a command or
   * an edit the worker ran unasked because a rule matched: its answer's `approvedByRule`), as the run's own `status`
   * records them (src/workflows/approval.ts `recordRuleDecision`). Not rebuilt: a decision by the legacy `approve`
   * signal and an approval timeout's denial.
   */
  decisions: StatusView['decisions'];
  /** How long each command ran, in ms by `tool_use` id (the `durationMs` of `runCommand` answers). */
  durationsMs: Record<string, number>;
  /** The exit code of each command that ran to its end, by `tool_use` id (`publishedExitCode` of the same answers). */
  exitCodes: Record<string, number>;
  /**
   * The system's notes at the end of each command's result, by `tool_use` id, rebuilt from the
   * answers as the workflow builds them (the answer's `notes`, then `commandNotes` with the run's
   * command timeout), for runs whose model calls do not carry them ({@link published}); a move
   * to another worker after it is added by {@link closedConversation}. None for an answer without
   * `notes` (a worker of an earlier version).
   */
  notes: Record<string, string[]>;
  /**
   * The notes the run published, by `tool_use` id, as its model calls carry them
   * (`CallClaudeInput.notes`, since `model-call-carries-notes`): commands' and edits', a move to
   * another worker included.
   */
  published: Record<string, string[]>;
  /** The working directory each command's answer gave when it said its worker was shutting down (`workerClosing`), by `tool_use` id. */
  closing: Record<string, string>;
  /**
   * The approval rules as the execution left them, oldest first: those it started with (carried across
   * continue-as-new, or the input's), each a `decide` answer added, and the rules a `removeRule` Update
   * answered with, in history order (the run's own status keeps them the same way).
   */
  rules: ApprovalRule[];
  /**
   * What the git audit moved or named when each session of this execution closed (the `closeSession` answers'
   * `gitAtClose`, src/contract/activities.ts), oldest first; none for a session whose audit found nothing.
   */
  gitAtClose: string[];
  /**
   * The same, line by line for a person: per session, the answer's `gitAtCloseLines` (each part a line, each finding
   * a line under it indented by two spaces), or its `gitAtClose` as one line from a worker before them.
   */
  gitAtCloseLines: string[][];
  /**
   * Why a rule that matched a command did not approve it, by `tool_use` id: the `runCommand` or `runEdit` answer's
   * `needsApproval` when it is the rule probe's (`rule 1 matches, but git resolves to …: the rule does not apply; a
   * person decides`, src/activities/session.ts `ruleHolds`); the later answer for an id replaces the earlier.
   */
  ruleNotApplied: Record<string, string>;
  /**
   * What each text editor command did once it no longer waited for a person, by `tool_use` id: the last `runEdit`
   * answer for it that asks nothing (`applied`: a file was written; `isError` and `text`: what Claude was told, such
   * as `Error: … changed since the edit was shown for approval …`); an answer that asks again removes it.
   */
  editOutcomes: Record<string, EditOutcome>;
}

/** What a text editor command did (a `runEdit` answer that asks nothing): {@link RunHistory.editOutcomes}. */
export interface EditOutcome {
  applied: boolean;
  isError: boolean;
  text: string;
}

/**
 * How this module reads a payload of a history: decoded by the client's
 * codecs (the encryption codec), last one first, then converted.
 */
function payloadDecoder(client: Client): <T>(payload: Payload) => Promise<T> {
  const { payloadConverter, payloadCodecs } = client.options.loadedDataConverter;
  return async <T>(payload: Payload): Promise<T> => {
    let decoded = [payload];
    for (const codec of [...payloadCodecs].reverse()) decoded = await codec.decode(decoded);
    return payloadConverter.fromPayload<T>(decoded[0]!);
  };
}

/**
 * Reads one execution's history: the `callClaude` inputs scheduled in it,
 * in order, up to (not including) the one with activity id `stopAt` when
 * given; the input; the last call's answer; the `decide` Updates applied.
 * @throws the client's error when the history cannot be read (unknown run, server down)
 */
export async function readHistory(client: Client, workflowId: string, runId: string, stopAt?: string): Promise<RunHistory> {
  const out: RunHistory = {
    inputs: [],
    continuedFrom: null,
    input: null,
    lastOutput: null,
    decisions: [],
    durationsMs: {},
    exitCodes: {},
    notes: {},
    published: {},
    closing: {},
    rules: [],
    gitAtClose: [],
    gitAtCloseLines: [],
    ruleNotApplied: {},
    editOutcomes: {},
  };
  /** Scheduled event ids of the `closeSession`s. */
  const closes = new Set<string>();
  /** `tool_use` id of each scheduled `runCommand`, by its scheduled event id. */
  const commands = new Map<string, string>();
  /** What each scheduled `runCommand` and `runEdit` asked (the command's text for bash), by its scheduled event id. */
  const asked = new Map<string, { toolUseId: string; command?: string }>();
  /** Scheduled event ids of the `runEdit`s (those of {@link asked} that are text editor commands). */
  const edits = new Set<string>();
  /** Who added each approval rule, by rule id (from the `decide` answers that added them). */
  const ruleBy = new Map<number, string>();
  const decode = payloadDecoder(client);
  /** Scheduled event id of the last `callClaude`, and whether its answer is the last one seen. */
  let lastCallEventId: string | null = null;
  const decideRequests = new Map<string, DecideRequest>();
  /** Update ids of the `removeRule` Updates accepted. */
  const ruleRemovals = new Set<string>();
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const event of page.history?.events ?? []) {
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
        const attrs = event.workflowExecutionStartedEventAttributes;
        out.continuedFrom = attrs?.continuedExecutionRunId || null;
        const first = attrs?.input?.payloads?.[0];
        if (first) out.input = await decode<AgentRunInput>(first);
        const carried = attrs?.input?.payloads?.[1];
        const rules = carried ? (await decode<CarriedState | null>(carried))?.rules : out.input?.rules;
        if (Array.isArray(rules)) out.rules = [...rules];
      } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
        const attrs = event.activityTaskScheduledEventAttributes;
        const commandInput = attrs?.activityType?.name === RUN_COMMAND ? attrs.input?.payloads?.[0] : undefined;
        if (commandInput) {
          const cmd = await decode<RunCommandInput>(commandInput);
          commands.set(String(event.eventId), cmd.toolUseId);
          asked.set(String(event.eventId), { toolUseId: cmd.toolUseId, command: cmd.command });
        }
        const editInput = attrs?.activityType?.name === RUN_EDIT ? attrs.input?.payloads?.[0] : undefined;
        if (editInput) {
          asked.set(String(event.eventId), { toolUseId: (await decode<{ toolUseId: string }>(editInput)).toolUseId });
          edits.add(String(event.eventId));
        }
        if (attrs?.activityType?.name === CLOSE_SESSION) closes.add(String(event.eventId));
        if (attrs?.activityType?.name !== CALL_CLAUDE) continue;
        if (stopAt !== undefined && attrs.activityId === stopAt) return out;
        const payload = attrs.input?.payloads?.[0];
        if (payload) {
          const input = await decode<ConversationPart & { notes?: unknown }>(payload);
          out.inputs.push(input);
          Object.assign(out.published, notesRecord(input.notes));
        }
        lastCallEventId = String(event.eventId);
        out.lastOutput = null;
      } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const attrs = event.activityTaskCompletedEventAttributes;
        const payload = attrs?.result?.payloads?.[0];
        const scheduled = String(attrs?.scheduledEventId);
        if (lastCallEventId !== null && scheduled === lastCallEventId && payload) out.lastOutput = await decode<CallClaudeOutput>(payload);
        if (closes.has(scheduled) && payload) {
          // A worker before this answer returned nothing (no payload, or null).
          const answer = await decode<{ gitAtClose?: unknown; gitAtCloseLines?: unknown } | null>(payload);
          const said = answer?.gitAtClose;
          if (typeof said === 'string' && said !== '') {
            out.gitAtClose.push(said);
            const lines = answer?.gitAtCloseLines;
            out.gitAtCloseLines.push(Array.isArray(lines) && lines.every((l) => typeof l === 'string') ? lines : [said]);
          }
        }
        const tool = asked.get(scheduled);
        if (tool && payload) {
          const answer = await decode<{
            approvedByRule?: unknown;
            needsApproval?: unknown;
            applied?: unknown;
            isError?: unknown;
            text?: unknown;
          }>(payload);
          const byRule = answer.approvedByRule;
          if (typeof byRule === 'number') out.decisions.push(ruleDecision(tool, byRule, ruleBy.get(byRule), msOf(event.eventTime)));
          // A command's answer says it as a string, an edit's as its `reason`.
          const asks = answer.needsApproval as string | { reason?: unknown } | undefined | null;
          const why = typeof asks === 'string' ? asks : asks?.reason;
          if (typeof why === 'string' && RULE_NOT_APPLIED.test(why)) out.ruleNotApplied[tool.toolUseId] = why;
          if (edits.has(scheduled)) {
            if (asks !== undefined && asks !== null) delete out.editOutcomes[tool.toolUseId];
            else if (typeof answer.text === 'string')
              out.editOutcomes[tool.toolUseId] = { applied: answer.applied === true, isError: answer.isError === true, text: answer.text };
          }
        }
        const toolUseId = commands.get(scheduled);
        const answer = toolUseId !== undefined && payload ? await decode<Partial<RunCommandOutput>>(payload) : undefined;
        if (toolUseId !== undefined && typeof answer?.durationMs === 'number') {
          // As the workflow records them (RunState.recordCommand): the later answer for an id replaces the earlier.
          out.durationsMs[toolUseId] = answer.durationMs;
          const code = publishedExitCode(answer);
          if (code !== undefined) out.exitCodes[toolUseId] = code;
          else delete out.exitCodes[toolUseId];
          const timeoutMs = out.input?.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS; // the workflow's default (contract/input.ts)
          if (Array.isArray(answer.notes)) out.notes[toolUseId] = [...answer.notes, ...commandNotes(answer as RunCommandOutput, timeoutMs)];
          else delete out.notes[toolUseId];
          if (answer.workerClosing === true && typeof answer.cwd === 'string') out.closing[toolUseId] = answer.cwd;
          else delete out.closing[toolUseId];
        }
      } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) {
        const attrs = event.workflowExecutionUpdateAcceptedEventAttributes;
        const req = attrs?.acceptedRequest;
        const arg = req?.input?.args?.payloads?.[0];
        if (req?.input?.name === decideUpdate.name && arg && req.meta?.updateId)
          decideRequests.set(req.meta.updateId, await decode<DecideRequest>(arg));
        if (req?.input?.name === removeRuleUpdate.name && req.meta?.updateId) ruleRemovals.add(req.meta.updateId);
      } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED) {
        const attrs = event.workflowExecutionUpdateCompletedEventAttributes;
        const updateId = attrs?.meta?.updateId ?? '';
        const request = decideRequests.get(updateId);
        const success = attrs?.outcome?.success?.payloads?.[0];
        // A removal answers with the rules left.
        if (ruleRemovals.has(updateId) && success) {
          const left = await decode<ApprovalRule[]>(success);
          if (Array.isArray(left)) out.rules = left;
        }
        if (!request || !success) continue;
        const answer = await decode<DecideAnswer>(success);
        if (answer.rule) {
          ruleBy.set(answer.rule.id, answer.rule.by);
          out.rules.push(answer.rule);
        }
        out.decisions.push({
          toolUseId: answer.toolUseId,
          approved: answer.decision !== 'denied',
          decision: answer.decision,
          ...(request.reason !== undefined ? { reason: request.reason } : {}),
          by: answer.by,
          source: 'update',
          ...(answer.decision === 'edited' ? { editedCommand: answer.command } : {}),
          ...(answer.rule ? { rule: answer.rule.id } : {}),
          commandSha256: request.commandSha256,
          at: new Date(msOf(event.eventTime)).toISOString(),
        });
      }
    }
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return out;
}

/** A decision an approval rule made, as the workflow records it: a command's with its text and hash, an edit's without. */
function ruleDecision(
  tool: { toolUseId: string; command?: string },
  rule: number,
  by: string | undefined,
  atMs: number,
): StatusView['decisions'][number] {
  return {
    toolUseId: tool.toolUseId,
    approved: true,
    decision: 'approved',
    source: 'rule',
    rule,
    ...(by !== undefined ? { by } : {}),
    ...(tool.command !== undefined
      ? { command: tool.command, commandSha256: createHash('sha256').update(tool.command, 'utf8').digest('hex') }
      : {}),
    at: new Date(atMs).toISOString(),
  };
}

/**
 * Where run `runId` of `workflowId` keeps its files, from its `openSession`s. The path: the `cwd`
 * of the last session opened in the workspace, one sent without `restoreCwd` (a first session, a
 * rewind's or a fork's restore), which starts in the workdir (src/activities/session.ts); a session
 * that replaces a lost one starts where the old one was, maybe a folder below or outside. The
 * worker: the one that opened the last session of all, at or after that one. An execution that
 * opened none (a continued run keeps its session) leads to the runs it continued from.
 * @returns null when no session was opened (no tool ran)
 * @throws the client's error when a history cannot be read
 */
export async function workspaceOf(client: Client, workflowId: string, runId: string): Promise<RunWorkspace | null> {
  const decode = payloadDecoder(client);
  /** One execution's last session in the workspace, its last session of all, and the run it continued from. */
  const scan = async (
    run: string,
  ): Promise<{ inWorkspace: Omit<RunWorkspace, 'sandboxes'> | null; lastWorkerId: string | null; continuedFrom: string | null }> => {
    /** Scheduled event id of each `openSession`: whether it starts in the workspace. */
    const opens = new Map<string, boolean>();
    let inWorkspace: Omit<RunWorkspace, 'sandboxes'> | null = null;
    let lastWorkerId: string | null = null;
    let continuedFrom: string | null = null;
    let nextPageToken: Uint8Array | undefined;
    do {
      const page = await client.workflowService.getWorkflowExecutionHistory({
        namespace: client.options.namespace,
        execution: { workflowId, runId: run },
        ...(nextPageToken ? { nextPageToken } : {}),
      });
      for (const event of page.history?.events ?? []) {
        if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
          continuedFrom = event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || null;
        } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
          const attrs = event.activityTaskScheduledEventAttributes;
          const input = attrs?.activityType?.name === OPEN_SESSION ? attrs.input?.payloads?.[0] : undefined;
          if (input) opens.set(String(event.eventId), (await decode<OpenSessionInput>(input)).restoreCwd === undefined);
        } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
          const attrs = event.activityTaskCompletedEventAttributes;
          const startsInWorkspace = opens.get(String(attrs?.scheduledEventId));
          const answer = attrs?.result?.payloads?.[0];
          if (startsInWorkspace === undefined || !answer) continue;
          const ref = await decode<OpenSessionOutput>(answer);
          lastWorkerId = ref.workerId;
          if ((ref.sandbox === 'bwrap' || ref.sandbox === 'none') && !sandboxes.includes(ref.sandbox)) sandboxes.push(ref.sandbox);
          if (startsInWorkspace) inWorkspace = { path: ref.cwd, workerId: ref.workerId };
        }
      }
      nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
    } while (nextPageToken);
    return { inWorkspace, lastWorkerId, continuedFrom };
  };
  const seen = new Set<string>();
  const sandboxes: RunWorkspace['sandboxes'] = [];
  let lastWorkerId: string | null = null;
  let run: string | null = runId;
  while (run !== null && !seen.has(run)) {
    seen.add(run);
    const found = await scan(run);
    lastWorkerId ??= found.lastWorkerId;
    if (found.inWorkspace) return { path: found.inWorkspace.path, workerId: lastWorkerId ?? found.inWorkspace.workerId, sandboxes };
    run = found.continuedFrom;
  }
  return null;
}

/**
 * Rebuilds a conversation from the histories of run `runId` of `workflowId`
 * and of every run it continued from (oldest first), by folding their
 * `callClaude` inputs (src/contract/conversation.ts). Used by `callClaude`
 * when its worker has no copy, and for the messages a continued run no
 * longer holds. Takes a raw Temporal `Client` (an activity's own).
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
  return (await chainHistory(client, workflowId, runId, stopAt)).folded;
}

/** The chain's histories read once: the fold of their inputs, and the latest run's own history. */
async function chainHistory(
  client: Client,
  workflowId: string,
  runId: string,
  stopAt?: string,
): Promise<{ folded: ReturnType<typeof foldCallInputs>; latest: RunHistory; published: Record<string, string[]> }> {
  const runs: ConversationPart[][] = [];
  let run: string | null = runId;
  let latest: RunHistory | null = null;
  const seen = new Set<string>();
  /** Each run's published notes, oldest first. */
  const published: Array<Record<string, string[]>> = [];
  while (run !== null && !seen.has(run)) {
    seen.add(run);
    const h = await readHistory(client, workflowId, run, latest === null ? stopAt : undefined);
    latest ??= h;
    runs.unshift(h.inputs);
    published.unshift(h.published);
    run = h.continuedFrom;
  }
  return { folded: foldCallInputs(runs.flat()), latest: latest!, published: Object.assign({}, ...published) as Record<string, string[]> };
}

/** `v` when it is a record of string arrays (a model call's `notes`), its own entries only; empty otherwise. */
function notesRecord(v: unknown): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return out;
  for (const [id, notes] of Object.entries(v)) if (Array.isArray(notes) && notes.every((n) => typeof n === 'string')) out[id] = [...notes];
  return out;
}

/**
 * A closed run's conversation as far as its history holds it: the folded
 * `callClaude` inputs, then the last call's answer as the workflow appends
 * it (without empty text blocks, for the stop reasons that keep it).
 * @returns the messages, and why the end may be missing (`incomplete`): tool
 *   results appended after the last model call live only in the run's state
 * @throws HistoryUnreadableError when the histories do not chain
 */
export async function closedConversation(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{
  messages: Message[];
  durationsMs: Record<string, number>;
  exitCodes: Record<string, number>;
  notes: Record<string, string[]>;
  gitAtClose: string[];
  gitAtCloseLines: string[][];
  incomplete?: string;
}> {
  const { folded, latest, published } = await chainHistory(client, workflowId, runId);
  if (!folded.ok) throw new HistoryUnreadableError(workflowId, folded.problem);
  const messages = [...folded.conversation.messages];
  const last = latest.lastOutput;
  if (last && KEPT_STOP_REASONS.has(last.stopReason ?? '')) {
    // MAINTENANCE: keep in sync with withoutEmptyText (src/workflows/transcript.ts), which the workflow applies.
    const content = last.content.filter((b) => !(isText(b) && b.text.trim() === ''));
    if (content.length > 0) messages.push({ role: 'assistant', content });
  }
  const tail = messages.at(-1);
  const open = tail?.role === 'assistant' && typeof tail.content !== 'string' && tail.content.some(isToolUse);
  return {
    messages,
    durationsMs: latest.durationsMs,
    exitCodes: latest.exitCodes,
    notes: publishedNotes(messages, published, withMoveNotes(messages, latest.notes, latest.closing)),
    gitAtClose: latest.gitAtClose,
    gitAtCloseLines: latest.gitAtCloseLines,
    ...(open ? { incomplete: 'the results of the last tool calls were added after the last model call and are not in the history' } : {}),
  };
}

/**
 * The notes of `messages`' results as the run published them (`published`, from its model
 * calls), and for a result they do not cover (a run from before, or a result whose model call
 * is not in the history yet) those rebuilt from the answers (`rebuilt`). Never read from a
 * result's text: the command writes it.
 */
export function publishedNotes(
  messages: Message[],
  published: Record<string, string[]>,
  rebuilt: Record<string, string[]>,
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of messages) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) {
      if (!isToolResult(b)) continue;
      if (Object.hasOwn(published, b.tool_use_id)) out[b.tool_use_id] = [...published[b.tool_use_id]!];
      else if (Object.hasOwn(rebuilt, b.tool_use_id)) out[b.tool_use_id] = [...rebuilt[b.tool_use_id]!];
    }
  }
  return out;
}

/**
 * `notes` (rebuilt from the answers, for a run whose model calls do not carry what it published)
 * with, for a command whose answer said its worker was shutting down (`closing`: the answer's
 * working directory by `tool_use` id), the workflow's note that the session then moved to another
 * worker, when the result's text ends with those notes and then exactly that note as the
 * workflow writes it for such an answer (src/shared/notes.ts `movedAfterNote`, with
 * {@link WORKER_SHUT_DOWN} and that directory). The note is built, never taken from the text:
 * a move for another reason (a `sessionClosing` signal's), to another directory, or that found
 * no new session is left out, and the text then reads as output. Only ids of `messages`'
 * results are kept.
 */
export function withMoveNotes(
  messages: Message[],
  notes: Record<string, string[]>,
  closing: Record<string, string> = {},
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of messages) {
    if (typeof m.content === 'string') continue;
    for (const b of m.content) {
      if (!isToolResult(b) || !Object.hasOwn(notes, b.tool_use_id)) continue;
      const known = notes[b.tool_use_id]!;
      out[b.tool_use_id] = known;
      if (!Object.hasOwn(closing, b.tool_use_id)) continue;
      const moved = movedAfterNote(WORKER_SHUT_DOWN, { cwd: closing[b.tool_use_id]! });
      if (!b.content.endsWith(`\n${moved}`)) continue;
      const before = b.content.slice(0, b.content.length - moved.length - 1);
      if (known.length === 0 || splitNotes(before, known) !== undefined) out[b.tool_use_id] = [...known, moved];
    }
  }
  return out;
}

/** A checkpoint or a rewind of a run, as its history has it (`agent-jobs checkpoints`). */
export type TimelineEntry =
  | {
      kind: 'checkpoint';
      turn: number;
      id: string;
      store: string;
      workspace: string;
      toolUseId: string;
      at: string;
      /** Paths the checkpoint left out because git refuses to write them (how many, the first 20); absent when none. */
      leftOut?: { count: number; paths: string[] };
    }
  | {
      kind: 'rewind';
      toTurn: number;
      by: string;
      text?: string;
      droppedMessages: number;
      at: string;
      /** The checkpoint it restored. */
      checkpoint: string;
      /** What the restore did (rewinds applied since the answer carries it). */
      restore?: RestoreReport;
    };

/**
 * One execution's checkpoints (from the `runCommand` / `runEdit` answers) and applied rewinds
 * (completed `rewind` Updates), in history order, and its `callClaude` inputs with their turn.
 */
export async function readTimeline(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<{ entries: TimelineEntry[]; calls: ConversationPart[]; continuedFrom: string | null; input: AgentRunInput | null }> {
  let input: AgentRunInput | null = null;
  const entries: TimelineEntry[] = [];
  const calls: ConversationPart[] = [];
  let continuedFrom: string | null = null;
  const tools = new Map<string, string>();
  const rewinds = new Map<string, RewindRequest>();
  const decode = payloadDecoder(client);
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await client.workflowService.getWorkflowExecutionHistory({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      ...(nextPageToken ? { nextPageToken } : {}),
    });
    for (const event of page.history?.events ?? []) {
      const at = new Date(msOf(event.eventTime)).toISOString();
      if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED) {
        continuedFrom = event.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || null;
        const first = event.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
        if (first) input = await decode<AgentRunInput>(first);
      } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
        const attrs = event.activityTaskScheduledEventAttributes;
        const type = attrs?.activityType?.name ?? '';
        const payload = attrs?.input?.payloads?.[0];
        if (type === CALL_CLAUDE && payload) calls.push(await decode<ConversationPart>(payload));
        if ((type === RUN_COMMAND || type === 'runEdit') && payload)
          tools.set(String(event.eventId), (await decode<{ toolUseId: string }>(payload)).toolUseId);
      } else if (event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
        const attrs = event.activityTaskCompletedEventAttributes;
        const toolUseId = tools.get(String(attrs?.scheduledEventId));
        const payload = attrs?.result?.payloads?.[0];
        if (toolUseId === undefined || !payload) continue;
        const cp = (await decode<{ checkpoint?: CheckpointResult }>(payload)).checkpoint;
        if (cp && 'id' in cp)
          entries.push({
            kind: 'checkpoint',
            turn: cp.turn,
            id: cp.id,
            store: cp.store,
            workspace: cp.workspace,
            toolUseId,
            at,
            ...(cp.leftOut ? { leftOut: cp.leftOut } : {}),
          });
      } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED) {
        const req = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest;
        const arg = req?.input?.args?.payloads?.[0];
        if (req?.input?.name === rewindUpdate.name && arg && req.meta?.updateId)
          rewinds.set(req.meta.updateId, await decode<RewindRequest>(arg));
      } else if (event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_COMPLETED) {
        const attrs = event.workflowExecutionUpdateCompletedEventAttributes;
        const req = rewinds.get(attrs?.meta?.updateId ?? '');
        const success = attrs?.outcome?.success?.payloads?.[0];
        if (!req || !success) continue;
        const answer = await decode<RewindAnswer>(success);
        entries.push({
          kind: 'rewind',
          toTurn: answer.toTurn,
          by: answer.by,
          droppedMessages: answer.droppedMessages,
          ...(req.text !== undefined ? { text: req.text } : {}),
          at,
          checkpoint: answer.checkpoint,
          ...(answer.restore ? { restore: answer.restore } : {}),
        });
      }
    }
    nextPageToken = page.nextPageToken && page.nextPageToken.length > 0 ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return { entries, calls, continuedFrom, input };
}
