/** docs/patches.md lists every patched() id of src/workflows, and no id the code no longer has. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
const WORKFLOWS = path.join(ROOT, 'src', 'workflows');

/** `NAME_PATCH = 'id'` constants, by id, with the file that defines them. */
function patchIds(): Map<string, string> {
  const ids = new Map<string, string>();
  for (const file of readdirSync(WORKFLOWS).filter((f) => f.endsWith('.ts'))) {
    const text = readFileSync(path.join(WORKFLOWS, file), 'utf8');
    for (const m of text.matchAll(/export const (\w+_PATCH) = '([^']+)'/g)) ids.set(m[2]!, `${m[1]} (${file})`);
    // A patched() call must name a constant, so this index can find it.
    expect(text).not.toMatch(/patched\(\s*['"`]/);
  }
  return ids;
}

test('every patched() id is a row of docs/patches.md, with its constant and file', () => {
  const ids = patchIds();
  expect(ids.size).toBeGreaterThan(10);
  const rows = readFileSync(path.join(ROOT, 'docs', 'patches.md'), 'utf8')
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .map((l) => l.split('|').map((c) => c.trim()));
  const documented = new Map(rows.map((cells) => [cells[1]!.replace(/`/g, ''), cells[2]!.replace(/`/g, '')]));
  for (const [id, where] of ids) expect([id, documented.get(id)]).toEqual([id, where]);
  for (const id of documented.keys()) expect([id, ids.has(id)]).toEqual([id, true]);
});
