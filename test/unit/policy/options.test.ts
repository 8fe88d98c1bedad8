/**
 * The option allowlists name real options of the installed programs. A long
 * name matters most: getopt_long accepts any unambiguous abbreviation, so a
 * listed name that is not a real option could abbreviate one that is
 * (`tail --fol` is `tail --follow`). Each listed option must appear in the
 * program's own `--help`. Skipped for a program that is not installed; the
 * bash builtins (`echo`, `pwd`, `true`, `false`) and `find` (whose
 * predicates are never abbreviated) are not getopt programs.
 */
import { spawnSync } from 'node:child_process';
import { PROGRAMS } from '../../../src/policy/programs';

const NOT_GETOPT = new Set(['echo', 'pwd', 'true', 'false', 'find']);

function help(program: string): string | undefined {
  const r = spawnSync(program, ['--help'], { encoding: 'utf8', env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' } });
  if (r.error) return undefined;
  return `${r.stdout}\n${r.stderr}`;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&');

describe.each(Object.keys(PROGRAMS).filter((p) => !NOT_GETOPT.has(p)))('%s', (program) => {
  const text = help(program);
  const spec = PROGRAMS[program]!;
  (text === undefined ? test.skip : test)('every allowlisted option is in its --help', () => {
    const missing: string[] = [];
    for (const name of Object.keys(spec.long)) {
      if (!new RegExp(`--${escape(name)}(?![\\w-])`).test(text!)) missing.push(`--${name}`);
    }
    for (const letter of Object.keys(spec.short)) {
      if (!new RegExp(`(^|[\\s,\\[])-${escape(letter)}(?![\\w-])`, 'm').test(text!)) missing.push(`-${letter}`);
    }
    expect(missing).toEqual([]);
  });
});
