/**
 * Reads a command with tree-sitter-bash (rules (b) and (c) of
 * {@link decideApproval}): the tree must be exactly one simple command whose
 * words are plain literals, and this module computes each word's value by
 * quote removal. Node-side only: it loads native modules.
 */
import type ParserType from 'tree-sitter';
import { DOUBLE_QUOTE_SPECIAL, PLAIN_UNQUOTED } from '../shared/words';

type SyntaxNode = ParserType.SyntaxNode;

/** Result of {@link readSimpleCommand}. */
export type ReadResult = { ok: true; argv: string[] } | { ok: false; reason: string };

let parser: ParserType | undefined;

/**
 * Where the loaded `tree-sitter` module is kept: on the tree-sitter-bash
 * language object, which is the native addon's exports and so one object per
 * process. tree-sitter's index.js must be evaluated only once per process:
 * a second evaluation (Jest gives every test file its own module registry,
 * but native addons are shared) reads its own patched `Tree.prototype`
 * getters as the native ones and breaks every parser in the process.
 */
const LOADED = Symbol.for('agent-jobs.policy.tree-sitter');

/**
 * The one parser of this module instance, created on first use (loading the
 * native binaries of `tree-sitter` and `tree-sitter-bash`, prebuilt for the
 * platform and found by node-gyp-build).
 * @throws when the native modules cannot be loaded
 */
function bashParser(): ParserType {
  if (parser === undefined) {
    // Loaded lazily so that importing this module never touches native code
    // and a loading failure becomes an "ask" (see decideApproval).
    // tree-sitter-bash's index.js only loads the addon and sets nodeTypeInfo:
    // evaluating it again is harmless.
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const bash = require('tree-sitter-bash') as ParserType.Language & { [LOADED]?: typeof ParserType };
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const Parser = bash[LOADED] ?? (bash[LOADED] = require('tree-sitter') as typeof ParserType);
    const p = new Parser();
    p.setLanguage(bash);
    parser = p;
  }
  return parser;
}

/** What a word node of these types does in bash, for reasons. */
const NODE_KINDS: Record<string, string> = {
  simple_expansion: 'parameter expansion',
  expansion: 'parameter expansion',
  command_substitution: 'command substitution',
  arithmetic_expansion: 'arithmetic expansion',
  ansi_c_string: "ANSI-C quoting $'...'",
  translated_string: 'locale translation $"..."',
  brace_expression: 'brace expansion',
  process_substitution: 'process substitution',
  extglob_pattern: 'globbing',
};

/** What an unquoted character does in bash, for reasons. */
function characterKind(c: string): string {
  if ('*?[]'.includes(c)) return 'globbing';
  if ('{}'.includes(c)) return 'brace expansion';
  if (c === '~') return 'tilde expansion';
  if (c === '\\') return 'backslash escape';
  if (c === '$') return 'parameter expansion';
  if (c === '`') return 'command substitution';
  if (c === '!' || c === '^') return `history expansion (${c})`;
  if (c === '#') return 'comment character #';
  if ('();&|<>'.includes(c)) return `shell operator ${c}`;
  return `character ${JSON.stringify(c)} outside the plain set`;
}

/** What a statement node other than a simple command is, for reasons. */
function statementKind(node: SyntaxNode): string {
  switch (node.type) {
    case 'pipeline':
      return 'a pipeline (|) is more than one simple command';
    case 'list': {
      const op = node.children.find((c) => !c.isNamed)?.type ?? '&&';
      return `a list (${op}) is more than one simple command`;
    }
    case 'redirected_statement': {
      const r = node.childrenForFieldName('redirect')[0];
      if (r?.type === 'heredoc_redirect') return 'a here-document (<<) is not a simple command';
      if (r?.type === 'herestring_redirect') return 'a here-string (<<<) is not a simple command';
      return `a redirection (${r?.text ?? '>'}) is not allowed`;
    }
    case 'heredoc_redirect':
      return 'a here-document (<<) is not a simple command';
    case 'herestring_redirect':
      return 'a here-string (<<<) is not a simple command';
    case 'file_redirect':
      return `a redirection (${node.text}) is not allowed`;
    case 'function_definition':
      return 'a function definition is not a simple command';
    case 'subshell':
      return 'a subshell ( ... ) is not a simple command';
    case 'compound_statement':
      return 'a group { ... } is not a simple command';
    case 'negated_command':
      return 'a negation (!) is not a simple command';
    case 'variable_assignment':
    case 'variable_assignments':
      return 'a variable assignment is not allowed';
    case 'declaration_command':
      return `a declaration (${node.firstChild?.type ?? 'declare'}) is not allowed`;
    case 'unset_command':
      return 'unset is not allowed';
    case 'test_command':
      return 'a test [[ ... ]] is not a simple command';
    case 'comment':
      return 'a comment (#) is not allowed';
    default:
      return `${node.type.replace(/_/g, ' ')} is not a simple command`;
  }
}

/** The first ERROR or MISSING node under `node`, in document order. */
function firstBroken(node: SyntaxNode): SyntaxNode | undefined {
  if (node.isError || node.isMissing) return node;
  if (!node.hasError) return undefined;
  for (const c of node.children) {
    const b = firstBroken(c);
    if (b) return b;
  }
  return undefined;
}

