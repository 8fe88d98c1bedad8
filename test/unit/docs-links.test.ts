/**
 * The README is a front door to docs/: every relative link in README.md and
 * docs/*.md names a file that exists, and every `#anchor` names a heading of
 * the page it points to (GitHub's slugs: lower case, punctuation dropped,
 * spaces to hyphens). Links inside code blocks and to URLs are not checked.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const pages = [
  'README.md',
  ...readdirSync(path.join(ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .map((f) => `docs/${f}`),
];

/** GitHub's anchor of a heading's text. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[`*_]/g, '')
    .replace(/[^\p{L}\p{N} -]/gu, '')
    .replace(/ /g, '-');
}

/** The text of `file` outside fenced code blocks. */
function prose(file: string): string {
  return readFileSync(path.join(ROOT, file), 'utf8').replace(/^```[\s\S]*?^```/gm, '');
}

function anchorsOf(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(file).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n === 0 ? base : `${base}-${n}`);
  }
  return out;
}

test.each(pages)('%s: every relative link resolves, anchors included', (page) => {
  const broken: string[] = [];
  for (const m of prose(page).matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = m[1]!;
    if (/^[a-z]+:/i.test(target)) continue;
    const [file, anchor] = target.split('#', 2) as [string, string | undefined];
    const resolved = file === '' ? page : path.normalize(path.join(path.dirname(page), file));
    if (!existsSync(path.join(ROOT, resolved))) {
      broken.push(`${target} (no file ${resolved})`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) {
      broken.push(`${target} (no heading #${anchor} in ${resolved})`);
    }
  }
  expect(broken).toEqual([]);
});

test('the README stays a front door: at most 300 lines', () => {
  expect(readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').length).toBeLessThanOrEqual(300);
});
