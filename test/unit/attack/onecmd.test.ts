/**
 * Bypass (a later command's result lies): `set -t` (`set -o onecmd`) makes
 * bash exit after the current control line. Often the worker still accepts
 * that command (status 0, pipes check done before bash is gone), sends the
 * NEXT command to the exiting shell, sees bash exit with code 0 and reports
 * the next command as `exitCode: 0`, empty output, no `[agent-jobs: ...]`
 * note, as if it had run `exit 0`. It never ran (its `touch` did not
 * happen): e.g. a failing `npm test` approved by a human comes back 0.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

test('after set -t, a command that never ran is not reported as exit 0', async () => {
  for (let i = 0; i < 8; i++) {
    const dir = tempDir();
    const s = await startSession({ cwd: dir, workspace: dir });
    await s.run(i % 2 === 0 ? 'set -t' : 'set -o onecmd');
    const r = await s.run('echo f; touch ran; false');
    if (!fs.existsSync(path.join(dir, 'ran'))) {
      // it did not run: the result must not claim a status, or must say why
      expect({ i, exitCode: r.exitCode, noted: /\[agent-jobs:/.test(r.output) }).toEqual({ i, exitCode: null, noted: true });
    } else {
      expect(r.exitCode).toBe(1);
    }
    await s.close();
  }
});
