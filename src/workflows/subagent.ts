/**
 * Sub-agents (docs/subagents.md): a `subagent` tool_use becomes a child `agentRun` with the
 * parent's settings, in the parent's workspace, with a share of what the parent has left of its
 * budgets; its final answer (or failure) is the tool's result. The calls of one answer run at
 * the same time, at most `input.subagents` at once. Deterministic (workflow code).
 */
import {
  ChildWorkflowCancellationType,
  ParentClosePolicy,
  condition,
  isCancellation,
  patched,
  startChild,
  type ChildWorkflowFailure,
} from '@temporalio/workflow';
import { normalizeUsage, totalTokens, type AgentRunInput, type AgentRunResult, type ToolUseBlock } from '../contract';
import { AGENT_RUN_WORKFLOW } from '../config';
import {
  SUBAGENT_TOOL_NAME,
  parseSubagentInput,
  subagentWorkflowId,
  workspaceFolderName,
  type SubagentRequest,
  type WorktreeGit,
} from '../contract/subagent';
import { subagentSummary } from '../shared/display';
import { msSince } from './limits';
import type { RunState } from './run-state';
import type { RunSession } from './session';
import type { ToolOutcome } from './tool-results';

/** The signature of `agentRun` (./agent-run), named here so that this module, which agent-run imports, does not import it back. */
type AgentRunWorkflow = (input: AgentRunInput) => Promise<AgentRunResult>;

/**
 * patched() id: an answer's `subagent` tool_uses start child `agentRun`s. Asked only by runs
 * started with `subagents` (no run before it offered the tool), when an answer holds one.
 */
export const SUBAGENTS_PATCH = 'subagents-as-child-workflows';

/**
 * patched() id: with `subagentWorkspace: 'worktree'`, the parent's session worker makes a git
 * worktree of the workspace for each sub-agent (`createWorktree`) before the child starts. Asked
 * only by runs started with that setting, when an answer holds a `subagent` call.
 */
export const SUBAGENT_WORKTREE_PATCH = 'subagent-worktrees';

/**
 * patched() id: a child's static summary shows the model's description escaped, in a code span
 * ({@link subagentSummary}); before it, the description went to the UI's markdown raw.
 */
export const SUBAGENT_SUMMARY_PATCH = 'subagent-summary-in-code-span';

/**
 * patched() id: a sub-agent's input carries the git directories of its worktree
 * (`worktreeGit`, from `createWorktree`), which the child's session binds so git works there.
 * Asked only when `createWorktree` answered with them (no worker did before this change).
 */
export const SUBAGENT_WORKTREE_GIT_PATCH = 'subagent-worktree-git';

/** Whether `use` is a sub-agent call the run offers. */
export function isSubagentUse(state: RunState, use: ToolUseBlock): boolean {
  return use.name === SUBAGENT_TOOL_NAME && state.input.subagents !== undefined;
}

/** The budgets one child gets: what the parent has left, split evenly among the `n` calls of the answer. */
interface Share {
  maxTurns: number;
  maxCostUsd?: number;
  maxTokensTotal?: number;
  maxDurationMs?: number;
}

function shareOf(state: RunState, n: number): Share {
  const { limits } = state;
  const cost = state.costUsd();
  const usedTokens = totalTokens(state.usage);
  return {
    maxTurns: Math.max(1, Math.floor((limits.maxTurns - state.turns) / n)),
    ...(limits.maxCostUsd !== undefined ? { maxCostUsd: Math.max(1e-6, (limits.maxCostUsd - (cost ?? 0)) / n) } : {}),
    ...(limits.maxTokensTotal !== undefined ? { maxTokensTotal: Math.max(1, Math.floor((limits.maxTokensTotal - usedTokens) / n)) } : {}),
    ...(limits.maxDurationMs !== undefined ? { maxDurationMs: Math.max(1_000, limits.maxDurationMs - msSince(state.startedAt)) } : {}),
  };
}

/**
 * The child's input: the parent's settings (model, system prompt, tools, approval mode, its
 * rules as they are now, and timeouts, sandbox network, command timeout, checkpoints), the prompt as its task, the
 * parent's workspace, its share of the budgets, and `subagentOf` (so it offers no `subagent`
 * tool itself).
 */
