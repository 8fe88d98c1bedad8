/**
 * Attacks on the sub-agent worktree's git (src/session/worktree-git.ts): everything in `.git` is
 * the session user's to write, and git runs as root or the owner outside the sandbox. Each way
 * git runs a program named by the repository during `worktree add` and its checkout is planted
 * here; none may run, and the child still gets the committed files, unconverted.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { WORKTREES_FOLDER, createWorktree } from '../../../src/session/worktree';

const asRoot = process.getuid?.() === 0 ? test.each : test.skip.each;

let root: string;
let marker: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-wt-attack-'));
  fs.chmodSync(root, 0o755);
  marker = fs.mkdtempSync('/var/tmp/aj-wt-marker-');
  fs.chmodSync(marker, 0o1777);
});
afterEach(() => {
  fs.rmSync(root, { recursive: true, force: true });
  fs.rmSync(marker, { recursive: true, force: true });
});

/** A repository with one committed file and a `.gitattributes` naming filter `evil` for it. */
function repo(owner: number): { ws: string; git: (...a: string[]) => string } {
  const ws = path.join(root, 'run-1');
  fs.mkdirSync(ws);
  const git = (...args: string[]): string =>
    execFileSync('git', ['-C', ws, '-c', 'user.name=op', '-c', 'user.email=op@example.com', ...args], { encoding: 'utf8' });
  git('init', '-q');
  fs.writeFileSync(path.join(ws, 'a.txt'), 'committed\n');
  fs.writeFileSync(path.join(ws, '.gitattributes'), 'a.txt filter=evil\n');
  git('add', '.');
  git('commit', '-qm', 'one');
  if (owner !== 0) execFileSync('chown', ['-R', `${owner}:${owner}`, ws]);
  return { ws, git };
}

/** A program that records that it ran (and as whom) and passes stdin through. */
function program(name: string): string {
  const p = path.join(marker, `${name}.sh`);
  fs.writeFileSync(p, `#!/bin/sh\nid >> ${marker}/ran-${name}\ncat\n`, { mode: 0o755 });
  return p;
}

function ran(): string[] {
  return fs.readdirSync(marker).filter((f) => f.startsWith('ran-'));
}

