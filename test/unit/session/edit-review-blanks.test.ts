/**
 * The review of a text editor change shows every blank that changes what runs (round 32, F4): a real session makes the
 * change's diff (BashSession.edit), the CLI's `status` prints the pending approval as a person reads it (editLines over
 * pendingApproval, as the client computes it), and bash runs the file before and after. Each edit is one an attacker
 * would pick to read as no change: a space, a tab or a no-break space after a line-ending backslash (the `&&` list ends
 * there and the next line runs unguarded), a space before a carriage return, a heredoc terminator with a trailing space,
 * a new line that ends in a space. What must hold: the printed `-` and `+` lines differ even once a terminal drops
 * their trailing blanks, and a warning names the change; the hash is still that of the raw diff.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { RunView } from '../../../src/client';
import { pendingCommandDisplay } from '../../../src/cli/render/run';
import { editRuleSubject, parseEditInput } from '../../../src/contract/text-editor';
import type { PendingApproval } from '../../../src/contract';
import {
  diffCarriageReturns,
  diffDisplay,
  diffWarnings,
  displayCommand,
  editWarningDetails,
  pendingApproval,
  safeText,
} from '../../../src/shared/display';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';
import { statusLinesOf } from '../cli/status-output';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const GUARDED = '#!/bin/bash\n[ -n "$BUILD_DIR" ] && \\\n  echo "would rm -rf $BUILD_DIR/*"\necho done\n';

/** Runs `edit` (a text editor input) in a real session on `file` holding `before`, approving it; returns the diff a person was asked about. */
async function reviewedEdit(before: string, input: Record<string, unknown>): Promise<{ diff: string; file: string }> {
  const ws = tempDir();
  const file = path.join(ws, String(input.path));
  fs.writeFileSync(file, before);
  const s = await startSession({ cwd: ws, workspace: ws });
  const parsed = parseEditInput(input);
  if (!parsed.ok) throw new Error(parsed.text);
  let diff = '';
  const r = await s.edit(parsed.edit, (p) => ((diff = p.review), { apply: true }), {
    maxCharacters: 100_000,
    ruleSubject: editRuleSubject,
  });
  expect(r.applied).toBe(true);
  return { diff, file: fs.realpathSync(file) };
}

