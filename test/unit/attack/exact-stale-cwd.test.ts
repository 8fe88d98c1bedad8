/**
 * Bypass: the policy and runExact's path check resolve relative paths
 * against `session.cwd` (the working directory recorded when the last shell
 * command ended), while the program runs in the shell's CURRENT kernel
 * working directory. A background job left by an earlier (human-approved)
 * command renames bash's directory after that command ended: `a` (bash's
 * cwd) becomes `b`, a decoy `a/secret.txt` is created, and `b/secret.txt`
 * is a symlink to /etc/passwd. `cat secret.txt` is judged (and
 * realpath-checked) as `<ws>/a/secret.txt`, a plain file inside the
 * workspace, but /usr/bin/cat opens `<ws>/b/secret.txt` -> /etc/passwd:
 * an auto-approved read outside the workspace.
 */
import * as fs from 'node:fs';
import { decideApproval } from '../../../src/policy';
import { ExactRefusedError } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

test('a renamed working directory cannot make runExact read a different file than the one it checked', async () => {
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  await s.run(
    'mkdir a; cd a; ln -s /etc/passwd secret.txt; ' +
      '(for i in $(seq 1200); do [ -e ../go ] && break; sleep 0.05; done; mv ../a ../b; mkdir ../a; echo decoy > ../a/secret.txt) >/dev/null 2>&1 &',
  );
  // The swap happens once the command has returned (the session has its cwd), when the test says so: a fixed pause could end before it.
  fs.writeFileSync(`${dir}/go`, '');
  await waitUntil(
    'the background job to swap the directory',
    () => fs.existsSync(`${dir}/b`) && fs.existsSync(`${dir}/a/secret.txt`) && fs.readFileSync(`${dir}/a/secret.txt`, 'utf8') === 'decoy\n',
  );
  expect(fs.readFileSync(`${dir}/a/secret.txt`, 'utf8')).toBe('decoy\n');
  const d = decideApproval('cat secret.txt', 'policy', { workspace: s.exactRoot, cwd: s.cwd });
  if (d.action !== 'run') return; // asking is a fix too
  let output: string;
  try {
    output = (await s.runExact(d.argv, { paths: d.paths })).output;
  } catch (err) {
    expect(err).toBeInstanceOf(ExactRefusedError);
    return;
  }
  // either refused, or it read the file it checked
  expect(output).not.toMatch(/^root:/m);
  expect(output).toBe('decoy\n');
});
