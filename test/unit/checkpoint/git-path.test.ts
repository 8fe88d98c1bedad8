/**
 * src/checkpoint/git-path.ts against git itself: every name git's `verify_path` refuses (`update-index --index-info`
 * prints `Ignoring path`) is refused by `gitRefusesPath`, and no other, for names an attacker would pick (NTFS short
 * names and trailing dots, streams, backslashes, HFS+ ignorable code points, `.gitmodules` as a symlink) and for
 * thousands of random names built from their pieces.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gitRefusesFolder, gitRefusesPath, type GitPathKind } from '../../../src/checkpoint/git-path';

/** `s` as measure spells names: each byte of its UTF-8 one latin1 character. */
const bytes = (s: string): string => Buffer.from(s, 'utf8').toString('latin1');

const ATTACK_NAMES = [
  'git~1/x',
  'GIT~1/x',
  'git~1',
  'git~1:x/y',
  '.GIT/config',
  'a/.Git/b',
  '.git./x',
  '.git /x',
  '.git. . /x',
  '.git::$INDEX_ALLOCATION/x',
  '.git:x',
  'a\\.git',
  'a\\git~1\\x',
  'x\\.git/y',
  '.gitmodules',
  'sub/.gitmodules',
  '.GITMODULES',
  '.gitmodules.',
  '.gitmodules ::x',
  '.gitmodules/x',
  '.gitmodules:x/y',
  'gitmod~1',
  'GITMOD~4',
  'gi7eba~1',
  'gi7eba~9',
  bytes('.g\u200cit/x'),
  bytes('.GI\ufeffT'),
  bytes('\u200e.git/x'),
  bytes('.gitmod\u200dules'),
  bytes('.git\u202e'),
  '..',
  'a/../b',
  'a//b',
  './a',
  'a/.',
  // Names git accepts: a checkpoint must keep recording them.
  'git~2/x',
  '.git.x',
  '.gitx/y',
  'a\\b',
  'gitmod~5',
  'gi7eb~9',
  'gi7eba~12',
  '.gitattributes',
  '.gitignore',
  '.a',
  '..a',
  'a..',
  '.git~1',
  'git~1x',
  'git~10/x',
  bytes('.gitmodülés'),
  Buffer.from([0x2e, 0x67, 0xe2, 0x80, 0x69, 0x74]).toString('latin1'),
];

/** Every name made of a folder above, a spelling of `.git` or `.gitmodules` (or a near miss) and an ending. */
function builtNames(): string[] {
  const above = ['', 'a/', 'a\\', 'a b/'];
  const stems = [
    '.git',
    '.GIT',
    'git~1',
    'GiT~1',
    'git~2',
    '.gitmodules',
    '.GitModules',
    'gitmod~1',
    'gitmod~5',
    'gi7eba~1',
    'gi7eb~2',
    bytes('.g\u200cit'),
    bytes('.gitmod\ufeffules'),
    '.gi',
    'x',
  ];
  const endings = ['', '.', ' ', '. .', ':', ':x', 'x', '~1', '\\x', '/x', bytes('é'), bytes('\u200d')];
  return above.flatMap((a) => stems.flatMap((s) => endings.map((e) => `${a}${s}${e}`)));
}

/** Random names from the pieces git's rules look at, reproducible (a fixed seed). */
function randomNames(n: number): string[] {
  const pieces = [
    '.',
    'g',
    'G',
    'i',
    'I',
    't',
    'T',
    '~',
    '1',
    '4',
    '9',
    'mod',
    'ules',
    'MOD',
    '7eba',
    ' ',
    ':',
    '\\',
    '/',
    'x',
    bytes('\u200c'),
    bytes('\ufeff'),
    'é',
  ];
  let seed = 26;
  const next = (k: number): number => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed % k;
  };
  const out: string[] = [];
  while (out.length < n) {
    const len = 1 + next(9);
    let name = '';
    for (let i = 0; i < len; i++) name += pieces[next(pieces.length)];
    // Names with an empty component or a leading slash are refused by both (checked above); keep the interesting ones.
    if (!name.startsWith('/') && !name.endsWith('/') && !name.includes('//')) out.push(name);
  }
  return out;
}

/** The names of `names` that git (with `config`) refuses as entries of `kind`: one `update-index -z --index-info`. */
function gitRefuses(repo: string, names: readonly string[], kind: GitPathKind, config: string[]): Set<string> {
  const blob = execFileSync('git', ['hash-object', '-w', '--stdin'], { cwd: repo, input: '' }).toString().trim();
  const mode = kind === 'link' ? '120000' : '100644';
  const input = Buffer.concat(
    names.map((n) => Buffer.concat([Buffer.from(`${mode} ${blob}\t`), Buffer.from(n, 'latin1'), Buffer.from([0])])),
  );
  const r = spawnSync('git', [...config, 'update-index', '-z', '--index-info'], {
    cwd: repo,
    input,
    env: {
      ...process.env,
      GIT_INDEX_FILE: path.join(repo, `index-${kind}-${config.length}`),
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_GLOBAL: '/dev/null',
    },
    encoding: 'latin1',
  });
  if (r.status !== 0) throw new Error(r.stderr);
  const refused = new Set<string>();
  for (const line of r.stderr.split('\n')) if (line.startsWith('Ignoring path ')) refused.add(line.slice('Ignoring path '.length));
  return refused;
}

describe("git's verify_path, ported", () => {
  let repo: string;
  beforeAll(() => {
    repo = mkdtempSync(path.join(tmpdir(), 'aj-gitpath-'));
    execFileSync('git', ['init', '-q', repo]);
  });
  afterAll(() => rmSync(repo, { recursive: true, force: true }));

  test.each(['file', 'link'] as const)(
    'refuses exactly what git refuses with core.protectNTFS and core.protectHFS on (%s entries)',
    (kind) => {
      const names = [...ATTACK_NAMES, ...builtNames(), ...randomNames(3000)];
      const git = gitRefuses(repo, names, kind, ['-c', 'core.protectNTFS=true', '-c', 'core.protectHFS=true']);
      const differ = names.filter((n) => gitRefusesPath(n, kind) !== git.has(n));
      expect(differ).toEqual([]);
      // Both kinds of answer are among them: the port is no constant.
      expect(git.size).toBeGreaterThan(100);
      expect(names.length - git.size).toBeGreaterThan(200);
    },
  );

  test("refuses at least what this machine's git refuses with its own defaults (what a restore runs)", () => {
    const names = [...ATTACK_NAMES, ...builtNames(), ...randomNames(1000)];
    for (const kind of ['file', 'link'] as const) {
      const git = gitRefuses(repo, names, kind, []);
      expect([...git].filter((n) => !gitRefusesPath(n, kind))).toEqual([]);
    }
  });

  test('a folder is refused whole when every path below it is', () => {
    expect(['git~1', '.GIT', '.git. ', 'a/GIT~1', bytes('.g\u200dit')].filter((f) => !gitRefusesFolder(f))).toEqual([]);
    // `.gitmodules/` refuses only symlinks below it: its files are recorded.
    expect(['.gitmodules', 'git~2', '.gitx', 'a\\b'].filter((f) => gitRefusesFolder(f))).toEqual([]);
    expect(gitRefusesPath('.gitmodules/x', 'file')).toBe(false);
    expect(gitRefusesPath('.gitmodules/x', 'link')).toBe(true);
  });
});
