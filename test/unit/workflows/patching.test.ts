/**
 * How to change workflow code safely (docs/development.md, "Changing workflow code
 * safely"): the saved histories replay against a copy of the workflow code
 * with a new timer before every Claude call. Guarded by `patched()`, the
 * change replays; unguarded, replay fails with a determinism error. This is
 * the check CI applies to every change of src/workflows.
 */
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';

const ROOT = path.resolve(__dirname, '../../..');
const HISTORIES = path.join(ROOT, 'test', 'fixtures', 'histories');
const WORK = path.join(ROOT, 'test', '.tmp-patching');
/** The first model call of each turn (src/workflows/model.ts, askClaude). */
const ANCHOR_FILE = 'model.ts';
const ANCHOR = '  let response = await callOnce(state, maxTokens);';

/** Copies src/ (inside the project, so node_modules resolve) with `change` inserted before each Claude call. */
function variant(name: string, change: string): string {
  const dir = path.join(WORK, name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const part of ['workflows', 'contract', 'shared', 'activities', 'config.ts', 'codec/payload-converter.ts'])
    cpSync(path.join(ROOT, 'src', part), path.join(dir, part), { recursive: true });
  const file = path.join(dir, 'workflows', ANCHOR_FILE);
  const source = readFileSync(file, 'utf8');
  expect(source).toContain(ANCHOR);
  // Its own import, so the change does not depend on how the file spells its imports.
  const imports = "import { patched as testPatched, sleep as testSleep } from '@temporalio/workflow';\n";
  writeFileSync(file, imports + source.replace(ANCHOR, `${change}\n${ANCHOR}`));
  return path.join(dir, 'workflows');
}

async function replayAll(workflowsPath: string): Promise<string[]> {
  const histories = readdirSync(HISTORIES)
    .filter((f) => /\.json(\.gz)?$/.test(f))
    // Each under its file name, the run's workflow id (a sub-agent's id is derived from its parent's: docs/subagents.md).
    .map((f) => {
      const bytes = readFileSync(path.join(HISTORIES, f));
      const text = f.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
      return { workflowId: f.replace(/\.json(\.gz)?$/, ''), history: historyFromJSON(JSON.parse(text)) };
    });
  const failures: string[] = [];
  // The workers' payload converter, beside the workflows (one sealed-values module): it reads the saved sealed marks.
  const dataConverter = { payloadConverterPath: path.join(workflowsPath, '..', 'codec', 'payload-converter.ts') };
  for await (const r of Worker.runReplayHistories({ workflowsPath, dataConverter }, histories)) {
    if (r.error) failures.push(`${r.workflowId}: ${r.error.name}`);
  }
  return failures;
}

describe('changing workflow code', () => {
  afterAll(() => rmSync(WORK, { recursive: true, force: true }));

  test('a change guarded by patched() replays every saved history', async () => {
    expect(await replayAll(variant('guarded', "  if (testPatched('pause-before-claude')) await testSleep(10);"))).toEqual([]);
  }, 120_000);

  test('the same change without patched() fails replay', async () => {
    const failures = await replayAll(variant('unguarded', '  await testSleep(10);'));
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.every((f) => /DeterminismViolationError/.test(f))).toBe(true);
  }, 120_000);
});
