/**
 * Saved histories (recorded from integration runs with
 * AGENT_JOBS_SAVE_HISTORIES=1 npm test) replay against today's workflow
 * code: a non-deterministic change fails here, in CI.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { Worker } from '@temporalio/worker';

const DIR = path.resolve(__dirname, '../../fixtures/histories');
const files = readdirSync(DIR)
  .filter((f) => f.endsWith('.json'))
  .sort();

describe('replay of saved histories', () => {
  test('there are saved histories for the main paths', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  test('every saved history replays without a determinism error', async () => {
    const histories = files.map((f) => ({
      workflowId: f.replace(/\.json$/, ''),
      history: historyFromJSON(JSON.parse(readFileSync(path.join(DIR, f), 'utf8'))),
    }));
    const failures: string[] = [];
    for await (const r of Worker.runReplayHistories({ workflowsPath: require.resolve('../../../src/workflows') }, histories)) {
      if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
    }
    expect(failures).toEqual([]);
  }, 120_000);
});
