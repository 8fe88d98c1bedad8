/**
 * Bypass (hang): the policy and runExact only check that paths stay inside
 * the workspace, not what they are. A FIFO in the workspace (made by an
 * earlier approved command, or unpacked from an archive in the repository)
 * makes the auto-approved `cat p` / `head p` / `grep x p` / `wc p` block
 * until the command timeout: forever with timeoutMs Infinity. The
 * read-only programs are meant to return at once.
 */
import { decideApproval } from '../../../src/policy';
import { ExactRefusedError } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

test('an auto-approved read of a FIFO in the workspace is refused or returns, instead of blocking until the timeout', async () => {
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  await s.run('mkfifo p');
  const d = decideApproval('cat p', 'policy', { workspace: s.exactRoot, cwd: s.cwd });
  if (d.action !== 'run') return;
  const r = await s.runExact(d.argv, { paths: d.paths, timeoutMs: 5000 }).catch((err: unknown) => {
    expect(err).toBeInstanceOf(ExactRefusedError);
    return undefined;
  });
  expect(r?.timedOut ?? false).toBe(false);
});
