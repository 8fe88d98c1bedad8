/**
 * Round 3, kind 4: an "always allow" prefix naming a builtin let through
 * arguments that the builtin itself evaluates (`test -v 'a[$(id)]'` ran id
 * under a rule for `test`). The attack: for every builtin and reserved word
 * of `compgen -b` / `compgen -k`, a rule for its name, and code in every
 * argument shape we could think of; whatever matchRule lets through is run
 * by real bash, which must not run the code. Payloads sit in single quotes,
 * which the literal-word test accepts: quote removal leaves `a[$(touch M)]`.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { matchRule } from '../../../src/policy';
import type { RuleToMatch } from '../../../src/contract';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'builtin-words-'));
const marker = path.join(dir, 'M');
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const prefix = (text: string): RuleToMatch => ({ id: 1, kind: 'prefix', text });
/** Code bash runs if it evaluates the word as a subscript, arithmetic or a command. */
const P = `'a[$(touch ${marker})]'`;
const Q = `'touch ${marker}'`;
/** Argument shapes: options of every letter before the payload, the payload as operand, count, format, jobspec, name. */
const SHAPES: string[] = [
  P,
  `${P} ${P}`,
  `-- ${P}`,
  `1 ${P}`,
  `${P} -eq 1`,
  `1 -lt ${P}`,
  `-t ${P}`,
  `-o ${P}`,
  `'(' -v ${P} ')'`,
  `! -v ${P}`,
  `-n -v ${P}`,
  `%${P.slice(1, -1)}`,
  `'%d' ${P}`,
  `'%*d' ${P} 1`,
  `'%.*s' ${P} x`,
  `'%(%s)T' ${P}`,
  `'%b' ${P}`,
  `'%q' ${P}`,
  `-- -v ${P} x`,
  `+${P.slice(1, -1)}`,
  Q,
  `-x ${Q}`,
  `-lx ${Q}`,
  `-p ${P} -n`,
  'X',
  'X -eq 1',
  '-v X',
  ...'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'.split('').flatMap((c) => [`-${c} ${P}`, `-${c} ${Q}`, `-${c}${P}`]),
];
const builtins = execFileSync('bash', ['-c', 'compgen -b; compgen -k'], { encoding: 'utf8' })
  .split('\n')
  .filter((w) => w !== '');

/** Runs `command` in a bash like the session's (a background job, arrays, a variable holding code) and says whether the code ran. */
function ranCode(command: string): boolean {
  fs.rmSync(marker, { force: true });
  const preamble = `declare -a a; declare -A A; X='a[$(touch ${marker})]'; sleep 0.05 & `;
  try {
    execFileSync('bash', ['-c', `${preamble}${command}`], { stdio: 'ignore', timeout: 3000, input: '' });
  } catch {
    // A builtin failing is fine; only the marker counts.
  }
  return fs.existsSync(marker);
}

test('sanity: the payloads do run through builtins that evaluate them', () => {
  expect(ranCode(`test -v ${P}`)).toBe(true);
  expect(ranCode(`let X`)).toBe(true);
  expect(ranCode(`time eval ${Q}`)).toBe(true);
});

test.each(builtins)('a rule for %j lets through no argument bash evaluates', (name) => {
  const through: string[] = [];
  // `[` needs its closing word; a rule for `[` is a prefix, so the command carries it (quoted: `]` is not a plain character).
  const closing = name === '[' ? " ']'" : '';
  for (const shape of SHAPES) {
    const command = [`'${name}' ${shape}${closing}`, `${name} ${shape}${closing}`].find(
      (c) => 'id' in matchRule(c, [prefix(`'${name}'`), prefix(name)]),
    );
    if (command !== undefined && ranCode(command)) through.push(command);
  }
  expect(through).toEqual([]);
});

test('the reported bypasses ask, with the reason', () => {
  for (const [command, rule, why] of [
    [`test -v ${P}`, 'test', /test -v evaluates/],
    [`'[' -v ${P} ']'`, "'['", /\[ -v evaluates/],
    [`test -R ${P}`, 'test', /-R evaluates/],
    [`time eval ${Q}`, 'time', /reserved word/],
    [`let X`, 'let', /shell builtin let/],
    [`wait -p ${P}`, 'wait', /wait option -p/],
    [`jobs -x ${Q}`, 'jobs', /jobs option -x/],
    [`compgen -W ${P}`, 'compgen', /runs code/],
    [`exit 1`, 'exit', /evaluates/],
  ] as const) {
    expect(matchRule(command, [prefix(rule)])).toEqual({ reason: expect.stringMatching(why) });
  }
  // Plain uses still match.
  for (const [command, rule] of [
    ['test -f README.md', 'test'],
    ["'[' -d src ']'", "'['"],
    ['printf %s x', 'printf'],
    ['echo -n hi', 'echo'],
    ['jobs -l', 'jobs'],
    ['kill 123', 'kill'],
  ] as const)
    expect(matchRule(command, [prefix(rule)])).toHaveProperty('id');
});
