/**
 * Mode none (user round 32, F17): an agent's ordinary `git config` writes `config.lock` and renames it over `config`,
 * which deletes the person's file; the worker holds it by descriptor and must write the person's bytes, mode and owner
 * back, quarantine the session's version, and say so once per path. The same for every way to take a held path away:
 * `git remote add`, `git branch -u`, `rm`, `mv` out of the workspace, a rename chain, a hard link renamed over it, an
 * include, a nested repository's config, hooks/ and info/ (git-held.ts). Root only.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { personsGit, personsRepo } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const asRoot = process.getuid?.() === 0 ? test : test.skip;

/** The person's repository in a 0755 folder with an identity and a remote, its config 0664 (not git's 0644, to tell a mode kept). */
function repo(): { ws: string; git: (...a: string[]) => string; config: string } {
  const ws = path.join(tempDir(), 'repo');
  fs.mkdirSync(ws, { mode: 0o755 });
  fs.chmodSync(path.dirname(ws), 0o755);
  const { git } = personsRepo(ws);
  git('config', 'user.name', 'Proj Owner');
  git('config', 'user.email', 'owner@example.com');
  git('config', 'remote.origin.url', 'https://example.com/p.git');
  const config = path.join(ws, '.git/config');
  fs.chmodSync(config, 0o664);
  return { ws, git, config };
}

/** What the person would find of a file: its bytes, mode, owner and group. */
const snapshot = (p: string): { text: string; mode: number; uid: number; gid: number } => {
  const st = fs.lstatSync(p);
  return { text: fs.readFileSync(p, 'utf8'), mode: st.mode, uid: st.uid, gid: st.gid };
};

/** How many items of the held entries' note name `rel` (each item starts with the path and an opening parenthesis). */
const mentions = (out: string, rel: string): number => out.split(`${rel} (`).length - 1;

/** The entries of the workspace's `.git` whose names start with `prefix`. */
const named = (ws: string, prefix: string): string[] => fs.readdirSync(path.join(ws, '.git')).filter((n) => n.startsWith(prefix));

