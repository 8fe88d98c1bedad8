/**
 * The approval policy, judged on what bash will actually execute (docs/security.md;
 * cases C16–C18 in docs/cases.md). Node-side: it parses with the
 * native tree-sitter-bash grammar, so workflow code must not import it (the
 * workflow's own, older text policy stays in src/workflows/approval-policy.ts
 * for replaying old histories). An activity or the worker calls
 * {@link decideApproval} and the workflow records the decision.
 *
 * Under `policy`, a command runs unasked only when every rule below holds;
 * the first rule that fails gives the `reason` of an `ask`:
 *
 * - (a) the text is printable ASCII (U+0020–U+007E): no control character
 *   (so no newline or tab, C16), no NUL, nothing invisible or bidirectional;
 *   at most {@link MAX_COMMAND_LENGTH} characters.
 * - (b) tree-sitter-bash reads it as exactly `program > command`, with no
 *   ERROR or MISSING node, no redirection, assignment, pipeline, list,
 *   background `&`, subshell, group, function definition, here-document,
 *   comment, or process substitution.
 * - (c) every word is a plain literal: unquoted characters from
 *   `A-Z a-z 0-9 _ . / : , + @ % = -`, single-quoted strings, double-quoted
 *   strings without `$`, backtick, backslash or `!`, glued together. So no
 *   quote-dependent rewriting is left: no expansion of any kind, no
 *   backslash, no glob, no brace, no tilde, no word splitting. The argv is
 *   computed by quote removal. No argument looks like an assignment
 *   (`NAME=...`, `NAME+=...`): under `set -k` bash would move it into the
 *   program's environment (`cat LD_PRELOAD=./x.so a`).
 * - (d) an independent strict tokenizer (src/shared/words.ts) yields the
 *   same argv, else "parser disagreement".
 * - (e) argv[0] contains no `/` and is in {@link READ_ONLY_PROGRAMS}.
 *   Wrappers that run another program (`env`, `timeout`, `xargs`, `bash -c`,
 *   `command`, `exec`, `nice`, `nohup`, C17) are not on it.
 * - (f) every option is on the program's own option allowlist
 *   (src/policy/programs.ts), parsed as getopt does: bundles (`-la`),
 *   values attached or in the next word (`-n5`, `-n 5`, `--lines=5`), `--`
 *   ending options; a value that names a file is a path.
 * - (g) every path (operands per program; option values such as `grep -f F`,
 *   `find -newer F`; an implicit "." for `ls`, `find`, `du`, `grep -r`) has
 *   no `..` component, and resolved lexically against `context.cwd` lies in
 *   `context.workspace` (C18). Without a context, any path asks.
 *
 * The policy never throws: a parser that cannot be loaded, or a malformed
 * context, asks.
 */
import path from 'node:path';
import { judgeArgs, PROGRAM_NAMES } from './programs';
import { MAX_PLAIN_COMMAND_CHARS, shellStateBuiltin, tokenize } from '../shared/words';
import { readSimpleCommand } from './tree';
import { builtinRefusal } from './builtins';

import type { ApprovalMode, RuleToMatch } from '../contract';
import { TEXT_EDITOR_NAME } from '../contract/text-editor';

/** Approval mode of a run (the contract's `ApprovalMode`). */
export type { ApprovalMode };

/** Where the command would run. */
export interface PolicyContext {
  /** Absolute path of the run's workspace (the session's starting workdir). */
  workspace: string;
  /** Absolute path of the shell's current working directory. */
  cwd: string;
}

/**
 * Outcome of the policy for one command. `reason` says why, for the UI and
 * the CLI: for an `ask`, the first rule that failed and what was seen.
 *
 * `argv` and `paths` are only meaningful for a `run` under `policy`; under
 * `auto` they are empty (nothing was parsed).
 */
export type PolicyDecision =
  | {
      action: 'run';
      reason: string;
      /** The exact argv bash would build (after quote removal); argv[0] is the program name as written, e.g. "ls". */
      argv: string[];
      /** Every path the command will read, made absolute lexically against cwd, each once (incl. an implicit "." for ls/find/du/grep -r with no path); the caller re-checks them with realpath against symlinks before running. */
      paths: string[];
    }
  | { action: 'ask'; reason: string };

/** Longest command judged; longer ones ask (a command that long is not a quick read-only look). */
export const MAX_COMMAND_LENGTH = MAX_PLAIN_COMMAND_CHARS;

/** Names of the allowlisted programs (src/policy/programs.ts has each one's option allowlist). */
export const READ_ONLY_PROGRAMS: readonly string[] = PROGRAM_NAMES;

/** A word bash treats as an assignment under `set -k` once quotes are removed (conservative: `"FOO"=1` is not one, yet asks too). */
const ASSIGNMENT_LIKE = /^[A-Za-z_][A-Za-z0-9_]*\+?=/;

const ask = (reason: string): PolicyDecision => ({ action: 'ask', reason });