/** What `agent-jobs status` prints for a run waiting on `pending` (the real command, its client mocked to answer the view). */
async function statusOutput(pending: PendingApproval): Promise<string[]> {
  const view: Partial<RunView> = {
    status: 'awaiting_approval',
    turns: 2,
    usage: { inputTokens: 1, outputTokens: 1, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
    decisions: [],
    pendingApproval: pending,
  };
  return statusLinesOf(view);
}

/** The pending approval of `diff` as the client computes it from the query's command (client.ts `queryStatus`). */
function pendingOf(diff: string, file: string): PendingApproval {
  return pendingApproval({
    toolUseId: 'toolu_01',
    command: diff,
    requestedAt: '2026-12-07T17:00:00.000Z',
    edit: { command: 'str_replace', path: file, ruleSubject: editRuleSubject('str_replace', file) },
  });
}

/** bash's output running `file` with no BUILD_DIR. */
function runUnset(file: string): string {
  return execFileSync('bash', [file], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
}

describe('round 32 F4: a blank after a line-ending backslash, through a real edit and the CLI', () => {
  test.each([
    ['a space', ' ', '\\\\\\x20'],
    ['a tab', '\t', '\\\\\\t'],
    ['a no-break space (U+00A0)', '\u00a0', '\\\\\\xa0'],
    ['a space before a carriage return', ' \r', '\\\\\\x20\\r'],
    ['two spaces', '  ', '\\\\\\x20\\x20'],
  ])('%s: the - and + lines differ as printed, a warning names line 2, and bash now runs the guarded line', async (_, blank, shown) => {
    expect(runUnset(writeTemp(GUARDED))).toBe('done\n');
    const { diff, file } = await reviewedEdit(GUARDED, {
      command: 'str_replace',
      path: 'clean.sh',
      old_str: '&& \\\n',
      new_str: `&& \\${blank}\n`,
    });
    // What the approval binds: the raw diff, blank and all.
    expect(diff).toContain(`+[ -n "$BUILD_DIR" ] && \\${blank}\n`);
    const lines = await statusOutput(pendingOf(diff, file));
    const minus = lines.find((l) => l.startsWith('    -[ -n'))!;
    const plus = lines.find((l) => l.startsWith('    +[ -n'))!;
    expect(minus).toBe('    -[ -n "$BUILD_DIR" ] && \\');
    expect(plus).toBe(`    +[ -n "$BUILD_DIR" ] && ${shown}`);
    // What a terminal shows: trailing blanks are nothing on a screen.
    expect(plus.trimEnd().slice(5)).not.toBe(minus.trimEnd().slice(5));
    expect(lines.filter((l) => l.startsWith('    ⚠ the change at line 2 of the new file is whitespace'))).toHaveLength(1);
    expect(lines.join('\n')).toContain(`sha256 ${displayCommand(diff).sha256.slice(0, 12)}`);
    // Why it matters: the guard no longer guards.
    expect(runUnset(file)).toContain('would rm -rf /*');
  });
});

describe('round 32 F4: other blanks an attacker would hide in a diff', () => {
  test('a heredoc terminator given a trailing space: the heredoc swallows the rest of the script', async () => {
    const before = '#!/bin/bash\ncat <<EOF\nhello\nEOF\necho guarded-step\n';
    const { diff, file } = await reviewedEdit(before, {
      command: 'str_replace',
      path: 'h.sh',
      old_str: 'hello\nEOF\n',
      new_str: 'hello\nEOF \n',
    });
    const lines = await statusOutput(pendingOf(diff, file));
    expect(lines).toContain('    +EOF\\x20');
    expect(lines).toContain('    -EOF');
    expect(lines.some((l) => l.startsWith('    ⚠ the change at line 4 of the new file is whitespace'))).toBe(true);
    expect(lines.some((l) => l.startsWith('    ⚠ a changed line ends in a blank'))).toBe(true);
    expect(execFileSync('bash', [writeTemp(before)], { encoding: 'utf8' })).toBe('hello\nguarded-step\n');
    expect(execFileSync('bash', [file], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })).toBe(
      'hello\nEOF \necho guarded-step\n',
    );
  });

  test('a new line that ends in a space (nothing removed to compare with) is shown escaped and warned about', async () => {
    const { diff, file } = await reviewedEdit('echo one\n', {
      command: 'insert',
      path: 'n.sh',
      insert_line: 1,
      insert_text: 'echo two \\ \n',
    });
    const lines = await statusOutput(pendingOf(diff, file));
    expect(lines).toContain('    +echo two \\\\\\x20');
    expect(lines.some((l) => l.startsWith('    ⚠ a changed line ends in a blank'))).toBe(true);
    expect(lines.some((l) => l.includes('whitespace or invisible characters only'))).toBe(false);
  });

  test('indentation turned from spaces into a tab, and a line split in its whitespace, are warned about', () => {
    const tabbed = diffWarnings('--- a/m\n+++ b/m\n@@ -1,2 +1,2 @@\n all:\n-        make x\n+\tmake x\n');
    expect(tabbed[0]).toMatch(/^the change at line 2 of the new file is whitespace/);
    const split = diffWarnings('--- a/s\n+++ b/s\n@@ -1 +1,2 @@\n-rm -rf "$D"/tmp\n+rm -rf "$D"/\n+tmp\n');
    // A line break put into a line is whitespace only too, and changes what runs (`/tmp` becomes a command of its own).
    expect(split[0]).toMatch(/^the change at line 1 of the new file is whitespace/);
    const moved = diffWarnings('--- a/s\n+++ b/s\n@@ -1 +1,2 @@\n-rm -rf "$D"/tmp\n+rm -rf "$D"/ tmp\n');
    expect(moved[0]).toMatch(/^the change at line 1 of the new file is whitespace/);
    const joined = diffWarnings('--- a/s\n+++ b/s\n@@ -1,2 +1 @@\n-cd /srv/build\n-  rm -rf ./*\n+cd /srv/build  rm -rf ./*\n');
    expect(joined[0]).toMatch(/^the change at line 1 of the new file is whitespace/);
    const blankLine = diffWarnings('--- a/s\n+++ b/s\n@@ -1,2 +1,3 @@\n x \\\n+\n y\n');
    expect(blankLine[0]).toMatch(/^the change at line 2 of the new file is whitespace/);
  });

  test('a CRLF file: its lines ending in a carriage return are no blank to warn about, a space before one is', () => {
    const crlf = '--- a/c\n+++ b/c\n@@ -1,2 +1,2 @@\n alpha\r\n-beta\r\n+gamma\r\n';
    expect(diffWarnings(crlf)).toEqual([]);
    expect(diffDisplay(crlf)).toBe(safeText(crlf, true));
    const spaced = '--- a/c\n+++ b/c\n@@ -1,2 +1,2 @@\n alpha\r\n-beta\r\n+beta \r\n';
    expect(diffDisplay(spaced)).toContain('+beta\\x20\\r\n');
    expect(diffWarnings(spaced)).toHaveLength(2);
  });

  test('a real change beside a whitespace-only one in the same run is still named', () => {
    const d = '--- a/s\n+++ b/s\n@@ -1,3 +1,3 @@\n-echo one\n-[ -n "$X" ] && \\\n+echo ONE\n+[ -n "$X" ] && \\ \n   rm -rf "$X"/*\n';
    expect(diffWarnings(d)[0]).toMatch(/^the change at line 2 of the new file is whitespace/);
  });

  test('an ordinary change has no whitespace warning, and its display is safeText as before', () => {
    const d = '--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-one two\n+one three\n';
    expect(diffWarnings(d)).toEqual([]);
    expect(diffDisplay(d)).toBe(safeText(d, true));
    expect(pendingOf(d, '/ws/a.txt').warnings).toEqual([]);
    // Context lines keep their blanks as they are: only changed lines are marked.
    const ctx = '--- a/a\n+++ b/a\n@@ -1,2 +1,2 @@\n keep \n-x\n+y\n';
    expect(diffDisplay(ctx)).toBe(ctx);
  });
});

describe('round 32 F4: watch and the UI name the warning too', () => {
  test("watch's one-line display of a pending edit starts its warnings with the diff's", () => {
    const diff = '--- a/c.sh\n+++ b/c.sh\n@@ -1 +1 @@\n-a && \\\n+a && \\ \n';
    const d = pendingCommandDisplay(pendingOf(diff, '/ws/c.sh'));
    expect(d.warnings[0]).toMatch(/^the change at line 1 of the new file is whitespace/);
    expect(d.warnings[1]).toMatch(/^a changed line ends in a blank/);
    expect(d.sha256).toBe(displayCommand(diff).sha256);
  });

  test("the UI's current details of an edit carry its warnings in a code span", () => {
    const p = pendingOf('--- a/c.sh\n+++ b/c.sh\n@@ -1 +1 @@\n-a && \\\n+a && \\ \n', '/ws/c.sh');
    expect(editWarningDetails(p.warnings)).toMatch(/^ \(⚠ `the change at line 1 of the new file is whitespace.*`\)$/);
    expect(editWarningDetails([])).toBe('');
  });
});

describe("a CRLF file's line endings: the review warns of a carriage return only when the edit mixes them or adds a lone one", () => {
  /** The ⚠ lines `status` prints for an edit of `before` in a real session, and watch's one-line warnings of it. */
  async function warningsOf(before: string, input: Record<string, unknown>): Promise<{ status: string[]; watch: string[] }> {
    const { diff, file } = await reviewedEdit(before, input);
    const p = pendingOf(diff, file);
    const status = (await statusOutput(p)).filter((l) => l.startsWith('    ⚠ '));
    return { status, watch: pendingCommandDisplay(p).warnings };
  }
  const CRLF = 'alpha\r\nbeta\r\ngamma\r\n';
  const CR = /carriage return|line endings/;

  test('an edit that keeps the endings of a CRLF file (str_replace, insert) says nothing of carriage returns', async () => {
    const replaced = await warningsOf(CRLF, { command: 'str_replace', path: 'w.txt', old_str: 'beta', new_str: 'BETA' });
    expect(replaced.status.filter((l) => CR.test(l))).toEqual([]);
    expect(replaced.watch.filter((w) => CR.test(w))).toEqual([]);
    const inserted = await warningsOf(CRLF, { command: 'insert', path: 'w.txt', insert_line: 1, insert_text: 'delta' });
    expect(inserted.status.filter((l) => CR.test(l))).toEqual([]);
    expect(inserted.watch.filter((w) => CR.test(w))).toEqual([]);
  });

  test('a line break of its own (LF) put into a CRLF file is named as a mix of endings', async () => {
    const mixed = await warningsOf(CRLF, { command: 'str_replace', path: 'w.txt', old_str: 'beta', new_str: 'beta\nbeta2' });
    expect(mixed.status).toContainEqual(
      expect.stringMatching(/^ {4}⚠ mixes line endings: some lines of the diff end in a carriage return/),
    );
    expect(mixed.watch).toContainEqual(expect.stringMatching(/^mixes line endings/));
  });

  test('a lone carriage return added inside a line is warned about, in a CRLF file and in an LF one', async () => {
    const lone = await warningsOf(CRLF, { command: 'str_replace', path: 'w.txt', old_str: 'beta', new_str: 'safe\rrm -rf x' });
    // The diff's every line (context, - and +) has one: all are counted once one is lone.
    expect(lone.status).toContainEqual('    ⚠ contains 5 carriage returns (\\r)');
    const lf = await warningsOf('alpha\nbeta\n', { command: 'str_replace', path: 'w.txt', old_str: 'beta', new_str: 'safe\rrm -rf x' });
    expect(lf.status).toContainEqual('    ⚠ contains a carriage return (\\r)');
  });

  test('diffCarriageReturns: where the carriage returns of a diff stand', () => {
    expect(diffCarriageReturns('--- a/c\n+++ b/c\n@@ -1 +1 @@\n-a\n+b\n')).toBe('none');
    expect(diffCarriageReturns('--- a/c\n+++ b/c\n@@ -1,2 +1,2 @@\n x\r\n-a\r\n+b\r\n')).toBe('line-endings');
    // The CRLF file's last line without a line break has no ending to compare.
    expect(
      diffCarriageReturns('--- a/c\n+++ b/c\n@@ -1,2 +1,2 @@\n x\r\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n'),
    ).toBe('line-endings');
    // ... but a carriage return at its end is one before no line break: lone.
    expect(
      diffCarriageReturns('--- a/c\n+++ b/c\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\r\n\\ No newline at end of file\n'),
    ).toBe('lone');
    // A CRLF file made LF: the endings change.
    expect(diffCarriageReturns('--- a/c\n+++ b/c\n@@ -1 +1 @@\n-a\r\n+a\n')).toBe('mixed');
    expect(diffCarriageReturns('--- a/c\r\n+++ b/c\r\n@@ -1 +1 @@\n-a\r\n+b\r\n')).toBe('lone');
    expect(diffCarriageReturns('--- a/c\n+++ b/c\n@@ -1 +1 @@\n-a\r\n+b\rc\r\n')).toBe('lone');
  });
});

/** A file of `text` in a temp folder of its own. */
function writeTemp(text: string): string {
  const file = path.join(tempDir(), 'orig.sh');
  fs.writeFileSync(file, text);
  return file;
}

describe('round 34 F3: a line turned into the same text encoded otherwise (Unicode-normalized alike)', () => {
  const diffOf = (minus: string, plus: string): string => `--- a/g\n+++ b/g\n@@ -1,2 +1,2 @@\n #!/bin/bash\n-${minus}\n+${plus}\n`;
  test.each([
    [
      'é as e and a combining acute (NFD)',
      'if [ "$1" = "caf\u00e9" ]; then exit 1; fi',
      'if [ "$1" = "cafe\u0301" ]; then exit 1; fi',
      '-U+00E9 +U+0065 U+0301',
    ],
    ['Å as the ANGSTROM SIGN', 'name=\u00c5se', 'name=\u212bse', '-U+00C5 +U+212B'],
    ['fi as a ligature', 'rm -rf ./\ufb01les', 'rm -rf ./files', '-U+FB01 +U+0066 U+0069'],
    ['a fullwidth letter', 'allow=admin', 'allow=\uff41dmin', '-U+0061 +U+FF41'],
  ])('%s: warned, naming the line and the code points', (_what, minus, plus, points) => {
    const w = diffWarnings(diffOf(minus, plus));
    expect(w).toHaveLength(1);
    expect(w[0]).toContain('the change at line 2 of the new file reads the same as the line it replaces but its characters differ');
    expect(w[0]).toContain(points);
  });

  test('near misses: a real change of a non-ASCII word, a line kept, a new line with no removed twin, are not warned as twins', () => {
    expect(diffWarnings(diffOf('x="caf\u00e9"', 'x="th\u00e9"'))).toEqual([]);
    expect(diffWarnings('--- a/g\n+++ b/g\n@@ -1 +1,2 @@\n caf\u00e9\n+cafe\u0301\n')).toEqual([]);
    // The same line removed and added again (moved within the run) is no change of encoding.
    expect(diffWarnings('--- a/g\n+++ b/g\n@@ -1,2 +1,2 @@\n-caf\u00e9\n-b\n+b\n+caf\u00e9\n')).toEqual([]);
  });

  test('a whitespace-only change that is also a twin is named once, as whitespace', () => {
    const w = diffWarnings(diffOf('a \\', 'a\u3000\\'));
    expect(w.filter((x) => x.includes('reads the same'))).toEqual([]);
    expect(w.some((x) => x.includes('whitespace or invisible characters only'))).toBe(true);
  });

  test('a real edit in a session: the review the person reads carries the warning, and its hash is of the raw diff', async () => {
    const ws = fs.realpathSync(tempDir('aj-nfd-'));
    fs.writeFileSync(path.join(ws, 'guard.sh'), '#!/bin/bash\n[ "$1" = "caf\u00e9" ] && exit 1\n');
    const s = await startSession({ cwd: ws, workspace: ws });
    let review = '';
    const parsed = parseEditInput({ command: 'str_replace', path: `${ws}/guard.sh`, old_str: 'caf\u00e9', new_str: 'cafe\u0301' });
    if (!parsed.ok) throw new Error(parsed.text);
    await s.edit(parsed.edit, (p) => ((review = p.review), { refuse: 'not in this test' }), {
      maxCharacters: 1000,
      ruleSubject: editRuleSubject,
    });
    const p = pendingApproval({
      toolUseId: 'toolu_nfd',
      command: review,
      requestedAt: 'now',
      edit: { command: 'str_replace', path: `${ws}/guard.sh`, ruleSubject: editRuleSubject('str_replace', `${ws}/guard.sh`) },
    });
    expect(p.warnings.join('\n')).toMatch(/line 2 of the new file reads the same as the line it replaces .*-U\+00E9 \+U\+0065 U\+0301/);
  });
});
