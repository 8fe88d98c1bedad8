/**
 * Unified diffs of one file, as a person approves an edit of the text editor tool: the exact
 * change, old and new lines, with 3 lines of context, in the format `diff -u` and `git diff`
 * print (so reviewers and `patch` read it). Pure but for `node:crypto` (the hash in a summary).
 *
 * Bounded: the file's side of a diff is the session's (up to the editor's 10 MiB), and the diff
 * is made on the worker's event loop before any person is asked, so what it costs must not grow
 * with what the session wrote. The common head and tail are found by comparing characters (no
 * array of the file's lines); only the changed middle is split into lines, and only when each of
 * its sides is within {@link MAX_DIFF_SIDE_LINES} and {@link MAX_DIFF_SIDE_CHARS}; the
 * shortest-script search stops at {@link MAX_DIFF_STEPS} steps or {@link MAX_DIFF_WORK} units of
 * work. A side past its bound is named by one summary line (its lines, characters and SHA-256)
 * instead of its lines. No array is ever spread into a call's arguments (a call takes at most
 * about 120,000 of them).
 */
import { createHash } from 'node:crypto';
import { safeText } from '../shared/display';

/** Lines of context around each change. */
export const DIFF_CONTEXT_LINES = 3;

/**
 * Above this many edit steps between the changed parts, the middle is shown as one block
 * removed and one added instead of searching for the shortest script (the search costs
 * O(n·d) time and O(d²) memory for d steps).
 */
export const MAX_DIFF_STEPS = 4_000;

/**
 * Work the shortest-script search may do, in units: each diagonal it visits and each pair of
 * lines it finds equal counts one. Past it the middle is shown as one block removed and one
 * added, as past {@link MAX_DIFF_STEPS}. 20,000,000 lets the search take all its steps on
 * middles of a few thousand lines (a model's rewrite of a file: about 8,000,000 for 4,000 steps),
 * and stops a search made to run long (one that would take 50,000,000) after about 0.3 s of the
 * loop at load average 9, diff included (docs/text-editor.md, "Bounds of the diff").
 */
export const MAX_DIFF_WORK = 20_000_000;

/**
 * Lines one side of the changed middle (the lines removed, or the lines added) may have to be
 * shown line by line: past it, or past {@link MAX_DIFF_SIDE_CHARS}, that side is one summary
 * line and the middle is not searched. 50,000: a diff of more lines than that is over the
 * 100,000 characters a person is shown (src/workflows/approval.ts `MAX_EDIT_REVIEW_CHARS`) anyway.
 */
export const MAX_DIFF_SIDE_LINES = 50_000;

/** Characters (UTF-16 code units) one side of the changed middle may have to be shown line by line: 1,000,000. */
export const MAX_DIFF_SIDE_CHARS = 1_000_000;

/** `text` split into lines, each with its `\n` (the last one may lack it). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n').map((l) => `${l}\n`);
  const last = lines[lines.length - 1]!;
  if (last === '\n') lines.pop();
  else lines[lines.length - 1] = last.slice(0, -1);
  return lines;
}

/** Lines of `text` ({@link splitLines}'s count), counted without making them. */
export function countLines(text: string): number {
  if (text === '') return 0;
  const n = countNewlines(text, 0, text.length);
  return text.endsWith('\n') ? n : n + 1;
}

/**
 * Line breaks in `text` from `from` to `end`. Code unit by code unit: a third of the time of an
 * `indexOf` per line on 10 MiB of two-byte lines (35 against 138 ms, measured).
 */
export function countNewlines(text: string, from: number, end: number): number {
  let n = 0;
  for (let i = from; i < end; i++) if (text.charCodeAt(i) === 10) n++;
  return n;
}

/** Where the line after the `k`th line break from `from` starts in `text`, or the text's end when it has fewer. */
export function lineOffset(text: string, k: number, from = 0): number {
  let seen = 0;
  for (let i = from; i < text.length && seen < k; i++) if (text.charCodeAt(i) === 10 && ++seen === k) return i + 1;
  return k === 0 ? from : text.length;
}

/**
 * One line of the script, or a summary standing for a whole side: `line` is then the summary's
 * text and `count` the lines it stands for.
 */
type Op = { kind: ' ' | '-' | '+'; line: string; count: number; summary?: true };

const kept = (line: string): Op => ({ kind: ' ', line, count: 1 });

/**
 * The shortest edit script of `la` into `lb` (Myers), comparing the lines' ids `a` and `b`, or
 * null when it needs more than `maxSteps` steps or `maxWork` units of work.
 */
function myers(la: string[], lb: string[], a: Int32Array, b: Int32Array, maxSteps: number, maxWork: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxSteps);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  // trace[d] holds v's diagonals -d..d before step d (what backtracking step d reads), at index k + d.
  const trace: Int32Array[] = [];
  let work = 0;
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice(offset - d, offset + d + 1));
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      const from = x;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      work += 1 + x - from;
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, la, lb, d);
      if (work > maxWork) return null;
    }
  }
  return null;
}

