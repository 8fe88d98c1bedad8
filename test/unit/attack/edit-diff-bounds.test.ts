/**
 * The bounds of what an edit costs the worker's event loop before any person is asked (round 24's
 * kind 3: the diff of a `create` over a 10 MiB file of short lines held the loop 5 to 16 s, then
 * overflowed the stack), attacked with the inputs a session chooses: millions of short lines, one
 * huge line, every line different, a search made to run long, sides right at and one past the
 * bounds; a `view` and an `insert` of the same file; and what a failing edit may not skip (the git
 * audit). Each case measures the loop's largest delay (perf_hooks `monitorEventLoopDelay`) and checks
 * the shape of what the person is shown.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { editRuleSubject, parseEditInput, type EditRequest } from '../../../src/contract/text-editor';
import { editDiff, MAX_DIFF_SIDE_CHARS, MAX_DIFF_SIDE_LINES, unifiedDiff } from '../../../src/session/edit-diff';
import { MAX_EDIT_FILE_BYTES, planEdit, viewFile } from '../../../src/session/edit';
import { personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/**
 * The event loop's largest delay, ms, while `f` runs on it as the worker runs a diff (synchronously), with `f`'s value.
 * A bound of seconds: far above what bounded work takes on two loaded cores, far below what the unbounded work took.
 */
async function loopHeld<T>(f: () => T): Promise<{ value: T; heldMs: number }> {
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  await new Promise((r) => setTimeout(r, 20));
  const value = f();
  // One turn of the timer phase, so that the histogram's own timer records the delay of the block that just ended.
  await new Promise((r) => setTimeout(r, 20));
  h.disable();
  return { value, heldMs: h.max / 1e6 };
}

const HELD_BOUND_MS = 2_000;
const sha = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');
const summary = (n: number, what: 'removed' | 'added', text: string): string =>
  `\\ ${n} ${n === 1 ? 'line' : 'lines'} ${what}, not shown (${text.length} characters, sha256 ${sha(text)}): ` +
  `a side of a change past ${MAX_DIFF_SIDE_LINES} lines or ${MAX_DIFF_SIDE_CHARS} characters is summarized\n`;
const numbered = (n: number, tag: string): string => Array.from({ length: n }, (_, i) => `${tag} ${i + 1}\n`).join('');
const bodyLines = (diff: string, marker: string): number => diff.split('\n').filter((l) => l.startsWith(marker)).length;

/** 10 MiB (the editor's read cap) of two-byte lines: 5,242,880 lines, what a job writes in a second. */
const SHORT_LINES = 'x\n'.repeat(MAX_EDIT_FILE_BYTES / 2);

