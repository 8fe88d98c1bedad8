/**
 * Transcript messages as text: the lines `watch` and `transcript` print for
 * each message (Claude's words, the commands it asks for, their results).
 * Nothing reaches the terminal raw (src/cli/render/text.ts).
 */
import { isText, isToolResult, isToolUse } from '../../contract';
import type { ContentBlock, Message, ToolResultBlock, TranscriptView } from '../../contract';
import { TEXT_EDITOR_NAME } from '../../contract/text-editor';
import { SUBAGENT_TOOL_NAME } from '../../contract/subagent';
import { SHOWN_OUTPUT_LINES, commandLines, indent, jsonText, oneLine } from './text';
import { splitNotes } from '../../shared/notes';
import { safeText } from '../../shared/display';

/** A command's run time for people: `0.4 s`, `12.0 s`, `3.5 min` (ms in). */
export function formatDuration(ms: number): string {
  const s = ms / 1000;
  return s < 120 ? `${s.toFixed(1)} s` : `${(s / 60).toFixed(1)} min`;
}

/**
 * What a run published about its commands, by `tool_use` id (the transcript query's, or a closed
 * run's history read the same way: src/contract/views.ts `TranscriptView`): run times in ms, and
 * the exit codes of commands that ran to their end.
 */
export type PublishedCommands = Pick<TranscriptView, 'durationsMs' | 'exitCodes' | 'notes'>;

/**
 * The mark of a line the system wrote about a command's result (a note of the worker or the
 * workflow, as the run published them: src/shared/notes.ts): such a line is `  ↳ [note]`, at
 * the CLI's own column, where no output line starts (those are indented by 4), and the mark is
 * shown escaped (`\u21b3`) in everything of the run's this module prints, so not even a line the
 * terminal wraps can pass for a note.
 */
export const NOTE_MARK = '↳';

/** Raw text of the run for the terminal (as `terminalText`, src/cli/render/text.ts), with {@link NOTE_MARK} escaped too. */
function runText(text: string): string {
  return safeText(text, true, [NOTE_MARK]);
}

/** The notes published for `id`, when `record` holds them as its own array of strings. */
function publishedNotes(record: Record<string, string[]> | undefined, id: string): string[] | undefined {
  const v = record !== undefined && Object.hasOwn(record, id) ? record[id] : undefined;
  return Array.isArray(v) && v.every((n) => typeof n === 'string') ? v : undefined;
}

