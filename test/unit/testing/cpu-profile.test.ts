/**
 * The summary of `node --cpu-prof` profiles that `bench:turns --cpu-prof`
 * prints: only samples inside the run's window count, a sample stands for
 * the time to the next one, `(idle)` is left out, total time counts a
 * function once per sample, and shares are of the CPU time given.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { readProfiles, summarizeProfiles, type CpuProfile } from '../../../src/dev/testing/cpu-profile';

const frame = (functionName: string, url = 'file:///x/dist/a.js', lineNumber = 0) => ({ functionName, url, lineNumber });

/** root → outer → inner (recursing into itself once), and idle; one sample every 1,000 µs from t = 10,000. */
function profile(sampleIds: number[]): CpuProfile {
  return {
    nodes: [
      { id: 1, callFrame: frame('(root)', ''), children: [2, 5] },
      { id: 2, callFrame: frame('outer', 'file:///x/dist/a.js', 9), children: [3] },
      { id: 3, callFrame: frame('inner', 'file:///x/node_modules/lib/b.js', 4), children: [4] },
      { id: 4, callFrame: frame('inner', 'file:///x/node_modules/lib/b.js', 4) },
      { id: 5, callFrame: frame('(idle)', '') },
    ],
    startTime: 9_000,
    endTime: 9_000 + 1_000 * (sampleIds.length + 1),
    samples: sampleIds,
    timeDeltas: sampleIds.map(() => 1_000),
  };
}

test('self and total time per function, in the window only, per turn and as a share of the CPU given', () => {
  // Samples at 10,000 .. 16,000 µs; the window keeps 11,000 .. 15,000 (five samples, each standing for 1 ms).
  const p = profile([2, 3, 4, 5, 3, 2, 4]);
  const s = summarizeProfiles([p], { fromUs: 11_000, toUs: 15_000 }, 8, 2);
  // In the window: 3 (inner), 4 (inner, recursed), 5 (idle: left out), 3 (inner), 2 (outer).
  expect(s.sampledMs).toBe(4);
  expect(s.self).toEqual([
    { where: 'inner lib/b.js:5', msPerTurn: 1.5, share: 3 / 8 },
    { where: 'outer dist/a.js:10', msPerTurn: 0.5, share: 1 / 8 },
  ]);
  // outer is on the stack of every kept sample; inner counted once in the sample where it recurses.
  expect(s.total).toEqual([
    { where: 'outer dist/a.js:10', msPerTurn: 2, share: 4 / 8 },
    { where: 'inner lib/b.js:5', msPerTurn: 1.5, share: 3 / 8 },
  ]);
});

test('profiles of several threads add up; `top` bounds the lists; an empty window gives nothing', () => {
  const both = summarizeProfiles([profile([2, 2]), profile([3, 3])], { fromUs: 0, toUs: 1e9 }, 4, 1, 1);
  expect(both.sampledMs).toBe(2); // each profile's last sample stands for nothing
  expect(both.self).toHaveLength(1);
  expect(summarizeProfiles([profile([2, 3])], { fromUs: 50_000, toUs: 60_000 }, 1, 1)).toEqual({ sampledMs: 0, self: [], total: [] });
});

test('readProfiles reads every .cpuprofile of a folder and nothing else', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-prof-'));
  try {
    writeFileSync(path.join(dir, 'CPU.1.cpuprofile'), JSON.stringify(profile([2])));
    writeFileSync(path.join(dir, 'run.json'), '{}');
    expect(readProfiles(dir)).toEqual([profile([2])]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
