/**
 * The `"api": "today"` mode of the scripted server: today's Claude API, per
 * model, as strictly as the platform docs describe it (fact sheet with
 * sources: `docs/claude-api.md`; reference of the mode: `docs/scripted-server.md`).
 * Legacy scripts never reach this module.
 *
 * A request goes through {@link prepareToday} (model, options, tools,
 * beta headers, what the API ignores before a compaction block, the thinking
 * blocks sent back, server-side context editing, the compaction trigger),
 * then the server picks the step's script entry as usual and
 * {@link buildTodayMessage} turns it into today's answer (thinking blocks,
 * text between tool calls, a compaction block, bound signatures, usage).
 *
 * Rules and where they come from (all pages read 2026-12-02):
 *
 * - Unknown model → 404 `not_found_error` `model: <id>`; catalogue in
 *   `models.ts` (https://platform.claude.com/docs/en/api/errors).
 * - `max_tokens` above the model's max output → 400; context window per model
 *   (the model overview pages).
 * - `thinking.type` per model, `thinking.display`, `output_config.effort`
 *   (https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting,
 *   https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5).
 * - Forced `tool_choice` → 400 on Opus 5.5, Sonnet 5.5, Fable 5.1 (same page).
 * - Thinking blocks sent back: model check, prefix check, `drop_block`,
 *   `input_transformations`
 *   (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking and
 *   its sub-pages `prefix-checks`, `fix-bound-to-a-different-conversation`).
 * - Compaction (`compact_20260112`, header `compact-2026-01-12`)
 *   (https://platform.claude.com/docs/en/build-with-claude/compaction-threshold).
 * - Context editing (`clear_tool_uses_20250919`, `clear_thinking_20251015`,
 *   header `context-management-2025-06-27`)
 *   (https://platform.claude.com/docs/en/build-with-claude/context-editing).
 * - Tools: bash, text editor, web search / fetch server tools, custom tools
 *   (the tool pages; versions from the installed SDK's tool union).
 */
import type { IncomingHttpHeaders } from 'node:http';
import { EFFORT_LEVELS, canRead, findModel, type EffortLevel, type ModelSpec } from './models';
import type { MessagesRequest } from './request';
import { estimateTokens, type CompletedMessage } from './responses';
import type { ParsedMessageEntry } from './script';
import { MIN_THINKING_BUDGET, prefixIndex, signBoundBlock, signCompaction, verifyBoundBlock, verifyCompaction } from './thinking';
import { measure, tokensForBytes, type CacheUsage, type Measured, type PromptCache } from './tokens';

/** Beta header of threshold compaction (https://platform.claude.com/docs/en/build-with-claude/compaction-threshold). */
export const BETA_COMPACTION = 'compact-2026-01-12';
/** Beta header of context editing (https://platform.claude.com/docs/en/build-with-claude/context-editing). */
export const BETA_CONTEXT_MANAGEMENT = 'context-management-2025-06-27';
/** Beta header of `thinking.block_binding` and `input_transformations` (…/preserved-thinking/fix-bound-to-a-different-conversation). */
export const BETA_THINKING_BINDING = 'thinking-binding-controls-2026-08-01';
/** Beta header of `thinking.display: "updates"` (https://platform.claude.com/docs/en/models/opus-5-5/migration-guide#text-between-tool-calls). */
export const BETA_DISPLAY_UPDATES = 'thinking-display-updates-2026-08-18';
/** Default compaction trigger, input tokens (compaction-threshold page). */
export const DEFAULT_COMPACTION_TRIGGER = 150_000;
/** Smallest compaction trigger accepted, input tokens ("`value` must be at least 50,000 tokens", https://platform.claude.com/docs/en/build-with-claude/compaction). */
export const MIN_COMPACTION_TRIGGER = 50_000;
/** Default `clear_tool_uses_20250919` trigger, input tokens, and tool uses kept (context-editing page). */
export const DEFAULT_CLEAR_TOOL_USES_TRIGGER = 100_000;
export const DEFAULT_CLEAR_TOOL_USES_KEEP = 3;
/** The text a cleared tool result is replaced with (the docs say "placeholder text" without giving it). */
export const CLEARED_TOOL_RESULT = '[tool result cleared by context editing]';

/** The Anthropic-schema tool types accepted, with the `name` each requires (tool pages; versions as in the SDK's tool union). */
export const ANTHROPIC_TOOL_TYPES: Readonly<Record<string, string>> = {
  bash_20250124: 'bash',
  text_editor_20250728: 'str_replace_based_edit_tool',
  web_search_20250305: 'web_search',
  web_search_20260209: 'web_search',
  web_search_20260318: 'web_search',
  web_fetch_20250910: 'web_fetch',
  web_fetch_20260209: 'web_fetch',
  web_fetch_20260309: 'web_fetch',
  web_fetch_20260318: 'web_fetch',
};

/**
 * Fields the client tool definitions take: bash (https://platform.claude.com/docs/en/agents-and-tools/tool-use/bash-tool)
 * and the text editor, whose only option is `max_characters`
 * (https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool); both schema-less, so no `input_schema`.
 * `cache_control`, `defer_loading`, `allowed_callers` and `strict` as in the installed SDK's types.
 */
const CLIENT_TOOL_FIELDS: Readonly<Record<string, readonly string[]>> = {
  bash_20250124: ['type', 'name', 'cache_control', 'defer_loading', 'allowed_callers', 'strict', 'input_examples'],
  text_editor_20250728: ['type', 'name', 'max_characters', 'cache_control', 'defer_loading', 'allowed_callers', 'strict', 'input_examples'],
};

/** Server tools (run by the API, counted in `usage.server_tool_use`). */
const SERVER_TOOL_NAMES = new Set(['web_search', 'web_fetch']);

/** A 4xx the API would answer. */
export interface TodayProblem {
  status: 400 | 404;
  message: string;
}

