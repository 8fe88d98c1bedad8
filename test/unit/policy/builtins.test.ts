/**
 * The builtin table (src/policy/builtins.ts) classifies every builtin and
 * reserved word of the installed bash: a bash with a new builtin fails here
 * until someone decides whether it evaluates its words.
 */
import { execFileSync } from 'node:child_process';
import { BUILTINS, KEYWORDS } from '../../../src/policy/builtins';
import { SHELL_STATE_BUILTINS } from '../../../src/shared/words';

const compgen = (flag: string) =>
  execFileSync('bash', ['-c', `compgen ${flag}`], { encoding: 'utf8' })
    .split('\n')
    .filter((w) => w !== '');

test('every builtin of `compgen -b` is classified', () => {
  const missing = compgen('-b').filter((b) => !Object.hasOwn(BUILTINS, b));
  expect(missing).toEqual([]);
});

test('every reserved word of `compgen -k` is classified', () => {
  expect(compgen('-k').filter((k) => !KEYWORDS.includes(k))).toEqual([]);
});

test('no builtin the contract calls shell-changing is plain here', () => {
  for (const b of SHELL_STATE_BUILTINS) {
    if (b === 'coproc') expect(KEYWORDS).toContain(b);
    else expect({ b, kind: BUILTINS[b]?.kind }).not.toEqual({ b, kind: 'plain' });
  }
});
