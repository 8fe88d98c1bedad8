/**
 * judgeLiveness: a worker is alive only on a sign of life that arrived while
 * it was watched; gone after the silence (and a minimum watch), or when it
 * said it shut down. Pure: samples in, verdict out.
 */
import { judgeLiveness, type LivenessSample } from '../../../src/activities/liveness';

const limits = { silenceMs: 8_000, minWatchMs: 1_500, maxWatchMs: 9_500 };
const at = (atMs: number, heartbeatMs: number | null, pollMs: number | null = null, shutDown = false): LivenessSample => ({
  atMs,
  heartbeatMs,
  pollMs,
  shutDown,
});

test('a heartbeat that arrives while watched: alive', () => {
  expect(judgeLiveness([at(10_000, 4_000), at(10_500, 10_400)], limits)).toEqual({
    alive: true,
    evidence: 'its worker still sends its heartbeat',
  });
});

test('a new poll of the session queue while watched: alive (a server without worker heartbeats)', () => {
  expect(judgeLiveness([at(10_000, null, 3_000), at(10_500, null, 10_200)], limits)?.alive).toBe(true);
});

test('an old heartbeat alone is not life: watched on until the silence, then gone', () => {
  // Killed at 4 s: its last heartbeat stays 4 s; a poll started before the kill stays too.
  const samples = [at(9_000, 4_000, 3_500)];
  expect(judgeLiveness(samples, limits)).toBeNull();
  samples.push(at(11_000, 4_000, 3_500));
  expect(judgeLiveness(samples, limits)).toBeNull(); // watched 2 s, silent 7 s: not yet
  samples.push(at(12_000, 4_000, 3_500));
  expect(judgeLiveness(samples, limits)).toEqual({
    alive: false,
    evidence: 'no sign of life from its worker while watched for 3.0 s (its last sign of life came 8.0 s ago)',
  });
});

test('silent long before the watch began: gone only after the minimum watch', () => {
  expect(judgeLiveness([at(60_000, 1_000)], limits)).toBeNull();
  expect(judgeLiveness([at(60_000, 1_000), at(61_500, 1_000)], limits)?.alive).toBe(false);
});

test('a clock behind the worker cannot keep a dead worker alive past the longest watch', () => {
  // The heartbeat looks 1 s old on this clock for ever: no new one ever arrives.
  expect(judgeLiveness([at(10_000, 9_000), at(15_000, 9_000)], limits)).toBeNull();
  expect(judgeLiveness([at(10_000, 9_000), at(19_500, 9_000)], limits)?.alive).toBe(false);
});

test('a worker that reported its shutdown is gone at once; none listed at all is gone after the minimum watch', () => {
  expect(judgeLiveness([at(10_000, 9_900, null, true)], limits)).toEqual({
    alive: false,
    evidence: 'its worker reported that it shut down',
  });
  expect(judgeLiveness([at(10_000, null), at(11_500, null)], limits)).toEqual({
    alive: false,
    evidence: 'no sign of life from its worker while watched for 1.5 s (the server lists no heartbeat and no poll of it)',
  });
});
