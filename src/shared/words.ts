/**
 * A second, independent reading of a command: a strict tokenizer that knows
 * only the plain literals the policy accepts (rule (d) of `decideApproval`
 * in src/policy). It is not a shell parser; it refuses everything it does
 * not know. The policy runs a command only when this tokenizer and the
 * tree-sitter tree agree on the argv word for word. Pure and deterministic:
 * the workflow uses it too, to refuse an approval rule that could never
 * match (the worker's full literal-word test is what lets a rule run).
 */

/**
 * Characters allowed in an unquoted word: letters, digits and `_ . / : , + @ % = -`.
 * None of them starts an expansion, a glob, a comment, a quote or an operator
 * in bash when the word is an argument (`=` only matters in a leading
 * assignment, which the tree check refuses; `~` after `=` is refused because
 * `~` itself is not in the set; `,` only matters inside braces).
 */
export const PLAIN_UNQUOTED = /^[A-Za-z0-9_./:,+@%=-]$/;

/**
 * Characters that end a double-quoted literal's right to be called plain:
 * `$` (expansions), backtick (command substitution), backslash (escapes) and
 * `!` (history expansion in interactive shells).
 */
export const DOUBLE_QUOTE_SPECIAL = /[$`\\!]/;

/**
 * Longest command the policy judges, in characters: 4096. Longer ones are
 * never plain words (src/policy rule (a)), so no approval rule is longer.
 */
export const MAX_PLAIN_COMMAND_CHARS = 4096;

/** Result of {@link tokenize}. */
export type TokenizeResult = { ok: true; argv: string[] } | { ok: false; reason: string };

/**
 * Splits `text` into words the way bash would if every word is made of plain
 * unquoted characters ({@link PLAIN_UNQUOTED}), single-quoted strings and
 * double-quoted strings without {@link DOUBLE_QUOTE_SPECIAL}, glued together,
 * separated by spaces (U+0020 only). Quote removal gives each word's value.
 * @returns `ok: false` with the offending character's column (1-based) for anything else
 */
export function tokenize(text: string): TokenizeResult {
  const argv: string[] = [];
  let i = 0;
  while (i < text.length) {
    if (text[i] === ' ') {
      i++;
      continue;
    }
    let word = '';
    while (i < text.length && text[i] !== ' ') {
      const c = text[i] as string;
      if (c === "'") {
        const end = text.indexOf("'", i + 1);
        if (end < 0) return { ok: false, reason: `unterminated single quote at column ${i + 1}` };
        word += text.slice(i + 1, end);
        i = end + 1;
      } else if (c === '"') {
        const end = text.indexOf('"', i + 1);
        if (end < 0) return { ok: false, reason: `unterminated double quote at column ${i + 1}` };
        const inner = text.slice(i + 1, end);
        const special = DOUBLE_QUOTE_SPECIAL.exec(inner);
        if (special) return { ok: false, reason: `${JSON.stringify(special[0])} inside double quotes at column ${i + 2 + special.index}` };
        word += inner;
        i = end + 1;
      } else if (PLAIN_UNQUOTED.test(c)) {
        word += c;
        i++;
      } else {
        return { ok: false, reason: `unquoted ${JSON.stringify(c)} at column ${i + 1}` };
      }
    }
    argv.push(word);
  }
  return { ok: true, argv };
}

/**
 * Bash builtins (and the `coproc` keyword) that act on the shell they run
 * in, not only on their arguments: they run other text (`eval`, `source`,
 * `exec`, `command`, `builtin`, `fc`, `coproc`) or change what later
 * commands of the same shell do (variables, options, aliases, functions,
 * the directory, command lookup, limits, traps). An approval rule runs its
 * command in the run's long-lived shell, so such a command would also
 * change every later command, those a person approves by reading their
 * text included.
 */
export const SHELL_STATE_BUILTINS: ReadonlySet<string> = new Set(
  (
    '. source eval exec command builtin enable fc coproc alias unalias export declare typeset local readonly unset set shopt ' +
    'cd pushd popd hash read readarray mapfile getopts let shift trap umask ulimit bind complete compopt history'
  ).split(' '),
);

/**
 * The builtin through which `argv` (after quote removal; quoting the name
 * does not stop bash from running its builtin) would change the session
 * shell itself: one of {@link SHELL_STATE_BUILTINS}, or `printf -v`, which
 * assigns a variable. Undefined for any other command.
 */
export function shellStateBuiltin(argv: readonly string[]): string | undefined {
  const program = argv[0];
  if (program === undefined) return undefined;
  if (SHELL_STATE_BUILTINS.has(program)) return program;
  // printf takes one option, -v NAME (or -vNAME), and only as its first word.
  if (program === 'printf' && argv[1]?.startsWith('-v')) return 'printf -v';
  return undefined;
}
