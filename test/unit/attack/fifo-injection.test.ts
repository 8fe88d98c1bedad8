/**
 * Bypass (a later command's result lies): the capture FIFOs of a session are
 * `pipe.N` in the session's FIFO directory, mode 0600 and owned by the
 * session user, reused from a pool, and reachable by path inside the sandbox
 * (the directory is bound read-only, but opening a FIFO for writing works on
 * a read-only mount; the directory is --x for the group, names are
 * guessable). A background job left by an earlier command opens them by
 * path (`1<>pipe.N`, never blocking) and writes text that the worker then
 * reports as the output of the LATER command (e.g. a fake "all tests
 * passed"). The protocol comment says a background job only ever writes
 * into its own command's pipe, which is drained and dropped.
 */
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

test("a background job cannot write into a later command's output through the FIFO path", async () => {
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  await s.run(
    'd=$(dirname "$(readlink /proc/$$/fd/1)"); (exec >/dev/null 2>&1; for i in $(seq 40); do sleep 0.1; ' +
      'for n in 1 2 3 4 5 6; do timeout 0.2 bash -c \'printf "INJECTED\\n" 1<>"$1"\' _ "$d/pipe.$n"; done; done) &',
  );
  await new Promise((r) => setTimeout(r, 500));
  const r = await s.run('sleep 2; echo second');
  expect(r.output).not.toMatch(/INJECTED/);
  expect(r.output).toBe('second\n');
});
