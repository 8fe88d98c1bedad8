/**
 * The sandbox's edges, round 3, kind 6: the exact run's inside-the-workspace check resolved a path
 * on the host, where a dangling symlink (`ws/l -> /tmp/x`, no /tmp/x on the host) resolved to
 * `ws/l` itself, inside; in the sandbox /tmp/x may exist, and a symlink's target may appear later.
 * Held by src/session/exact.ts `resolveInView` (the check walks each component: a symlink whose
 * target is missing, a loop, or a path the exact run's sandbox shows otherwise is refused) and
 * session.ts (`viewCheck`, and the exact sandbox without the session's private directory).
 *
 * The attacks: dangling to a file the shell's private /tmp holds; a chain of symlinks ending
 * nowhere; a dangling directory link with a path below it; a host symlink in a directory the exact
 * sandbox hides that leads back into the workspace (inside on the host, nothing in the sandbox);
 * a loop; and a background job flipping a symlink between a workspace file and those targets
 * while auto-approved `cat`s run.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ExactRefusedError, resolveInView } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const made: string[] = [];
afterEach(async () => {
  await closeSessions();
  removeTempDirs();
  for (const p of made.splice(0)) fs.rmSync(p, { recursive: true, force: true });
});

test('an exact run refuses a path whose symlinks cannot be resolved the same in its sandbox', async () => {
  const ws = tempDir();
  const tag = `aj-dangle-${process.pid}-${Date.now()}`;
  // On the host: /var/tmp/<tag>-hop -> the workspace (the exact sandbox hides /var).
  const hop = `/var/tmp/${tag}-hop`;
  fs.symlinkSync(ws, hop);
  made.push(hop);
  const s = await startSession({ cwd: ws, workspace: ws });
  await s.run(
    [
      'echo real > real',
      `echo SECRET > /tmp/${tag}`,
      `ln -s /tmp/${tag} to-private-tmp`,
      `ln -s b a && ln -s /nonexistent-${tag}/file b`,
      `ln -s /var/tmp/${tag}-missing dir-link`,
      `ln -s ${hop}/real via-hidden-hop`,
      'ln -s loop2 loop1 && ln -s loop1 loop2',
    ].join(' && '),
  );
  for (const p of ['to-private-tmp', 'a', 'b', 'dir-link/file', 'via-hidden-hop', 'loop1']) {
    await expect(s.runExact(['cat', p], { paths: [p] })).rejects.toBeInstanceOf(ExactRefusedError);
  }
  // What is plainly inside still runs.
  expect((await s.runExact(['cat', 'real'], { paths: ['real'] })).output).toBe('real\n');
  expect((await s.runExact(['cat', 'missing'], { paths: ['missing'] })).output).toMatch(/No such file/);
  // The host walk alone (no sandbox view) still refuses every dangling one.
  for (const p of ['to-private-tmp', 'a', 'dir-link/file', 'loop1']) expect(resolveInView(path.join(ws, p))).toHaveProperty('why');
  expect(resolveInView(path.join(ws, 'via-hidden-hop'))).toEqual({ path: path.join(fs.realpathSync(ws), 'real') });
});

test('a symlink flipped by a background job between check and use never shows an exact cat what the sandbox hides', async () => {
  const ws = tempDir();
  const tag = `aj-flip-${process.pid}-${Date.now()}`;
  const s = await startSession({ cwd: ws, workspace: ws });
  await s.run(
    `echo real > real; echo SECRET > /tmp/${tag}; (while :; do ln -sfn /tmp/${tag} l; ln -sfn real l; ln -sfn /etc/hostname l; ln -sfn real l; done) >/dev/null 2>&1 &`,
  );
  const until = Date.now() + 8_000;
  let attempts = 0;
  let leaked = 0;
  while (Date.now() < until) {
    attempts++;
    try {
      const r = await s.runExact(['cat', 'l'], { paths: ['l'] });
      if (r.output !== 'real\n' && !/No such file/.test(r.output)) leaked++;
    } catch (err) {
      expect(err).toBeInstanceOf(ExactRefusedError);
    }
  }
  expect({ leaked, attempts }).toEqual({ leaked: 0, attempts });
});
