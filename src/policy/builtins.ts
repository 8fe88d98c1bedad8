/**
 * Every bash 5.2 builtin and reserved word, classified by whether bash
 * itself evaluates or executes any of its words. An
 * approval rule approves only what a person can read in the command: its
 * words after quote removal. A builtin that reads a word as code (an array
 * subscript such as `test -v 'a[$(id)]'`, an arithmetic expression, a
 * command to run, a name to assign) runs what nobody read, so no rule may
 * let it run; nor a builtin that changes the session shell for later
 * commands (src/shared/words.ts `SHELL_STATE_BUILTINS`).
 *
 * The lists are `compgen -b` and `compgen -k` of bash 5.2.15;
 * test/unit/policy/builtins.test.ts fails when the installed bash has a
 * builtin or keyword this table does not classify. Only builtins marked
 * `plain` can be matched by a rule, and then only with the arguments their
 * `judge` accepts; test/unit/attack/builtin-words.test.ts runs real bash on
 * each plain builtin with code in every argument shape the judge lets
 * through.
 */

/** Why a builtin never matches a rule, or how a plain one's arguments are judged. */
export type BuiltinClass =
  | { kind: 'runs'; why: string }
  | { kind: 'evaluates'; why: string }
  | { kind: 'state'; why: string }
  | {
      kind: 'plain';
      /** Why no word is evaluated. */
      why: string;
      /** The reason the arguments (argv without argv[0]) are not plain for this builtin, or undefined when they are. */
      judge?: (args: readonly string[]) => string | undefined;
    };

const runs = (why: string): BuiltinClass => ({ kind: 'runs', why });
const evaluates = (why: string): BuiltinClass => ({ kind: 'evaluates', why });
const state = (why: string): BuiltinClass => ({ kind: 'state', why });

/** Arguments are refused when a word before `--` or the first operand is an option outside `allowed` (letters, bundled). */
function onlyOptions(builtin: string, allowed: string): (args: readonly string[]) => string | undefined {
  const re = new RegExp(`^-[${allowed}]+$`);
  return (args) => {
    for (const a of args) {
      if (a === '--') return undefined;
      if (!a.startsWith('-') || a === '-') return undefined;
      if (!re.test(a)) return `${builtin} option ${a} is not one that reads only (allowed: ${[...allowed].map((c) => `-${c}`).join(' ')})`;
    }
    return undefined;
  };
}

/** test / [: `-v NAME` and `-R NAME` evaluate NAME's subscript (`test -v 'a[$(id)]'` runs id). Any word equal to them is refused, operand or not. */
function judgeTest(builtin: string): (args: readonly string[]) => string | undefined {
  return (args) => {
    const op = args.find((a) => a === '-v' || a === '-R');
    return op === undefined ? undefined : `${builtin} ${op} evaluates the array subscript of the name it is given`;
  };
}

/** The reason `printf`'s arguments are not plain: `-v NAME` assigns (and evaluates NAME's subscript). */
function judgePrintf(args: readonly string[]): string | undefined {
  if (args[0]?.startsWith('-v')) return 'printf -v assigns a variable, evaluating its subscript';
  return undefined;
}

/**
 * The builtins of bash 5.2 (`compgen -b`). MAINTENANCE: keep
 * `SHELL_STATE_BUILTINS` in src/shared/words.ts a subset of the non-plain ones.
 */
