/**
 * Attacks on approval rules (`approve --always` / `--always-prefix`), as the
 * model would try them: commands a rule would match by its words or bytes
 * but that make bash do more than the person approved. `matchRule` runs on
 * the real tree-sitter parser here; the commands a rule does match are also
 * run through real bash (with hostile shell options set), which must build
 * exactly the argv the rule was matched on.
 */
import { spawnSync } from 'node:child_process';
import { literalArgv, matchRule } from '../../../src/policy';
import type { RuleToMatch } from '../../../src/contract';

const prefix = (id: number, text: string): RuleToMatch => ({ id, kind: 'prefix', text });
const exact = (id: number, text: string): RuleToMatch => ({ id, kind: 'exact', text });

const RULES: RuleToMatch[] = [prefix(1, 'npm run'), exact(2, 'git status'), prefix(3, 'make')];

/** [command, a substring of the reason it does not match] */
type Refused = [string, string];

function refused(rows: Refused[], rules: RuleToMatch[] = RULES) {
  test.each(rows)('%j matches no rule (%s)', (command, why) => {
    expect(matchRule(command, rules)).toEqual({ reason: expect.stringContaining(why) });
  });
}

describe('operators after an approved prefix', () => {
  refused([
    ['npm run test; rm -rf ~', 'command list'],
    ['npm run test;', 'not plain words'],
    ['npm run test && curl x', 'list (&&)'],
    ['npm run test || id', 'list (||)'],
    ['npm run test | sh', 'pipeline'],
    ['npm run test |& sh', 'pipeline'],
    ['npm run test &', 'background'],
    ['npm run test & id', 'not plain words'],
    ['npm run test > ~/.bashrc', 'redirection'],
    ['npm run test >> f', 'redirection'],
    ['npm run test < /etc/shadow', 'redirection'],
    ['npm run test 2>&1', 'redirection'],
    ['npm run test <<< x', 'here-string'],
    ['npm run test << EOF', 'not plain words'],
    ['npm run <(id)', 'not plain words'],
    ['npm run >(id)', 'not plain words'],
    ['(npm run test)', 'subshell'],
    ['{ npm run test; }', 'not plain words'],
    ['! npm run test', 'negation'],
    ['if npm run test; then id; fi', 'not plain words'],
    ['npm run test # && id', 'comment'],
    ['function npm { id; }', 'not plain words'],
  ]);
});

describe('expansions, globs and escapes', () => {
  refused([
    ['npm run $(id)', 'command substitution'],
    ['npm run `id`', 'not plain words'],
    ['npm run "$(id)"', 'not plain words'],
    ['npm run ${PATH}', 'not plain words'],
    ['npm run $PATH', 'not plain words'],
    ["npm run $'\\x41'", "ANSI-C quoting $'...'"],
    ['npm run $"x"', 'not plain words'],
    ['npm run $((1+1))', 'not plain words'],
    ['npm run *', 'globbing'],
    ['npm run ?', 'not plain words'],
    ['npm run [ab]', 'not plain words'],
    ['npm run @(x)', 'not plain words'],
    ['npm run !(x)', 'not plain words'],
    ['npm run {a,b}', 'not plain words'],
    ['npm run ~', 'tilde'],
    ['npm run ~root/x', 'tilde'],
    ['npm run !!', 'not plain words'],
    ['npm run \\;', 'backslash'],
    ['npm r\\un test', 'backslash'],
    ['npm\\ run test', 'not plain words'],
    ['npm run "a\\"b"', 'not plain words'],
    ['npm run "a!b"', 'not plain words'],
  ]);
});

describe('characters bash or a terminal reads differently', () => {
  refused([
    ['npm run test\nid', 'control character U+000A'],
    ['npm run test\rid', 'control character U+000D'],
    ['npm run test\r', 'control character U+000D'],
    ['npm run\ttest', 'control character U+0009'],
    ['npm run test\0id', 'control character U+0000'],
    ['npm run test\x1b[2Kid', 'control character U+001B'],
    ['npm run test\x7f', 'control character U+007F'],
    ['npm run te\u0085st', 'non-ASCII character U+0085'],
    ['npm\u00a0run test', 'non-ASCII character U+00A0'],
    ['npm run te\u200bst', 'non-ASCII character U+200B'],
    ['npm run test\u202e', 'non-ASCII character U+202E'],
    ['\uff4epm run test', 'non-ASCII character U+FF4E'],
    ['npm run t\u0435st', 'non-ASCII character U+0435'],
    ['git status\n', 'control character U+000A'],
    ['git status\r\n', 'control character U+000D'],
  ]);
});

