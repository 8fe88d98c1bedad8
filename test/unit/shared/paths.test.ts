/** src/shared/paths.ts `leavesRoot` and `namesRoot`: a relative workdir that leaves the workspace root, or names the root itself, however it is spelled. */
import path from 'node:path';
import { leavesRoot, namesRoot } from '../../../src/shared/paths';

test('what leaves the root, and what stays', () => {
  const leaves = ['..', '../', '../x', 'a/../..', 'a/./../../b', './..', 'a//..//..', 'a/b/../../../c'];
  const stays = ['a', './a', 'a/..', 'a/b/../c', '.', '..a', 'a..', '...', 'a/../b/../c', 'x/..y'];
  for (const d of leaves) expect([d, leavesRoot(d)]).toEqual([d, true]);
  for (const d of stays) expect([d, leavesRoot(d)]).toEqual([d, false]);
  // The same answer as the worker's path.resolve gives.
  for (const d of [...leaves, ...stays]) expect(leavesRoot(d)).toBe(!path.resolve('/root/ws', d).startsWith('/root/ws'));
});

test('what names the root itself, and what does not', () => {
  const root = ['.', './', '', 'a/..', './a/../', 'a/b/../..', 'a//..', '././.'];
  const not = ['a', './a', 'a/b/..', '..', '../ws', 'a/../..', '..a', '...', 'x/..y'];
  for (const d of root) expect([d, namesRoot(d)]).toEqual([d, true]);
  for (const d of not) expect([d, namesRoot(d)]).toEqual([d, false]);
  // The same answer as the worker's path.resolve gives, for what stays under the root.
  for (const d of [...root, ...not].filter((x) => !leavesRoot(x))) expect(namesRoot(d)).toBe(path.resolve('/root/ws', d) === '/root/ws');
});