describe("mode none: the person's .git/config survives the session's writes to it", () => {
  asRoot(
    "git config (lock and rename over) twice in one command: the person's bytes, mode and owner back, one item in the note",
    async () => {
      const { ws, config } = repo();
      const before = snapshot(config);
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      const r = await s.run('git config core.hooksPath /tmp/x; git config user.email agent@example.com; echo rc=$?');
      expect(r.output).toContain('rc=0');
      expect(snapshot(config)).toEqual(before);
      expect(mentions(r.output, '.git/config')).toBe(1);
      expect(r.output).toMatch(/\.git\/config \(the entry there was the session's; the original's bytes and mode written back/);
      expect(r.output).not.toMatch(/could NOT/);
      // The session's version is kept aside, and no copy of the worker's is left behind.
      expect(named(ws, '.agent-jobs-quarantined-').length).toBeGreaterThanOrEqual(1);
      expect(named(ws, '.agent-jobs-restoring-')).toEqual([]);
      // The copy written back grants the session nothing: written in place, refused.
      const w = await s.run("printf '[core]\\n\\thooksPath = /tmp/x\\n' >> .git/config && echo wrote");
      expect(w.output).not.toContain('wrote');
      expect(snapshot(config)).toEqual(before);
      // The identity is the person's again, in the session and on the host; the next command's note is quiet.
      const c = await s.run('echo y > f && git add f && git commit -qm s && git log -1 --format=%ae');
      expect(c.output).toContain('owner@example.com');
      expect(c.output).not.toMatch(/\.git\/config \(/);
      await s.close();
      expect(fs.readFileSync(config, 'utf8')).toContain('owner@example.com');
      expect(snapshot(config)).toEqual(before);
    },
  );

  asRoot('git remote add and git branch -u leave the config byte-identical', async () => {
    const { ws, git, config } = repo();
    git('branch', 'side');
    const before = snapshot(config);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r = await s.run('git remote add evil /tmp/evil.git; git branch -u main side; echo done');
    expect(r.output).toContain('done');
    expect(snapshot(config)).toEqual(before);
    expect(mentions(r.output, '.git/config')).toBe(1);
    await s.close();
    expect(git('remote').trim()).toBe('origin');
  });

  asRoot("names the worker's copy might take, planted first as symlinks, do not stop the bytes coming back", async () => {
    const { ws, config } = repo();
    const before = snapshot(config);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const first = await s.run('git config a.b c');
    const tag = /\.agent-jobs-quarantined-([^\s,;)]+)-held\d+/.exec(first.output)?.[1];
    expect(tag).toBeDefined();
    const r = await s.run(
      `for i in $(seq 1 40); do ln -s /tmp/x .git/.agent-jobs-restoring-${tag}-$i; ln -s /tmp/x .git/.agent-jobs-quarantined-${tag}-held$i; done; ` +
        'git config core.hooksPath /tmp/x; rm -f .git/config; echo done',
    );
    expect(r.output).toContain('done');
    expect(snapshot(config)).toEqual(before);
    await s.close();
    expect(snapshot(config)).toEqual(before);
  });

  asRoot('rm of the config, and mv of it out of the workspace: the bytes come back each time, said once per command', async () => {
    const { ws, config } = repo();
    const before = snapshot(config);
    const away = path.join(tempDir(), 'away');
    fs.mkdirSync(away);
    fs.chmodSync(away, 0o1777);
    fs.chmodSync(path.dirname(away), 0o755);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r1 = await s.run('rm -f .git/config && echo removed');
    expect(r1.output).toContain('removed');
    expect(snapshot(config)).toEqual(before);
    expect(mentions(r1.output, '.git/config')).toBe(1);
    expect(r1.output).toMatch(/\.git\/config \(nothing stood there; the original's bytes and mode written back .*deleted/);
    const r2 = await s.run(`mv .git/config ${away}/c && echo moved; cat ${away}/c > /dev/null; true`);
    expect(r2.output).toContain('moved');
    expect(snapshot(config)).toEqual(before);
    expect(mentions(r2.output, '.git/config')).toBe(1);
    await s.close();
    expect(snapshot(config)).toEqual(before);
  });

  asRoot("a rename chain (config to a, the session's b to config) and a hard link renamed over it", async () => {
    const { ws, config } = repo();
    const before = snapshot(config);
    const ino = fs.lstatSync(config).ino;
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r1 = await s.run(
      "mv .git/config .git/a && cat .git/a > .git/b && printf '[core]\\n\\thooksPath = /tmp/x\\n' >> .git/b && mv .git/b .git/config && echo chained",
    );
    expect(r1.output).toContain('chained');
    expect(snapshot(config)).toEqual(before);
    // The original itself went back, not a copy.
    expect(fs.lstatSync(config).ino).toBe(ino);
    expect(mentions(r1.output, '.git/config')).toBe(1);
    const r2 = await s.run(
      "ln .git/config .git/keep 2>/dev/null; printf '[core]\\n\\thooksPath = /tmp/x\\n' > mine && ln mine .git/config.new && mv -f .git/config.new .git/config && echo swapped",
    );
    expect(r2.output).toContain('swapped');
    expect(snapshot(config)).toEqual(before);
    expect(mentions(r2.output, '.git/config')).toBe(1);
    await s.close();
    expect(snapshot(config)).toEqual(before);
    expect(fs.readFileSync(config, 'utf8')).not.toContain('hooksPath');
  });

  asRoot("a hook of the person's cannot be removed or moved; hooks/ and info/ renamed away come back whole, said once each", async () => {
    const { ws } = repo();
    const hook = path.join(ws, '.git/hooks/pre-commit');
    fs.writeFileSync(hook, '#!/bin/sh\necho persons hook\n', { mode: 0o750 });
    const exclude = path.join(ws, '.git/info/exclude');
    fs.writeFileSync(exclude, 'persons-ignored\n');
    const hookBefore = snapshot(hook);
    const excludeBefore = snapshot(exclude);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r1 = await s.run('rm -f .git/hooks/pre-commit; mv .git/hooks/pre-commit .git/p; mv .git/info/exclude .git/x; echo tried');
    expect(r1.output).toContain('tried');
    expect(snapshot(hook)).toEqual(hookBefore);
    expect(snapshot(exclude)).toEqual(excludeBefore);
    // A folder moves to another folder only with write on it (its `..`), which the session lacks: renamed in place.
    const r2 = await s.run('mv .git/hooks .git/h && mv .git/info .git/i && mkdir -p .git/hooks .git/info && echo moved');
    expect(r2.output).toContain('moved');
    expect(mentions(r2.output, '.git/hooks')).toBe(1);
    expect(mentions(r2.output, '.git/info')).toBe(1);
    await s.close();
    expect(snapshot(hook)).toEqual(hookBefore);
    expect(snapshot(exclude)).toEqual(excludeBefore);
  });

  asRoot(
    "the config and an include it names exchanged in one rename (RENAME_EXCHANGE): each of the person's back at its path",
    async () => {
      if (process.arch !== 'x64') throw new Error('the exchange below calls renameat2 by its x86_64 number');
      const { ws, git, config } = repo();
      const team = path.join(ws, 'team.gitconfig');
      fs.writeFileSync(team, '[core]\n\tfsmonitor = false\n');
      git('config', 'include.path', '../team.gitconfig');
      const before = { config: snapshot(config), team: snapshot(team) };
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      // renameat2(AT_FDCWD, ".git/config", AT_FDCWD, "team.gitconfig", RENAME_EXCHANGE): syscall 316 on x86_64.
      const r = await s.run(
        `python3 -c 'import ctypes,sys;l=ctypes.CDLL(None,use_errno=True);sys.exit(l.syscall(316,-100,b".git/config",-100,b"team.gitconfig",2))' && echo exchanged`,
      );
      expect(r.output).toContain('exchanged');
      expect({ config: snapshot(config), team: snapshot(team) }).toEqual(before);
      expect(r.output).not.toMatch(/and kept/);
      await s.close();
      expect({ config: snapshot(config), team: snapshot(team) }).toEqual(before);
    },
  );

  asRoot("an include in the workspace and a nested repository's config, each rewritten by git's lock and rename", async () => {
    const { ws, git } = repo();
    const team = path.join(ws, 'team.gitconfig');
    fs.writeFileSync(team, '[user]\n\tname = team\n', { mode: 0o644 });
    git('config', 'include.path', '../team.gitconfig');
    const sub = path.join(ws, 'vendor/lib');
    fs.mkdirSync(sub, { recursive: true });
    personsGit(sub, 'init', '-q', '-b', 'main');
    personsGit(sub, 'config', 'user.email', 'lib@example.com');
    const subConfig = path.join(sub, '.git/config');
    const teamBefore = snapshot(team);
    const subBefore = snapshot(subConfig);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r = await s.run(
      'git config -f team.gitconfig core.hooksPath /tmp/x; git -C vendor/lib config core.hooksPath /tmp/x; rm -f team.gitconfig; echo done',
    );
    expect(r.output).toContain('done');
    expect(snapshot(team)).toEqual(teamBefore);
    expect(snapshot(subConfig)).toEqual(subBefore);
    expect(mentions(r.output, 'team.gitconfig')).toBe(1);
    expect(mentions(r.output, 'vendor/lib/.git/config')).toBe(1);
    await s.close();
    expect(snapshot(team)).toEqual(teamBefore);
    expect(snapshot(subConfig)).toEqual(subBefore);
  });
});