describe('assignment words and quoting tricks', () => {
  refused([
    ['LD_PRELOAD=./x.so npm run test', 'variable assignment'],
    ['PATH=. npm run test', 'variable assignment'],
    ['npm run LD_PRELOAD=./x.so test', 'looks like a variable assignment'],
    ['npm run A+=b', 'looks like a variable assignment'],
    ['npm run _=x', 'looks like a variable assignment'],
    ['npm run "LD_PRELOAD=./x.so"', 'looks like a variable assignment'],
    ["npm run 'LD_PRELOAD'=./x.so", 'looks like a variable assignment'],
    ["npm run L'D_PRELOAD=./x.so'", 'looks like a variable assignment'],
    ['npm run a[0]=x', 'not plain words'],
    ['npm run "x', 'not plain words'],
    ["npm run 'x", 'not plain words'],
    ["npm run 'a'\\''b'", 'not plain words'],
  ]);
});

describe('prefix boundaries', () => {
  refused([
    ['npm run-script test', 'no approval rule matches'],
    ['npm runx', 'no approval rule matches'],
    ['npm ru', 'no approval rule matches'],
    ['npm', 'no approval rule matches'],
    ['npm "run test"', 'no approval rule matches'],
    ['npmrun test', 'no approval rule matches'],
    ['npx run test', 'no approval rule matches'],
    ['NPM run test', 'no approval rule matches'],
    ['./npm run test', 'no approval rule matches'],
    ['/usr/bin/npm run test', 'no approval rule matches'],
    ['makefile', 'no approval rule matches'],
    ['make-evil', 'no approval rule matches'],
  ]);

  test('words equal after quote removal match, and bash builds that same argv', () => {
    for (const c of ['npm run test', 'npm  run  test', "npm 'run' test", 'npm "run" test', "n'p'm run test", ' npm run test ', 'npm run']) {
      expect({ c, m: matchRule(c, RULES) }).toEqual({ c, m: { id: 1 } });
    }
  });
});

describe('exact rules are byte-equal and still plain words', () => {
  refused([
    ['git status ', 'no approval rule matches'],
    [' git status', 'no approval rule matches'],
    ['git  status', 'no approval rule matches'],
    ["git 'status'", 'no approval rule matches'],
    ['git status --porcelain', 'no approval rule matches'],
    ['git status;', 'not plain words'],
  ]);

  const dangerous: Array<[string, string]> = [
    ['a list', 'git status; id'],
    ['a newline', 'git status\nid'],
    ['a redirection', 'git status > /etc/x'],
    ['a substitution', 'git status $(id)'],
    ['4107 characters', `git status ${'a'.repeat(4096)}`],
  ];
  test.each(dangerous)('an exact rule holding its own command with %s never lets it run', (_what, command) => {
    expect(matchRule(command, [exact(9, command)])).toEqual({ reason: expect.stringContaining('not plain words') });
  });
});

describe('malformed rules match nothing', () => {
  refused(
    [
      ['npm run test', 'no approval rule matches'],
      ['npm run test; id', 'not plain words'],
    ],
    [prefix(1, ''), prefix(2, '   '), prefix(3, 'npm run;'), prefix(4, 'npm $X'), prefix(5, 'npm\nrun'), prefix(6, "npm 'run")],
  );
  test('no rules: nothing matches', () => {
    expect(matchRule('npm run test', [])).toEqual({ reason: 'no approval rule' });
  });
});

describe('length', () => {
  test('a command past the longest judged length matches no rule, even an exact one', () => {
    const long = `npm run ${'a'.repeat(5000)}`;
    expect(matchRule(long, [...RULES, exact(7, long)])).toEqual({ reason: expect.stringContaining('longer than 4096') });
  });
});

