/**
 * A sub-agent's git worktree (src/session/worktree.ts), with real git: made at the workspace's
 * HEAD under `<root>/.subagent-worktrees/<folder>`, found again on a retry, the workspace's
 * folder in it when the workspace is a subfolder of its repository, made as the workspace's
 * owner when the worker is root, and one clear line when the workspace is no repository.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WORKTREES_FOLDER, createWorktree } from '../../../src/session/worktree';

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' });

function repo(dir: string): void {
  mkdirSync(path.join(dir, 'sub'), { recursive: true });
  git(dir, 'init', '-q');
  writeFileSync(path.join(dir, 'sub', 'f'), 'committed\n');
  git(dir, 'add', '.');
  git(dir, 'commit', '-q', '-m', 'base');
}

describe('createWorktree', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(tmpdir(), 'worktree-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  test('makes a detached worktree at HEAD, without the uncommitted files, and finds it again on a retry', async () => {
    const ws = path.join(root, 'run');
    repo(ws);
    writeFileSync(path.join(ws, 'uncommitted'), 'x');
    const made = await createWorktree(root, ws, 'run.subagent.toolu_1');
    const dir = path.join(root, WORKTREES_FOLDER, 'run.subagent.toolu_1');
    const common = realpathSync(path.join(ws, '.git'));
    const gitDirs = { commonDir: common, gitDir: path.join(common, 'worktrees', 'run.subagent.toolu_1') };
    expect(made).toEqual({ path: dir, git: gitDirs });
    expect(readFileSync(path.join(dir, 'sub', 'f'), 'utf8')).toBe('committed\n');
    expect(() => statSync(path.join(dir, 'uncommitted'))).toThrow();
    expect(git(dir, 'rev-parse', 'HEAD')).toBe(git(ws, 'rev-parse', 'HEAD'));
    expect(git(dir, 'status', '--porcelain', '--branch')).toBe('## HEAD (no branch)\n');
    // A retry (the activity's answer was lost) finds the same worktree and makes no second one.
    writeFileSync(path.join(dir, 'work'), 'kept');
    expect(await createWorktree(root, ws, 'run.subagent.toolu_1')).toEqual({ path: dir, git: gitDirs });
    expect(readFileSync(path.join(dir, 'work'), 'utf8')).toBe('kept');
    expect(git(ws, 'worktree', 'list').trim().split('\n')).toHaveLength(2);
  });

  test('a workspace in a subfolder of its repository gives the child that subfolder of the worktree', async () => {
    repo(path.join(root, 'repo'));
    const made = await createWorktree(root, path.join(root, 'repo', 'sub'), 'c');
    expect(made).toEqual({ path: path.join(root, WORKTREES_FOLDER, 'c', 'sub') });
    expect(readFileSync(path.join(root, WORKTREES_FOLDER, 'c', 'sub', 'f'), 'utf8')).toBe('committed\n');
  });

  test('a folder that is no git repository is one line naming it, and no worktree is made', async () => {
    const ws = path.join(root, 'plain');
    mkdirSync(ws);
    // The temporary folder is in no repository (GIT_CEILING_DIRECTORIES is not needed under /tmp).
    expect(await createWorktree(root, ws, 'c')).toEqual({
      error: `The sub-agent was not started: --subagent-workspace worktree needs a git repository, and ${ws} is not in one.`,
    });
    expect(() => statSync(path.join(root, WORKTREES_FOLDER, 'c'))).toThrow();
  });

  test('a repository without a commit is git failing, in one line', async () => {
    const ws = path.join(root, 'empty');
    mkdirSync(ws);
    git(ws, 'init', '-q');
    const made = await createWorktree(root, ws, 'c');
    expect('error' in made && made.error).toMatch(/^The sub-agent was not started: git worktree add failed in .*: \S.*$/);
    expect('error' in made && made.error.includes('\n')).toBe(false);
  });

  const asRoot = process.getuid?.() === 0 ? test : test.skip;
  asRoot("as root, git runs as the workspace's owner: the worktree's files are the owner's", async () => {
    const ws = path.join(root, 'owned');
    repo(ws);
    execFileSync('chown', ['-R', '65534:65534', ws]);
    // The owner must reach its workspace (mkdtemp makes 0700 folders).
    chmodSync(root, 0o755);
    const made = await createWorktree(root, ws, 'c');
    const dir = path.join(root, WORKTREES_FOLDER, 'c');
    expect(made).toMatchObject({ path: dir, git: { commonDir: realpathSync(path.join(ws, '.git')) } });
    expect(statSync(dir).uid).toBe(65534);
    expect(statSync(path.join(dir, 'sub', 'f')).uid).toBe(65534);
    expect(statSync(path.join(dir, '.git')).uid).toBe(65534);
  });

  asRoot("as root, an owner that cannot reach its workspace gets git's own line, not a claim that it is no repository", async () => {
    const ws = path.join(root, 'owned');
    repo(ws);
    execFileSync('chown', ['-R', '65534:65534', ws]);
    const made = await createWorktree(root, ws, 'c');
    expect('error' in made && made.error).toMatch(/^The sub-agent was not started: git failed in .*owned: .*Permission denied/);
  });
});
