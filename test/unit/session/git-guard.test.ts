/**
 * What `guardedGit` binds for a workspace's repository with linked worktrees, and for what its
 * config names (the paths only; the sandbox's refusals are attacked in
 * test/unit/attack/adversary-round10.test.ts, rounds 11 and 13).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { emptyGuard, guardedGit, MAX_NESTED_REPOS, PROGRAM_KEYS } from '../../../src/session/git-guard';
import { removeTempDirs, tempDir } from './helpers';

afterAll(removeTempDirs);

/** A repository with one commit at `<tmp>/r`, a linked worktree outside it (`feat`) and one inside (`r/inner`). */
function repoWithWorktrees(): { root: string; ws: string; git: (...a: string[]) => string } {
  const root = fs.realpathSync(tempDir());
  const ws = path.join(root, 'r');
  const git = (...a: string[]): string =>
    execFileSync('git', ['-C', ws, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });
  fs.mkdirSync(ws);
  git('init', '-q', '-b', 'main');
  git('commit', '-q', '--allow-empty', '-m', 'one');
  git('worktree', 'add', '-q', path.join(root, 'feat'), '-b', 'feat');
  git('worktree', 'add', '-q', path.join(ws, 'inner'), '-b', 'inner');
  return { root, ws, git };
}

test("each linked worktree's admin folder is a mount point, its commondir and gitdir read-only; a worktree inside the workspace has its .git file read-only", () => {
  const { root, ws } = repoWithWorktrees();
  const g = guardedGit(ws);
  const wt = path.join(ws, '.git', 'worktrees');
  // `inner` too: the folder on the way to its read-only `.git` file (pinFolders).
  expect(g.writable.sort()).toEqual(
    [path.join(ws, '.git'), wt, path.join(wt, 'feat'), path.join(wt, 'inner'), path.join(ws, 'inner')].sort(),
  );
  expect(g.readonly).toEqual(
    expect.arrayContaining([
      path.join(ws, '.git', 'config'),
      path.join(wt, 'feat', 'commondir'),
      path.join(wt, 'feat', 'gitdir'),
      path.join(wt, 'inner', 'commondir'),
      path.join(wt, 'inner', 'gitdir'),
      path.join(ws, 'inner', '.git'),
    ]),
  );
  // The worktree outside the workspace is read-only in the sandbox already; nothing of it is named.
  expect(g.readonly.some((p) => p.startsWith(path.join(root, 'feat')))).toBe(false);
  // No config.worktree is made when the config does not turn extensions.worktreeConfig on.
  expect(fs.existsSync(path.join(wt, 'feat', 'config.worktree'))).toBe(false);
});

test('with extensions.worktreeConfig, each admin folder gets an empty config.worktree, owned as the folder, bound read-only', () => {
  const { ws, git } = repoWithWorktrees();
  git('config', 'extensions.worktreeConfig', 'true');
  const g = guardedGit(ws);
  const made = path.join(ws, '.git', 'worktrees', 'feat', 'config.worktree');
  expect(fs.readFileSync(made, 'utf8')).toBe('');
  expect(fs.statSync(made).uid).toBe(fs.statSync(path.dirname(made)).uid);
  expect(g.readonly).toContain(made);
});

test('an admin folder without commondir (git would take it for a common dir) is bound read-only whole', () => {
  const { ws } = repoWithWorktrees();
  const admin = path.join(ws, '.git', 'worktrees', 'feat');
  fs.rmSync(path.join(admin, 'commondir'));
  const g = guardedGit(ws);
  expect(g.readonly).toContain(admin);
  expect(g.writable).not.toContain(admin);
});

test('a workspace that is a linked worktree: its .git file only; the admin folder and the common dir lie outside, read-only in the sandbox', () => {
  const { root } = repoWithWorktrees();
  // No host config (this machine's may name files): the main repository's config, read since round 19, names none.
  const host = { system: [], global: [], homes: [] };
  // Every other field as an empty guard has it, so that a field added to GuardedGit is compared here too.
  expect(guardedGit(path.join(root, 'feat'), host)).toEqual({ ...emptyGuard(), readonly: [path.join(root, 'feat', '.git')] });
});

