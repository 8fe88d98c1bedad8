/**
 * Text and JSON output shared by the commands: JSON for machines, text for people.
 * Nothing from a run (commands, Claude's words, outputs, reasons) reaches
 * the terminal raw: text goes through {@link terminalText}, JSON through
 * {@link jsonText}, and commands are shown by {@link commandLines} (what
 * the human approves is what runs: docs/security.md). Each is applied once,
 * to the raw text (an unambiguous escaping cannot be applied twice); lines
 * made of such parts are printed with {@link printShown}.
 */
import { cliCommand } from '../invocation';
import {
  ESCAPE_LEGEND,
  displayCommand,
  hiddenEscaped,
  isAltered,
  jsonEscapeOf,
  safeText,
  shortHash,
  type CommandDisplay,
} from '../../shared/display';

/**
 * JSON whose control, bidi, separator and format characters are written as
 * `\uXXXX` escapes: it parses to the same value, and printed to a terminal it
 * cannot move the cursor or reorder text.
 * @param indent as JSON.stringify's `space` (none by default: one line)
 */
export function jsonText(value: unknown, indent?: number): string {
  return JSON.stringify(value, null, indent).replace(/[\s\S]/gu, (ch) => jsonEscapeOf(ch) ?? ch);
}

/** Prints `value` as one JSON document on stdout (terminal-safe, see {@link jsonText}). */
export function printJson(value: unknown): void {
  process.stdout.write(`${jsonText(value, 2)}\n`);
}

/**
 * Raw text for a terminal: escape sequences, controls, bidi and invisible characters shown
 * escaped, a backslash that would read as an escape doubled ({@link safeText}); line breaks and
 * tabs kept. Apply once, to text as the run has it.
 */
export function terminalText(text: string): string {
  return safeText(text);
}

/**
 * Text made of parts already escaped ({@link terminalText}, {@link commandLines}, {@link jsonText})
 * for a terminal: unchanged, but for a character some part let through raw, which is escaped
 * ({@link hiddenEscaped}) so it cannot act on the terminal.
 */
export function shownText(text: string): string {
  return hiddenEscaped(text);
}

/** Prints lines of raw text on stdout, terminal-safe ({@link terminalText}). */
export function printLines(...lines: string[]): void {
  process.stdout.write(`${terminalText(lines.join('\n'))}\n`);
}

/**
 * One line of the CLI's own words with single-line fields from a run in it (a path, a name, an
 * id, a reason, a time), as a tagged template: each interpolated value is escaped on one line,
 * its line breaks and tabs included (`safeText(String(value), false)`), so no field can start a
 * line of its own or pass for one of the CLI's; the literal parts, ours, are made terminal-safe
 * ({@link terminalText}). The result is escaped: print it with {@link printShown} or
 * {@link shownText}, never through {@link terminalText} again.
 */
export function oneLine(strings: TemplateStringsArray, ...values: unknown[]): string {
  let out = terminalText(strings[0]!);
  values.forEach((v, i) => {
    out += safeText(String(v), false) + terminalText(strings[i + 1]!);
  });
  return out;
}

/** Prints lines whose parts from a run are already escaped ({@link shownText}). */
export function printShown(...lines: string[]): void {
  process.stdout.write(`${shownText(lines.join('\n'))}\n`);
}

/** Options of {@link commandLines}. */
export interface CommandLinesOptions {
  /** Text before the command on its first line. */
  label: string;
  /** Text after the command on its first line (e.g. `    [toolu_1]`). */
  suffix?: string;
  /** Prefix of the lines under it (warnings, hash). @default '    ' */
  indent?: string;
  /** Show the hash line even when the command is shown as it is (approve's confirmation). @default false */
  alwaysHash?: boolean;
}

/**
 * How the CLI shows a command: `label + display + suffix` on one line, then,
 * when the display is escaped or cut, one `⚠` line per warning, how to read
 * the escapes, and `sha256 <first 12 hex> · <length> characters`. The label
 * and suffix are raw text (a name, a reason) and escaped here
 * ({@link terminalText}): the lines are ready for {@link printShown}.
 */
export function commandLines(command: string | CommandDisplay, opts: CommandLinesOptions): string[] {
  const d = typeof command === 'string' ? displayCommand(command) : command;
  const pad = opts.indent ?? '    ';
  const lines = [`${safeText(opts.label, false)}${d.text}${safeText(opts.suffix ?? '', false)}`];
  for (const w of d.warnings) lines.push(`${pad}⚠ ${w}`);
  if (d.warnings.length > 0) lines.push(`${pad}(${ESCAPE_LEGEND})`);
  if (opts.alwaysHash || isAltered(d)) lines.push(`${pad}sha256 ${shortHash(d.sha256)} · ${d.length} characters`);
  return lines;
}

/** Lines of a command's output shown by {@link indent} before it cuts (`watch`, `transcript`). */
export const SHOWN_OUTPUT_LINES = 20;

/**
 * Indents every line of `text` by `prefix`, keeping at most `maxLines` lines;
 * the rest is replaced by one note that says how many lines were cut and
 * which command prints them all (`agent-jobs transcript <workflowId> --full`).
 * @param maxLines lines kept; `Infinity` keeps all (`transcript --full`) @default {@link SHOWN_OUTPUT_LINES}
 * @param workflowId the run's id, named in that command; `<workflowId>` when not given. Like `text`, not escaped here:
 *   the caller escapes the result
 */
export function indent(text: string, prefix = '    ', maxLines = SHOWN_OUTPUT_LINES, workflowId?: string): string {
  const lines = text.replace(/\n+$/, '').split('\n');
  const shown = lines.slice(0, maxLines).map((l) => `${prefix}${l}`);
  if (lines.length > maxLines) {
    shown.push(
      `${prefix}… ${lines.length - maxLines} more lines (${cliCommand()} transcript ${workflowId ?? '<workflowId>'} --full shows all)`,
    );
  }
  return shown.join('\n');
}
