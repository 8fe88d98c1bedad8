/**
 * The text editor tool (`text_editor_20250728`, named `str_replace_based_edit_tool`) as the
 * workflow, the worker and the CLI share it: the client tools a run may offer, the one
 * function that builds a request's `tools` list, the editor's input as Claude sends it,
 * parsed, and the shapes of the `runEdit` activity. Pure and deterministic (workflow code).
 *
 * Source for every rule marked "docs": https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool
 * (read 2026-12-02; what the page does not say is listed as NOT FOUND in docs/text-editor.md).
 */
import type { ServerToolName } from './activities';
import type { RuleToMatch } from './steering';
import type { CheckpointRequest, CheckpointResult } from './checkpoint';
import { SUBAGENT_TOOL } from './subagent';

/** Tool type of the text editor for Claude 4.x and later models (docs, "Model compatibility"). */
export const TEXT_EDITOR_TYPE = 'text_editor_20250728';
/** The name the API requires for {@link TEXT_EDITOR_TYPE} (docs: "named `str_replace_based_edit_tool`"). */
export const TEXT_EDITOR_NAME = 'str_replace_based_edit_tool';

/**
 * `max_characters` of the tool definition: a `view` shows at most this many characters of a
 * file (docs: "truncate the file contents to that length"). MAINTENANCE: part of every
 * request's prefix; changing it changes the tools of every run in flight (their thinking
 * blocks are bound to that prefix), so a new value must come with a new input field.
 */
export const TEXT_EDITOR_MAX_CHARACTERS = 20_000;

/**
 * The Anthropic-schema bash tool (`bash_20250124`, https://platform.claude.com/docs/en/agents-and-tools/tool-use/bash-tool):
 * Claude sends `{command}` or `{restart: true}`; the schema is built into the model.
 */
export const BASH_TOOL = { type: 'bash_20250124', name: 'bash' } as const;

/** The text editor's definition: schema-less, like bash (docs, "Implement the text editor tool"). */
export const TEXT_EDITOR_TOOL = { type: TEXT_EDITOR_TYPE, name: TEXT_EDITOR_NAME, max_characters: TEXT_EDITOR_MAX_CHARACTERS } as const;

/**
 * The server tools a run may offer: web search (https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool)
 * and web fetch (https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool).
 */
export const SERVER_TOOLS: Readonly<Record<ServerToolName, { type: string; name: ServerToolName }>> = {
  web_search: { type: 'web_search_20250305', name: 'web_search' },
  web_fetch: { type: 'web_fetch_20250910', name: 'web_fetch' },
};

/** Client tools a run may offer (`start --tools`): the bash session and the text editor, both run on the session's worker. */
export const CLIENT_TOOLS = ['bash', 'text_editor'] as const;
export type ClientToolName = (typeof CLIENT_TOOLS)[number];

/** What a run offers when its input names no tools: both. (Runs started before the editor existed keep bash alone.) */
export const DEFAULT_CLIENT_TOOLS: readonly ClientToolName[] = CLIENT_TOOLS;

/** One entry of a request's `tools`: an Anthropic-schema or server tool (`type`), or a custom tool (`description`, `input_schema`). */
export type ToolDefinition =
  | { type: string; name: string; max_characters?: number }
  | { name: string; description: string; input_schema: Readonly<Record<string, unknown>> };

/**
 * The request's `tools`: the client tools in the fixed order bash, text editor (whatever order
 * the input named them in), then the server tools in the order given. The one builder of the
 * list: every request and token count of a run gets the same bytes from the same input, so the
 * prefix (system, tools, earlier blocks) never changes after start.
 * @param clientTools the run's client tools; absent: bash alone (runs from before `tools`)
 * @param subagent offer the custom `subagent` tool (src/contract/subagent.ts) after the client tools
 */
export function requestTools(
  clientTools: readonly ClientToolName[] | undefined,
  serverTools: readonly ServerToolName[] = [],
  subagent = false,
): ToolDefinition[] {
  const client = clientTools ?? ['bash'];
  return [
    ...(client.includes('bash') ? [BASH_TOOL] : []),
    ...(client.includes('text_editor') ? [TEXT_EDITOR_TOOL] : []),
    ...(subagent ? [SUBAGENT_TOOL] : []),
    ...serverTools.map((name) => SERVER_TOOLS[name]),
  ];
}

/** An editor command, parsed (docs, "Text editor tool commands"; `undo_edit` is not part of 20250728). */
export type EditRequest =
  | { command: 'view'; path: string; viewRange?: [number, number] }
  | { command: 'create'; path: string; fileText: string }
  | { command: 'str_replace'; path: string; oldStr: string; newStr: string }
  | { command: 'insert'; path: string; insertLine: number; insertText: string };

/** Commands that change a file (everything but `view`). */
export type EditCommand = Exclude<EditRequest['command'], 'view'>;

function invalid(text: string): { ok: false; text: string } {
  return { ok: false, text: `Error: ${text}` };
}

/**
 * Checks a `str_replace_based_edit_tool` input. Parameters as the docs list them: `view`
 * (`path`, optional `view_range` of two integers, 1-indexed, end -1 for the end of the file),
 * `str_replace` (`path`, `old_str`, `new_str`), `create` (`path`, `file_text`), `insert`
 * (`path`, `insert_line`, `insert_text`). The English page names the inserted text
 * `insert_text`; older copies of it said `new_str`, which is taken when `insert_text` is absent.
 * `new_str` of `str_replace` may be omitted (an empty replacement). Anything else is an
 * `is_error` result with what was wrong, never a failed activity (C04).
 */