test("a linked worktree of a repository inside the workspace: its admin folder's entries, and the common dir's code entries and worktrees", () => {
  const root = fs.realpathSync(tempDir());
  const ws = path.join(root, 'ws');
  const main = path.join(ws, 'main');
  fs.mkdirSync(main, { recursive: true });
  execFileSync('git', ['-C', main, 'init', '-q', '-b', 'main']);
  execFileSync('git', ['-C', main, '-c', 'user.name=p', '-c', 'user.email=p@example.com', 'commit', '-q', '--allow-empty', '-m', 'one']);
  // The workspace itself is the linked worktree (made elsewhere, its .git file moved to the workspace's root).
  execFileSync('git', ['-C', main, 'worktree', 'add', '-q', path.join(root, 'tmp-wt'), '-b', 'wt']);
  fs.renameSync(path.join(root, 'tmp-wt', '.git'), path.join(ws, '.git'));
  const admin = path.join(main, '.git', 'worktrees', 'tmp-wt');
  const g = guardedGit(ws);
  expect(g.writable).toEqual(expect.arrayContaining([admin, path.join(main, '.git'), path.join(main, '.git', 'worktrees')]));
  expect(g.readonly).toEqual(
    expect.arrayContaining([
      path.join(ws, '.git'),
      path.join(admin, 'commondir'),
      path.join(admin, 'gitdir'),
      path.join(main, '.git', 'config'),
      path.join(main, '.git', 'hooks'),
    ]),
  );
});

/** A repository with one commit in a new workspace (symlinks resolved). */
function plainRepo(): { ws: string; git: (...a: string[]) => string } {
  const ws = fs.realpathSync(tempDir());
  const git = (...a: string[]): string =>
    execFileSync('git', ['-C', ws, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });
  git('init', '-q', '-b', 'main');
  git('commit', '-q', '--allow-empty', '-m', 'one');
  return { ws, git };
}