function backtrack(trace: Int32Array[], a: string[], b: string[], dEnd: number): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && v[d + k - 1]! < v[d + k + 1]!) ? k + 1 : k - 1;
    const prevX = v[d + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push(kept(a[--x]!));
      y--;
    }
    if (x === prevX) ops.push({ kind: '+', line: b[--y]!, count: 1 });
    else ops.push({ kind: '-', line: a[--x]!, count: 1 });
  }
  while (x > 0 && y > 0) {
    ops.push(kept(a[--x]!));
    y--;
  }
  return ops.reverse();
}

/** Each line's id: equal lines, equal ids (so the search compares numbers, whatever a line's length). */
function lineIds(a: string[], b: string[]): [Int32Array, Int32Array] {
  const ids = new Map<string, number>();
  const of = (lines: string[]): Int32Array => {
    const out = new Int32Array(lines.length);
    for (let i = 0; i < lines.length; i++) {
      let id = ids.get(lines[i]!);
      if (id === undefined) ids.set(lines[i]!, (id = ids.size));
      out[i] = id;
    }
    return out;
  };
  return [of(a), of(b)];
}

/** Characters `a` and `b` have in common at their start. */
function commonPrefix(a: string, b: string): number {
  const max = Math.min(a.length, b.length);
  let i = 0;
  // Blocks first (compared natively), then character by character in the block that differs.
  for (const block of [65_536, 512]) while (i + block <= max && a.slice(i, i + block) === b.slice(i, i + block)) i += block;
  while (i < max && a.charCodeAt(i) === b.charCodeAt(i)) i++;
  return i;
}

/** Characters `a` and `b` have in common at their end, at most `limit`. */
function commonSuffix(a: string, b: string, limit: number): number {
  let s = 0;
  for (const block of [65_536, 512])
    while (s + block <= limit && a.slice(a.length - s - block, a.length - s) === b.slice(b.length - s - block, b.length - s)) s += block;
  while (s < limit && a.charCodeAt(a.length - 1 - s) === b.charCodeAt(b.length - 1 - s)) s++;
  return s;
}

/** Whether `at` starts a line of `text` (or is its end after a line break). */
const lineStart = (text: string, at: number): boolean => at === 0 || text.charCodeAt(at - 1) === 10;

/**
 * Where the common head and tail of whole lines end and start: `head` characters (the same in
 * both), the tail from `tailA` in `a` and `tailB` in `b`; the tail never overlaps the head. The
 * same lines as comparing line by line from each end finds.
 */
function commonLines(a: string, b: string): { head: number; tailA: number; tailB: number } {
  const p = commonPrefix(a, b);
  const head = p === 0 ? 0 : a.lastIndexOf('\n', p - 1) + 1;
  const s = commonSuffix(a, b, Math.min(a.length, b.length) - head);
  let tailA = a.length - s;
  // Inside the common suffix a line starts at the same place in both; at its first character only if both say so.
  if (!(lineStart(a, tailA) && lineStart(b, b.length - s))) {
    const nl = a.indexOf('\n', tailA);
    tailA = nl === -1 ? a.length : nl + 1;
  }
  return { head, tailA, tailB: tailA + b.length - a.length };
}

/** Up to `n` whole lines of `text` ending at `end` (a line start), first to last. */
function linesBefore(text: string, end: number, n: number): string[] {
  const out: string[] = [];
  for (let e = end; out.length < n && e > 0;) {
    const start = e >= 2 ? text.lastIndexOf('\n', e - 2) + 1 : 0;
    out.push(text.slice(start, e));
    e = start;
  }
  return out.reverse();
}

/** Up to `n` lines of `text` from `start` (a line start). */
function linesFrom(text: string, start: number, n: number): string[] {
  const out: string[] = [];
  for (let s = start; out.length < n && s < text.length;) {
    const nl = text.indexOf('\n', s);
    const e = nl === -1 ? text.length : nl + 1;
    out.push(text.slice(s, e));
    s = e;
  }
  return out;
}

/** A side of the middle as its lines, or as one summary line when it is past the bounds. */
function side(kind: '-' | '+', text: string, lines: number): Op[] {
  if (lines <= MAX_DIFF_SIDE_LINES && text.length <= MAX_DIFF_SIDE_CHARS) return splitLines(text).map((line) => ({ kind, line, count: 1 }));
  const sha = createHash('sha256').update(text, 'utf8').digest('hex');
  const what = `${lines} ${lines === 1 ? 'line' : 'lines'} ${kind === '-' ? 'removed' : 'added'}`;
  return [
    {
      kind,
      line: `${what}, not shown (${text.length} characters, sha256 ${sha}): a side of a change past ${MAX_DIFF_SIDE_LINES} lines or ${MAX_DIFF_SIDE_CHARS} characters is summarized`,
      count: lines,
      summary: true,
    },
  ];
}

/** One line of a hunk: the marker, the line without its `\n`, and git's note when it had none; a summary as a `\ ` line. */
function hunkLine(op: Op): string {
  if (op.summary) return `\\ ${op.line}\n`;
  if (op.line.endsWith('\n')) return `${op.kind}${op.line.slice(0, -1)}\n`;
  return `${op.kind}${op.line}\n\\ No newline at end of file\n`;
}

