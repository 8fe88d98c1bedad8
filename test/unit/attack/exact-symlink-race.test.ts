/**
 * Bypass (TOCTOU): runExact checks each path with realpath in the worker,
 * then spawns bwrap + setpriv + the program, which opens the path again by
 * name. A background job left by an earlier (human-approved) command that
 * flips a workspace symlink between a file inside and /etc/passwd wins the
 * race often enough: an auto-approved `cat l` prints /etc/passwd.
 */
import { ExactRefusedError } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

test('a symlink swapped by a background job never makes an auto-approved cat read outside the workspace', async () => {
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  await s.run('echo real > real; (while :; do ln -sfn /etc/passwd l; ln -sfn real l; done) >/dev/null 2>&1 &');
  const until = Date.now() + 20_000;
  let leaked = 0;
  let attempts = 0;
  while (Date.now() < until && leaked === 0) {
    attempts++;
    try {
      const r = await s.runExact(['cat', 'l'], { paths: ['l'] });
      if (/^root:/m.test(r.output)) leaked++;
    } catch (err) {
      expect(err).toBeInstanceOf(ExactRefusedError);
    }
  }
  expect({ leaked, attempts }).toEqual({ leaked: 0, attempts });
});
