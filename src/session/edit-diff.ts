/**
 * Unified diffs of one file, as a person approves an edit of the text editor tool: the exact
 * change, old and new lines, with 3 lines of context, in the format `diff -u` and `git diff`
 * print (so reviewers and `patch` read it). Pure; no Node imports.
 */
import { safeText } from '../shared/display';

/** Lines of context around each change. */
export const DIFF_CONTEXT_LINES = 3;

/**
 * Above this many edit steps between the changed parts, the middle is shown as one block
 * removed and one added instead of searching for the shortest script (the search costs
 * O(n·d) time and memory for d steps).
 */
export const MAX_DIFF_STEPS = 4_000;

/** `text` split into lines, each with its `\n` (the last one may lack it). */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n').map((l) => `${l}\n`);
  const last = lines[lines.length - 1]!;
  if (last === '\n') lines.pop();
  else lines[lines.length - 1] = last.slice(0, -1);
  return lines;
}

type Op = { kind: ' ' | '-' | '+'; line: string };

/** The shortest edit script of `a` into `b` (Myers), or null when it needs more than `maxSteps`. */
function myers(a: string[], b: string[], maxSteps: number): Op[] | null {
  const n = a.length;
  const m = b.length;
  const max = Math.min(n + m, maxSteps);
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= max; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? v[offset + k + 1]! : v[offset + k - 1]! + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, d, offset);
    }
  }
  return null;
}

function backtrack(trace: Int32Array[], a: string[], b: string[], dEnd: number, offset: number): Op[] {
  const ops: Op[] = [];
  let x = a.length;
  let y = b.length;
  for (let d = dEnd; d > 0; d--) {
    const v = trace[d]!;
    const k = x - y;
    const prevK = k === -d || (k !== d && v[offset + k - 1]! < v[offset + k + 1]!) ? k + 1 : k - 1;
    const prevX = v[offset + prevK]!;
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) {
      ops.push({ kind: ' ', line: a[--x]! });
      y--;
    }
    if (x === prevX) ops.push({ kind: '+', line: b[--y]! });
    else ops.push({ kind: '-', line: a[--x]! });
  }
  while (x > 0 && y > 0) {
    ops.push({ kind: ' ', line: a[--x]! });
    y--;
  }
  return ops.reverse();
}

/** The edit script: common head and tail kept, the middle by {@link myers} (or removed and added whole). */
function editScript(a: string[], b: string[]): Op[] {
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const midA = a.slice(head, a.length - tail);
  const midB = b.slice(head, b.length - tail);
  const middle = myers(midA, midB, MAX_DIFF_STEPS) ?? [
    ...midA.map((line) => ({ kind: '-' as const, line })),
    ...midB.map((line) => ({ kind: '+' as const, line })),
  ];
  return [
    ...a.slice(0, head).map((line) => ({ kind: ' ' as const, line })),
    ...middle,
    ...a.slice(a.length - tail).map((line) => ({ kind: ' ' as const, line })),
  ];
}

/** One line of a hunk: the marker, the line without its `\n`, and git's note when it had none. */
function hunkLine(op: Op): string {
  if (op.line.endsWith('\n')) return `${op.kind}${op.line.slice(0, -1)}\n`;
  return `${op.kind}${op.line}\n\\ No newline at end of file\n`;
}

/** `start,count` of a hunk header (`diff -u`: a count of 1 is left out; an empty range names the line before it). */
function range(start: number, count: number): string {
  if (count === 0) return `${start - 1 < 0 ? 0 : start - 1},0`;
  return count === 1 ? `${start}` : `${start},${count}`;
}

/**
 * The unified diff of `before` → `after` for the file at `path` (absolute), headed
 * `--- a<path>` / `+++ b<path>`, or `--- /dev/null` when the file is new (`before` null); the
 * path in the headers is one line, escaped as `safeText(path, false)` does (a line break as `\n`).
 * Empty string when nothing changes.
 */
export function unifiedDiff(path: string, before: string | null, after: string): string {
  const a = splitLines(before ?? '');
  const b = splitLines(after);
  const ops = editScript(a, b);
  if (before !== null && ops.every((o) => o.kind === ' ')) return '';
  // The path on one line, escaped: a line break in a file name would add hunk lines of its own to what is approved.
  const shown = safeText(path, false);
  const out = [`--- ${before === null ? '/dev/null' : `a${shown}`}\n`, `+++ b${shown}\n`];
  // Indices of changed ops, grouped into hunks whose context touches or overlaps.
  const changed = ops.flatMap((o, i) => (o.kind === ' ' ? [] : [i]));
  let i = 0;
  while (i < changed.length) {
    let j = i;
    while (j + 1 < changed.length && changed[j + 1]! - changed[j]! <= 2 * DIFF_CONTEXT_LINES + 1) j++;
    const from = Math.max(0, changed[i]! - DIFF_CONTEXT_LINES);
    const to = Math.min(ops.length, changed[j]! + DIFF_CONTEXT_LINES + 1);
    let oldStart = 1;
    let newStart = 1;
    for (const o of ops.slice(0, from)) {
      if (o.kind !== '+') oldStart++;
      if (o.kind !== '-') newStart++;
    }
    const hunk = ops.slice(from, to);
    const oldCount = hunk.filter((o) => o.kind !== '+').length;
    const newCount = hunk.filter((o) => o.kind !== '-').length;
    out.push(`@@ -${range(oldStart, oldCount)} +${range(newStart, newCount)} @@\n`, ...hunk.map(hunkLine));
    i = j + 1;
  }
  if (changed.length === 0) out.push('@@ -0,0 +0,0 @@\n'); // a new empty file
  return out.join('');
}
