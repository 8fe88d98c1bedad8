/**
 * Attacks on git-guard.ts `guardOutside` (adversary round 19): a workspace whose repository's git dir lies outside it
 * (a linked worktree of a repository elsewhere, a submodule, a folder of a repository above it), whose config names
 * hooks and programs in the workspace. Inputs chosen to get past it: the hooks folder missing at start, the folder
 * renamed away and made again, a program named from the repository's top two folders above, a submodule's own
 * config, a `config.worktree` of the worktree's admin folder. Each ends with the person's git on the host, which must
 * not run the session's program. Real sessions, as root (the person).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { hostBash, personsGit, personsRepo, plant, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;

const COMMIT = 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty';

const gitIn = personsGit;

dRoot('a git dir outside the workspace: routes around guardOutside', () => {
  test('a linked worktree whose core.hooksPath (.husky/_) is not committed: the folder is made at start and bound, so the session cannot write a hook there', async () => {
    const { ws: main, git, marker } = personsRepo();
    const ws = `${main}-wt`;
    try {
      git('config', 'core.hooksPath', '.husky/_');
      git('worktree', 'add', '-q', ws, '-b', 'feature');
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(`mkdir -p .husky/_ ; ${plant(marker, '.husky/_/pre-commit')} && echo planted`);
      await s.close();
      hostBash(ws, COMMIT);
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  test('a linked worktree: the hooks folder renamed away and made again with a hook of the session', async () => {
    const { ws: main, git, marker } = personsRepo();
    const ws = `${main}-wt`;
    try {
      fs.mkdirSync(path.join(main, '.husky', '_'), { recursive: true });
      fs.writeFileSync(path.join(main, '.husky', '_', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      git('add', '-f', '.husky');
      git('commit', '-qm', 'husky');
      git('config', 'core.hooksPath', '.husky/_');
      git('worktree', 'add', '-q', ws, '-b', 'feature');
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(`mv .husky h2 ; mv .husky/_ h3 ; mkdir -p .husky/_ ; ${plant(marker, '.husky/_/pre-commit')} && echo planted`);
      await s.close();
      hostBash(ws, COMMIT);
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  test("a linked worktree's own config.worktree (extensions.worktreeConfig) naming core.hooksPath in it", async () => {
    const { ws: main, git, marker } = personsRepo();
    const ws = `${main}-wt`;
    try {
      git('config', 'extensions.worktreeConfig', 'true');
      git('worktree', 'add', '-q', ws, '-b', 'feature');
      gitIn(ws, 'config', '--worktree', 'core.hooksPath', 'wt-hooks');
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(`mkdir -p wt-hooks ; ${plant(marker, 'wt-hooks/pre-commit')} && echo planted`);
      await s.close();
      hostBash(ws, COMMIT);
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  test('a monorepo package two folders below the top, a program named from the top (alias.fmt = !packages/web/scripts/fmt.sh)', async () => {
    const { ws: main, git, marker } = personsRepo();
    const ws = path.join(main, 'packages', 'web');
    try {
      fs.mkdirSync(path.join(ws, 'scripts'), { recursive: true });
      fs.writeFileSync(path.join(ws, 'scripts', 'fmt.sh'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      git('config', 'alias.fmt', '!packages/web/scripts/fmt.sh');
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(`${plant(marker, 'scripts/fmt.sh')} ; mv scripts s2 ; mkdir -p scripts ; ${plant(marker, 'scripts/fmt.sh')}`);
      await s.close();
      hostBash(ws, 'git fmt');
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test("a submodule as the workspace: its `.git` file names the superproject's modules/<name>, whose config names hooks in it", async () => {
    const { ws: sup, marker } = personsRepo();
    const { ws: lib } = personsRepo();
    try {
      gitIn(sup, 'submodule', 'add', '-q', lib, 'lib');
      const ws = path.join(sup, 'lib');
      fs.mkdirSync(path.join(ws, 'githooks'));
      fs.writeFileSync(path.join(ws, 'githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      gitIn(ws, 'config', 'core.hooksPath', 'githooks');
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(`${plant(marker, 'githooks/pre-commit')} && echo planted`);
      await s.close();
      hostBash(ws, COMMIT);
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

/**
 * Was open: the git audit needed a git dir in the workspace (its quarantine lives there). A workspace with none is
 * audited now (git-audit.ts `GitBaseline.rootless`), what appears at a missing path renamed in its own folder.
 */
const OPEN_AUDIT_OUTSIDE = false;

dRoot('a git dir outside the workspace: what the audit does not watch', () => {
  (OPEN_AUDIT_OUTSIDE ? test.skip : test)(
    "a linked worktree: a program the main repository's config names, missing at start, created by the session",
    async () => {
      const { ws: main, git, marker } = personsRepo();
      const ws = `${main}-wt`;
      try {
        git('config', 'core.fsmonitor', 'tools/fsmon.sh');
        git('worktree', 'add', '-q', ws, '-b', 'feature');
        const s = await startSession({ cwd: ws, workspace: ws });
        await s.run(`mkdir -p tools && ${plant(marker, 'tools/fsmon.sh')} && echo planted`);
        await s.close();
        hostBash(ws, 'git status --short');
        expect(ran(marker)).toBe('not run');
      } finally {
        fs.rmSync(marker, { force: true });
        fs.rmSync(ws, { recursive: true, force: true });
      }
    },
  );
});
