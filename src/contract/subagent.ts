/**
 * The `subagent` tool (docs/subagents.md): a custom client tool with which Claude hands a task
 * to a child `agentRun`. Its definition, its input as Claude sends it, parsed, and the child's
 * workflow id. Pure and deterministic (workflow code).
 *
 * Source for the definition's shape (`name`, `description`, `input_schema` a JSON Schema
 * object): https://platform.claude.com/docs/en/agents-and-tools/tool-use/define-tools
 */

/** The tool's name (the API's pattern `^[a-zA-Z0-9_-]{1,128}$`). */
export const SUBAGENT_TOOL_NAME = 'subagent';

/** Largest `subagents` (sub-agents at once) a run may ask for: 16 (each holds a bash session on some worker). */
export const MAX_SUBAGENTS = 16;

/** Longest `description` of a sub-agent, in characters: 200 (it is a label for people: the child's summary in the UI). */
export const MAX_SUBAGENT_DESCRIPTION_CHARS = 200;

/**
 * The custom tool's definition. MAINTENANCE: part of every request's prefix of a run that
 * offers it; changing the text changes the tools of every run in flight.
 */
export const SUBAGENT_TOOL = {
  name: SUBAGENT_TOOL_NAME,
  description:
    "Hand a self-contained task to a sub-agent: another agent with its own bash session in this run's workspace, " +
    'under the same approval policy and budgets. It sees only the prompt you give it, and its final answer comes back ' +
    "as this tool's result. Several subagent calls in one answer run at the same time.",
  input_schema: {
    type: 'object',
    properties: {
      description: { type: 'string', description: 'A short (3-8 words) label of the task, shown to people.' },
      prompt: { type: 'string', description: 'The whole task for the sub-agent, with everything it needs to know.' },
    },
    required: ['description', 'prompt'],
  },
} as const;

/**
 * What a sub-agent's sandbox binds for git to work in its worktree (docs/subagents.md,
 * "Workspaces"): both absolute, symlinks resolved, as `git rev-parse --path-format=absolute`
 * gives them in the worktree.
 */
export interface WorktreeGit {
  /** The repository's common dir (`<repository>/.git`): shown read-only, but for its `objects/` (read-write). */
  commonDir: string;
  /** The worktree's own gitdir (`<common dir>/worktrees/<name>`: its HEAD, index, logs), read-write. */
  gitDir: string;
}

/** A `subagent` call, parsed. */
export interface SubagentRequest {
  description: string;
  prompt: string;
}

/**
 * Parses a `subagent` tool_use input.
 * @returns the request, or the text of the `is_error` result that says what is wrong
 */
export function parseSubagentInput(input: unknown): { ok: true; request: SubagentRequest } | { ok: false; text: string } {
  const o = typeof input === 'object' && input !== null ? (input as Record<string, unknown>) : {};
  const { description, prompt } = o;
  if (typeof prompt !== 'string' || prompt.trim() === '')
    return { ok: false, text: 'Error: the subagent tool needs "prompt", a non-empty string: the task for the sub-agent.' };
  if (typeof description !== 'string' || description.trim() === '')
    return { ok: false, text: 'Error: the subagent tool needs "description", a short non-empty string.' };
  if (description.length > MAX_SUBAGENT_DESCRIPTION_CHARS)
    return { ok: false, text: `Error: "description" is a short label: at most ${MAX_SUBAGENT_DESCRIPTION_CHARS} characters.` };
  return { ok: true, request: { description: description.trim(), prompt } };
}

/** The child's workflow id: the parent's id and the `tool_use` id, so it is the same on every replay and names its parent. */
export function subagentWorkflowId(parentId: string, toolUseId: string): string {
  return `${parentId}.subagent.${toolUseId}`;
}

/**
 * Folder name of a run's default workspace (under the worker's workspace root) for a workflow
 * id: anything outside `[A-Za-z0-9._-]` becomes `_`. A sub-agent's `workdir` is its parent's
 * folder, so both resolve to the same directory on any worker.
 */
export function workspaceFolderName(workflowId: string): string {
  const safe = workflowId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return safe.length > 0 ? safe : '_';
}
