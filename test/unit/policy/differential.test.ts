/**
 * Differential test against real bash: "judged on what bash will actually
 * execute". For every generated command that the policy marks `run`, bash
 * builds the argv itself, with every word of the command (program
 * included) handed to a function that prints its arguments, and that argv
 * must equal the policy's `argv`. The same is checked for every command the
 * strict tokenizer alone accepts.
 *
 * Safety: the alphabet has no `( ) ` ; | & < >`, newline or command names
 * other than the printing function's arguments, so even a policy bug could
 * only make bash expand a word, never run a program. Bash runs in a scratch
 * directory holding a few files (so that a glob the policy missed would
 * visibly expand), with HOME unset (so a missed `~` expands to the passwd
 * home), `x` set to a value with a space (so a missed `$x` visibly splits).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { decideApproval } from '../../../src/policy';
import { tokenize } from '../../../src/shared/words';

/** Deterministic PRNG (mulberry32), so a failure reproduces. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Word pieces, tricky ones and plain ones; glued or separated by spaces. */
const TRICKY = [
  "'",
  '"',
  '\\',
  '\\ ',
  '\\"',
  "\\'",
  '\\*',
  '$',
  '$x',
  '${x}',
  '${x:-d}',
  '${x@Q}',
  '${!x}',
  '$HOME',
  '$IFS',
  '$1',
  '$@',
  '$#',
  '$((1+2))',
  '$[3]',
  "$'a\\tb'",
  '$"loc"',
  '{a,b}',
  '{1..3}',
  '{',
  '}',
  '{}',
  '*',
  '?',
  '[a]',
  '[!a]',
  'a*',
  '~',
  '~/a',
  '~root',
  'x=~',
  'a=~/b',
  ':~',
  '#',
  'a#b',
  '!',
  '!!',
  '^',
  '"$x"',
  '"${x}"',
  '"a\\b"',
  '"a\\$"',
  '"!x"',
  '"a*b"',
  "'a*b'",
  "'$x'",
  "'\\'",
  "'a b'",
  '"a b"',
  "''",
  '""',
  '"\'"',
  "'\"'",
  '"~"',
  "'~'",
  '"{a,b}"',
  "'#'",
  '"#"',
  '-',
  '--',
  '=',
  ',',
  '%',
  '@',
  '+',
  ':',
];
const PLAIN = [
  'a',
  'b',
  'ab',
  'x.ts',
  'd',
  'd/f',
  './a',
  '-n',
  '-e',
  '-l',
  '-r',
  '-1',
  '--',
  '-s',
  'a=b',
  '--color=never',
  '5',
  'src',
  '.',
  'n,m',
  '@x',
  '%s',
  '+3',
  'a:b',
];
const PROGRAMS = [
  'echo',
  'ls',
  'cat',
  'grep',
  'grep -r',
  'find',
  'head -n',
  'wc',
  'basename',
  'du',
  'stat',
  'file',
  'realpath',
  "'echo'",
  'ec"ho"',
];

function generate(count: number, seed: number): string[] {
  const rand = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const out = new Set<string>();
  while (out.size < count) {
    let cmd = pick(PROGRAMS);
    const words = 1 + Math.floor(rand() * 4);
    for (let w = 0; w < words; w++) {
      cmd += rand() < 0.15 ? '  ' : ' ';
      const pieces = 1 + Math.floor(rand() * 3);
      for (let p = 0; p < pieces; p++) cmd += rand() < 0.45 ? pick(TRICKY) : pick(PLAIN);
    }
    out.add(cmd);
  }
  return [...out];
}

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'policy-diff-'));
  for (const f of ['a', 'b', 'ab', 'x.ts']) fs.writeFileSync(path.join(dir, f), '');
  fs.mkdirSync(path.join(dir, 'd'));
  fs.writeFileSync(path.join(dir, 'd', 'f'), '');
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** The argv bash builds for `command`, every word included, or undefined when bash fails. */
function bashArgv(command: string): string[] | undefined {
  const script = `q() { printf '%s\\0' "$@"; }; q ${command}`;
  const r = spawnSync('bash', ['--norc', '--noprofile', '-c', script], {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', x: 'one two', LC_ALL: 'C' },
    encoding: 'utf8',
    timeout: 10_000,
  });
  if (r.status !== 0) return undefined;
  const words = r.stdout.split('\0');
  words.pop();
  return words;
}

describe('differential against real bash', () => {
  const corpus = generate(3000, 20261201);

  test('every command the policy runs gets exactly the argv bash builds', () => {
    const ctx = { workspace: dir, cwd: dir };
    const ran: string[] = [];
    const mismatches: string[] = [];
    for (const command of corpus) {
      const d = decideApproval(command, 'policy', ctx);
      if (d.action !== 'run') continue;
      ran.push(command);
      const expected = bashArgv(command);
      if (JSON.stringify(expected) !== JSON.stringify(d.argv)) {
        mismatches.push(`${JSON.stringify(command)}: policy ${JSON.stringify(d.argv)}, bash ${JSON.stringify(expected)}`);
      }
    }
    expect(mismatches).toEqual([]);
    // The corpus must exercise the run side, not only the asks.
    expect(ran.length).toBeGreaterThan(300);
    // ...including quoted words.
    expect(ran.filter((c) => /['"]/.test(c)).length).toBeGreaterThan(100);
  });

  test('every command the strict tokenizer accepts gets exactly the argv bash builds', () => {
    let accepted = 0;
    const mismatches: string[] = [];
    for (const command of corpus) {
      const t = tokenize(command);
      if (!t.ok) continue;
      accepted++;
      const expected = bashArgv(command);
      if (JSON.stringify(expected) !== JSON.stringify(t.argv)) {
        mismatches.push(`${JSON.stringify(command)}: tokenizer ${JSON.stringify(t.argv)}, bash ${JSON.stringify(expected)}`);
      }
    }
    expect(mismatches).toEqual([]);
    expect(accepted).toBeGreaterThan(400);
  });

  test('the harness sees what bash rewrites (a missed expansion would be caught)', () => {
    expect(bashArgv('echo *')).toEqual(['echo', 'a', 'ab', 'b', 'd', 'x.ts']);
    expect(bashArgv('echo $x')).toEqual(['echo', 'one', 'two']);
    expect(bashArgv('echo ~')).not.toEqual(['echo', '~']);
    expect(bashArgv('echo {a,b}')).toEqual(['echo', 'a', 'b']);
    expect(bashArgv('echo a\\ b \'c\'"d"')).toEqual(['echo', 'a b', 'cd']);
  });
});