/**
 * The literal value of one word node, or why it is not a plain literal.
 * Plain: `word`/`number` nodes made of {@link PLAIN_UNQUOTED} characters,
 * `raw_string` ('...'), `string` ("...") whose text holds none of
 * {@link DOUBLE_QUOTE_SPECIAL}, and `concatenation`s of those. The text of
 * the node is checked, not only its children: the tree may hide a `$`.
 */
function literalValue(node: SyntaxNode): { value: string } | { kind: string } {
  const text = node.text;
  switch (node.type) {
    case 'word':
    case 'number': {
      for (const c of text) if (!PLAIN_UNQUOTED.test(c)) return { kind: characterKind(c) };
      return { value: text };
    }
    case 'raw_string': {
      if (text.length < 2 || !text.startsWith("'") || !text.endsWith("'")) return { kind: 'an unusual single-quoted string' };
      const inner = text.slice(1, -1);
      if (inner.includes("'")) return { kind: 'an unusual single-quoted string' };
      return { value: inner };
    }
    case 'string': {
      if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) return { kind: 'an unusual double-quoted string' };
      const inner = text.slice(1, -1);
      for (const c of node.namedChildren) if (c.type !== 'string_content') return { kind: NODE_KINDS[c.type] ?? c.type };
      const special = DOUBLE_QUOTE_SPECIAL.exec(inner);
      if (special) {
        const c = special[0];
        return {
          kind:
            c === '$'
              ? 'parameter expansion'
              : c === '`'
                ? 'command substitution'
                : c === '\\'
                  ? 'backslash escape'
                  : 'history expansion (!)',
        };
      }
      if (inner.includes('"')) return { kind: 'an unusual double-quoted string' };
      return { value: inner };
    }
    case 'concatenation': {
      let value = '';
      let end = node.startIndex;
      for (const c of node.children) {
        if (c.startIndex !== end) return { kind: 'a word with a gap' };
        const v = literalValue(c);
        if ('kind' in v) return v;
        value += v.value;
        end = c.endIndex;
      }
      if (end !== node.endIndex) return { kind: 'a word with a gap' };
      return { value };
    }
    default:
      if (!node.isNamed) return { kind: `the bare token ${node.type} (${node.type === '$' ? 'parameter expansion' : 'shell syntax'})` };
      return { kind: NODE_KINDS[node.type] ?? node.type.replace(/_/g, ' ') };
  }
}

/**
 * Parses `text` (printable ASCII only: the caller checks, so byte offsets are
 * character offsets) and returns the argv of its one simple command.
 * Asks (`ok: false`) unless the tree is exactly `program > command`, with no
 * ERROR or MISSING node, nothing but spaces outside and between the words, and
 * every child of the command either its name or an argument that is a plain
 * literal.
 * @throws when the native parser cannot be loaded
 */
export function readSimpleCommand(text: string): ReadResult {
  const root = bashParser().parse(text).rootNode;
  const broken = firstBroken(root);
  if (broken) {
    return broken.isMissing
      ? { ok: false, reason: `incomplete bash syntax: missing ${JSON.stringify(broken.type)} at column ${broken.startIndex + 1}` }
      : { ok: false, reason: `bash syntax the parser could not read at column ${broken.startIndex + 1}` };
  }
  if (root.type !== 'program') return { ok: false, reason: `unexpected parse: ${root.type}` };
  const statements = root.namedChildren;
  if (statements.length === 0) return { ok: false, reason: 'empty command' };
  const first = statements[0] as SyntaxNode;
  if (first.type !== 'command') return { ok: false, reason: statementKind(first) };
  if (statements.length > 1) {
    const second = statements[1] as SyntaxNode;
    if (second.type === 'comment') return { ok: false, reason: statementKind(second) };
    return { ok: false, reason: 'a command list (;) is more than one simple command' };
  }
  const separator = root.children.find((c) => !c.isNamed);
  if (separator) {
    return separator.type === '&'
      ? { ok: false, reason: 'a background job (&) is not a simple command' }
      : { ok: false, reason: `a separator (${separator.type}) is not allowed` };
  }

  const argv: string[] = [];
  let end = 0;
  const children = first.children;
  for (let i = 0; i < children.length; i++) {
    const child = children[i] as SyntaxNode;
    if (!/^ *$/.test(text.slice(end, child.startIndex)) || (i > 0 && child.startIndex === end)) {
      return { ok: false, reason: `unexpected text between words at column ${end + 1}` };
    }
    end = child.endIndex;
    const field = first.fieldNameForChild(i);
    let word: SyntaxNode;
    if (i === 0) {
      if (child.type !== 'command_name' || child.namedChildCount !== 1) return { ok: false, reason: statementKind(child) };
      word = child.namedChildren[0] as SyntaxNode;
      if (word.startIndex !== child.startIndex || word.endIndex !== child.endIndex) {
        return { ok: false, reason: 'unusual command name' };
      }
    } else if (field === 'argument') {
      word = child;
    } else {
      return { ok: false, reason: statementKind(child) };
    }
    const v = literalValue(word);
    if ('kind' in v) {
      return { ok: false, reason: `word ${i + 1} (${JSON.stringify(word.text)}) is not a plain literal: ${v.kind}` };
    }
    argv.push(v.value);
  }
  if (!/^ *$/.test(text.slice(end))) return { ok: false, reason: `unexpected text after the command at column ${end + 1}` };
  if (!/^ *$/.test(text.slice(0, first.startIndex))) return { ok: false, reason: 'unexpected text before the command' };
  return { ok: true, argv };
}
