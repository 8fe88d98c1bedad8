/**
 * Attacks on the git guard's reading of the person's system and global git configs (git-guard.ts
 * `hostConfigsInto`, host-git-config.ts), past the round-16 fix: each names workspace paths by a
 * way other than a relative `core.hooksPath` in `~/.gitconfig` (the XDG config, an include chain,
 * the system config through `GIT_CONFIG_SYSTEM`, a `..` through a folder the session can swap for
 * a symlink, `~/`, a workspace that is the person's home, a hooks folder deeper than one name that
 * is missing at start). Each runs a real session (as root: the worker's intended setting; the
 * workspace is root's, so the worker is its owner and its environment is the person's) and then
 * the person's git on the host with the same environment, and asserts that the session's plant
 * did not run. Homes, XDG folders and system configs are temporary folders of the test, never the
 * machine's. Also: the owner's home is the passwd entry's when the worker is not the owner, and a
 * config that cannot be read safely refuses the session, naming it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { guardedGit, GitGuardRefusal } from '../../../src/session/git-guard';
import { hostGitConfig } from '../../../src/session/host-git-config';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { personsRepo, plant } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const dRoot = process.getuid?.() === 0 ? describe : describe.skip;

/** `fn` with the worker's environment variables `vars` set (the person's, since the worker runs as the owner), restored after. */
async function withEnv<T>(vars: Record<string, string>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  Object.assign(process.env, vars);
  try {
    return await fn();
  } finally {
    for (const [k, v] of Object.entries(saved))
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
  }
}

/** Runs the person's `git args` in `ws` on the host with `env` added; its exit status. */
function personsGit(ws: string, env: Record<string, string>, ...args: string[]): number | null {
  const r = spawnSync('git', ['-c', 'user.name=p', '-c', 'user.email=p@example.com', ...args], {
    cwd: ws,
    env: { ...process.env, ...env },
    stdio: 'pipe',
  });
  return r.status;
}

/**
 * A session on `ws` started with `env` in the worker, which runs `steps` (each on its own, so that
 * a refused step does not stop the next), closed; then the person's `git commit -am` on the host
 * with `env`: whether the plant's marker is there, and the commit's status.
 */
async function attack(
  ws: string,
  marker: string,
  env: Record<string, string>,
  steps: string[],
): Promise<{ ranOnTheHost: boolean; committed: number | null }> {
  const s = await withEnv(env, () => startSession({ cwd: ws, workspace: ws }));
  const r = await s.run([...steps, 'echo more >> build.sh', 'echo done'].join('; '));
  expect(r.output).toContain('done');
  await s.close();
  const committed = personsGit(ws, env, 'commit', '-qam', "the agent's change");
  try {
    return { ranOnTheHost: fs.existsSync(marker), committed };
  } finally {
    fs.rmSync(marker, { force: true });
  }
}