type Msg = { role: string; content: unknown };
type Block = Record<string, unknown>;
type ThinkingType = 'adaptive' | 'enabled' | 'disabled' | 'between_tools';
type Display = 'summarized' | 'omitted' | 'updates';

/** One `input_transformations` entry (shape from the SDK's `BetaInputTransformation`). */
export interface InputTransformation {
  type: 'thinking_dropped' | 'thinking_mismatch_allowed';
  path: string;
  reason: 'model_binding_mismatch' | 'prefix_binding_mismatch';
}

/** One `context_management.applied_edits` entry. */
export type AppliedEdit =
  | { type: 'clear_tool_uses_20250919'; cleared_tool_uses: number; cleared_input_tokens: number }
  | { type: 'clear_thinking_20251015'; cleared_thinking_turns: number; cleared_input_tokens: number };

/** What the API keeps of a transcript that holds a compaction block. */
interface Effective {
  /** The messages from the last compaction block on (that message starting at the block). */
  messages: Msg[];
  /** Index, in the request as sent, of `messages[0]`. */
  offset: number;
  /** Index, in that message as sent, of its first kept block. */
  blockOffset: number;
  /** The seal of the compaction block the transcript starts from, if any. */
  seal: CompactionSeal | undefined;
}

/** What a compaction block the server made carries in `encrypted_content`. */
interface CompactionSeal {
  /** The step whose answer held the compaction block. */
  step: number;
  /** The conversation key at that step. */
  conversation: string;
  /** Messages the summary covers. */
  covered: number;
}

/** A request prepared for the `today` mode; see {@link prepareToday}. */
export interface TodayPlan {
  spec: ModelSpec;
  betas: Set<string>;
  display: Display;
  /** The request's (or the default) `thinking.type`. */
  thinkingType: ThinkingType;
  /** Whether answers open with a thinking block. */
  upFront: boolean;
  /** Whether thinking blocks appear at all (up front, between tool calls, scripted). */
  thinkingOn: boolean;
  /** The transcript as sent, from the last compaction block on (what new signatures bind to). */
  effective: Effective;
  /** The input the model "sees": thinking blocks dropped, context edits applied. */
  input: { system?: unknown; tools?: unknown; messages: Msg[] };
  /** `input` measured with the model (window, usage, count_tokens). */
  measured: Measured;
  /** Tokens before context editing (count_tokens' `original_input_tokens`). */
  originalInputTokens: number;
  /** Reported with the binding beta header only. */
  inputTransformations: InputTransformation[] | undefined;
  /** Reported when the request has context-editing edits. */
  appliedEdits: AppliedEdit[] | undefined;
  /** The compaction edit, when configured. */
  compaction: { trigger: number; pause: boolean; instructions: string | undefined } | undefined;
  /** Whether this request's input reached the compaction trigger. */
  compactNow: boolean;
  /** Step and conversation carried by the compaction block the transcript starts from (a client may prune what came before it). */
  step: number | undefined;
  conversation: string | undefined;
}