export const BUILTINS: Readonly<Record<string, BuiltinClass>> = {
  '.': runs('runs a file as shell code'),
  source: runs('runs a file as shell code'),
  eval: runs('runs its words as shell code'),
  exec: runs('replaces the session shell with a program'),
  command: runs('runs another command (and skips the functions a person may have reviewed)'),
  builtin: runs('runs another builtin'),
  fc: runs('re-runs commands from the history'),
  trap: runs('stores code the shell runs later'),
  compgen: runs('-C runs a command, -F a function, -W expands and evaluates its words'),
  complete: state('stores completion code (-C, -F) in the shell'),
  compopt: state('changes completion options of the shell'),
  let: evaluates('evaluates each word as arithmetic (array subscripts run command substitutions)'),
  declare: evaluates('assigns variables and evaluates their subscripts and values'),
  typeset: evaluates('assigns variables and evaluates their subscripts and values'),
  local: evaluates('assigns variables and evaluates their subscripts and values'),
  export: evaluates('assigns and exports variables, evaluating subscripts'),
  readonly: evaluates('assigns variables, evaluating subscripts'),
  unset: evaluates('evaluates the subscripts of the names it unsets'),
  read: evaluates('assigns the names it is given, evaluating their subscripts'),
  mapfile: evaluates('assigns an array and runs -C code'),
  readarray: evaluates('assigns an array and runs -C code'),
  getopts: evaluates('assigns the name it is given, evaluating its subscript'),
  shift: evaluates('evaluates its count as arithmetic and changes the positional parameters'),
  return: evaluates('evaluates its status as arithmetic and returns from the shell'),
  exit: evaluates('evaluates its status and ends the session shell'),
  logout: state('ends the session shell'),
  break: evaluates('evaluates its count and leaves loops'),
  continue: evaluates('evaluates its count and leaves loops'),
  ulimit: evaluates('evaluates its limit as arithmetic and lowers the shell limits'),
  alias: state('defines aliases that rewrite later commands'),
  unalias: state('removes aliases'),
  set: state('changes shell options and positional parameters'),
  shopt: state('changes shell options'),
  enable: state('enables, disables or loads builtins'),
  hash: state('changes which program a name runs'),
  cd: state('changes the shell directory'),
  pushd: state('changes the shell directory'),
  popd: state('changes the shell directory'),
  umask: state('changes the file creation mask'),
  bind: state('changes key bindings (and can bind shell commands)'),
  history: state('changes the history, which fc runs'),
  bg: state('resumes jobs'),
  fg: state('brings a job to the foreground and waits on it'),
  disown: state('removes jobs from the shell'),
  suspend: state('stops the session shell'),
  wait: { kind: 'plain', why: 'waits; -p assigns a variable (refused)', judge: onlyOptions('wait', 'fn') },
  kill: { kind: 'plain', why: 'sends the signal it names to the processes it names; pids and signals are read as numbers or names' },
  ':': { kind: 'plain', why: 'does nothing with its words' },
  true: { kind: 'plain', why: 'does nothing with its words' },
  false: { kind: 'plain', why: 'does nothing with its words' },
  echo: { kind: 'plain', why: 'prints its words' },
  printf: { kind: 'plain', why: 'prints; numbers are read as numbers, not evaluated', judge: judgePrintf },
  pwd: { kind: 'plain', why: 'prints the directory', judge: onlyOptions('pwd', 'LP') },
  test: { kind: 'plain', why: 'compares words; numbers are read as numbers, not evaluated', judge: judgeTest('test') },
  '[': { kind: 'plain', why: 'compares words; numbers are read as numbers, not evaluated', judge: judgeTest('[') },
  help: { kind: 'plain', why: 'prints help' },
  type: { kind: 'plain', why: 'prints what a name is' },
  times: { kind: 'plain', why: 'prints times' },
  caller: { kind: 'plain', why: 'prints the call stack; its frame is read as a number' },
  dirs: { kind: 'plain', why: 'prints the directory stack; -c clears it (refused)', judge: onlyOptions('dirs', 'lpv') },
  jobs: { kind: 'plain', why: 'lists jobs; -x runs a command (refused)', judge: onlyOptions('jobs', 'lnprs') },
};

/**
 * The reserved words of bash 5.2 (`compgen -k`). As a command's first word
 * they start a compound command (`time eval …`, `coproc …`, `[[ -v … ]]`,
 * `function f …`): none matches a rule. Quoted they are no keyword, and name
 * no builtin or program either; they ask all the same.
 */
export const KEYWORDS: readonly string[] = Object.freeze(
  'if then else elif fi case esac for select while until do done in function time { } ! [[ ]] coproc'.split(' '),
);

/**
 * Why no approval rule may run `argv` in the session shell because of the
 * builtin or keyword it starts with, or undefined when argv[0] is neither or
 * a plain builtin with plain arguments. Quoting the name does not stop bash
 * from running its builtin, so argv[0] is judged after quote removal.
 */
export function builtinRefusal(argv: readonly string[]): string | undefined {
  const name = argv[0];
  if (name === undefined) return undefined;
  if (KEYWORDS.includes(name)) return `${name} is a bash reserved word: it starts a compound command, not one a rule can read`;
  const c = Object.hasOwn(BUILTINS, name) ? BUILTINS[name] : undefined;
  if (c === undefined) return undefined;
  if (c.kind === 'runs') return `the bash builtin ${name} runs code a person did not read: it ${c.why}`;
  if (c.kind === 'evaluates') return `the bash builtin ${name} evaluates its words as code: it ${c.why}`;
  if (c.kind === 'state') return `the bash builtin ${name} changes the session shell for later commands: it ${c.why}`;
  return c.judge?.(argv.slice(1));
}
