/** src/shared/paths.ts `leavesRoot`: a relative workdir that leaves the workspace root, however it is spelled. */
import path from 'node:path';
import { leavesRoot } from '../../../src/shared/paths';

test('what leaves the root, and what stays', () => {
  const leaves = ['..', '../', '../x', 'a/../..', 'a/./../../b', './..', 'a//..//..', 'a/b/../../../c'];
  const stays = ['a', './a', 'a/..', 'a/b/../c', '.', '..a', 'a..', '...', 'a/../b/../c', 'x/..y'];
  for (const d of leaves) expect([d, leavesRoot(d)]).toEqual([d, true]);
  for (const d of stays) expect([d, leavesRoot(d)]).toEqual([d, false]);
  // The same answer as the worker's path.resolve gives.
  for (const d of [...leaves, ...stays]) expect(leavesRoot(d)).toBe(!path.resolve('/root/ws', d).startsWith('/root/ws'));
});