dRoot("the person's system and global git configs: what they name in the workspace stays the person's", () => {
  test('the XDG config ($XDG_CONFIG_HOME/git/config): an alias naming a workspace script, rewritten by the session, does not run', async () => {
    const { ws, marker, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'scripts'));
    fs.writeFileSync(path.join(ws, 'scripts/fmt.sh'), '#!/bin/sh\necho formatted\n', { mode: 0o755 });
    git('add', 'scripts/fmt.sh');
    git('commit', '-qm', 'fmt');
    const xdg = tempDir('aj-xdg-');
    fs.mkdirSync(path.join(xdg, 'git'));
    fs.writeFileSync(path.join(xdg, 'git/config'), '[alias]\n\tfmt = !./scripts/fmt.sh\n');
    const env = { XDG_CONFIG_HOME: xdg, HOME: tempDir('aj-home-') };
    const s = await withEnv(env, () => startSession({ cwd: ws, workspace: ws }));
    const r = await s.run(
      `${plant(marker, 'scripts/fmt.sh')}; mv scripts s2; mkdir -p scripts; ${plant(marker, 'scripts/fmt.sh')}; echo done`,
    );
    expect(r.output).toContain('done');
    await s.close();
    expect({ status: personsGit(ws, env, 'fmt'), ranOnTheHost: fs.existsSync(marker) }).toEqual({ status: 0, ranOnTheHost: false });
  }, 60_000);

  test('an include chain from ~/.gitconfig (relative, then absolute into the workspace, missing at start) gains no hooksPath', async () => {
    const { ws, marker } = personsRepo();
    const home = tempDir('aj-home-');
    fs.mkdirSync(path.join(home, '.gitconfig.d'));
    fs.writeFileSync(path.join(home, '.gitconfig'), '[include]\n\tpath = .gitconfig.d/team\n');
    fs.writeFileSync(path.join(home, '.gitconfig.d/team'), `[includeIf "gitdir:${ws}/"]\n\tpath = ${ws}/.team.gitconfig\n`);
    const got = await attack(ws, marker, { HOME: home }, [
      `printf '[core]\\n\\thooksPath = .h\\n' > .team.gitconfig`,
      'rm -f .team.gitconfig',
      `mkdir -p .h`,
      plant(marker, '.h/pre-commit'),
    ]);
    expect(got).toEqual({ ranOnTheHost: false, committed: 0 });
    // The guard made the include (empty) so that the session could not.
    expect(fs.readFileSync(path.join(ws, '.team.gitconfig'), 'utf8')).toBe('');
  }, 60_000);

  test('the system config named by $GIT_CONFIG_SYSTEM: a relative hooksPath there', async () => {
    const { ws, marker } = personsRepo();
    const sys = path.join(tempDir('aj-etc-'), 'gitconfig');
    fs.writeFileSync(sys, '[core]\n\thooksPath = .syshooks\n');
    // The person's git honours it (git 2.32 and later).
    expect(
      execFileSync('git', ['config', 'core.hooksPath'], {
        cwd: ws,
        env: { ...process.env, GIT_CONFIG_SYSTEM: sys },
        encoding: 'utf8',
      }).trim(),
    ).toBe('.syshooks');
    const got = await attack(ws, marker, { GIT_CONFIG_SYSTEM: sys, HOME: tempDir('aj-home-') }, [
      'mkdir -p .syshooks',
      plant(marker, '.syshooks/pre-commit'),
    ]);
    expect(got).toEqual({ ranOnTheHost: false, committed: 0 });
  }, 60_000);

  test('a hooksPath with `..` after a folder missing at start: the session cannot make that folder a symlink elsewhere', async () => {
    const { ws, marker } = personsRepo();
    const home = tempDir('aj-home-');
    fs.writeFileSync(path.join(home, '.gitconfig'), '[core]\n\thooksPath = sub/../.githooks\n');
    // Read as written, `sub/..` is the work tree; the kernel goes through `sub`, wherever it leads then.
    const got = await attack(ws, marker, { HOME: home }, [
      'rm -rf sub',
      'mv sub sub2',
      'mkdir -p deep/x deep/.githooks',
      plant(marker, 'deep/.githooks/pre-commit'),
      'ln -s deep/x sub || ln -s deep/x sub/x',
    ]);
    expect(got).toEqual({ ranOnTheHost: false, committed: 0 });
  }, 60_000);

  test('an alias `!sub/../x.sh` through a symlink `sub` of the workspace: the session does not start, and says why', async () => {
    const { ws, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'deep/d'), { recursive: true });
    fs.symlinkSync('deep/d', path.join(ws, 'sub'));
    fs.writeFileSync(path.join(ws, 'deep/x.sh'), '#!/bin/sh\n', { mode: 0o755 });
    git('config', 'alias.x', '!sub/../x.sh');
    await expect(startSession({ cwd: ws, workspace: ws })).rejects.toThrow(
      /goes back out of .*\/sub with '\.\.', and .*\/sub is a symlink/,
    );
  }, 60_000);

  test('`~/` in a global hooksPath, and a hooks folder two names deep that is missing at start', async () => {
    const home = tempDir('aj-home-');
    fs.mkdirSync(path.join(home, 'proj'));
    const { ws, marker } = personsRepo(path.join(home, 'proj'));
    fs.writeFileSync(path.join(home, '.gitconfig'), '[core]\n\thooksPath = ~/proj/tools/hooks\n');
    const got = await attack(ws, marker, { HOME: home }, [
      'mv tools t2',
      'mkdir -p tools/hooks',
      plant(marker, 'tools/hooks/pre-commit'),
      'rm -rf tools/hooks',
      'mkdir -p tools/hooks',
      plant(marker, 'tools/hooks/pre-commit'),
    ]);
    expect(got).toEqual({ ranOnTheHost: false, committed: 0 });
  }, 60_000);

  test("a workspace that is the person's home: the session writes no ~/.gitconfig or XDG config of its own", async () => {
    const { ws: home, marker } = personsRepo(tempDir('aj-home-'));
    const fsmonitor = (file: string): string => `printf '[core]\\n\\tfsmonitor = ${marker}.sh\\n' > ${file}`;
    fs.writeFileSync(`${marker}.sh`, `#!/bin/sh\nid -un > ${marker}\nprintf x\n`, { mode: 0o755 });
    try {
      const got = await attack(home, marker, { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') }, [
        fsmonitor('.gitconfig'),
        'mkdir -p .config/git',
        fsmonitor('.config/git/config'),
        'mv .config c2; mkdir -p .config/git',
        fsmonitor('.config/git/config'),
      ]);
      expect(got).toEqual({ ranOnTheHost: false, committed: 0 });
    } finally {
      fs.rmSync(`${marker}.sh`, { force: true });
    }
  }, 60_000);
});

