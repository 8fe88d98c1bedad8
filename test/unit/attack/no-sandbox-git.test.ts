/**
 * Kind 7 without the sandbox (adversary round 30, F4): a session in mode `none` runs bash as `agent-jobs`, which writes
 * the person's root-owned workspace by ACL entries; what the person's git on the host runs (hooks, config, info, the
 * config's includes) must not be the session's to write, in place or by renaming its own into place, in the root
 * repository and in one nested in the workspace, while git in the session still commits (git-held.ts). Root only.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';
import { hostBash, personsRepo, plant, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const asRoot = process.getuid?.() === 0 ? test : test.skip;

/** The person's repository in a 0755 folder (as a clone leaves it; the test's temporary folder is 0700). */
function repo(): { ws: string; marker: string; git: (...a: string[]) => string } {
  const ws = path.join(tempDir(), 'repo');
  fs.mkdirSync(ws, { mode: 0o755 });
  fs.chmodSync(path.dirname(ws), 0o755);
  return personsRepo(ws);
}

/** The person's commit on the host (root), then what the planted program's marker says. */
function personsCommit(ws: string, marker: string): string {
  hostBash(ws, 'git -c user.name=p -c user.email=p@example.com commit -q --allow-empty -m two; git status --short >/dev/null');
  return ran(marker);
}

const inode = (p: string): number => fs.lstatSync(p).ino;

