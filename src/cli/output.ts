/** Output helpers shared by the commands: JSON for machines, text for people. */

/** Prints `value` as one JSON document on stdout. */
export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** Prints lines of text on stdout. */
export function printLines(...lines: string[]): void {
  process.stdout.write(`${lines.join('\n')}\n`);
}

/** Shortens text to `max` characters on one line, for tables and summaries. */
export function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

/** Indents every line of `text` by `prefix`, keeping at most `maxLines` lines (with a note of the rest). */
export function indent(text: string, prefix = '    ', maxLines = 20): string {
  const lines = text.replace(/\n+$/, '').split('\n');
  const shown = lines.slice(0, maxLines).map((l) => `${prefix}${l}`);
  if (lines.length > maxLines) shown.push(`${prefix}… ${lines.length - maxLines} more lines (agent-jobs transcript shows all)`);
  return shown.join('\n');
}
