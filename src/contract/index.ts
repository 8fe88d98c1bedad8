/**
 * The contract: every shape the CLI, the workflow and the activities share,
 * and the names they must agree on. It imports nothing of theirs; they all
 * import it (docs/architecture.md, "Parts and arrows"). Split by what each
 * file describes, re-exported here by name:
 * - ./messages: the Messages API shapes (content blocks, messages, usage);
 * - ./run: a run's input, statuses, result and approval shapes;
 * - ./activities: the activities' inputs, outputs and failure type names;
 * - ./views, ./handlers: the query answers, the signal and query definitions;
 * - ./steering, ./checkpoint: the Updates and their shapes;
 * - ./conversation: the conversation carried between calls and runs.
 *
 * Deterministic (imported by workflow code).
 */

export {
  NO_USAGE,
  addUsage,
  isText,
  isToolResult,
  isToolUse,
  normalizeUsage,
  totalTokens,
  type ContentBlock,
  type Message,
  type OtherBlock,
  type TextBlock,
  type ToolResultBlock,
  type ToolUseBlock,
  type Usage,
} from './messages';
export {
  APPROVAL_MODES,
  DEFAULT_APPROVAL_MODE,
  FINAL_STATUSES,
  OPEN_STATUSES,
  RUN_STATUSES,
  THINKING_DISPLAYS,
  WAITING_STATUSES,
  type AgentRunInput,
  type AgentRunResult,
  type AppliedDecision,
  type ApprovalDecision,
  type ApprovalMode,
  type CarriedState,
  type CheckpointSettings,
  type FinalStatus,
  type ForkStart,
  type PendingApproval,
  type PendingEdit,
  type RunStatus,
  type SessionRef,
  type SubagentWorkspace,
  type ThinkingDisplay,
} from './run';
export {
  COMMAND_FAILED,
  ClaudeFailureType,
  INVALID_INPUT,
  SESSION_NOT_FOUND,
  WORKER_FULL,
  WORKER_SHUTTING_DOWN,
  type CallClaudeInput,
  type CallClaudeOutput,
  type CommandOutcomeInput,
  type CommandOutcomeOutput,
  type CreateWorktreeInput,
  type CreateWorktreeOutput,
  type OpenSessionInput,
  type OpenSessionOutput,
  type RequestContext,
  type RequestReport,
  type RestartSessionOutput,
  type RunCommandInput,
  type RunCommandOutput,
  type ServerToolName,
  type SessionInput,
  type WorkerLivenessInput,
  type WorkerLivenessOutput,
} from './activities';
export { type BudgetView, type StatusView, type TranscriptView } from './views';
export { approveSignal, sessionClosingSignal, statusQuery, transcriptQuery, type SessionClosing } from './handlers';
export {
  APPROVAL_TIMEOUT_ACTIONS,
  BUDGET_KINDS,
  CLI_DEFAULT_ON_BUDGET,
  DEFAULT_APPROVAL_TIMEOUT_ACTION,
  DEFAULT_ON_BUDGET,
  MAX_BY_CHARS,
  MAX_EXTEND,
  MAX_MESSAGE_CHARS,
  MAX_QUEUED_CHARS,
  MAX_QUEUED_MESSAGES,
  MAX_RULES,
  ON_BUDGET_ACTIONS,
  decideUpdate,
  endUpdate,
  extendUpdate,
  pauseUpdate,
  removeRuleUpdate,
  resumeUpdate,
  sayUpdate,
  type ApprovalRule,
  type ApprovalTimeoutAction,
  type BudgetKind,
  type BudgetLimits,
  type ByRequest,
  type DecideAnswer,
  type DecideRequest,
  type DecisionKind,
  type ExtendAnswer,
  type ExtendRequest,
  type OnBudget,
  type PauseReason,
  type PauseState,
  type QueuedMessage,
  type RemoveRuleRequest,
  type RuleToMatch,
  type SayAnswer,
  type SayRequest,
  type SteerAnswer,
} from './steering';
export {
  GENESIS_DIGEST,
  applyDelta,
  emptyConversation,
  foldCallInputs,
  nextDigest,
  type CarriedConversation,
  type Conversation,
  type ConversationPart,
  type TranscriptDelta,
} from './conversation';
export {
  DEFAULT_CHECKPOINT_MAX_BYTES,
  rewindUpdate,
  type CheckpointRecord,
  type CheckpointRequest,
  type CheckpointResult,
  type RestoreRequest,
  type RewindAnswer,
  type RewindRecord,
  type RewindRequest,
} from './checkpoint';