/** `record[id]` when `record` holds it as its own finite number; undefined otherwise (`__proto__` is no entry). */
function publishedNumber(record: Record<string, number> | undefined, id: string): number | undefined {
  const v = record !== undefined && Object.hasOwn(record, id) ? record[id] : undefined;
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/**
 * The heading of a `tool_result`: `→ result for toolu_1:`, with the exit code the run published
 * for it and its run time when published. The code is never read from the result's text: the
 * command prints that text, and the turn's budget may cut its `[exit code: N]` note away.
 */
function resultHeading(b: ToolResultBlock, durationMs: number | undefined, exitCode: number | undefined): string {
  const notes: string[] = [];
  if (b.is_error) notes.push('error');
  else if (exitCode !== undefined) notes.push(`exit ${exitCode}`);
  if (durationMs !== undefined) notes.push(formatDuration(durationMs));
  // The id comes from the Messages API (an endpoint of the user's choosing): escaped on one line like every field.
  return oneLine`${b.is_error ? '! ' : '→ '}result for ${b.tool_use_id}` + `${notes.length ? ` (${notes.join(', ')})` : ''}:`;
}

/**
 * Human-readable lines for one transcript message. A command's result: its heading, its output
 * indented and cut after `maxOutputLines` lines, then each note the run published for it whole,
 * on one line (its line breaks escaped), after {@link NOTE_MARK}; when its text does not end with
 * them, the whole text is output, and the published notes follow it all the same.
 * @param published what the run published about its commands ({@link PublishedCommands}); a
 *   result whose id is missing is shown without a run time, exit code or notes @default none
 * @param maxOutputLines lines of a command's output kept before the cut (`Infinity`: all, `transcript --full`) @default {@link SHOWN_OUTPUT_LINES}
 * @param workflowId the run's id, named in the cut's hint (`agent-jobs transcript <id> --full`) @default `<workflowId>`
 */
export function describeMessage(
  message: Message,
  index: number,
  published: PublishedCommands = {},
  maxOutputLines = SHOWN_OUTPUT_LINES,
  workflowId?: string,
): string[] {
  const blocks: ContentBlock[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
  // Claude's words and command outputs may hold escape sequences too: nothing reaches the terminal raw.
  // Each raw part is escaped once, here (commandLines and jsonText escape their own).
  const lines: string[] = [];
  for (const b of blocks) {
    if (isText(b)) lines.push(runText(hanging(index === 0 ? 'task: ' : `${message.role === 'assistant' ? 'claude' : 'user'}: `, b.text)));
    else if (isToolUse(b)) {
      const input = (b.input ?? {}) as { command?: unknown; restart?: unknown; path?: unknown; description?: unknown; prompt?: unknown };
      const suffix = `    [${b.id}]`;
      if (b.name === TEXT_EDITOR_NAME) lines.push(editRequestLine(input, suffix));
      else if (b.name === SUBAGENT_TOOL_NAME && typeof input.description === 'string') {
        // A sub-agent call is no command: its label, then the task the child gets (docs/subagents.md).
        lines.push(oneLine`claude hands to a sub-agent: ${input.description}${suffix}`);
        if (typeof input.prompt === 'string') lines.push(runText(hanging('  prompt: ', input.prompt)));
      } else if (input.restart !== true && typeof input.command === 'string')
        lines.push(...commandLines(input.command, { label: 'claude asks to run: ', suffix }));
      else
        lines.push(`claude asks to run: ${input.restart === true ? '(restart the session)' : jsonText(b.input)}${safeText(suffix, false)}`);
    } else if (isToolResult(b)) {
      const code = publishedNumber(published.exitCodes, b.tool_use_id);
      lines.push(
        resultHeading(
          b,
          publishedNumber(published.durationsMs, b.tool_use_id),
          code !== undefined && Number.isInteger(code) ? code : undefined,
        ),
      );
      // The system's notes, as the run published them, whole and apart from the output (cut, indented);
      // shown even when the text no longer ends with them (a result cut by a run from before they were kept).
      const notes = publishedNotes(published.notes, b.tool_use_id) ?? [];
      const output = splitNotes(b.content, notes)?.output ?? b.content;
      if (output !== '') lines.push(runText(indent(output, '    ', maxOutputLines, workflowId)));
      for (const n of notes) lines.push(`  ${NOTE_MARK} ${safeText(n, false, [NOTE_MARK])}`);
    } else lines.push(oneLine`[${b.type} block]`);
  }
  return lines;
}

/**
 * `label + text` with every line after the first indented by the label's width, so no line of
 * Claude's (or a user's) words starts where the CLI's own lines start (`⏸ waiting for approval`,
 * `  approve: ...`, `→ result for`): a text block cannot pass for the CLI speaking. An empty line
 * stays empty. Splits at `\n` only: every other line break is escaped ({@link terminalText}).
 */
export function hanging(label: string, text: string): string {
  const pad = ' '.repeat(label.length);
  return text
    .split('\n')
    .map((l, i) => (i === 0 ? `${label}${l}` : l === '' ? '' : `${pad}${l}`))
    .join('\n');
}

/**
 * A text editor `tool_use` as one line: `claude asks to view: /ws/a.ts` or
 * `claude asks to edit: str_replace /ws/a.ts` (its whole input as JSON when
 * it has no command or path of text, as Claude may send anything).
 */
function editRequestLine(input: { command?: unknown; path?: unknown }, suffix: string): string {
  if (typeof input.command !== 'string' || typeof input.path !== 'string')
    return `claude asks the editor: ${jsonText(input)}${safeText(suffix, false)}`;
  return safeText(
    input.command === 'view'
      ? `claude asks to view: ${input.path}${suffix}`
      : `claude asks to edit: ${input.command} ${input.path}${suffix}`,
    false,
  );
}