describe('the diff of an edit costs the worker bounded time whatever the file, and says honestly what it leaves out', () => {
  test('a `create` of one line over 5,242,880 short lines: one hunk, the removed side summarized with its count and hash', async () => {
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/big.txt', SHORT_LINES, 'y\n'));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value).toBe(`--- a/ws/big.txt\n+++ b/ws/big.txt\n@@ -1,5242880 +1 @@\n${summary(5_242_880, 'removed', SHORT_LINES)}+y\n`);
    expect(editDiff('/ws/big.txt', SHORT_LINES, 'y\n').hidden).toEqual({ removed: 5_242_880, added: 0 });
  });

  test('one changed line in the middle of 5,242,880: the hunk is exact, its line numbers right, and the loop is not held', async () => {
    const at = 4_000_000;
    const after = `${'x\n'.repeat(at - 1)}CHANGED\n${'x\n'.repeat(MAX_EDIT_FILE_BYTES / 2 - at)}`;
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/big.txt', SHORT_LINES, after));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value).toBe(`--- a/ws/big.txt\n+++ b/ws/big.txt\n@@ -${at - 3},7 +${at - 3},7 @@\n x\n x\n x\n-x\n+CHANGED\n x\n x\n x\n`);
  });

  test('one huge line (10 MiB, no line break) with one character changed: both sides summarized, the diff a few hundred characters', async () => {
    const half = 'a'.repeat(MAX_EDIT_FILE_BYTES / 2);
    const before = `${half}X${half}`;
    const after = `${half}Y${half}`;
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/min.js', before, after));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value).toBe(`--- a/ws/min.js\n+++ b/ws/min.js\n@@ -1 +1 @@\n${summary(1, 'removed', before)}${summary(1, 'added', after)}`);
    expect(editDiff('/ws/min.js', before, after).hidden).toEqual({ removed: 1, added: 1 });
  });

  test('every line different, a million on each side: both summarized, in one hunk whose header counts every line', async () => {
    const before = numbered(1_000_000, 'old');
    const after = numbered(1_000_000, 'new');
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/all.txt', before, after));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value).toBe(
      `--- a/ws/all.txt\n+++ b/ws/all.txt\n@@ -1,1000000 +1,1000000 @@\n${summary(1_000_000, 'removed', before)}${summary(1_000_000, 'added', after)}`,
    );
    expect(editDiff('/ws/all.txt', before, after).hidden).toEqual({ removed: 1_000_000, added: 1_000_000 });
  });

  test('every line different, right at the side bound: every line shown, the search stopped by its bound', async () => {
    const before = numbered(MAX_DIFF_SIDE_LINES, 'old');
    const after = numbered(MAX_DIFF_SIDE_LINES, 'new');
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/all.txt', before, after));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(editDiff('/ws/all.txt', before, after).hidden).toEqual({ removed: 0, added: 0 });
    expect(value.split('\n')[2]).toBe(`@@ -1,${MAX_DIFF_SIDE_LINES} +1,${MAX_DIFF_SIDE_LINES} @@`);
    expect(value).toBe(
      `--- a/ws/all.txt\n+++ b/ws/all.txt\n@@ -1,${MAX_DIFF_SIDE_LINES} +1,${MAX_DIFF_SIDE_LINES} @@\n` +
        before.replace(/^/gm, '-').slice(0, -1) +
        after.replace(/^/gm, '+').slice(0, -1),
    );
  });

  test('one line past the side bound: that side summarized, the other still shown line by line', async () => {
    const before = `keep\n${numbered(MAX_DIFF_SIDE_LINES + 1, 'old')}end\n`;
    const after = `keep\n${numbered(3, 'new')}end\n`;
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/f.txt', before, after));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value).toBe(
      `--- a/ws/f.txt\n+++ b/ws/f.txt\n@@ -1,${MAX_DIFF_SIDE_LINES + 3} +1,5 @@\n keep\n` +
        `${summary(MAX_DIFF_SIDE_LINES + 1, 'removed', numbered(MAX_DIFF_SIDE_LINES + 1, 'old'))}+new 1\n+new 2\n+new 3\n end\n`,
    );
    expect(editDiff('/ws/f.txt', before, after).hidden).toEqual({ removed: MAX_DIFF_SIDE_LINES + 1, added: 0 });
  });

  test('a side of exactly the character bound is shown; one character more is summarized', () => {
    const at = `${'c'.repeat(MAX_DIFF_SIDE_CHARS - 1)}\n`;
    const past = `${'c'.repeat(MAX_DIFF_SIDE_CHARS)}\n`;
    expect(unifiedDiff('/ws/f.txt', 'a\n', at)).toBe(`--- a/ws/f.txt\n+++ b/ws/f.txt\n@@ -1 +1 @@\n-a\n+${at}`);
    expect(unifiedDiff('/ws/f.txt', 'a\n', past)).toBe(`--- a/ws/f.txt\n+++ b/ws/f.txt\n@@ -1 +1 @@\n-a\n${summary(1, 'added', past)}`);
    expect(editDiff('/ws/f.txt', 'a\n', at).hidden).toEqual({ removed: 0, added: 0 });
    expect(editDiff('/ws/f.txt', 'a\n', past).hidden).toEqual({ removed: 0, added: 1 });
  });

  test('a search made to run long (a line every 25 against one every 27, 50,000 on each side) stops at its work bound', async () => {
    // Long runs of equal lines make the search's diagonals follow long snakes: it would end after 3,554 steps (under
    // MAX_DIFF_STEPS) and about 50 million units of work (2.4 s of the loop before, at load 9, hunks counted from the top).
    const side = (p: number): string => Array.from({ length: MAX_DIFF_SIDE_LINES }, (_, i) => (i % p === 0 ? 'y\n' : 'x\n')).join('');
    const { value, heldMs } = await loopHeld(() => unifiedDiff('/ws/f.txt', side(25), side(27)));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    // The middle as one block, every line shown: 25 equal lines at the head, 22 at the tail, 49,953 changed on each side.
    expect(editDiff('/ws/f.txt', side(25), side(27)).hidden).toEqual({ removed: 0, added: 0 });
    expect(value.split('\n')[2]).toBe('@@ -23,49959 +23,49959 @@');
    expect(bodyLines(value, '-')).toBe(49_953 + 1);
    expect(bodyLines(value, '+')).toBe(49_953 + 1);
    expect(value.split('\n').slice(3, 7)).toEqual([' x', ' x', ' x', '-y']);
  });

  test("a model's rewrite of a file (a thousand lines, every other one changed) still gets the shortest script, hunk by hunk", () => {
    const before = numbered(1_000, 'line');
    const after = before
      .split('\n')
      .map((l, i) => (i % 2 === 0 && l !== '' ? `${l} changed` : l))
      .join('\n');
    const diff = unifiedDiff('/ws/f.txt', before, after);
    // 500 lines removed and 500 added, interleaved with the 500 kept: not one block of 1,000 and 1,000.
    expect(bodyLines(diff, '-')).toBe(500 + 1);
    expect(bodyLines(diff, '+')).toBe(500 + 1);
    expect(diff.split('\n').slice(3, 6)).toEqual(['-line 1', '+line 1 changed', ' line 2']);
  });
});