describe('shell builtins that change the session shell for later commands', () => {
  // A rule runs its command in the run's long-lived bash. A builtin there
  // does not just run: it changes what every later command does (PATH, the
  // directory, functions, options), including ones a person approves later
  // by reading their text.
  const builtins: string[] = [
    'printf -v PATH %s ./evil-bin',
    'printf -vPATH %s ./evil-bin',
    'cd /tmp',
    'source ./evil.sh',
    '. ./evil.sh',
    'eval id',
    'exec ./evil',
    'builtin cd /tmp',
    'command cd /tmp',
    'read PATH',
    'readarray -t PATH',
    'mapfile PATH',
    'getopts a PATH',
    'set -k',
    'shopt -s expand_aliases',
    'hash -p ./evil git',
    'umask 0',
    'ulimit -n 1',
    'pushd /tmp',
    'trap id DEBUG',
    'enable -n cd',
    'shift',
    'unalias -a',
    'popd',
    'fc -s x',
    'coproc ./evil',
  ];
  test.each(builtins)('%j matches no rule, even a rule for its own words', (command) => {
    const argv = (literalArgv(command) as { argv: string[] }).argv;
    expect(argv).toBeDefined();
    const rules = [exact(1, command), prefix(2, argv[0] as string)];
    expect(matchRule(command, rules)).toEqual({ reason: expect.stringContaining('shell builtin') });
    // Quoting the name does not help: bash still runs its builtin.
    const quoted = `'${argv[0]}'${command.slice((argv[0] as string).length)}`;
    expect(matchRule(quoted, [exact(1, quoted), prefix(2, argv[0] as string)])).toEqual({
      reason: expect.stringContaining('shell builtin'),
    });
  });
  // Declarations, unset and NAME=value words never pass the literal-word test.
  refused(
    [
      ['alias git=./evil', 'looks like a variable assignment'],
      ['export PATH', 'declaration'],
      ['declare -x PATH', 'declaration'],
      ['typeset -x PATH', 'declaration'],
      ['readonly PATH', 'declaration'],
      ['local x', 'declaration'],
      ['unset PATH', 'unset'],
      ['let PATH=1', 'looks like a variable assignment'],
    ],
    [prefix(1, 'alias'), prefix(2, 'export'), prefix(3, 'declare'), prefix(4, 'typeset'), prefix(5, 'readonly')].concat([
      prefix(6, 'local'),
      prefix(7, 'unset'),
      prefix(8, 'let'),
    ]),
  );
  test('programs and harmless words still match', () => {
    for (const c of ['echo hi', 'git status', 'npm run build', 'printf %s hi', 'printf -- -v', 'ls -la', 'kill 123']) {
      const argv = (literalArgv(c) as { argv: string[] }).argv;
      expect({ c, m: matchRule(c, [prefix(1, argv[0] as string)]) }).toEqual({ c, m: { id: 1 } });
    }
  });
});

describe('differential: bash builds the argv a rule matched, under hostile shell options', () => {
  // Each command is one the rules match; bash runs it with `set -k`, brace
  // expansion, extglob, nullglob and failglob on, and `npm` a function that
  // prints its argv and whether LD_PRELOAD reached it.
  const matched = [
    'npm run test',
    "npm run 'a b' \"c;d\" ''",
    'npm run a\'b\'"c" x,y x:y %1 @x +x -=x =x',
    "npm run '$(id)' '`id`' '*' '~' '{a,b}' \"*\" \"~\" \"{a,b}\" '!x'",
    'npm run -x=1 1=x .=x ./x=1',
  ];
  test.each(matched)('%j', (command) => {
    const m = matchRule(command, RULES);
    expect(m).toEqual({ id: 1 });
    const argv = (literalArgv(command) as { argv: string[] }).argv;
    const script = [
      'set -k -B; shopt -s extglob nullglob failglob',
      `npm() { printf '%s\\0' npm "$@"; printf 'LD_PRELOAD=%s\\0' "\${LD_PRELOAD-unset}"; }`,
      command,
    ].join('\n');
    const r = spawnSync('bash', ['--noprofile', '--norc', '-c', script], { encoding: 'utf8', env: { PATH: process.env.PATH } });
    expect(r.status).toBe(0);
    expect(r.stdout.split('\0').slice(0, -1)).toEqual([...argv, 'LD_PRELOAD=unset']);
  });
});
