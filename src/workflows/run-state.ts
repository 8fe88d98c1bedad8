/**
 * The state of one agentRun, in one object: what continues-as-new, what the
 * status query and the UI show, and what the run is doing right now.
 * Message handlers and the loop's parts read and change it; nothing else
 * holds run state. Deterministic (workflow code).
 */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import type {
  AgentRunResult,
  AppliedDecision,
  CarriedState,
  Message,
  RunStatus,
  SessionRef,
  StatusView,
  ToolResultBlock,
  ToolUseBlock,
  TranscriptView,
  Usage,
} from '../contract';
import type { ResolvedInput } from '../contract/input';
import { AGENT_STATUS, AGENT_TOKENS, AGENT_TURNS } from '../config';
import { newApprovalState, type ApprovalState } from './approval';
import { interruptedText, type ToolUsePhase } from './tool-results';
import { completeResults } from './transcript';

/** The assistant message whose `tool_use` blocks are being executed, and the results produced so far. */
export interface Inflight {
  assistant: Message;
  results: ToolResultBlock[];
}

/** Which `tool_use` is being handled, and how far it got. */
export interface CurrentToolUse {
  toolUseId: string;
  phase: ToolUsePhase;
}

/** One run's state (module doc). Fields are public so the loop's parts stay small; each says who writes it. */
export class RunState {
  // ---- carried across continue-as-new (see CarriedState) ----
  /** The conversation as it will next be sent to Claude. Written by the loop (one assistant + one user message per tool turn). */
  transcript: Message[];
  /** Model calls made in the whole chain. Written by the model step. */
  turns: number;
  /** Tokens used in the whole chain. Written by the model step. */
  usage: Usage;
  /** The live bash session, or null before the first command and after a loss. Written by the session part. */
  session: SessionRef | null;
  /** The most recent decisions applied, newest last (at most `MAX_DECISIONS_KEPT`). Written by the approval part. */
  decisions: AppliedDecision[];
  /** Continue-as-new generations so far. */
  readonly generation: number;

  // ---- this workflow execution only ----
  /** What the status query and the `AgentStatus` search attribute say. */
  status: RunStatus = 'running';
  /** What the run does or waits for right now (the UI's current details, without the status prefix). */
  details = '';
  /** How the run ended, once it has. */
  result: AgentRunResult | null = null;
  /** The pending approval and the decision received for it (src/workflows/approval.ts). */
  readonly approval: ApprovalState = newApprovalState();
  /** The assistant message being executed, so an early end can pair its open `tool_use`s. */
  inflight: Inflight | null = null;
  /** The `tool_use` being handled, so an early end can say what happened to it. */
  current: CurrentToolUse | null = null;

  /**
   * @param input the validated input, every default applied
   * @param workflowId this run's workflow id (workflowInfo())
   * @param carried the previous execution's state (continue-as-new); absent on a fresh start
   */
  constructor(
    readonly input: ResolvedInput,
    readonly workflowId: string,
    carried?: CarriedState,
  ) {
    this.transcript = carried?.transcript ?? [{ role: 'user', content: input.task }];
    this.turns = carried?.turns ?? 0;
    this.usage = carried?.usage ?? { inputTokens: 0, outputTokens: 0 };
    this.session = carried?.session ?? null;
    this.decisions = carried?.decisions ?? [];
    this.generation = carried?.generation ?? 0;
  }

  /** The state the next execution starts from (continue-as-new happens only between turns, so nothing is pending). */
  carry(): CarriedState {
    return {
      transcript: this.transcript,
      turns: this.turns,
      usage: this.usage,
      session: this.session,
      decisions: this.decisions,
      generation: this.generation + 1,
    };
  }

  /** Upserts the search attributes (status, turns, tokens): one workflow command each time. */
  publish(): void {
    upsertSearchAttributes([
      { key: AGENT_STATUS, value: this.status },
      { key: AGENT_TURNS, value: this.turns },
      { key: AGENT_TOKENS, value: this.usage.inputTokens + this.usage.outputTokens },
    ]);
  }

  /** Sets what the run is doing (status query `details`, and the UI's current details with status and turn). */
  setDetails(text: string): void {
    this.details = text;
    setCurrentDetails(`**${this.status}** · turn ${this.turns}/${this.input.maxTurns} · ${text}`);
  }

  /** Answer of the `status` query. */
  statusView(): StatusView {
    return {
      workflowId: this.workflowId,
      status: this.status,
      turns: this.turns,
      pendingApproval: this.approval.pending,
      usage: this.usage,
      result: this.result,
      details: this.details,
      decisions: this.decisions,
      session: this.session,
    };
  }

  /** Answer of the `transcript` query from message `from` on (clamped to the transcript). */
  transcriptView(from = 0): TranscriptView {
    const start = Math.max(0, Math.min(Math.floor(from), this.transcript.length));
    return { from: start, total: this.transcript.length, messages: this.transcript.slice(start) };
  }

  /**
   * Pairs every open `tool_use` of the message being executed when the run
   * ends early (every path pairs each `tool_use` with one `tool_result`):
   * the one in progress says what happened to it, the rest that they did not run.
   */
  pairInflight(end: 'cancelled' | 'failed'): void {
    const inflight = this.inflight;
    if (!inflight) return;
    const current = this.current;
    const reason = (use: ToolUseBlock): string => interruptedText(end, use.id === current?.toolUseId ? current.phase : null);
    this.transcript.push({ role: 'user', content: completeResults(inflight.assistant, inflight.results, reason) });
    this.inflight = null;
  }
}