describe('a `view` and an `insert` of the same 10 MiB file cost the loop bounded time too', () => {
  const file = { ok: true as const, kind: 'file' as const, data: Buffer.from(SHORT_LINES).toString('base64'), mode: 0o644, sha256: '' };
  const plan = (edit: EditRequest): ReturnType<typeof planEdit> => planEdit(edit, '/ws/big.txt', file, 20_000);

  test('a whole view: the first lines, cut at max_characters with the count of the whole', async () => {
    const { value, heldMs } = await loopHeld(() => viewFile(SHORT_LINES, undefined, 20_000));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value.isError).toBe(false);
    expect(value.text.startsWith('1: x\n2: x\n')).toBe(true);
    expect(value.text.split('\n')).toHaveLength(10_000 + 1);
    expect(
      value.text.endsWith(
        '\n10000: x\n[truncated: the view shows 20000 of 10485760 characters (max_characters); use view_range to see the rest]',
      ),
    ).toBe(true);
  });

  test('a view of the last lines (view_range near the end)', async () => {
    const { value, heldMs } = await loopHeld(() => viewFile(SHORT_LINES, [5_242_879, -1], 20_000));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    expect(value).toEqual({ text: '5242879: x\n5242880: x', isError: false });
    expect(viewFile(SHORT_LINES, [5_242_881, -1], 20_000).isError).toBe(true);
    expect(viewFile(SHORT_LINES, [2, 3], 20_000).text).toBe('2: x\n3: x');
  });

  test('a view counts characters as code points, a pair of surrogates as one', () => {
    const text = `${'😀'.repeat(30)}\n`;
    const v = viewFile(text, undefined, 10);
    expect(v.text).toBe(
      `1: ${'😀'.repeat(10)}\n[truncated: the view shows 10 of 31 characters (max_characters); use view_range to see the rest]`,
    );
  });

  test('an insert after the last line, and after line 0', async () => {
    const { value, heldMs } = await loopHeld(() => plan({ command: 'insert', path: 'big.txt', insertLine: 5_242_880, insertText: 'END' }));
    expect(heldMs).toBeLessThan(HELD_BOUND_MS);
    if (value.kind !== 'change') throw new Error(JSON.stringify(value));
    expect(value.after.length).toBe(SHORT_LINES.length + 4);
    expect(value.after.endsWith('x\nEND\n')).toBe(true);
    const first = plan({ command: 'insert', path: 'big.txt', insertLine: 0, insertText: 'TOP\n' });
    expect(first.kind === 'change' && first.after.startsWith('TOP\nx\n')).toBe(true);
    const past = plan({ command: 'insert', path: 'big.txt', insertLine: 5_242_881, insertText: 'x' });
    expect(past).toMatchObject({ kind: 'result', isError: true });
    expect(past.kind === 'result' && past.text).toContain('the file has 5242880 lines');
  });
});

