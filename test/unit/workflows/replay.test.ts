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

/** The time zones replay runs in: the test machine's. */
const REPLAY_TIME_ZONES: Array<string | undefined> = [process.env.TZ];

/** `history: message` of every saved history that does not replay against the workflows at `workflowsPath`, in each of REPLAY_TIME_ZONES. */
async function replayFailures(workflowsPath: string): Promise<string[]> {
  const failures: string[] = [];
  const saved = process.env.TZ;
  try {
    for (const zone of REPLAY_TIME_ZONES) {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
      const histories = files.map((f) => ({
        workflowId: f.replace(/\.json$/, ''),
        history: historyFromJSON(JSON.parse(readFileSync(path.join(DIR, f), 'utf8'))),
      }));
      for await (const r of Worker.runReplayHistories({ workflowsPath }, histories)) {
        if (r.error) failures.push(`${r.workflowId} (TZ=${zone ?? 'unset'}): ${r.error.name}: ${r.error.message}`);
      }
    }
  } finally {
    if (saved === undefined) delete process.env.TZ;
    else process.env.TZ = saved;
  }
  return failures;
}

describe('replay of saved histories', () => {
  test('there are saved histories for the main paths', () => {
    expect(files.length).toBeGreaterThanOrEqual(5);
  });

  test('every saved history replays without a determinism error', async () => {
    expect(await replayFailures(require.resolve('../../../src/workflows'))).toEqual([]);
  }, 120_000);

  test("replay catches a workflow that depends on the worker's time zone (the time zone reaches the sandbox)", async () => {
    const failures = await replayFailures(path.resolve(__dirname, '../../fixtures/zone-dependent-workflow'));
    expect(failures.length).toBeGreaterThan(0);
    expect(failures.every((f) => f.includes('DeterminismViolationError'))).toBe(true);
  }, 120_000);
});