export function childInput(
  state: RunState,
  request: SubagentRequest,
  share: Share,
  worktree?: string,
  worktreeGit?: WorktreeGit,
): AgentRunInput {
  const i = state.input;
  return {
    task: request.prompt,
    model: i.model,
    maxTokens: i.maxTokens,
    system: i.system,
    approval: i.approval,
    workdir: worktree ?? i.workdir ?? workspaceFolderName(state.workflowId),
    network: i.network,
    commandTimeoutMs: i.commandTimeoutMs,
    approvalTimeout: i.approvalTimeout,
    approvalTimeoutAction: i.approvalTimeoutAction,
    transcriptBudgetChars: i.transcriptBudgetChars,
    onBudget: i.onBudget,
    tools: [...i.tools],
    checkpoints: i.checkpoints,
    maxTurns: share.maxTurns,
    ...(share.maxCostUsd !== undefined ? { maxCostUsd: share.maxCostUsd } : {}),
    ...(share.maxTokensTotal !== undefined ? { maxTokensTotal: share.maxTokensTotal } : {}),
    ...(share.maxDurationMs !== undefined ? { maxDuration: share.maxDurationMs } : {}),
    ...(i.thinking !== undefined ? { thinking: i.thinking } : {}),
    ...(i.effort !== undefined ? { effort: i.effort } : {}),
    ...(i.thinkingDisplay !== undefined ? { thinkingDisplay: i.thinkingDisplay } : {}),
    ...(i.webSearch !== undefined ? { webSearch: i.webSearch } : {}),
    ...(i.webFetch !== undefined ? { webFetch: i.webFetch } : {}),
    ...(i.contextWindow !== undefined ? { contextWindow: i.contextWindow } : {}),
    ...(i.modelInfo !== undefined ? { modelInfo: i.modelInfo } : {}),
    ...(state.rules.length > 0 ? { rules: state.rules.map((r) => ({ ...r })) } : {}),
    subagentOf: state.workflowId,
    ...(worktreeGit !== undefined ? { worktreeGit } : {}),
  };
}

/**
 * Starts every sub-agent call of `uses` (they run at once, up to `input.subagents`; the rest
 * wait for a free slot), each answered by its child's outcome.
 * @returns what each call came to, by `tool_use` id (never rejecting: a cancellation of the run is `thrown`)
 */
export function startSubagents(state: RunState, session: RunSession, uses: ToolUseBlock[]): Map<string, Promise<Settled>> {
  const calls = uses.filter((u) => isSubagentUse(state, u));
  const started = new Map<string, Promise<Settled>>();
  if (calls.length === 0) return started;
  const share = shareOf(state, calls.length);
  for (const use of calls) started.set(use.id, settled(runSubagent(state, session, use, share)));
  return started;
}

/** What a started sub-agent call came to: its outcome, or what it threw (a cancellation of the run). */
export type Settled = { outcome: ToolOutcome } | { thrown: unknown };

/** `p`, never rejecting, so a call not awaited yet (the run was cancelled meanwhile) is no unhandled rejection. */
async function settled(p: Promise<ToolOutcome>): Promise<Settled> {
  try {
    return { outcome: await p };
  } catch (thrown) {
    return { thrown };
  }
}

/** One sub-agent: waits for a slot, runs the child to its end, adds its usage to the parent's. */
async function runSubagent(state: RunState, session: RunSession, use: ToolUseBlock, share: Share): Promise<ToolOutcome> {
  const parsed = parseSubagentInput(use.input);
  if (!parsed.ok) return { text: parsed.text, isError: true };
  const limit = state.input.subagents ?? 1;
  // Re-checked after each wake: two calls woken by one free slot must not both take it.
  while (state.subagentsRunning >= limit) await condition(() => state.subagentsRunning < limit);
  const workflowId = subagentWorkflowId(state.workflowId, use.id);
  state.countSubagent(1, workflowId);
  let worktree: string | undefined;
  let worktreeGit: WorktreeGit | undefined;
  try {
    if (state.input.subagentWorkspace === 'worktree' && patched(SUBAGENT_WORKTREE_PATCH)) {
      const made = await session.worktree(workflowId);
      if ('error' in made) return { text: made.error, isError: true };
      worktree = made.path;
      if (made.git !== undefined && patched(SUBAGENT_WORKTREE_GIT_PATCH)) worktreeGit = made.git;
    }
    const child = await startChild<AgentRunWorkflow>(AGENT_RUN_WORKFLOW, {
      workflowId,
      args: [childInput(state, parsed.request, share, worktree, worktreeGit)],
      // Cancelling the parent cancels the child at once (its session closes, its tool_uses are paired); ending it ends them too.
      cancellationType: ChildWorkflowCancellationType.TRY_CANCEL,
      parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
      staticSummary: patched(SUBAGENT_SUMMARY_PATCH)
        ? subagentSummary(parsed.request.description)
        : `sub-agent: ${parsed.request.description}`,
    });
    const result = await child.result();
    state.addChildUsage(normalizeUsage(result.usage));
    return where(outcomeOf(workflowId, result), worktree);
  } catch (err) {
    if (isCancellation(err)) throw err;
    const cause = (err as ChildWorkflowFailure).cause;
    const why = cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
    return where({ text: `The sub-agent ${workflowId} failed: ${why}`, isError: true }, worktree);
  } finally {
    state.countSubagent(-1, workflowId);
  }
}

/** `outcome`, followed by where the child worked when that was a git worktree (kept for the person to look at or merge). */
function where(outcome: ToolOutcome, worktree: string | undefined): ToolOutcome {
  if (worktree === undefined) return outcome;
  return { ...outcome, text: `${outcome.text}\n\n(The sub-agent worked in the git worktree ${worktree}; it is kept.)` };
}

/** The tool's result for a child's result: its final text when it completed, else an error naming how it ended. */
function outcomeOf(workflowId: string, result: AgentRunResult): ToolOutcome {
  if (result.status === 'completed') return { text: result.text ?? '', isError: false };
  return { text: `The sub-agent ${workflowId} ended ${result.status}: ${result.error ?? 'no answer'}`, isError: true };
}