/** Rule (a): the first character outside printable ASCII, described. */
function badCharacter(command: string): string | undefined {
  for (let i = 0; i < command.length; i++) {
    const code = command.codePointAt(i) as number;
    if (code >= 0x20 && code <= 0x7e) continue;
    const u = `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;
    if (code < 0x20 || code === 0x7f) return `control character ${u} at column ${i + 1}`;
    return `non-ASCII character ${u} at column ${i + 1} (may be invisible or reorder the text)`;
  }
  return undefined;
}

/**
 * `p` without a trailing slash when it is an absolute path with no `.`,
 * `..` or empty component (`/work/ws` or `/work/ws/`); else undefined. A
 * `..` in the context is refused rather than resolved: lexically it could
 * undo a symlink the shell really went through.
 */
function normalizedAbsolute(p: unknown): string | undefined {
  if (typeof p !== 'string' || !p.startsWith('/')) return undefined;
  const trimmed = p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
  return path.posix.normalize(trimmed) === trimmed ? trimmed : undefined;
}

/** Rule (g): the absolute form of `p`, or why it is not allowed. */
function judgePath(p: string, context: PolicyContext | undefined): { abs: string } | { reason: string } {
  if (p === '') return { reason: 'an empty path' };
  if (p === '-') return { reason: 'path - reads standard input' };
  if (p.split('/').includes('..')) return { reason: `path ${p} leaves the workspace: it has a ".." component` };
  if (context === undefined) return { reason: `path ${p} cannot be judged without a workspace context` };
  const abs = path.posix.resolve(context.cwd, p);
  const ws = context.workspace;
  if (abs !== ws && !abs.startsWith(`${ws}/`)) {
    return {
      reason: p.startsWith('/') ? `path ${p} is outside the workspace ${ws}` : `path ${p} resolves to ${abs}, outside the workspace ${ws}`,
    };
  }
  return { abs };
}

/**
 * The policy's literal-word test, rules (a)–(d): `command` is printable
 * ASCII, one simple command for tree-sitter-bash, made only of plain
 * literal words, and the strict tokenizer reads the same argv.
 * @returns the argv bash would build, or why the command is not plain
 */
export function literalArgv(command: string): { ok: true; argv: string[] } | { ok: false; reason: string } {
  if (typeof command !== 'string') return { ok: false, reason: 'the command is not a string' };
  // (a)
  if (command.trim() === '') return { ok: false, reason: 'empty command' };
  if (command.length > MAX_COMMAND_LENGTH) return { ok: false, reason: `the command is longer than ${MAX_COMMAND_LENGTH} characters` };
  const bad = badCharacter(command);
  if (bad !== undefined) return { ok: false, reason: bad };
  // (b), (c)
  let read: ReturnType<typeof readSimpleCommand>;
  try {
    read = readSimpleCommand(command);
  } catch (err) {
    return { ok: false, reason: `the bash parser is unavailable: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (!read.ok) return read;
  const argv = read.argv;
  // (d)
  const tokens = tokenize(command);
  if (!tokens.ok) return { ok: false, reason: `parser disagreement: the strict tokenizer refuses it (${tokens.reason})` };
  if (tokens.argv.length !== argv.length || tokens.argv.some((w, i) => w !== argv[i])) {
    return {
      ok: false,
      reason: `parser disagreement: tree-sitter reads ${JSON.stringify(argv)}, the strict tokenizer ${JSON.stringify(tokens.argv)}`,
    };
  }
  return { ok: true, argv };
}

/**
 * The first approval rule that lets `command` run, judged on what bash
 * would run: the command must pass the literal-word test
 * ({@link literalArgv}) and hold no assignment-like argument (rule (c));
 * then an `exact` rule matches when the bytes are equal, a `prefix` rule
 * when the command's argv starts with the rule's words, word for word (a
 * word boundary by construction: `npm run` matches `npm run test`, not
 * `npm runx`). A rule never lets through what the literal-word test rejects,
 * nor a shell builtin that changes the session shell itself (`cd`,
 * `source`, `printf -v`, …: `SHELL_STATE_BUILTINS` in src/shared/words.ts):
 * rules run their command in the run's shell, where that would change what
 * every later command does; nor a builtin or reserved word that evaluates
 * or runs any of its words (`test -v 'a[$(id)]'`, `let`, `time eval …`:
 * src/policy/builtins.ts classifies every one).
 * @returns the rule's id, or why none matched (for `needsApproval`)
 */
export function matchRule(command: string, allRules: readonly RuleToMatch[]): { id: number } | { reason: string } {
  // A rule for text editor edits never lets a bash command run (a program named like the tool could be put on the PATH).
  const rules = allRules.filter((r) => !isEditRule(r));
  if (rules.length === 0) return { reason: 'no approval rule' };
  const words = literalArgv(command);
  if (!words.ok) return { reason: `no approval rule applies to a command that is not plain words (${words.reason})` };
  const argv = words.argv;
  const assignment = argv.findIndex((w, i) => i > 0 && ASSIGNMENT_LIKE.test(w));
  if (assignment > 0) return { reason: `no approval rule applies: word ${assignment + 1} looks like a variable assignment` };
  const builtin = shellStateBuiltin(argv);
  if (builtin !== undefined) {
    return { reason: `no approval rule applies to the shell builtin ${builtin}: it would change the session shell for later commands` };
  }
  // Every other builtin and keyword, by the table of src/policy/builtins.ts: bash must evaluate none of the words.
  const evaluated = builtinRefusal(argv);
  if (evaluated !== undefined) return { reason: `no approval rule applies: ${evaluated}` };
  for (const rule of rules) {
    if (rule.kind === 'exact' && rule.text === command) return { id: rule.id };
    if (rule.kind === 'prefix') {
      const prefix = tokenize(rule.text);
      if (prefix.ok && prefix.argv.length > 0 && prefix.argv.length <= argv.length && prefix.argv.every((w, i) => w === argv[i])) {
        return { id: rule.id };
      }
    }
  }
  return { reason: 'no approval rule matches' };
}

/**
 * Decides whether `command` may run without a human.
 * - `auto`: `run`, with empty `argv` and `paths`.
 * - `always`: `ask`.
 * - `policy`: `run` only when rules (a)–(g) of this module all hold (see the
 *   module comment), else `ask` naming the first rule that failed.
 * @param context where the command runs; without it, any command that reads
 *   a path (explicit or implicit) asks under `policy`. Both fields must be
 *   absolute paths without `.`, `..` or empty components (a trailing slash
 *   is fine) and the workspace must not be `/`, else asks.
 */
export function decideApproval(command: string, mode: ApprovalMode, context?: PolicyContext): PolicyDecision {
  if (mode === 'auto') return { action: 'run', reason: 'approval mode is auto', argv: [], paths: [] };
  if (mode !== 'policy') return ask('approval mode is always');
  if (typeof command !== 'string') return ask('the command is not a string');
  if (context !== undefined) {
    const workspace = normalizedAbsolute(context.workspace);
    const cwd = normalizedAbsolute(context.cwd);
    if (workspace === undefined) return ask(`context.workspace ${JSON.stringify(context.workspace)} is not a normalized absolute path`);
    if (cwd === undefined) return ask(`context.cwd ${JSON.stringify(context.cwd)} is not a normalized absolute path`);
    if (workspace === '/') return ask('the workspace / would cover the whole filesystem');
    context = { workspace, cwd };
  }

  // (a)–(d)
  const words = literalArgv(command);
  if (!words.ok) return ask(words.reason);
  const argv = words.argv;

  // (e)
  const program = argv[0] as string;
  if (program.includes('/')) return ask(`program ${program} is named by a path, not looked up by name`);
  if (!READ_ONLY_PROGRAMS.includes(program)) return ask(`${program} is not on the read-only allowlist`);

  // (c), continued (after (e), so that a reason names the program first):
  // under `set -k` bash moves every assignment-like word (`LD_PRELOAD=x`,
  // `FOO+=1`, `FOO="1"`) out of argv into the program's environment.
  const assignment = argv.findIndex((w, i) => i > 0 && ASSIGNMENT_LIKE.test(w));
  if (assignment > 0) {
    return ask(
      `word ${assignment + 1} (${JSON.stringify(argv[assignment])}) looks like a variable assignment (under set -k bash moves it into the environment)`,
    );
  }

  // (f)
  const args = judgeArgs(program, argv.slice(1));
  if (!args.ok) return ask(args.reason);

  // (g)
  const paths: string[] = [];
  for (const p of args.paths) {
    const j = judgePath(p, context);
    if ('reason' in j) return ask(j.reason);
    if (!paths.includes(j.abs)) paths.push(j.abs);
  }
  const where = paths.length > 0 ? `, reading only inside the workspace` : '';
  return { action: 'run', reason: `${program} is a read-only command with allowed options${where}`, argv, paths };
}

/** Whether a rule is for text editor commands: its first word is the editor's name (src/contract `editRuleSubject`). */
export function isEditRule(rule: RuleToMatch): boolean {
  const words = tokenize(rule.text);
  return words.ok ? words.argv[0] === TEXT_EDITOR_NAME : rule.text.startsWith(`${TEXT_EDITOR_NAME} `);
}

/**
 * The first approval rule that lets a text editor command run: an `exact` rule whose text is
 * the command's rule words (`str_replace_based_edit_tool <command> <abs path>`), or a
 * `prefix` rule whose words start those words (the path is one word, whatever it holds).
 * @returns the rule's id, or why none matched
 */
export function matchEditRule(
  subject: { words: readonly [string, string, string]; text: string },
  rules: readonly RuleToMatch[],
): { id: number } | { reason: string } {
  for (const rule of rules) {
    if (!isEditRule(rule)) continue;
    if (rule.kind === 'exact' && rule.text === subject.text) return { id: rule.id };
    if (rule.kind === 'prefix') {
      const prefix = tokenize(rule.text);
      if (prefix.ok && prefix.argv.length > 0 && prefix.argv.length <= 3 && prefix.argv.every((w, i) => w === subject.words[i]))
        return { id: rule.id };
    }
  }
  return { reason: rules.length === 0 ? 'no approval rule' : 'no approval rule matches this edit' };
}