describe('what the config names, as git reads it', () => {
  test('includes as git reads them: a comment after the path, a quoted path, an inactive includeIf, an include of an include', () => {
    const { ws } = plainRepo();
    const dotGit = path.join(ws, '.git');
    fs.appendFileSync(
      path.join(dotGit, 'config'),
      '[include]\n\tpath = extra.conf ; shared settings\n\tpath = "quoted.conf" # a comment\n' +
        '[includeIf "onbranch:other"]\n\tpath = ../conf/when-other.conf\n',
    );
    fs.writeFileSync(path.join(dotGit, 'extra.conf'), '[include]\n\tpath = deeper.conf\n');
    const g = guardedGit(ws);
    const named = ['extra.conf', 'quoted.conf', 'deeper.conf'].map((f) => path.join(dotGit, f));
    named.push(path.join(ws, 'conf', 'when-other.conf'));
    expect(g.readonly).toEqual(expect.arrayContaining(named));
    // The missing ones are made empty, so the session cannot create them.
    for (const p of named.slice(1)) expect(fs.readFileSync(p, 'utf8')).toBe('');
    expect(g.readonly.some((p) => p.includes(';') || p.includes('#'))).toBe(false);
  });

  test('core.hooksPath in the workspace (made when missing), a program core.fsmonitor names there, a hook symlinked to a workspace script', () => {
    const { ws, git } = plainRepo();
    git('config', 'core.hooksPath', '.husky/_');
    fs.writeFileSync(path.join(ws, 'fsm.sh'), '');
    git('config', 'core.fsmonitor', `${ws}/fsm.sh`);
    git('config', 'filter.x.clean', 'sh tools/clean.sh --flag');
    fs.mkdirSync(path.join(ws, 'tools'));
    fs.writeFileSync(path.join(ws, 'tools', 'clean.sh'), '');
    fs.writeFileSync(path.join(ws, 'pre-push.sh'), '');
    fs.symlinkSync('../../pre-push.sh', path.join(ws, '.git', 'hooks', 'pre-push'));
    const g = guardedGit(ws);
    expect(fs.statSync(path.join(ws, '.husky', '_')).isDirectory()).toBe(true);
    expect(g.readonly).toEqual(
      expect.arrayContaining([
        path.join(ws, '.husky', '_'),
        path.join(ws, 'fsm.sh'),
        path.join(ws, 'tools', 'clean.sh'),
        path.join(ws, 'pre-push.sh'),
      ]),
    );
    // Never the workspace itself, nor what lies outside it.
    expect(g.readonly.filter((p) => p === ws || !p.startsWith(`${ws}/`))).toEqual([]);
  });

  test('a `.git` symlink into the workspace counts as its target; a `.git/config` symlink as the file it names', () => {
    const { ws } = plainRepo();
    fs.renameSync(path.join(ws, '.git'), path.join(ws, '.gitdir'));
    fs.symlinkSync('.gitdir', path.join(ws, '.git'));
    fs.renameSync(path.join(ws, '.gitdir', 'config'), path.join(ws, 'repo.gitconfig'));
    fs.symlinkSync('../repo.gitconfig', path.join(ws, '.gitdir', 'config'));
    const g = guardedGit(ws);
    expect(g.writable).toEqual([path.join(ws, '.gitdir')]);
    expect(g.readonly).toEqual(
      expect.arrayContaining([path.join(ws, 'repo.gitconfig'), path.join(ws, '.gitdir', 'hooks'), path.join(ws, '.gitdir', 'info')]),
    );
  });

  test('a file for each key of PROGRAM_KEYS (git-config(1)), plain and as `!` shell command, is bound read-only', () => {
    const { ws } = plainRepo();
    fs.mkdirSync(path.join(ws, 'scripts'));
    const files: string[] = [];
    let text = '';
    PROGRAM_KEYS.forEach((pattern, i) => {
      // `a.b.c` as git's file spells it: `[a "b"]` then `c = …` (one git run for all, rather than two a key).
      const parts = pattern.replace('*', `t${i}`).split('.');
      const name = parts.pop()!;
      text += parts.length > 1 ? `[${parts[0]} "${parts.slice(1).join('.')}"]\n` : `[${parts[0]}]\n`;
      const plain = path.join('scripts', `p${i}.sh`);
      const bang = path.join('scripts', `b${i}.sh`);
      for (const f of [plain, bang]) fs.writeFileSync(path.join(ws, f), '#!/bin/sh\n', { mode: 0o755 });
      text += `\t${name} = ${plain}\n\t${name} = !${bang} --flag\n`;
      files.push(path.join(ws, plain), path.join(ws, bang));
    });
    fs.appendFileSync(path.join(ws, '.git', 'config'), text);
    expect(files.filter((f) => !guardedGit(ws).readonly.includes(f))).toEqual([]);
  });

  test("an attacker's spellings of a program in a value, under keys on no list, are bound", () => {
    const { ws, git } = plainRepo();
    const values: [string, string][] = [
      ['!./a.sh', 'a.sh'],
      ['! "./my scripts/b.sh" --x', 'my scripts/b.sh'],
      ["!sh -c './c.sh --flag'", 'c.sh'],
      ['!cd tools && ./d.sh', 'tools/d.sh'],
      ['!$PWD/e.sh', 'e.sh'],
      ['!"$(git rev-parse --show-toplevel)"/f.sh', 'f.sh'],
      ['ext::sh g.sh', 'g.sh'],
      ['!FOO=1 ./h.sh', 'h.sh'],
      ['tool --config=i.sh', 'i.sh'],
      ['!j\\ k.sh', 'j k.sh'],
      ['!${GIT_DIR:-.git}/../l.sh', 'l.sh'],
      ['!`echo m.sh`', 'm.sh'],
    ];
    fs.mkdirSync(path.join(ws, 'tools'));
    fs.mkdirSync(path.join(ws, 'my scripts'));
    values.forEach(([value, file], i) => {
      fs.writeFileSync(path.join(ws, file), '');
      // Keys no list names: a new one, a made-up subsection.
      git('config', `newtool${i}.run`, value);
    });
    const ro = guardedGit(ws).readonly;
    expect(values.map(([, f]) => path.join(ws, f)).filter((f) => !ro.includes(f))).toEqual([]);
  });

  test('relative to core.worktree (a subdirectory: git runs programs there), and in config.worktree', () => {
    const { ws, git } = plainRepo();
    fs.mkdirSync(path.join(ws, 'app'));
    fs.writeFileSync(path.join(ws, 'app', 'fsm.sh'), '');
    fs.writeFileSync(path.join(ws, 'wt.sh'), '');
    git('config', 'core.worktree', '../app');
    git('config', 'core.fsmonitor', 'fsm.sh');
    git('config', 'extensions.worktreeConfig', 'true');
    fs.writeFileSync(path.join(ws, '.git', 'config.worktree'), '[alias]\n\tx = !./wt.sh\n');
    const ro = guardedGit(ws).readonly;
    expect(ro).toEqual(expect.arrayContaining([path.join(ws, 'app', 'fsm.sh'), path.join(ws, 'wt.sh')]));
  });

  test("never the git dir's state, a folder, the workspace itself, or what lies outside it", () => {
    const { ws, git } = plainRepo();
    fs.mkdirSync(path.join(ws, 'src'));
    git('config', 'alias.head', '!cat .git/HEAD .git/index .git/packed-refs && ls src . ..');
    git('config', 'remote.origin.url', '.');
    git('pack-refs', '--all');
    const ro = guardedGit(ws).readonly;
    for (const p of ['HEAD', 'index', 'packed-refs']) expect(ro).not.toContain(path.join(ws, '.git', p));
    expect(ro.filter((p) => p === ws || p === path.join(ws, 'src') || !p.startsWith(`${ws}/`))).toEqual([]);
  });

  test('each folder on the way to a bound program is bound onto itself, none that is or lies in a read-only path', () => {
    const { ws, git } = plainRepo();
    fs.mkdirSync(path.join(ws, 'a', 'b'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'a', 'b', 'fmt.sh'), '');
    git('config', 'alias.fmt', '!./a/b/fmt.sh');
    git('config', 'core.hooksPath', '.husky/_');
    fs.mkdirSync(path.join(ws, '.husky', '_', 'lib'), { recursive: true });
    fs.writeFileSync(path.join(ws, '.husky', '_', 'lib', 'h.sh'), '');
    git('config', 'alias.h', '!.husky/_/lib/h.sh');
    const g = guardedGit(ws);
    expect(g.writable).toEqual(expect.arrayContaining([path.join(ws, 'a'), path.join(ws, 'a', 'b'), path.join(ws, '.husky')]));
    expect(g.readonly).toEqual(expect.arrayContaining([path.join(ws, '.husky', '_'), path.join(ws, '.husky', '_', 'lib', 'h.sh')]));
    expect(g.writable.filter((p) => p === ws || p.startsWith(path.join(ws, '.husky', '_')))).toEqual([]);
  });
});

