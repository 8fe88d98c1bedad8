/**
 * The approval policy: which commands run without a human. Pure and
 * deterministic (workflow code).
 */
import type { ApprovalMode } from '../contract';

/**
 * Programs that only read, allowed to run unasked under the `policy` mode
 * when the command is one simple command. Programs that can write through a
 * flag (`sort -o`, `tree -o`, `date -s`, `env cmd`) are deliberately absent.
 */
export const READ_ONLY_PROGRAMS: readonly string[] = [
  'ls',
  'cat',
  'echo',
  'pwd',
  'grep',
  'find',
  'wc',
  'head',
  'tail',
  'stat',
  'du',
  'df',
  'file',
  'whoami',
  'uname',
  'realpath',
  'basename',
  'dirname',
];

/**
 * Shell syntax that makes a command more than one simple command, or
 * redirects, or substitutes: `;` `&` (and `&&`) `|` (and `||`) `>` (and `>>`)
 * `<` `$(` `` ` `` and line breaks. Checked anywhere in the text, glued to a
 * word or not, inside quotes or not: a false "ask" costs a click, a false
 * "run" can cost a repository.
 */
const SHELL_OPERATORS: readonly string[] = [';', '&', '|', '>', '<', '$(', '`', '\n', '\r'];

/**
 * Longer operators named in the reason when they start where the first
 * operator was found (`&&` rather than `&`), longest first. Naming only:
 * whether a command asks is decided by {@link SHELL_OPERATORS} alone.
 */
const LONGER_OPERATORS: readonly string[] = ['<<<', '&&', '||', '|&', '>>', '>|', '&>', '<<', '<(', '>(', ';;'];

/**
 * The shell operator that occurs first in `command`, as the person reading
 * the reason would name it: the longest operator starting at that position
 * (`&&` in `touch a && echo b`, `>>` in `echo x>>f`).
 * @returns undefined when the command holds none of {@link SHELL_OPERATORS}
 */
export function firstShellOperator(command: string): string | undefined {
  let at = -1;
  for (const op of SHELL_OPERATORS) {
    const i = command.indexOf(op);
    if (i >= 0 && (at < 0 || i < at)) at = i;
  }
  if (at < 0) return undefined;
  const longer = LONGER_OPERATORS.find((op) => command.startsWith(op, at));
  return longer ?? SHELL_OPERATORS.find((op) => command.startsWith(op, at));
}

/** `find` actions that execute or write. */
const FIND_WRITE_ACTIONS = /^-(exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$/;

/** Outcome of the policy for one command. `reason` says why, for the UI and the CLI. */
export interface PolicyDecision {
  action: 'run' | 'ask';
  reason: string;
}

/**
 * Decides whether `command` may run without a human.
 * - `auto`: always `run`.
 * - `always`: always `ask`.
 * - `policy`: `run` only for one simple command whose program (first word)
 *   is in {@link READ_ONLY_PROGRAMS} and that holds none of the shell
 *   operators; `find` with an executing or writing action asks too.
 */
export function decideApproval(command: string, mode: ApprovalMode): PolicyDecision {
  if (mode === 'auto') return { action: 'run', reason: 'approval mode is auto' };
  if (mode === 'always') return { action: 'ask', reason: 'approval mode is always' };

  const operator = firstShellOperator(command);
  if (operator !== undefined) {
    return { action: 'ask', reason: `contains the shell operator ${JSON.stringify(operator)}` };
  }
  const words = command
    .trim()
    .split(/\s+/)
    .filter((w) => w.length > 0);
  const program = words[0];
  if (program === undefined) return { action: 'ask', reason: 'empty command' };
  if (!READ_ONLY_PROGRAMS.includes(program)) {
    return { action: 'ask', reason: `${program} is not on the read-only allowlist` };
  }
  if (program === 'find') {
    const action = words.find((w) => FIND_WRITE_ACTIONS.test(w));
    if (action !== undefined) return { action: 'ask', reason: `find ${action} executes or writes` };
  }
  return { action: 'run', reason: `${program} is a read-only command` };
}