export function parseEditInput(input: unknown): { ok: true; edit: EditRequest } | { ok: false; text: string } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return invalid('the tool input must be an object');
  const o = input as Record<string, unknown>;
  const command = o.command;
  if (typeof o.path !== 'string' || o.path === '') return invalid('"path" must be a non-empty string');
  const p = o.path;
  if (p.includes('\0')) return invalid('"path" contains a NUL character');
  switch (command) {
    case 'view': {
      const range = o.view_range;
      if (range === undefined || range === null) return { ok: true, edit: { command, path: p } };
      if (!Array.isArray(range) || range.length !== 2 || !range.every((n) => Number.isInteger(n))) {
        return invalid('"view_range" must be an array of two integers [start_line, end_line] (end_line -1: to the end of the file)');
      }
      return { ok: true, edit: { command, path: p, viewRange: [range[0] as number, range[1] as number] } };
    }
    case 'create':
      if (typeof o.file_text !== 'string') return invalid('"file_text" must be a string (the content of the new file)');
      return { ok: true, edit: { command, path: p, fileText: o.file_text } };
    case 'str_replace':
      if (typeof o.old_str !== 'string' || o.old_str === '')
        return invalid('"old_str" must be a non-empty string (the exact text to replace)');
      if (o.new_str !== undefined && typeof o.new_str !== 'string') return invalid('"new_str" must be a string');
      return { ok: true, edit: { command, path: p, oldStr: o.old_str, newStr: o.new_str ?? '' } };
    case 'insert': {
      const text = o.insert_text !== undefined ? o.insert_text : o.new_str;
      if (!Number.isInteger(o.insert_line) || (o.insert_line as number) < 0) {
        return invalid('"insert_line" must be an integer >= 0 (the line after which to insert; 0 for the beginning of the file)');
      }
      if (typeof text !== 'string') return invalid('"insert_text" must be a string (the text to insert)');
      return { ok: true, edit: { command, path: p, insertLine: o.insert_line as number, insertText: text } };
    }
    case 'undo_edit':
      return invalid('undo_edit is not supported by text_editor_20250728 (the Claude 4 text editor has no undo)');
    default:
      return invalid(
        `unknown command ${JSON.stringify(command)}: the text editor takes "view", "create", "str_replace" or "insert"`.slice(0, 300),
      );
  }
}

/**
 * The words an approval rule for an edit is matched against: the tool's name, the command
 * and the absolute path (`str_replace_based_edit_tool str_replace /ws/src/a.ts`). `--always`
 * approves later edits of the same command and file; `--always-prefix
 * "str_replace_based_edit_tool"` every edit. Bash commands never match a rule that starts
 * with the editor's name (src/policy `matchRule`).
 */
export function editRuleSubject(command: EditRequest['command'], absPath: string): string {
  return `${TEXT_EDITOR_NAME} ${command} ${absPath}`;
}

/** The words of {@link editRuleSubject}: the name, the command, the path (one word, spaces and all). */
export function editRuleWords(command: EditRequest['command'], absPath: string): readonly [string, string, string] {
  return [TEXT_EDITOR_NAME, command, absPath];
}

/** Input of the `runEdit` activity (on the session's worker queue). */
export interface RunEditInput {
  sessionId: string;
  workflowId: string;
  toolUseId: string;
  edit: EditRequest;
  /**
   * `policy`: a `view` (inside the workspace: any other path is refused) runs; a change runs
   * when one of `rules` matches, else nothing is written and the answer carries the diff to
   * approve. `rules` (approval `always`): views too need a rule or a person. Absent: apply
   * (mode `auto`, or approved: then `approvedSha256` is set).
   */
  autoApprove?: 'policy' | 'rules';
  /** The run's approval rules (matched on the worker against {@link editRuleSubject}). */
  rules?: RuleToMatch[];
  /** The SHA-256 of the review text a person approved: the edit is applied only when the one made now is that one. */
  approvedSha256?: string;
  /** Take a checkpoint of the workspace first when the edit changes a file (every command but `view`). */
  checkpoint?: CheckpointRequest;
}

/** Output of `runEdit`. */
export interface RunEditOutput {
  /** What Claude is told (the docs' texts where it gives them), ending with {@link notes}. */
  text: string;
  /**
   * The worker's notes at the end of `text` (`[agent-jobs: ...]`: a memory kill, the git audit's
   * findings), in order; the run publishes them apart from the file's text (the transcript
   * query's `notes`). Absent from workers before it, and while the edit waits for a person.
   */
  notes?: string[];
  isError: boolean;
  /**
   * Set when nothing was done because a person must approve: why, what the person reviews
   * (the change as a unified diff; for a `view`, the line {@link editRuleSubject} gives) and
   * the words rules are matched against.
   */
  needsApproval?: { reason: string; review: string; ruleSubject: string };
  /** Whether a file was written. */
  applied: boolean;
  /** Id of the approval rule that let the change be applied unasked. */
  approvedByRule?: number;
  durationMs: number;
  /** The checkpoint taken before the change was written (asked with `checkpoint`), or why none was. */
  checkpoint?: CheckpointResult;
}