describe('what the guard creates stays in the workspace', () => {
  // Root makes a missing include, `core.hooksPath` or `config.worktree` before the sandbox starts: a folder
  // on the way that an earlier session replaced by a symlink must not take it outside the workspace.
  test.each([
    ['a missing include under a symlinked folder', 'include.path', '../conf/x/inc.conf', 'x/inc.conf'],
    ['a missing core.hooksPath under a symlinked folder', 'core.hooksPath', 'conf/hooks', 'hooks'],
  ])('%s creates nothing where the symlink points', (_what, key, value, made) => {
    const { ws, git } = plainRepo();
    const outside = fs.realpathSync(tempDir());
    fs.symlinkSync(outside, path.join(ws, 'conf'));
    git('config', key, value);
    guardedGit(ws);
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.existsSync(path.join(outside, made))).toBe(false);
  });

  test('a symlinked admin folder of a linked worktree gets no config.worktree where it points', () => {
    const { ws, git } = repoWithWorktrees();
    git('config', 'extensions.worktreeConfig', 'true');
    const outside = fs.realpathSync(tempDir());
    const admin = path.join(ws, '.git', 'worktrees', 'feat');
    fs.cpSync(admin, outside, { recursive: true });
    fs.rmSync(admin, { recursive: true });
    fs.symlinkSync(outside, admin);
    guardedGit(ws);
    expect(fs.existsSync(path.join(outside, 'config.worktree'))).toBe(false);
  });

  test('a missing include in a real folder is still made, owned as the git dir', () => {
    const { ws, git } = plainRepo();
    git('config', 'include.path', '../conf/x/inc.conf');
    guardedGit(ws);
    const made = path.join(ws, 'conf', 'x', 'inc.conf');
    const owner = fs.statSync(path.join(ws, '.git'));
    expect({ size: fs.statSync(made).size, uid: fs.statSync(made).uid, dirUid: fs.statSync(path.dirname(made)).uid }).toEqual({
      size: 0,
      uid: owner.uid,
      dirUid: owner.uid,
    });
  });
});

test('repositories below the root that were there at start: held as the root, outside node_modules and nearer the root first, the rest unguarded', () => {
  const ws = fs.realpathSync(tempDir());
  execFileSync('git', ['init', '-q', ws]);
  const rels = ['node_modules/a/.git', 'vendor/deep/lib/.git', 'vendor/lib/.git'];
  for (const rel of rels) execFileSync('git', ['init', '-q', path.dirname(path.join(ws, rel))]);
  const found = rels.map((rel) => ({ rel, ino: fs.statSync(path.join(ws, rel)).ino, kind: 'dotgit' as const }));
  const host = { system: [], global: [], homes: [] };
  const all = guardedGit(ws, host, found);
  expect(all.nestedTops).toEqual([path.join(ws, 'vendor/lib'), path.join(ws, 'vendor/deep/lib'), path.join(ws, 'node_modules/a')]);
  expect(all.readonly).toEqual(expect.arrayContaining([path.join(ws, 'vendor/lib/.git/hooks'), path.join(ws, 'vendor/lib/.git/config')]));
  expect(all.writable).toEqual(
    expect.arrayContaining([path.join(ws, 'vendor/lib/.git'), path.join(ws, 'vendor/lib'), path.join(ws, 'vendor')]),
  );
  expect(all.nestedGitDirs).toContain(path.join(ws, 'vendor/lib/.git'));
  expect(all.unguarded).toEqual([]);
  // Past the bound: the rest by name, never silently.
  const many = Array.from({ length: MAX_NESTED_REPOS + 2 }, (_, i) => ({
    rel: `node_modules/p${i}/.git`,
    ino: i,
    kind: 'dotgit' as const,
  }));
  const bounded = guardedGit(ws, host, [...many, ...found]);
  expect(bounded.nestedTops.slice(0, 2)).toEqual([path.join(ws, 'vendor/lib'), path.join(ws, 'vendor/deep/lib')]);
  expect(bounded.unguarded).toHaveLength(5);
  expect(bounded.unguarded).toContain(`node_modules/p${MAX_NESTED_REPOS + 1}/.git`);
});