describe('what a person approves, and what a failing edit may not skip', () => {
  function req(input: Record<string, unknown>): EditRequest {
    const parsed = parseEditInput(input);
    if (!parsed.ok) throw new Error(parsed.text);
    return parsed.edit;
  }

  test('added lines a summary stands for are never put to a person; a rule (or auto) still applies them', async () => {
    const ws = fs.realpathSync(tempDir());
    const s = await startSession({ cwd: ws, workspace: ws });
    const many = numbered(MAX_DIFF_SIDE_LINES + 1, 'added');
    const opts = { maxCharacters: 1_000, ruleSubject: editRuleSubject };
    const asked = await s.edit(req({ command: 'create', path: 'gen.txt', file_text: many }), () => ({ ask: 'a person decides' }), opts);
    expect(asked.needsApproval).toBeUndefined();
    expect(asked).toMatchObject({ isError: true, applied: false });
    expect(asked.text).toContain(`this change adds ${MAX_DIFF_SIDE_LINES + 1} lines in one block, more than a diff shows a person`);
    expect(fs.existsSync(path.join(ws, 'gen.txt'))).toBe(false);
    const ruled = await s.edit(req({ command: 'create', path: 'gen.txt', file_text: many }), () => ({ apply: true, rule: 0 }), opts);
    expect(ruled).toMatchObject({ isError: false, applied: true });
    expect(fs.readFileSync(path.join(ws, 'gen.txt'), 'utf8')).toBe(many);
  }, 60_000);

  test("an edit that fails (its gate throws) still runs the git audit: a job's `src/.git` is moved at once and told with the next result", async () => {
    const { ws } = personsRepo(fs.realpathSync(tempDir()));
    const s = await startSession({ cwd: ws, workspace: ws });
    // A `.git` below the root, made by a job after its command's audit: only the next audit moves it.
    const first = await s.run(`(sleep 1; mkdir -p src && cp -r .git .cache-git && mv .cache-git src/.git) >/dev/null 2>&1 & echo started`);
    expect(first.output).toBe('started\n');
    for (let i = 0; i < 100 && !fs.existsSync(path.join(ws, 'src', '.git', 'HEAD')); i++) await new Promise((r) => setTimeout(r, 100));
    expect(fs.existsSync(path.join(ws, 'src', '.git', 'HEAD'))).toBe(true);
    const failed = s.edit(
      req({ command: 'create', path: 'notes.txt', file_text: 'hi\n' }),
      () => {
        throw new Error('the gate failed');
      },
      { maxCharacters: 1_000, ruleSubject: editRuleSubject },
    );
    await expect(failed).rejects.toThrow('the gate failed');
    expect(fs.existsSync(path.join(ws, 'src', '.git'))).toBe(false);
    expect((await s.run('echo next')).output).toContain('src/.git (a .git below the root');
  }, 60_000);
});
