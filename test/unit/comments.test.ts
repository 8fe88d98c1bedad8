/**
 * What comments cite must be defined in the repository: a case code (`C05`)
 * must have its entry in docs/cases.md, and no comment may point at an
 * issue by its number, which nobody reading the code can look up: say what
 * it means instead.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '../..');
const CASES_DOC = path.join(ROOT, 'docs', 'cases.md');

/** Files whose comments may still cite issue numbers: none. */
const ISSUE_NUMBER_EXCLUDED: string[] = [];

/** Every file under `dir` (relative to the root), but fixtures that hold no comments (saved histories). */
function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = path.posix.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...filesUnder(rel));
    else if (/\.(ts|js|mjs|cjs|sh|md)$/.test(entry.name)) out.push(rel);
  }
  return out;
}

/** The comments of a file, each with its line: TypeScript's own comment ranges for code, `#` comments for shell, the whole text for Markdown. */
function commentsOf(file: string, text: string): Array<{ line: number; text: string }> {
  if (file.endsWith('.md')) return text.split('\n').map((t, i) => ({ line: i + 1, text: t }));
  if (file.endsWith('.sh'))
    return text.split('\n').flatMap((t, i) => (/(^|\s)#/.test(t) ? [{ line: i + 1, text: t.slice(t.search(/(^|\s)#/)) }] : []));
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, false, file.endsWith('.ts') ? ts.ScriptKind.TS : ts.ScriptKind.JS);
  const seen = new Map<number, string>();
  const collect = (ranges: ts.CommentRange[] | undefined): void => {
    for (const r of ranges ?? []) seen.set(r.pos, text.slice(r.pos, r.end));
  };
  const visit = (node: ts.Node): void => {
    collect(ts.getLeadingCommentRanges(text, node.getFullStart()));
    collect(ts.getTrailingCommentRanges(text, node.getEnd()));
    ts.forEachChild(node, visit);
  };
  visit(source);
  collect(ts.getLeadingCommentRanges(text, source.endOfFileToken.getFullStart()));
  return [...seen.entries()]
    .sort(([a], [b]) => a - b)
    .map(([pos, t]) => ({ line: source.getLineAndCharacterOfPosition(pos).line + 1, text: t }));
}

/** Case codes a text cites: `C05`, and every code of a range `C16–C18`. */
function caseCodesIn(text: string): Array<{ found: string; index: number }> {
  const codes: Array<{ found: string; index: number }> = [];
  for (const m of text.matchAll(/\bC(\d{2})(?:\s*[–-]\s*C(\d{2}))?\b/g)) {
    const from = Number(m[1]);
    const to = m[2] === undefined ? from : Number(m[2]);
    for (let n = from; n <= to; n++) codes.push({ found: `C${String(n).padStart(2, '0')}`, index: m.index });
  }
  return codes;
}

/** Issue references by number a text holds: the word issue (any case, maybe plural) then a number, maybe after `#`. */
function issueNumbersIn(text: string): Array<{ found: string; index: number }> {
  return [...text.matchAll(/\bissues?[\s*]*#?\d+/gi)].map((m) => ({ found: m[0].replace(/\s+\*?\s*/g, ' '), index: m.index }));
}

/** What `find` finds in the comments of a file under the root, each with the line it starts on (a match may span lines: ` * issue\n * 8`). */
function citations(file: string, find: (text: string) => Array<{ found: string; index: number }>): string[] {
  return commentsOf(file, readFileSync(path.join(ROOT, file), 'utf8')).flatMap((c) =>
    find(c.text).map(({ found, index }) => `${file}:${c.line + (c.text.slice(0, index).match(/\n/g)?.length ?? 0)}: ${found}`),
  );
}

const defined = new Set([...readFileSync(CASES_DOC, 'utf8').matchAll(/^## (C\d{2})\b/gm)].map((m) => m[1]!));
const files = [...filesUnder('src'), ...filesUnder('test')];

describe('comments cite only what the repository defines', () => {
  test('the scanners find what they should', () => {
    expect(caseCodesIn('a C05 case, cases C16–C18, C2 and C123 are not codes').map((c) => c.found)).toEqual(['C05', 'C16', 'C17', 'C18']);
    expect(issueNumbersIn('issue 8, (issue 2, item 8), Issue #3, issues 4, issue\n * 5; no issue here').map((c) => c.found)).toEqual([
      'issue 8',
      'issue 2',
      'Issue #3',
      'issues 4',
      'issue 5',
    ]);
    expect(
      commentsOf('x.ts', "// one C01\nconst s = '// not a comment C99';\n/* two\n C02 */ f(); // three\n").map((c) => [c.line, c.text]),
    ).toEqual([
      [1, '// one C01'],
      [3, '/* two\n C02 */'],
      [4, '// three'],
    ]);
  });

  test('docs/cases.md defines codes, each with the test files that keep it, which exist', () => {
    expect(defined.size).toBeGreaterThan(0);
    const doc = readFileSync(CASES_DOC, 'utf8');
    const missing: string[] = [];
    for (const entry of doc.split(/^## /m).slice(1)) {
      const code = entry.slice(0, 3);
      const keptBy = /\*\*Kept by:\*\*([\s\S]*?)(?:\n\n|$)/.exec(entry)?.[1] ?? '';
      const tests = [...keptBy.matchAll(/`(test\/[^`]+)`/g)].map((m) => m[1]!);
      if (tests.length === 0) missing.push(`${code}: names no test file`);
      for (const t of tests) if (!existsSync(path.join(ROOT, t))) missing.push(`${code}: ${t} does not exist`);
    }
    expect(missing).toEqual([]);
  });

  test('every case code a comment in src/ or test/ cites is defined in docs/cases.md', () => {
    const undefinedCodes = files.flatMap((file) => citations(file, (text) => caseCodesIn(text).filter((c) => !defined.has(c.found))));
    expect(undefinedCodes).toEqual([]);
  });

  test('no comment in src/ or test/ cites an issue number', () => {
    const checked = files.filter((f) => !ISSUE_NUMBER_EXCLUDED.some((x) => f === x || f.startsWith(x)));
    expect(checked.length).toBeGreaterThan(100);
    expect(checked.flatMap((file) => citations(file, issueNumbersIn))).toEqual([]);
  });
});
