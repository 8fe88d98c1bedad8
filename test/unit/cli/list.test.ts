/**
 * `agent-jobs list` orders runs by start time, newest first, although
 * Temporal lists open runs before closed ones.
 */
import { newestByStart, type Listed } from '../../../src/client';

interface Run extends Listed {
  id: string;
}

/** A listing in visibility's default order: open by start (newest first), then closed by close (latest first). */
function visibilityOrder(runs: Run[]): Run[] {
  const open = runs.filter((r) => !r.closeTime).sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
  const closed = runs.filter((r) => r.closeTime).sort((a, b) => b.closeTime!.getTime() - a.closeTime!.getTime());
  return [...open, ...closed];
}

/** Yields `runs`, counting how many were read. */
// eslint-disable-next-line @typescript-eslint/require-await -- async only to be an AsyncIterable, like the client's listing
async function* listing(runs: Run[], read: { n: number }): AsyncIterable<Run> {
  for (const r of runs) {
    read.n++;
    yield r;
  }
}

const at = (minute: number): Date => new Date(Date.UTC(2026, 0, 1, 0, minute));

describe('newestByStart', () => {
  test('an old open run is listed after newer closed ones', async () => {
    const runs: Run[] = [
      { id: 'old-open', startTime: at(0) },
      { id: 'new-closed', startTime: at(10), closeTime: at(11) },
      { id: 'mid-closed', startTime: at(5), closeTime: at(20) },
    ];
    const read = { n: 0 };
    expect((await newestByStart(listing(visibilityOrder(runs), read), 20)).map((r) => r.id)).toEqual([
      'new-closed',
      'mid-closed',
      'old-open',
    ]);
    expect((await newestByStart(listing(visibilityOrder(runs), read), 2)).map((r) => r.id)).toEqual(['new-closed', 'mid-closed']);
  });

  test('same runs as sorting everything, and stops reading early', async () => {
    let seed = 7;
    const random = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const runs: Run[] = Array.from({ length: 500 }, (_, i) => {
      const start = random(100_000);
      const open = random(10) === 0;
      return { id: `r${i}`, startTime: at(start), ...(open ? {} : { closeTime: at(start + random(50)) }) };
    });
    const all = [...runs].sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
    for (const limit of [1, 5, 20, 499, 500, 600]) {
      const read = { n: 0 };
      const got = await newestByStart(listing(visibilityOrder(runs), read), limit);
      expect(got.map((r) => r.startTime.getTime())).toEqual(all.slice(0, limit).map((r) => r.startTime.getTime()));
      if (limit <= 20) expect(read.n).toBeLessThan(150);
    }
  });
});