/** `start,count` of a hunk header (`diff -u`: a count of 1 is left out; an empty range names the line before it). */
function range(start: number, count: number): string {
  if (count === 0) return `${start - 1 < 0 ? 0 : start - 1},0`;
  return count === 1 ? `${start}` : `${start},${count}`;
}

/** A diff and what it leaves out. */
export interface EditDiff {
  /** The unified diff ({@link unifiedDiff}); empty when nothing changes. */
  text: string;
  /** Lines the diff names in a summary line but does not show, removed and added (0 and 0: every changed line is shown). */
  hidden: { removed: number; added: number };
}

/**
 * {@link unifiedDiff}, with the lines it leaves out. Time and memory are bounded whatever the
 * texts' size: linear scans of the texts (no array of their lines), at most
 * {@link MAX_DIFF_SIDE_LINES} lines split per side, at most {@link MAX_DIFF_WORK} units of search.
 */
export function editDiff(path: string, before: string | null, after: string): EditDiff {
  const hidden = { removed: 0, added: 0 };
  if (before !== null && before === after) return { text: '', hidden };
  const a = before ?? '';
  const { head, tailA, tailB } = commonLines(a, after);
  const midA = a.slice(head, tailA);
  const midB = after.slice(head, tailB);
  const linesA = countLines(midA);
  const linesB = countLines(midB);
  let middle: Op[] | null = null;
  const within = (text: string, lines: number): boolean => lines <= MAX_DIFF_SIDE_LINES && text.length <= MAX_DIFF_SIDE_CHARS;
  if (within(midA, linesA) && within(midB, linesB)) {
    const la = splitLines(midA);
    const lb = splitLines(midB);
    const [ia, ib] = lineIds(la, lb);
    middle = myers(la, lb, ia, ib, MAX_DIFF_STEPS, MAX_DIFF_WORK);
  }
  // Past a bound: the middle as one block removed and one added, a side past its bound as a summary.
  if (middle === null) {
    middle = side('-', midA, linesA).concat(side('+', midB, linesB));
    if (!within(midA, linesA)) hidden.removed = linesA;
    if (!within(midB, linesB)) hidden.added = linesB;
  }
  // The script of the diff's reach: the head's last lines and the tail's first as context around the middle.
  const above = linesBefore(a, head, DIFF_CONTEXT_LINES);
  const ops = above.map(kept).concat(middle, linesFrom(a, tailA, DIFF_CONTEXT_LINES).map(kept));
  const firstLine = countNewlines(a, 0, head) - above.length + 1;
  // The path on one line, escaped: a line break in a file name would add hunk lines of its own to what is approved.
  const shown = safeText(path, false);
  const out = [`--- ${before === null ? '/dev/null' : `a${shown}`}\n`, `+++ b${shown}\n`];
  // Indices of changed ops, grouped into hunks whose context touches or overlaps.
  const changed = ops.flatMap((o, i) => (o.kind === ' ' ? [] : [i]));
  // Where each hunk starts, counted on from the last one's start (once over the script, not from the top for each hunk).
  let oldStart = firstLine;
  let newStart = firstLine;
  let counted = 0;
  let i = 0;
  while (i < changed.length) {
    let j = i;
    while (j + 1 < changed.length && changed[j + 1]! - changed[j]! <= 2 * DIFF_CONTEXT_LINES + 1) j++;
    const from = Math.max(0, changed[i]! - DIFF_CONTEXT_LINES);
    const to = Math.min(ops.length, changed[j]! + DIFF_CONTEXT_LINES + 1);
    for (; counted < from; counted++) {
      if (ops[counted]!.kind !== '+') oldStart += ops[counted]!.count;
      if (ops[counted]!.kind !== '-') newStart += ops[counted]!.count;
    }
    const hunk = ops.slice(from, to);
    let oldCount = 0;
    let newCount = 0;
    for (const o of hunk) {
      if (o.kind !== '+') oldCount += o.count;
      if (o.kind !== '-') newCount += o.count;
    }
    out.push(`@@ -${range(oldStart, oldCount)} +${range(newStart, newCount)} @@\n`);
    for (const o of hunk) out.push(hunkLine(o));
    i = j + 1;
  }
  if (changed.length === 0) out.push('@@ -0,0 +0,0 @@\n'); // a new empty file
  return { text: out.join(''), hidden };
}

/**
 * The unified diff of `before` → `after` for the file at `path` (absolute), headed
 * `--- a<path>` / `+++ b<path>`, or `--- /dev/null` when the file is new (`before` null); the
 * path in the headers is one line, escaped as `safeText(path, false)` does (a line break as `\n`).
 * Empty string when nothing changes. A side of a change past {@link MAX_DIFF_SIDE_LINES} lines or
 * {@link MAX_DIFF_SIDE_CHARS} characters is one line `\ N lines removed, not shown (C characters,
 * sha256 H): ...` (or `added`) in its hunk, whose header still counts every line.
 */
export function unifiedDiff(path: string, before: string | null, after: string): string {
  return editDiff(path, before, after).text;
}