/** The `anthropic-beta` header's values. */
export function betasOf(headers: IncomingHttpHeaders): Set<string> {
  const raw = headers['anthropic-beta'];
  const text = Array.isArray(raw) ? raw.join(',') : (raw ?? '');
  return new Set(
    text
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== ''),
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function blocksOf(content: unknown): Block[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return Array.isArray(content) ? content.filter(isObject) : [];
}

const bad = (message: string): TodayProblem => ({ status: 400, message });

/** The 400 text for a `thinking.type` the model rejects; the documented wording for Opus 5.5 / Fable 5.1, the same form elsewhere. */
function unsupportedThinking(type: string, spec: ModelSpec): string {
  if (spec.thinking === 'budget') {
    return `"thinking.type.${type}" is not supported for this model. Use "thinking.type.enabled" with "thinking.budget_tokens" to control thinking behavior.`;
  }
  return `"thinking.type.${type}" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.`;
}

/** Which `thinking.type` values each mode accepts (thinking-troubleshooting page). */
const ACCEPTED_THINKING: Readonly<Record<ModelSpec['thinking'], readonly ThinkingType[]>> = {
  'adaptive-only': ['adaptive'],
  adaptive: ['adaptive', 'disabled'],
  'adaptive-between-tools': ['adaptive', 'between_tools'],
  'adaptive-disable-any': ['adaptive', 'disabled'],
  budget: ['enabled', 'disabled'],
};

interface Options {
  thinkingType: ThinkingType;
  display: Display;
  dropBlock: boolean;
  compaction: TodayPlan['compaction'];
  edits: Block[];
}

/** Checks the request options against the model; returns the API's 400 or the parsed options. */
function checkOptions(
  body: MessagesRequest,
  betas: Set<string>,
  kind: 'messages' | 'count_tokens',
  spec: ModelSpec,
): TodayProblem | Options {
  if (kind === 'messages' && body.max_tokens > spec.maxOutput) {
    return bad(
      `max_tokens: ${body.max_tokens} > ${spec.maxOutput}, which is the maximum allowed number of output tokens for ${body.model}`,
    );
  }

  // output_config.effort (https://platform.claude.com/docs/en/build-with-claude/effort)
  const outputConfig = body['output_config'];
  if (outputConfig !== undefined && outputConfig !== null && !isObject(outputConfig)) {
    return bad('output_config: Input should be an object');
  }
  const effortRaw = isObject(outputConfig) ? outputConfig['effort'] : undefined;
  let effort: EffortLevel | undefined = spec.defaultEffort;
  if (effortRaw !== undefined && effortRaw !== null) {
    if (typeof effortRaw !== 'string' || !(EFFORT_LEVELS as readonly string[]).includes(effortRaw)) {
      return bad(`output_config.effort: Input should be ${EFFORT_LEVELS.map((l) => `'${l}'`).join(', ')}`);
    }
    if (!spec.effortLevels.includes(effortRaw as EffortLevel)) {
      return bad(`output_config.effort: effort is not supported for ${body.model}`);
    }
    effort = effortRaw as EffortLevel;
  }

  // thinking
  const thinking = body.thinking;
  let thinkingType: ThinkingType = spec.thinking === 'budget' ? 'disabled' : 'adaptive';
  let display: Display = spec.thinking === 'budget' ? 'summarized' : 'omitted';
  let dropBlock = false;
  if (thinking !== undefined && thinking !== null) {
    if (!isObject(thinking)) return bad('thinking: Input should be an object');
    const type = thinking['type'];
    const all: ThinkingType[] = ['adaptive', 'between_tools', 'disabled', 'enabled'];
    if (typeof type !== 'string' || !(all as string[]).includes(type)) {
      return bad(
        `thinking: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: ${all.map((t) => `'${t}'`).join(', ')}`,
      );
    }
    if (!ACCEPTED_THINKING[spec.thinking].includes(type as ThinkingType)) return bad(unsupportedThinking(type, spec));
    thinkingType = type as ThinkingType;
    if (thinkingType === 'disabled' && spec.thinking === 'adaptive' && (effort === 'xhigh' || effort === 'max')) {
      // https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5: disabled only at effort high or below.
      return bad(`"thinking.type.disabled" is only supported at "output_config.effort" "high" or lower on this model`);
    }
    if (thinkingType === 'enabled') {
      const budget = thinking['budget_tokens'];
      if (typeof budget !== 'number' || !Number.isInteger(budget))
        return bad('thinking.enabled.budget_tokens: Input should be a valid integer');
      if (budget < MIN_THINKING_BUDGET) {
        return bad(`thinking.enabled.budget_tokens: Input should be greater than or equal to ${MIN_THINKING_BUDGET}`);
      }
      if (kind === 'messages' && budget >= body.max_tokens) return bad('`max_tokens` must be greater than `thinking.budget_tokens`');
    }
    const shown = thinking['display'];
    if (shown !== undefined && shown !== null) {
      if (shown !== 'summarized' && shown !== 'omitted' && shown !== 'updates') {
        return bad(`thinking.${type}.display: Input should be 'summarized', 'omitted' or 'updates'`);
      }
      if (shown === 'updates' && !betas.has(BETA_DISPLAY_UPDATES)) {
        return bad(`thinking.${type}.display: "updates" requires the beta header "anthropic-beta: ${BETA_DISPLAY_UPDATES}"`);
      }
      display = shown;
    }
    const binding = thinking['block_binding'];
    if (binding !== undefined && binding !== null) {
      if (!isObject(binding)) return bad(`thinking.${type}.block_binding: Input should be an object`);
      const behavior = binding['prefix_mismatch_behavior'];
      if (behavior !== undefined && behavior !== null) {
        if (behavior !== 'error' && behavior !== 'drop_block') {
          return bad(`thinking.${type}.block_binding.prefix_mismatch_behavior: Input should be 'error' or 'drop_block'`);
        }
        if (!betas.has(BETA_THINKING_BINDING)) {
          return bad(`thinking.${type}.block_binding: this field requires the beta header "anthropic-beta: ${BETA_THINKING_BINDING}"`);
        }
        dropBlock = behavior === 'drop_block';
      }
    }
  }
  const thinkingOn = thinkingType !== 'disabled';
  if (spec.thinking !== 'budget') {
    // Sampling parameters: non-default values are a 400 on the 5.x models (https://platform.claude.com/docs/en/models/sonnet-5/overview).
    for (const name of ['temperature', 'top_p', 'top_k'] as const) {
      const value = body[name];
      if (value !== undefined && value !== null && !(name === 'temperature' && value === 1)) {
        return bad(`${name}: non-default sampling parameters are not supported for ${body.model}`);
      }
    }
  } else if (thinkingOn && body.temperature !== undefined && body.temperature !== 1) {
    return bad('`temperature` may only be set to 1 when thinking is enabled');
  }

  const toolProblem = checkTools(body.tools, body.model);
  if (toolProblem) return toolProblem;

  // tool_choice
  const choice = body['tool_choice'];
  if (choice !== undefined && choice !== null) {
    if (!isObject(choice) || !['auto', 'any', 'tool', 'none'].includes(String(choice['type']))) {
      return bad(
        `tool_choice: Input tag '${String(isObject(choice) ? choice['type'] : choice)}' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'`,
      );
    }
    const forced = choice['type'] === 'any' || choice['type'] === 'tool';
    // Documented text, messages and count_tokens alike (https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5#forced-tool-use-is-not-supported).
    if (forced && spec.rejectsForcedToolChoice) return bad('tool_choice: type "tool" and "any" are not supported for this model.');
    if (forced && spec.thinking === 'budget' && thinkingOn) return bad('Thinking may not be enabled when tool_choice forces tool use.');
    if (choice['type'] === 'tool') {
      const names = (Array.isArray(body.tools) ? body.tools : []).map((t) => (isObject(t) ? t['name'] : undefined));
      if (!names.includes(choice['name'])) return bad(`tool_choice.tool.name: no tool named ${JSON.stringify(choice['name'])} in tools`);
    }
  }

  // context_management
  const cm = body['context_management'];
  let compaction: Options['compaction'];
  const edits: Block[] = [];
  if (cm !== undefined && cm !== null) {
    if (!isObject(cm)) return bad('context_management: Input should be an object');
    const list = cm['edits'] ?? [];
    if (!Array.isArray(list)) return bad('context_management.edits: Input should be a valid list');
    let sawToolUses = false;
    for (const [k, edit] of list.entries()) {
      const path = `context_management.edits.${k}`;
      if (!isObject(edit)) return bad(`${path}: Input should be an object`);
      const type = edit['type'];
      if (type === 'compact_20260112') {
        if (!betas.has(BETA_COMPACTION)) {
          return bad(`${path}: compact_20260112 requires the beta header "anthropic-beta: ${BETA_COMPACTION}"`);
        }
        if (!spec.compaction) return bad(`${path}: compact_20260112 is not supported for ${body.model}`);
        if (compaction) return bad(`${path}: only one compact_20260112 edit is allowed`);
        let trigger = DEFAULT_COMPACTION_TRIGGER;
        const t = edit['trigger'];
        if (t !== undefined && t !== null) {
          if (!isObject(t) || t['type'] !== 'input_tokens') return bad(`${path}.trigger.type: Input should be 'input_tokens'`);
          const value = t['value'];
          if (typeof value !== 'number' || !Number.isInteger(value)) return bad(`${path}.trigger.value: Input should be a valid integer`);
          if (value < MIN_COMPACTION_TRIGGER) {
            return bad(`${path}.trigger.value: Input should be greater than or equal to ${MIN_COMPACTION_TRIGGER}`);
          }
          trigger = value;
        }
        const pause = edit['pause_after_compaction'];
        if (pause !== undefined && typeof pause !== 'boolean')
          return bad(`${path}.pause_after_compaction: Input should be a valid boolean`);
        const instructions = edit['instructions'];
        if (instructions !== undefined && instructions !== null && typeof instructions !== 'string') {
          return bad(`${path}.instructions: Input should be a valid string`);
        }
        compaction = {
          trigger,
          pause: pause === true,
          instructions: typeof instructions === 'string' && instructions.trim() !== '' ? instructions : undefined,
        };
      } else if (type === 'clear_tool_uses_20250919' || type === 'clear_thinking_20251015') {
        if (!betas.has(BETA_CONTEXT_MANAGEMENT)) {
          return bad(`${path}: ${type} requires the beta header "anthropic-beta: ${BETA_CONTEXT_MANAGEMENT}"`);
        }
        if (type === 'clear_thinking_20251015') {
          if (sawToolUses) return bad(`${path}: clear_thinking_20251015 must come before clear_tool_uses_20250919 in edits`);
          if (!thinkingOn) return bad(`${path}: clear_thinking_20251015 requires thinking to be on`);
          const keep = edit['keep'];
          const keepOk =
            keep === undefined ||
            keep === 'all' ||
            (isObject(keep) && keep['type'] === 'all') ||
            (isObject(keep) && keep['type'] === 'thinking_turns' && Number.isInteger(keep['value']) && (keep['value'] as number) >= 1);
          if (!keepOk) return bad(`${path}.keep: Input should be {"type": "thinking_turns", "value": N ≥ 1} or "all"`);
        } else {
          sawToolUses = true;
          const t = edit['trigger'];
          if (
            t !== undefined &&
            t !== null &&
            !(isObject(t) && (t['type'] === 'input_tokens' || t['type'] === 'tool_uses') && Number.isInteger(t['value']))
          ) {
            return bad(`${path}.trigger: Input should be {"type": "input_tokens" | "tool_uses", "value": N}`);
          }
          const keep = edit['keep'];
          if (keep !== undefined && keep !== null && !(isObject(keep) && keep['type'] === 'tool_uses' && Number.isInteger(keep['value']))) {
            return bad(`${path}.keep: Input should be {"type": "tool_uses", "value": N}`);
          }
        }
        edits.push(edit);
      } else {
        return bad(
          `${path}: Input tag '${String(type)}' found using 'type' does not match any of the expected tags: 'clear_tool_uses_20250919', 'clear_thinking_20251015', 'compact_20260112'`,
        );
      }
    }
  }
  return { thinkingType, display, dropBlock, compaction, edits };
}

/** The tool definitions: Anthropic-schema tools by type and required name, custom tools with an object `input_schema`, unique names. */
function checkTools(tools: unknown, model: string): TodayProblem | undefined {
  if (!Array.isArray(tools)) return undefined;
  const names = new Set<string>();
  const accepted = [...Object.keys(ANTHROPIC_TOOL_TYPES), 'custom'].join(', ');
  for (const [k, tool] of tools.entries()) {
    if (!isObject(tool)) return bad(`tools.${k}: Input should be an object`);
    const type = tool['type'];
    const name = tool['name'];
    if (type === undefined || type === null || type === 'custom') {
      if (typeof name !== 'string' || !/^[a-zA-Z0-9_-]{1,128}$/.test(name)) {
        return bad(`tools.${k}.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'`);
      }
      // `description` is optional but, when sent, a string (define-tools: "a detailed plaintext description").
      const description = tool['description'];
      if (description !== undefined && typeof description !== 'string')
        return bad(`tools.${k}.custom.description: Input should be a valid string`);
      const schema = tool['input_schema'];
      if (!isObject(schema)) return bad(`tools.${k}.custom.input_schema: Field required`);
      if (schema['type'] !== 'object') return bad(`tools.${k}.custom.input_schema.type: Input should be 'object'`);
    } else {
      const required = typeof type === 'string' ? ANTHROPIC_TOOL_TYPES[type] : undefined;
      if (typeof type !== 'string' || required === undefined) {
        // The form of the documented message for computer_20251124 on Opus 5.5 (whats-new-opus-5-5): the type, then what is accepted.
        const shown = typeof type === 'string' ? type : JSON.stringify(type);
        return bad(`'${model}' does not support tool types: ${shown}. Did you mean one of: ${accepted}?`);
      }
      if (name !== required) return bad(`tools.${k}.${type}.name: Input should be '${required}'`);
      // The client tools' schemas are closed (SDK `BetaToolBash20250124`, `BetaToolTextEditor20250728`): any other field is refused.
      const allowed = CLIENT_TOOL_FIELDS[type];
      const extra = allowed ? Object.keys(tool).find((f) => !allowed.includes(f)) : undefined;
      if (extra !== undefined) return bad(`tools.${k}.${type}.${extra}: Extra inputs are not permitted`);
      const max = tool['max_characters'];
      if (type === 'text_editor_20250728' && max !== undefined && max !== null && !(Number.isInteger(max) && (max as number) >= 1)) {
        return bad(`tools.${k}.${type}.max_characters: Input should be an integer greater than or equal to 1`);
      }
      const maxUses = tool['max_uses'];
      if (required !== 'bash' && required !== 'str_replace_based_edit_tool' && maxUses !== undefined && maxUses !== null) {
        if (!(Number.isInteger(maxUses) && (maxUses as number) >= 1)) {
          return bad(`tools.${k}.${type}.max_uses: Input should be an integer greater than or equal to 1`);
        }
      }
    }
    if (names.has(String(name))) return bad('tools: Tool names must be unique.');
    names.add(String(name));
  }
  return undefined;
}

function unseal(encrypted: unknown): CompactionSeal | undefined {
  if (typeof encrypted !== 'string') return undefined;
  try {
    const value = JSON.parse(Buffer.from(encrypted, 'base64').toString('utf8')) as Partial<CompactionSeal>;
    if (typeof value.step === 'number' && typeof value.conversation === 'string' && typeof value.covered === 'number') {
      return value as CompactionSeal;
    }
  } catch {
    // not a seal of this server
  }
  return undefined;
}

/**
 * What the API keeps of the transcript: everything from the last compaction
 * block with a summary on ("the API drops all message blocks prior to the
 * compaction block", compaction-threshold page). A compaction block must come
 * back with the server's signature; one with `content: null` is a no-op.
 */
function effectiveOf(messages: Msg[]): TodayProblem | Effective {
  let last: { i: number; j: number; seal: CompactionSeal | undefined } | undefined;
  for (const [i, message] of messages.entries()) {
    for (const [j, block] of blocksOf(message.content).entries()) {
      if (block['type'] !== 'compaction') continue;
      const path = `messages.${i}.content.${j}`;
      if (message.role !== 'assistant') return bad(`${path}: compaction blocks are only allowed in assistant messages`);
      const content = block['content'] ?? null;
      if (content === '') return bad(`${path}.compaction.content: empty string content is not allowed`);
      if (content === null) continue;
      if (block['signature'] === undefined || block['signature'] === null) return bad(`${path}.compaction.signature: Field required`);
      if (!verifyCompaction(content, block['encrypted_content'] ?? null, block['signature'])) {
        return bad(`${path}: Invalid \`signature\` in \`compaction\` block`);
      }
      last = { i, j, seal: unseal(block['encrypted_content']) };
    }
  }
  if (!last) return { messages, offset: 0, blockOffset: 0, seal: undefined };
  const first = messages[last.i]!;
  return {
    messages: [{ ...first, content: blocksOf(first.content).slice(last.j) }, ...messages.slice(last.i + 1)],
    offset: last.i,
    blockOffset: last.j,
    seal: last.seal,
  };
}

/** The path, in the request as sent, of block `ej` of effective message `ei`. */
function pathOf(effective: Effective, ei: number, ej: number): string {
  return `messages.${ei + effective.offset}.content.${ej + (ei === 0 ? effective.blockOffset : 0)}`;
}

/**
 * The model check and the prefix check on the thinking blocks sent back
 * (preserved-thinking pages): a block the model cannot read is dropped
 * silently; on a model with preserved thinking a block whose prefix changed
 * is the documented 400, or with `drop_block` it and every later thinking
 * block are dropped; on other models it is left in place.
 */
function checkThinkingBlocks(
  request: MessagesRequest,
  effective: Effective,
  spec: ModelSpec,
  dropBlock: boolean,
  hasBindingBeta: boolean,
): TodayProblem | { messages: Msg[]; transformations: InputTransformation[] } {
  const transformations: InputTransformation[] = [];
  const prefixAt = prefixIndex(request, effective.messages);
  let prefixFailed = false;
  const out: Msg[] = [];
  for (const [ei, message] of effective.messages.entries()) {
    if (message.role !== 'assistant' || !Array.isArray(message.content)) {
      out.push(message);
      continue;
    }
    const kept: unknown[] = [];
    for (const [ej, raw] of (message.content as unknown[]).entries()) {
      const block = isObject(raw) ? raw : {};
      const type = block['type'];
      if (type !== 'thinking' && type !== 'redacted_thinking') {
        kept.push(raw);
        continue;
      }
      const path = pathOf(effective, ei, ej);
      if (type === 'thinking') {
        if (typeof block['thinking'] !== 'string') return bad(`${path}.thinking.thinking: Field required`);
        if (typeof block['signature'] !== 'string') return bad(`${path}.thinking.signature: Field required`);
      } else if (typeof block['data'] !== 'string') {
        return bad(`${path}.redacted_thinking.data: Field required`);
      }
      const prefix = prefixAt(ei, ej);
      const verdict = verifyBoundBlock(block, prefix, { i: ei, offset: effective.offset });
      if (!verdict.valid) {
        return bad(
          type === 'thinking'
            ? `${path}: Invalid \`signature\` in \`thinking\` block`
            : `${path}: Invalid \`data\` in \`redacted_thinking\` block`,
        );
      }
      if (!canRead(spec, verdict.model)) {
        transformations.push({ type: 'thinking_dropped', path, reason: 'model_binding_mismatch' });
        continue;
      }
      if (prefixFailed) {
        transformations.push({ type: 'thinking_dropped', path, reason: 'prefix_binding_mismatch' });
        continue;
      }
      if (!verdict.bound) {
        if (!spec.preservedThinking) {
          transformations.push({ type: 'thinking_mismatch_allowed', path, reason: 'prefix_binding_mismatch' });
        } else if (dropBlock) {
          prefixFailed = true;
          transformations.push({ type: 'thinking_dropped', path, reason: 'prefix_binding_mismatch' });
          continue;
        } else {
          return bad(
            `${path}: Invalid \`signature\` in \`${String(type)}\` block. The block is bound to a different conversation. ` +
              'Remove the block, or set `thinking.block_binding.prefix_mismatch_behavior` to "drop_block".' +
              (hasBindingBeta ? '' : ` That setting requires the \`${BETA_THINKING_BINDING}\` value in the \`anthropic-beta\` header.`) +
              (verdict.changed ? ` What changed: ${verdict.changed}.` : ''),
          );
        }
      }
      kept.push(raw);
    }
    out.push({ ...message, content: kept });
  }
  return { messages: out, transformations };
}

/** Context editing applied server-side, in the order of the edits (context-editing page); the client's transcript is not changed. */
function applyEdits(input: TodayPlan['input'], edits: Block[], model: string): { messages: Msg[]; applied: AppliedEdit[] } {
  let messages = input.messages.map((m) => ({ ...m, content: Array.isArray(m.content) ? [...(m.content as unknown[])] : m.content }));
  const tokens = (list: Msg[]): number => measure({ ...input, messages: list }, model).tokens;
  const applied: AppliedEdit[] = [];
  for (const edit of edits) {
    const before = tokens(messages);
    if (edit['type'] === 'clear_thinking_20251015') {
      const keep = edit['keep'];
      if (keep === 'all' || (isObject(keep) && keep['type'] === 'all')) continue;
      const turns = isObject(keep) && typeof keep['value'] === 'number' ? keep['value'] : 1;
      const assistants = messages.flatMap((m, i) => (m.role === 'assistant' ? [i] : []));
      const older = new Set(assistants.slice(0, Math.max(0, assistants.length - turns)));
      let cleared = 0;
      messages = messages.map((m, i) => {
        if (!older.has(i) || !Array.isArray(m.content)) return m;
        const content = (m.content as unknown[]).filter(
          (b) => !(isObject(b) && (b['type'] === 'thinking' || b['type'] === 'redacted_thinking')),
        );
        if (content.length === (m.content as unknown[]).length) return m;
        cleared += 1;
        return { ...m, content };
      });
      if (cleared > 0)
        applied.push({ type: 'clear_thinking_20251015', cleared_thinking_turns: cleared, cleared_input_tokens: before - tokens(messages) });
      continue;
    }
    // clear_tool_uses_20250919
    const trigger = isObject(edit['trigger']) ? edit['trigger'] : { type: 'input_tokens', value: DEFAULT_CLEAR_TOOL_USES_TRIGGER };
    const uses: Array<{ i: number; j: number; id: string; name: string }> = [];
    messages.forEach((m, i) => {
      if (m.role !== 'assistant') return;
      blocksOf(m.content).forEach((b, j) => {
        if (b['type'] === 'tool_use') uses.push({ i, j, id: String(b['id']), name: String(b['name']) });
      });
    });
    const fired = trigger['type'] === 'tool_uses' ? uses.length > Number(trigger['value']) : before > Number(trigger['value']);
    if (!fired) continue;
    const keep = isObject(edit['keep']) ? Number(edit['keep']['value']) : DEFAULT_CLEAR_TOOL_USES_KEEP;
    const exclude = new Set(Array.isArray(edit['exclude_tools']) ? edit['exclude_tools'].map(String) : []);
    const inputs = edit['clear_tool_inputs'];
    const clearInput = (name: string): boolean => inputs === true || (Array.isArray(inputs) && inputs.map(String).includes(name));
    const targets = uses.slice(0, Math.max(0, uses.length - keep)).filter((u) => !exclude.has(u.name));
    let next = messages.map((m) => ({ ...m, content: Array.isArray(m.content) ? [...(m.content as unknown[])] : m.content }));
    let cleared = 0;
    for (const use of targets) {
      let did = false;
      next = next.map((m, i) => {
        if (!Array.isArray(m.content)) return m;
        const content = (m.content as unknown[]).map((b, j) => {
          if (!isObject(b)) return b;
          if (i === use.i && j === use.j && clearInput(use.name) && b['type'] === 'tool_use') return { ...b, input: {} };
          if (b['type'] === 'tool_result' && b['tool_use_id'] === use.id && b['content'] !== CLEARED_TOOL_RESULT) {
            did = true;
            return { ...b, content: CLEARED_TOOL_RESULT };
          }
          return b;
        });
        return { ...m, content };
      });
      if (did) cleared += 1;
    }
    const gained = before - tokens(next);
    const atLeast = isObject(edit['clear_at_least']) ? Number(edit['clear_at_least']['value']) : undefined;
    if (cleared === 0 || (atLeast !== undefined && gained < atLeast)) continue;
    messages = next;
    // A result shorter than the placeholder "clears" nothing: the count never goes below 0.
    applied.push({ type: 'clear_tool_uses_20250919', cleared_tool_uses: cleared, cleared_input_tokens: Math.max(0, gained) });
  }
  return { messages, applied };
}

/**
 * Checks and transforms a request for the `today` mode.
 *
 * @param request the body, already through `checkMessagesRequest(..., 'today')`
 * @param headers the request headers (`anthropic-beta`)
 * @returns the API's 4xx, or the plan the server answers by
 */
export function prepareToday(
  request: MessagesRequest,
  headers: IncomingHttpHeaders,
  kind: 'messages' | 'count_tokens',
): TodayProblem | TodayPlan {
  const spec = findModel(request.model);
  if (!spec) return { status: 404, message: `model: ${request.model}` };
  const betas = betasOf(headers);
  const options = checkOptions(request, betas, kind, spec);
  if ('status' in options) return options;
  const effective = effectiveOf(request.messages);
  if ('status' in effective) return effective;
  const checked = checkThinkingBlocks(request, effective, spec, options.dropBlock, betas.has(BETA_THINKING_BINDING));
  if ('status' in checked) return checked;

  const base = { system: request.system, tools: request.tools, messages: checked.messages };
  // count_tokens' original_input_tokens: the request as sent, before compaction blocks and context edits apply.
  const originalInputTokens = measure(request, request.model).tokens;
  const edited = options.edits.length > 0 ? applyEdits(base, options.edits, request.model) : { messages: base.messages, applied: [] };
  const input = { ...base, messages: edited.messages };
  const measured = measure(input, request.model);
  const upFront = spec.thinking === 'budget' ? options.thinkingType === 'enabled' : options.thinkingType === 'adaptive';
  const thinkingOn = options.thinkingType !== 'disabled';
  return {
    spec,
    betas,
    display: options.display,
    thinkingType: options.thinkingType,
    upFront,
    thinkingOn,
    effective,
    input,
    measured,
    originalInputTokens,
    inputTransformations: betas.has(BETA_THINKING_BINDING) ? checked.transformations : undefined,
    appliedEdits: options.edits.length > 0 ? edited.applied : undefined,
    compaction: options.compaction,
    compactNow: kind === 'messages' && options.compaction !== undefined && measured.tokens >= options.compaction.trigger,
    step: effective.seal ? effective.seal.step + effective.messages.filter((m) => m.role === 'assistant').length : undefined,
    conversation: effective.seal?.conversation,
  };
}

/** The body `count_tokens` answers in `today` mode. */
export function countTokensBody(plan: TodayPlan): Record<string, unknown> {
  return {
    input_tokens: plan.measured.tokens,
    ...(plan.appliedEdits || plan.compaction ? { context_management: { original_input_tokens: plan.originalInputTokens } } : {}),
  };
}

/**
 * A scripted answer the real model could not give: a `tool_use` of a tool
 * the request does not declare, a `server_tool_use` of a server tool it
 * does not declare, or a `compaction` block (only the server makes them).
 *
 * @returns the reason, for the server's 500, or undefined
 */
export function scriptMismatch(entry: ParsedMessageEntry, request: MessagesRequest): string | undefined {
  const declared = new Set((Array.isArray(request.tools) ? request.tools : []).map((t) => (isObject(t) ? String(t['name']) : '')));
  for (const block of entry.content) {
    if (block.type === 'compaction') {
      return 'it holds a compaction block; the server makes those itself (send a compact_20260112 edit whose trigger the input reaches)';
    }
    if ((block.type === 'tool_use' || block.type === 'server_tool_use') && !declared.has(String(block['name']))) {
      return `it answers with a ${block.type} of "${String(block['name'])}", which the request's tools do not declare`;
    }
  }
  return undefined;
}

/** The summary text of a compaction the server makes: deterministic, naming what it covers. */
export function compactionSummary(covered: number, step: number, instructions: string | undefined): string {
  return (
    `Summary of the ${covered} earlier message(s) of this conversation (scripted compaction at step ${step}).` +
    (instructions ? ` Instructions followed: ${instructions}` : '')
  );
}

/** Whether a note is "longer than a sentence or two" (Sonnet 5.5's rule): more than two sentences. */
export function isLongNote(text: string): boolean {
  return text.split(/[.!?](?:\s|$)/).filter((part) => part.trim() !== '').length > 2;
}

/**
 * Today's answer for a scripted entry: the thinking blocks the model and
 * options call for, text before a tool call moved into progress-update
 * thinking blocks where the model does that, a compaction block when the
 * trigger was reached, bound signatures, and usage.
 *
 * Content rule (https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5,
 * https://platform.claude.com/docs/en/models/opus-5-5/migration-guide#text-between-tool-calls,
 * https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide):
 *
 * - With thinking up front the answer opens with a reasoning `thinking`
 *   block: the entry's leading `thinking` block's text (that block is used
 *   for it) or `Thinking for step N.`. Other scripted thinking blocks are
 *   reasoning blocks where they stand. With thinking off they are left out.
 * - On Opus 5.5 / Fable 5.1 the scripted `text` blocks just before a
 *   `tool_use` / `server_tool_use` become one progress-update `thinking`
 *   block (joined by a blank line; at most one before each tool call); on
 *   Sonnet 5.5 only notes of more than two sentences do; elsewhere text
 *   stays text. Text after the last tool call stays text.
 * - Display: `omitted` (the adaptive default) empties every thinking text;
 *   `summarized` shows all; `updates` shows progress updates only; Sonnet
 *   5.5 `between_tools` shows progress updates whatever the display.
 *   Output tokens count the full texts.
 * - A compaction comes first; with `pause_after_compaction` it is the whole
 *   answer, `stop_reason: "compaction"`.
 *
 * @param base the entry completed by `completeMessage` (ids filled in); its content is rebuilt here
 */
export function buildTodayMessage(
  plan: TodayPlan,
  entry: ParsedMessageEntry,
  base: CompletedMessage,
  context: { step: number; conversation: string; request: MessagesRequest; cache: PromptCache; minCacheableTokens: number },
): CompletedMessage {
  const { step, conversation, request } = context;
  const showReasoning = plan.display === 'summarized';
  const showProgress = plan.display === 'summarized' || plan.display === 'updates' || plan.thinkingType === 'between_tools';
  // The entry's blocks with the ids `completeMessage` filled in (its legacy signatures are replaced below).
  const scripted: Block[] = entry.content.map((b, k) => (b.type === 'tool_use' ? { ...base.content[k] } : { ...b }));
  const full: Block[] = [];
  const content: Block[] = [];
  const thinkingBlock = (text: string, shown: boolean): void => {
    content.push({ type: 'thinking', thinking: shown ? text : '', signature: '' });
    full.push({ type: 'thinking', thinking: text, signature: '' });
  };
  const push = (block: Block): void => {
    content.push(block);
    full.push(block);
  };
  let upFrontText: string | undefined;
  if (scripted[0]?.['type'] === 'thinking' && typeof scripted[0]['thinking'] === 'string') {
    upFrontText = scripted[0]['thinking'];
    scripted.shift();
  }
  if (plan.upFront) thinkingBlock(upFrontText ?? `Thinking for step ${step}.`, showReasoning);
  const isTool = (b: Block | undefined): boolean => b?.['type'] === 'tool_use' || b?.['type'] === 'server_tool_use';
  const mode = plan.thinkingOn ? plan.spec.textBetweenTools : 'text';
  for (let k = 0; k < scripted.length; k++) {
    const block = scripted[k]!;
    if (block['type'] === 'thinking') {
      if (plan.thinkingOn) thinkingBlock(String(block['thinking']), showReasoning);
      continue;
    }
    if (block['type'] === 'redacted_thinking') {
      if (plan.thinkingOn) push(block);
      continue;
    }
    if (block['type'] === 'text' && mode !== 'text') {
      // The run of text blocks this one starts, and whether a tool call follows it.
      let end = k;
      while (scripted[end + 1]?.['type'] === 'text') end += 1;
      if (isTool(scripted[end + 1])) {
        const run = scripted.slice(k, end + 1);
        const joined = run.map((b) => String(b['text'])).join('\n\n');
        if (mode === 'all' || isLongNote(joined)) {
          thinkingBlock(joined, showProgress);
          k = end;
          continue;
        }
      }
    }
    push(block);
  }

  let stopReason = base.stop_reason;
  let compactionBlock: Block | undefined;
  if (plan.compactNow && plan.compaction) {
    const covered = plan.input.messages.length;
    const summary = compactionSummary(covered, step, plan.compaction.instructions);
    const encrypted = Buffer.from(JSON.stringify({ step, conversation, covered } satisfies CompactionSeal)).toString('base64');
    compactionBlock = { type: 'compaction', content: summary, encrypted_content: encrypted, signature: signCompaction(summary, encrypted) };
    if (plan.compaction.pause) {
      content.splice(0, content.length);
      full.splice(0, full.length);
      stopReason = 'compaction';
    }
    content.unshift(compactionBlock);
  }

  // Bound signatures, in order: a block's prefix holds the blocks before it as the client will send them back.
  const before = compactionBlock ? [] : plan.effective.messages;
  const at = before.length;
  // The answer's own message is read live, so each block sees the signed blocks before it.
  const prefixAt = prefixIndex(request, [...before, { role: 'assistant', content }]);
  for (let j = 0; j < content.length; j++) {
    const block = content[j]!;
    if (block['type'] !== 'thinking' && block['type'] !== 'redacted_thinking') continue;
    const prefix = prefixAt(at, j);
    content[j] = signBoundBlock(block as Block & { type: string }, request.model, prefix, `${conversation}:${step}:${j}`);
  }

  // The compaction is a sampling step over the request as sent, breakpoints and all: it reads and
  // writes the prompt cache by the same rule as any request (prompt-caching page, "How automatic
  // prefix checking works"; compaction-threshold page: "Compaction requires an additional sampling
  // step, which contributes to rate limits and billing"; the SDK's BetaCompactionIterationUsage has
  // its own cache_read_input_tokens / cache_creation_input_tokens / cache_creation). Before the
  // message step, so that step sees what this one wrote.
  const compactionCache: CacheUsage | undefined = compactionBlock
    ? context.cache.use(plan.measured, context.minCacheableTokens)
    : undefined;
  // Usage: after a compaction the model works from system, tools and the summary.
  const measured = compactionBlock
    ? measure(
        { system: request.system, tools: request.tools, messages: [{ role: 'assistant', content: [compactionBlock] }] },
        request.model,
      )
    : plan.measured;
  const cacheUsage: CacheUsage = context.cache.use(measured, context.minCacheableTokens);
  // Thinking is billed in full even when omitted; a paused compaction samples nothing after the summary.
  const outputTokens = entry.usage?.output_tokens ?? (full.length > 0 ? estimateTokens(full) : 0);
  const serverTools = content.filter((b) => b['type'] === 'server_tool_use').map((b) => String(b['name']));
  const declaresServerTool = (Array.isArray(request.tools) ? request.tools : []).some(
    (t) => isObject(t) && SERVER_TOOL_NAMES.has(String(t['name'])) && t['type'] !== undefined,
  );
  const messageIteration = {
    type: 'message',
    input_tokens: cacheUsage.input_tokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: cacheUsage.cache_creation_input_tokens,
    cache_read_input_tokens: cacheUsage.cache_read_input_tokens,
    cache_creation: { ...cacheUsage.cache_creation },
  };
  const usage: CompletedMessage['usage'] = {
    input_tokens: cacheUsage.input_tokens,
    output_tokens: outputTokens,
    cache_creation_input_tokens: cacheUsage.cache_creation_input_tokens,
    cache_read_input_tokens: cacheUsage.cache_read_input_tokens,
    cache_creation: { ...cacheUsage.cache_creation },
    ...(serverTools.length > 0 || declaresServerTool
      ? {
          server_tool_use: {
            web_search_requests: serverTools.filter((n) => n === 'web_search').length,
            web_fetch_requests: serverTools.filter((n) => n === 'web_fetch').length,
          },
        }
      : {}),
    ...(plan.compaction
      ? {
          iterations: compactionBlock
            ? [
                {
                  type: 'compaction',
                  input_tokens: compactionCache!.input_tokens,
                  output_tokens: tokensForBytes(Buffer.byteLength(String(compactionBlock['content']))),
                  cache_creation_input_tokens: compactionCache!.cache_creation_input_tokens,
                  cache_read_input_tokens: compactionCache!.cache_read_input_tokens,
                  cache_creation: { ...compactionCache!.cache_creation },
                },
                ...(stopReason === 'compaction' ? [] : [messageIteration]),
              ]
            : [messageIteration],
        }
      : {}),
    ...entry.usage,
  };
  const message: CompletedMessage & Record<string, unknown> = {
    ...base,
    content: content as CompletedMessage['content'],
    stop_reason: stopReason,
    usage,
  };
  if (plan.appliedEdits) message['context_management'] = { applied_edits: plan.appliedEdits };
  if (plan.inputTransformations) message['input_transformations'] = plan.inputTransformations;
  return message;
}
