/**
 * The unified diff a person approves for an edit: the hunks `diff -u` prints for the same
 * change (headers aside), for small edits, inserts at either end, a missing final newline,
 * a new file, and a change too large for the shortest-script search.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { MAX_DIFF_STEPS, splitLines, unifiedDiff } from '../../../src/session/edit-diff';

/** The hunks of GNU `diff -u` for the same two texts. */
function gnuHunks(before: string, after: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-diff-'));
  try {
    fs.writeFileSync(path.join(dir, 'a'), before);
    fs.writeFileSync(path.join(dir, 'b'), after);
    let out = '';
    try {
      execFileSync('diff', ['-u', 'a', 'b'], { cwd: dir, encoding: 'utf8' });
    } catch (err) {
      out = (err as { stdout: string }).stdout;
    }
    return out.split('\n').slice(2).join('\n');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const lines = (n: number, tag = 'line'): string => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join('');

test.each([
  ['one changed line', lines(10), lines(10).replace('line 5\n', 'LINE 5\n')],
  ['insert at the top', lines(5), `new\n${lines(5)}`],
  ['append at the end', lines(5), `${lines(5)}new\n`],
  ['two far-apart changes: two hunks', lines(30), lines(30).replace('line 2\n', 'two\n').replace('line 28\n', 'x\n')],
  ['two close changes: one hunk', lines(30), lines(30).replace('line 10\n', 'a\n').replace('line 15\n', 'b\n')],
  ['no final newline before', 'a\nb', 'a\nc'],
  ['newline added at the end', 'a\nb', 'a\nb\n'],
  ['delete everything', lines(3), ''],
  ['from empty', '', lines(2)],
])('%s: the hunks diff -u prints', (_name, before, after) => {
  const ours = unifiedDiff('/ws/f.txt', before, after);
  expect(ours.split('\n').slice(0, 2)).toEqual(['--- a/ws/f.txt', '+++ b/ws/f.txt']);
  expect(ours.split('\n').slice(2).join('\n')).toBe(gnuHunks(before, after));
});

test('a new file diffs from /dev/null; no change is an empty diff', () => {
  expect(unifiedDiff('/ws/n.txt', null, 'a\nb\n')).toBe('--- /dev/null\n+++ b/ws/n.txt\n@@ -0,0 +1,2 @@\n+a\n+b\n');
  expect(unifiedDiff('/ws/n.txt', 'same\n', 'same\n')).toBe('');
});

test('a change past the search bound is shown as one removed and one added block, still exact', () => {
  const before = lines(MAX_DIFF_STEPS + 10, 'old');
  const after = lines(MAX_DIFF_STEPS + 10, 'new');
  const diff = unifiedDiff('/ws/big.txt', before, after);
  const body = diff.split('\n').slice(3);
  expect(body.filter((l) => l.startsWith('-')).length).toBe(MAX_DIFF_STEPS + 10);
  expect(body.filter((l) => l.startsWith('+')).length).toBe(MAX_DIFF_STEPS + 10);
});

test('splitLines keeps each newline and a last line without one', () => {
  expect(splitLines('a\nb')).toEqual(['a\n', 'b']);
  expect(splitLines('a\n')).toEqual(['a\n']);
  expect(splitLines('')).toEqual([]);
});
