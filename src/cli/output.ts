/** Output helpers shared by the commands: JSON for machines, text for people. */

/** Prints `value` as one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints lines of text on stdout. */
export function printLines(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Lines of a command's output shown by {@link indent} before it cuts (`watch`, `transcript`). */
export const SHOWN_OUTPUT_LINES = 20;

/** Lines {@link indent} keeps by default: {@link SHOWN_OUTPUT_LINES}, or all inside {@link withWholeOutputs}. */
let defaultMaxLines = SHOWN_OUTPUT_LINES;

/**
 * Runs `fn` with {@link indent} keeping every line by default, and restores
 * the cut afterwards (`transcript --full`: the message formatter is shared
 * with `watch`, which always cuts).
 */
export function withWholeOutputs<T>(fn: () => T): T {
  const before = defaultMaxLines;
  defaultMaxLines = Infinity;
  try {
    return fn();
  } finally {
    defaultMaxLines = before;
  }
}

/**
 * Indents every line of `text` by `prefix`, keeping at most `maxLines` lines;
 * the rest is replaced by one note that says how many lines were cut and
 * which command prints them all (`agent-jobs transcript <workflowId> --full`).
 */
export function indent(text: string, prefix = '    ', maxLines = defaultMaxLines): string {
  const lines = text.replace(/\n+$/, '').split('\n');
  const shown = lines.slice(0, maxLines).map((l) => `${prefix}${l}`);
  if (lines.length > maxLines) shown.push(`${prefix}… ${lines.length - maxLines} more lines (agent-jobs transcript <workflowId> --full shows all)`);
  return shown.join('\n');
}
