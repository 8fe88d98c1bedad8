/**
 * The working directory of a session is created level by level: Node's
 * recursive mkdir never settles under /proc, which once left a worker
 * spinning with its session activity stuck until the heartbeat timeout.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { makeDirectory } from '../../../src/activities/session';

describe('makeDirectory', () => {
  let root: string;
  beforeEach(() => (root = mkdtempSync(path.join(tmpdir(), 'agent-jobs-mkdir-'))));
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  test('creates missing levels and accepts an existing directory', async () => {
    const dir = path.join(root, 'a', 'b', 'c');
    await makeDirectory(dir);
    expect(statSync(dir).isDirectory()).toBe(true);
    await expect(makeDirectory(dir)).resolves.toBeUndefined();
  });

  test('a path under /proc fails at once with the errno, instead of never settling', async () => {
    // Node's own recursive mkdir never settles here: this test would time out.
    await expect(makeDirectory('/proc/agent-jobs-nope/dir')).rejects.toThrow(
      /^cannot create the working directory \/proc\/agent-jobs-nope\/dir: E[A-Z]+/,
    );
  });

  test('a file on the way, or in the place of the directory, is a clear error', async () => {
    writeFileSync(path.join(root, 'f'), 'x');
    await expect(makeDirectory(path.join(root, 'f', 'sub'))).rejects.toThrow(/cannot create the working directory .*\/f\/sub: ENOTDIR/);
    await expect(makeDirectory(path.join(root, 'f'))).rejects.toThrow(/exists but is not a directory/);
  });
});