describe("kind 7: mode none, what the person's git runs in the workspace", () => {
  asRoot(
    'in place: a hook, the config, info/attributes and a new hook the person adds are refused; git in the session still commits',
    async () => {
      const { ws, marker } = repo();
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      const r = await s.run(
        `id -un; ${plant(marker, '.git/hooks/pre-commit')} && echo wrote-hook; printf '[core]\\n\\tfsmonitor = ${ws}/fs.sh\\n' >> .git/config && echo wrote-config; ` +
          `echo '* filter=x' > .git/info/attributes && echo wrote-info; touch .git/hooks/post-commit && echo wrote-new`,
      );
      expect(r.output).toContain('agent-jobs');
      expect(r.output).not.toMatch(/wrote-/);
      // A hook the person adds mid-session inherits no write for the session (no default entry on hooks/).
      fs.writeFileSync(path.join(ws, '.git/hooks/post-merge'), '#!/bin/sh\n', { mode: 0o755 });
      const again = await s.run(`${plant(marker, '.git/hooks/post-merge')} && echo wrote-persons`);
      expect(again.output).not.toContain('wrote-persons');
      const c = await s.run(
        'echo x > f && git add f && git -c user.name=a -c user.email=a@example.com commit -qm session && git log --format=%s -1',
      );
      expect(c.output).toContain('session');
      await s.close();
      expect(personsCommit(ws, marker)).toBe('not run');
    },
  );

  asRoot(
    "renamed into place: hooks/ swapped for the session's folder is taken back, and the person's commit does not run its hook",
    async () => {
      const { ws, marker } = repo();
      const hooks = inode(path.join(ws, '.git/hooks'));
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      const r = await s.run(`mv .git/hooks .git/h && mkdir .git/hooks && ${plant(marker, '.git/hooks/pre-commit')} && echo made-it`);
      expect(r.output).toContain('made-it');
      expect(r.output).toMatch(/took it back: \.git\/hooks \(the entry there was the session's; the original put back from .*\.git\/h;/);
      expect(inode(path.join(ws, '.git/hooks'))).toBe(hooks);
      expect(personsCommit(ws, marker)).toBe('not run');
      await s.close();
    },
  );

  asRoot('renamed into place: .git itself swapped for a copy with a hook is taken back', async () => {
    const { ws, marker } = repo();
    const dotGit = inode(path.join(ws, '.git'));
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    // Made whole first, then swapped in by two renames (the worker's sweep may take `.git` back between them: then the second fails).
    const r = await s.run(
      `mkdir .g2 && cp -r .git/. .g2/ && rm -rf .g2/hooks && mkdir .g2/hooks && ${plant(marker, '.g2/hooks/pre-commit')} && ` +
        'mv .git .git-old && mv -T .g2 .git && echo made-it',
    );
    await s.close();
    expect(inode(path.join(ws, '.git'))).toBe(dotGit);
    expect(r.output + (s.gitNoteAtClose ?? '')).toMatch(/took it back: \.git \(/);
    expect(personsCommit(ws, marker)).toBe('not run');
  });

  asRoot(
    "renamed into place: a root-owned file of the person's that the grant lets it write, edited and renamed over .git/config",
    async () => {
      const { ws, marker } = repo();
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      const r = await s.run(
        `${plant(marker, 'fs.sh')} && cat .git/config > build.sh && printf '[core]\\n\\tfsmonitor = ${ws}/fs.sh\\n' >> build.sh && ` +
          `mv .git/config .git/config.old && mv build.sh .git/config && stat -c %U .git/config && echo made-it`,
      );
      expect(r.output).toContain('made-it');
      // Control: what stands there is root's, as the person's own would be.
      expect(r.output).toMatch(/^root$/m);
      expect(fs.readFileSync(path.join(ws, '.git/config'), 'utf8')).not.toContain('fsmonitor');
      await s.close();
      expect(personsCommit(ws, marker)).toBe('not run');
    },
  );

  asRoot(
    'a background job renames and plants while the session is idle: taken back without a command, named in the next result',
    async () => {
      const { ws, marker } = repo();
      const hooks = inode(path.join(ws, '.git/hooks'));
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      await s.run(
        `(sleep 1; mv .git/hooks .git/h && mkdir .git/hooks && ${plant(marker, '.git/hooks/pre-commit')} && touch planted) > /dev/null 2>&1 &`,
      );
      await waitUntil('the job planted', () => fs.existsSync(path.join(ws, 'planted')), 30_000);
      await waitUntil('hooks/ taken back', () => inode(path.join(ws, '.git/hooks')) === hooks, 10_000);
      expect(personsCommit(ws, marker)).toBe('not run');
      const next = await s.run('true');
      expect(next.output).toMatch(/\.git\/hooks/);
    },
  );

  asRoot("a change of the person's own on the host (git config) is kept, and the session cannot write the new config", async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    git('config', 'person.key', 'kept');
    const r = await s.run("printf '[x]\\n' >> .git/config && echo wrote; git config person.key");
    expect(r.output).not.toContain('wrote');
    expect(r.output).toContain('kept');
    expect(r.output).not.toMatch(/took it back/);
    // Named, as the sandbox names a bound file replaced on the host: the worker cannot tell whose text it holds.
    expect(r.output).toMatch(/replaced on the host \(the person's own git\?\) and kept: \.git\/config \(replaced by uid 0/);
    await s.close();
    expect(git('config', 'person.key').trim()).toBe('kept');
  });

  asRoot('a nested repository and an include in the workspace: written in place refused, renamed into place taken back', async () => {
    const { ws, marker, git } = repo();
    const sub = path.join(ws, 'vendor/lib');
    fs.mkdirSync(sub, { recursive: true });
    personsRepo(sub);
    fs.writeFileSync(path.join(ws, 'team.gitconfig'), '[user]\n\tname = team\n');
    git('config', 'include.path', '../team.gitconfig');
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r = await s.run(
      `${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} && echo wrote-nested; echo '[core]' >> team.gitconfig && echo wrote-include; ` +
        `${plant(marker, 'fs.sh')} && mv team.gitconfig t.old && printf '[core]\\n\\tfsmonitor = ${ws}/fs.sh\\n' > team.gitconfig && ` +
        `mv vendor/lib/.git/hooks vendor/lib/.git/h && mkdir vendor/lib/.git/hooks && ${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} && echo made-it`,
    );
    expect(r.output).not.toMatch(/wrote-/);
    expect(r.output).toContain('made-it');
    await s.close();
    expect(fs.readFileSync(path.join(ws, 'team.gitconfig'), 'utf8')).not.toContain('fsmonitor');
    expect(personsCommit(ws, marker)).toBe('not run');
    expect(personsCommit(sub, marker)).toBe('not run');
    execFileSync('git', ['-C', sub, 'status'], { stdio: 'ignore' });
    expect(ran(marker)).toBe('not run');
  });
});