describe('the sub-agent worktree runs no program the repository names', () => {
  asRoot([0, 4242])(
    'filter drivers (config + .gitattributes and info/attributes), fsmonitor, hooks, include.path (owner uid %i)',
    async (owner) => {
      const { ws } = repo(owner);
      const cfg = path.join(ws, '.git', 'config');
      // The session's writes to .git: a smudge and a process filter, an fsmonitor, hooks in place and by hooksPath, an included file.
      const extra = path.join(ws, '.git', 'extra.cfg');
      fs.writeFileSync(
        extra,
        `[core]\n\thooksPath = ${path.join(ws, '.git', 'myhooks')}\n[filter "inc"]\n\tsmudge = ${program('inc-smudge')}\n`,
      );
      fs.appendFileSync(
        cfg,
        `[filter "evil"]\n\tsmudge = ${program('smudge')}\n\tclean = ${program('clean')}\n\trequired = true\n` +
          `[filter "proc"]\n\tprocess = ${program('process')}\n` +
          `[core]\n\tfsmonitor = ${program('fsmonitor')}\n[include]\n\tpath = ${extra}\n`,
      );
      fs.mkdirSync(path.join(ws, '.git', 'info'), { recursive: true });
      fs.writeFileSync(path.join(ws, '.git', 'info', 'attributes'), '* filter=proc\n*.txt filter=inc\n');
      for (const dir of ['hooks', 'myhooks'])
        for (const hook of ['post-checkout', 'reference-transaction', 'post-index-change', 'pre-auto-gc']) {
          fs.mkdirSync(path.join(ws, '.git', dir), { recursive: true });
          fs.writeFileSync(path.join(ws, '.git', dir, hook), `#!/bin/sh\nid >> ${marker}/ran-${dir}-${hook}\n`, { mode: 0o755 });
        }
      if (owner !== 0) execFileSync('chown', ['-R', `${owner}:${owner}`, ws]);

      const made = await createWorktree(root, ws, 'run-1.subagent.toolu_1');
      const dir = path.join(root, WORKTREES_FOLDER, 'run-1.subagent.toolu_1');
      expect(ran()).toEqual([]);
      expect(made).toMatchObject({ path: dir });
      // The committed content, as committed (no driver converted it), and an index holding HEAD's files
      // (compared without reading the files: a `git status` here would run the repository's clean filter itself).
      expect(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('committed\n');
      const index = (...args: string[]): string =>
        execFileSync(
          'git',
          ['-C', dir, '-c', 'core.fsmonitor=false', '-c', 'core.hooksPath=/dev/null', '-c', 'safe.directory=*', ...args],
          {
            encoding: 'utf8',
          },
        );
      expect(index('ls-files').split('\n').filter(Boolean).sort()).toEqual(['.gitattributes', 'a.txt']);
      expect(index('diff-index', '--cached', 'HEAD')).toBe('');
      expect(ran()).toEqual([]);
    },
  );

  asRoot([0])('a core.worktree that moves the top outside the workspace starts no child (owner uid %i)', async () => {
    const { ws, git } = repo(0);
    const elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'aj-elsewhere-'));
    try {
      git('config', 'core.worktree', elsewhere);
      const made = await createWorktree(root, ws, 'c');
      expect('error' in made && made.error).toMatch(/outside it/);
      expect(fs.existsSync(path.join(root, WORKTREES_FOLDER, 'c'))).toBe(false);
    } finally {
      fs.rmSync(elsewhere, { recursive: true, force: true });
    }
  });

  asRoot([0])(
    'objects of a root-only repository reached through alternates the session wrote are not checked out (owner uid %i)',
    async () => {
      const { ws } = repo(0);
      // A repository only root can read, holding a secret.
      const priv = fs.mkdtempSync('/var/tmp/aj-private-repo-');
      try {
        fs.chmodSync(priv, 0o700);
        const pgit = (...args: string[]): string =>
          execFileSync('git', ['-C', priv, '-c', 'user.name=r', '-c', 'user.email=r@example.com', ...args], { encoding: 'utf8' }).trim();
        pgit('init', '-q');
        fs.writeFileSync(path.join(priv, 'secret.txt'), 'ROOT-REPO-SECRET\n');
        pgit('add', '.');
        pgit('commit', '-qm', 'secret');
        const oid = pgit('rev-parse', 'HEAD');
        // The session's writes: an alternate to root's objects, and HEAD detached at root's commit.
        fs.writeFileSync(path.join(ws, '.git', 'objects', 'info', 'alternates'), `${path.join(priv, '.git', 'objects')}\n`);
        fs.writeFileSync(path.join(ws, '.git', 'HEAD'), `${oid}\n`);
        const made = await createWorktree(root, ws, 'c');
        const dir = path.join(root, WORKTREES_FOLDER, 'c');
        const secret = path.join(dir, 'secret.txt');
        expect(fs.existsSync(secret) ? fs.readFileSync(secret, 'utf8') : '').toBe('');
        expect('error' in made && made.error).toMatch(/^The sub-agent was not started: /);
      } finally {
        fs.rmSync(priv, { recursive: true, force: true });
      }
    },
  );

  asRoot([0])('a .git file pointing at another repository is refused (owner uid %i)', async () => {
    const { ws } = repo(0);
    const other = fs.mkdtempSync('/var/tmp/aj-other-repo-');
    try {
      execFileSync('git', ['-C', other, 'init', '-q']);
      fs.rmSync(path.join(ws, '.git'), { recursive: true });
      fs.renameSync(path.join(other, '.git'), path.join(other, 'moved.git'));
      execFileSync('git', ['-C', other, '--git-dir', path.join(other, 'moved.git'), 'config', 'core.bare', 'false']);
      fs.writeFileSync(path.join(ws, '.git'), `gitdir: ${path.join(other, 'moved.git')}\n`);
      fs.writeFileSync(path.join(other, 'x'), 'OTHER\n');
      execFileSync('git', [
        '--git-dir',
        path.join(other, 'moved.git'),
        '--work-tree',
        other,
        '-c',
        'user.name=r',
        '-c',
        'user.email=r@example.com',
        'add',
        'x',
      ]);
      execFileSync('git', [
        '--git-dir',
        path.join(other, 'moved.git'),
        '--work-tree',
        other,
        '-c',
        'user.name=r',
        '-c',
        'user.email=r@example.com',
        'commit',
        '-qm',
        'o',
      ]);
      const made = await createWorktree(root, ws, 'c');
      expect('error' in made && made.error).toMatch(/is no directory/);
      expect(fs.existsSync(path.join(root, WORKTREES_FOLDER, 'c', 'x'))).toBe(false);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