describe("whose global config counts: the workspace owner's", () => {
  test("the worker not the owner: the passwd entry's home, not the worker's $HOME or $XDG_CONFIG_HOME", () => {
    const nobody = Number(execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim());
    const home = execFileSync('getent', ['passwd', String(nobody)], { encoding: 'utf8' }).split(':')[5]!;
    const got = hostGitConfig(
      nobody,
      { HOME: '/worker-home', XDG_CONFIG_HOME: '/worker-xdg', GIT_CONFIG_GLOBAL: '/worker-global' },
      nobody + 1,
    );
    expect(got.homes).toEqual([home]);
    expect(got.global.sort()).toEqual([path.join(home, '.config/git/config'), path.join(home, '.gitconfig')].sort());
  });

  test('the worker the owner: its $HOME, $XDG_CONFIG_HOME and $GIT_CONFIG_GLOBAL count too, and $GIT_CONFIG_SYSTEM', () => {
    const uid = process.getuid?.() ?? 0;
    const got = hostGitConfig(uid, { HOME: '/h', XDG_CONFIG_HOME: '/x', GIT_CONFIG_GLOBAL: '/g', GIT_CONFIG_SYSTEM: '/s' }, uid);
    expect(got.homes).toContain('/h');
    expect(got.global).toEqual(expect.arrayContaining(['/g', '/x/git/config', '/h/.gitconfig', '/h/.config/git/config']));
    expect(got.system).toEqual(expect.arrayContaining(['/etc/gitconfig', '/s']));
  });
});

describe('a config that cannot be read safely refuses, naming it', () => {
  test('a FIFO as the global config: refused at once, not waited on', () => {
    const { ws } = personsRepo();
    const fifo = path.join(tempDir('aj-home-'), '.gitconfig');
    execFileSync('mkfifo', [fifo]);
    const started = Date.now();
    expect(() => guardedGit(ws, { system: [], global: [fifo], homes: [] })).toThrow(GitGuardRefusal);
    expect(() => guardedGit(ws, { system: [], global: [fifo], homes: [] })).toThrow(
      `${fifo}, a git config the person's git reads on the host, is no regular file`,
    );
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('a config git cannot parse, and one over 4 MiB, are refused; a missing one is not', () => {
    const { ws } = personsRepo();
    const dir = tempDir('aj-home-');
    fs.writeFileSync(path.join(dir, 'bad'), '[core\n\thooksPath = .h\n');
    fs.writeFileSync(path.join(dir, 'big'), `[core]\n\thooksPath = .h\n#${'x'.repeat(5 << 20)}\n`);
    expect(() => guardedGit(ws, { system: [], global: [path.join(dir, 'bad')], homes: [] })).toThrow(/bad, .* could not be read by git/);
    expect(() => guardedGit(ws, { system: [], global: [path.join(dir, 'big')], homes: [] })).toThrow(/big, .* is larger than/);
    expect(guardedGit(ws, { system: [], global: [path.join(dir, 'missing')], homes: [] }).readonly).toContain(path.join(ws, '.git/config'));
  });
});
