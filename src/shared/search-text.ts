/**
 * Values of Text search attributes that every Temporal visibility store
 * accepts. PostgreSQL's (`postgres12`) keeps a Text attribute in a column
 * generated as `(search_attributes->>'TextNN')::tsvector`
 * (schema/postgresql/v12/visibility/schema.sql in go.temporal.io/server
 * v1.32.1), so a value that is not valid tsvector input, such as
 * `approval of bash: ls` (a `:` starts a lexeme's positions), makes the
 * whole visibility update fail: the run's other attributes stop updating
 * too, and `agent-jobs pending` and `list` do not see it. SQLite and
 * Elasticsearch take any string.
 *
 * The encoding is one quoted lexeme: the text between single quotes, with
 * each `'` and `\` doubled (PostgreSQL's tsvector input rules). Every
 * string encodes to valid input; the empty string stays empty.
 */

/** `text` as one quoted tsvector lexeme (`'…'`, `'` and `\` doubled); `''` stays `''`. */
export function toSearchText(text: string): string {
  if (text === '') return '';
  return `'${text.replace(/'/g, "''").replace(/\\/g, '\\\\')}'`;
}

/**
 * The text {@link toSearchText} encoded. A value that is not of its form
 * (written by a run from before the encoding) is returned as it is.
 */
export function fromSearchText(value: string): string {
  if (value.length < 2 || !value.startsWith("'") || !value.endsWith("'")) return value;
  return value.slice(1, -1).replace(/''/g, "'").replace(/\\\\/g, '\\');
}
