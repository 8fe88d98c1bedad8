/**
 * What the git audit moved when a run's session closed reaches the person through the CLI of the closed run (a real dev
 * server, worker, bash and the scripted model): the session leaves a conflicted merge of a branch of its own in the
 * person's repository; at close the audit moves the merge whole to the quarantine, and `status` (text and `--json`),
 * `watch` and `transcript` of the closed run name the moved paths, one a line with what to run now, read from the
 * `closeSession` answer in the history.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { cli } from './cli-process';
import { TestBed } from './harness';
import { asks, end } from './steering-helpers';

/** git as the person (root) in `cwd`. */
const git = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });

/** The session's command: a branch of its own that conflicts with main, merged into main and left conflicted. */
const MERGE =
  `git checkout -qb agent && printf 'echo deploy agent\\n' > deploy.sh && git -c user.name=x -c user.email=x@x commit -qam agent && ` +
  `git checkout -q main && printf 'echo deploy main\\n' > deploy.sh && git -c user.name=x -c user.email=x@x commit -qam main2 && ` +
  `git -c user.name=x -c user.email=x@x merge agent; test -f .git/MERGE_HEAD && echo left-a-merge`;

describe('the git audit at close, in the CLI of the closed run', () => {
  let bed: TestBed;
  afterAll(async () => bed?.close());

  test('status, status --json, watch and transcript name what was moved to the quarantine', async () => {
    if (process.getuid?.() !== 0) throw new Error('this test needs root (the worker setting)');
    bed = await TestBed.create({ script: { responses: [asks(['toolu_m', MERGE]), end('done')] } });
    const repo = path.join(bed.workspaces, 'repo');
    fs.mkdirSync(repo, { recursive: true });
    git(repo, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(repo, 'deploy.sh'), 'echo deploy v1\n');
    git(repo, 'add', 'deploy.sh');
    git(repo, 'commit', '-qm', 'one');
    const handle = await bed.start({ task: 'merge', approval: 'auto', workdir: repo, maxTurns: 3 }, 'git-at-close');
    expect((await handle.result()).status).toBe('completed');
    // Moved whole: the person's git has no half of the merge.
    for (const f of ['MERGE_HEAD', 'MERGE_MSG', 'MERGE_MODE']) expect(fs.existsSync(path.join(repo, '.git', f))).toBe(false);

    const a = bed.address;
    const status = await cli(a, 'status', handle.workflowId);
    expect(status.code).toBe(0);
    // One finding a line, under what was done with it, and what the person runs now that the merge is gone.
    expect(status.stdout).toMatch(
      /\n {2}git at close:\n(?: {4}.*\n)*? {4}moved to \.git\/agent-jobs-quarantine:\n(?: {6}.*\n)*? {6}\.git\/MERGE_HEAD \(/,
    );
    expect(status.stdout).toMatch(/\n {6}\.git\/MERGE_HEAD \(.*`git merge --abort` no longer applies.*run `git reset --merge`/);
    expect(status.stdout).toMatch(/\n {6}\.git\/MERGE_MSG \(/);
    for (const line of status.stdout.split('\n')) expect(line.length).toBeLessThan(600);
    const json = JSON.parse((await cli(a, 'status', handle.workflowId, '--json')).stdout) as { gitAtClose: string[] };
    expect(json.gitAtClose).toHaveLength(1);
    expect(json.gitAtClose[0]).toMatch(/\.git\/MERGE_HEAD.*\.git\/MERGE_MSG/s);
    expect((await cli(a, 'watch', handle.workflowId)).stdout).toMatch(/\ngit at close:\n(?: {2}.*\n)*? {4}\.git\/MERGE_HEAD \(/);
    const transcript = (await cli(a, 'transcript', handle.workflowId)).stdout;
    expect(transcript).toContain('left-a-merge');
    expect(transcript).toMatch(/\ngit at close:\n(?: {2}.*\n)*? {4}\.git\/MERGE_HEAD \(/);
    // The advice, run by the person on the host: a clean tree at the session's main.
    execFileSync('git', ['-C', repo, 'reset', '--merge']);
    expect(git(repo, 'status', '--porcelain')).toBe('');
  }, 240_000);
});
