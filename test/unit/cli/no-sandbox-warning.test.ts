/**
 * `start --workdir` on a git repository when the worker runs without the sandbox (`AGENT_JOBS_SANDBOX=none` where
 * the CLI runs) prints what the session can still plant there (src/cli/workdir.ts `noSandboxGitWarning`), through the
 * function the command calls; nothing with the sandbox, or for a folder that holds no repository.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { noSandboxGitWarning } from '../../../src/cli/workdir';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => fs.rmSync(d, { recursive: true, force: true })));

function folder(repo: boolean): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-warn-'));
  dirs.push(d);
  if (repo) spawnSync('git', ['init', '-q', d]);
  return d;
}

test('a repository in mode none is warned about; not with the sandbox, not without a repository, not a relative path', async () => {
  const repo = folder(true);
  const warning = await noSandboxGitWarning(repo, { AGENT_JOBS_SANDBOX: 'none' });
  expect(warning).toContain(`${repo} is a git repository`);
  expect(warning).toMatch(/your git run on it meanwhile runs what the session put there/);
  // It says whose environment it read: the worker's mode may differ, and status shows it.
  expect(warning).toMatch(
    /^warning: AGENT_JOBS_SANDBOX=none in this CLI's environment \(the worker's own mode is what counts; `status` shows it\)/,
  );
  expect(await noSandboxGitWarning(repo, { AGENT_JOBS_SANDBOX: 'bwrap' })).toBeUndefined();
  expect(await noSandboxGitWarning(repo, {})).toBeUndefined();
  expect(await noSandboxGitWarning(folder(false), { AGENT_JOBS_SANDBOX: 'none' })).toBeUndefined();
  expect(await noSandboxGitWarning('some/repo', { AGENT_JOBS_SANDBOX: 'none' })).toBeUndefined();
});
