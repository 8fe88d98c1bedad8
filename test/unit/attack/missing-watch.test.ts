/**
 * Attacks on the git audit's watch of the missing paths (git-audit.ts `watchMissing`) and on its audit of a workspace
 * with no git dir at its root (`GitBaseline.rootless`), as an attacker would try them once a file written at a recorded
 * missing path is moved at once: put it there by a rename, a hard link or a symlink, make the folders on the way first
 * or move a whole folder into place, hide it among many files made fast; and for a `.git` at a rootless workspace's
 * root, build the repository elsewhere and rename it into place, or make a `.git` file that names it. Real sessions as
 * root (the person), the person's git run on the host while the session is still open. Each asserts the safe
 * behaviour: the quarantine's log names the path (or the `.git` is renamed in place) and the person's git does not
 * run the planted program.
 */
import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';
import { asUser, ensurePerson, hostBash, personsRepo, plant, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;

/** Whether the quarantine's log of `ws` names `rel` as moved. */
const logged = (ws: string, rel: string): boolean => {
  const log = path.join(ws, '.git/agent-jobs-quarantine/log.jsonl');
  return fs.existsSync(log) && fs.readFileSync(log, 'utf8').includes(`"path":"${rel}"`);
};

dRoot('the watch of a missing path, between commands, against what a background job puts there', () => {
  const cases: { name: string; fsmonitor: string; setup?: (ws: string) => void; job: (m: string) => string }[] = [
    {
      name: 'a rename into place',
      fsmonitor: 'tools/fsmon.sh',
      setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
      job: (m) => `${plant(m, 'staged.sh')} && mv staged.sh tools/fsmon.sh`,
    },
    {
      name: 'a hard link',
      fsmonitor: 'tools/fsmon.sh',
      setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
      job: (m) => `${plant(m, 'staged.sh')} && ln staged.sh tools/fsmon.sh`,
    },
    {
      name: 'a symlink to a program elsewhere in the workspace',
      fsmonitor: 'tools/fsmon.sh',
      setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
      job: (m) => `${plant(m, 'staged.sh')} && ln -s ../staged.sh tools/fsmon.sh`,
    },
    {
      name: 'the folders on the way made first, then the file',
      fsmonitor: 'a/b/fsmon.sh',
      job: (m) => `mkdir a && mkdir a/b && ${plant(m, 'a/b/fsmon.sh')}`,
    },
    {
      name: 'a whole folder, program inside, moved into place',
      fsmonitor: 'a/b/fsmon.sh',
      job: (m) => `mkdir -p x/b && ${plant(m, 'x/b/fsmon.sh')} && mv x a`,
    },
    {
      name: 'the program among 3,000 files made fast in its folder',
      fsmonitor: 'tools/fsmon.sh',
      setup: (ws) => fs.mkdirSync(path.join(ws, 'tools')),
      job: (m) =>
        `for i in $(seq 1500); do : > tools/f$i; done; ${plant(m, 'staged.sh')} && mv staged.sh tools/fsmon.sh; for i in $(seq 1500); do : > tools/g$i; done`,
    },
  ];
  for (const { name, fsmonitor, setup, job } of cases)
    test(`core.fsmonitor = ${fsmonitor}, ${name}: moved while the session is open; the person's git status does not run it`, async () => {
      const { ws, git, marker } = personsRepo();
      try {
        setup?.(ws);
        git('config', 'core.fsmonitor', fsmonitor);
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(`(while [ ! -e go ]; do sleep 0.05; done; ${job(marker)}; : > done) >/dev/null 2>&1 & echo started`);
        expect(r.output).toContain('started');
        fs.writeFileSync(path.join(ws, 'go'), '');
        await waitUntil('the job', () => fs.existsSync(path.join(ws, 'done')), 20_000);
        await waitUntil(`the move of ${fsmonitor}`, () => logged(ws, fsmonitor) || logged(ws, fsmonitor.split('/')[0]!), 10_000);
        hostBash(ws, 'git status --short');
        const during = ran(marker);
        await s.close();
        expect(during).toBe('not run');
        expect(fs.existsSync(path.join(ws, fsmonitor))).toBe(false);
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
});

dRoot('a value that changes folder or PATH: what the audit moves for it', () => {
  test('PATH="$PWD/bin:$PATH" with bin/ missing at start: a program the person\'s script calls by name, put in bin/, is moved', async () => {
    const { ws, git, marker } = personsRepo();
    try {
      fs.writeFileSync(path.join(ws, 'build.sh'), 'helper\n');
      git('config', 'alias.fmt', '!PATH="$PWD/bin:$PATH" sh ./build.sh');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`mkdir bin; ${plant(marker, 'bin/helper')}; echo tried`);
      await s.close();
      expect(r.output).toMatch(/moved to \.git\/agent-jobs-quarantine/);
      hostBash(ws, 'git fmt');
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('cd "$GIT_PREFIX" && ./run.sh: a job writes src/run.sh after the last command; the audit at close moves it', async () => {
    const { ws, git, marker } = personsRepo();
    try {
      fs.mkdirSync(path.join(ws, 'src'));
      git('config', 'alias.fmt', '!cd "$GIT_PREFIX" && ./run.sh');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `(while [ ! -e go ]; do sleep 0.05; done; ${plant(marker, 'src/run.sh')}; : > done) >/dev/null 2>&1 & echo started`,
      );
      expect(r.output).toContain('started');
      fs.writeFileSync(path.join(ws, 'go'), '');
      await waitUntil('the job', () => fs.existsSync(path.join(ws, 'done')), 20_000);
      await s.close();
      expect(logged(ws, 'src/run.sh')).toBe(true);
      hostBash(path.join(ws, 'src'), 'git fmt');
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test("a file of a program word's name that was there at start is the person's: left in place", async () => {
    const { ws, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'src'));
    fs.writeFileSync(path.join(ws, 'src/run.sh'), 'echo mine\n');
    git('config', 'alias.fmt', '!cd "$GIT_PREFIX" && ./run.sh');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('mkdir -p lib && echo x > lib/other.sh && echo done');
    await s.close();
    expect(r.output).not.toContain('quarantine');
    expect(fs.readFileSync(path.join(ws, 'src/run.sh'), 'utf8')).toBe('echo mine\n');
  });
});

/** The person who owns the workspace (owner.test.ts's user): bash runs as them, so their git trusts what the session makes. */
const PERSON = 'aj-owner-test';

dRoot('a workspace with no git dir at its root: a repository the session makes there', () => {
  /** A workspace `packages/web` of the person's repository (its `.git` above), owned by the person, and a marker path. */
  const monorepoPackage = (): { ws: string; marker: string } => {
    const { uid, gid } = ensurePerson(PERSON);
    const top = tempDir();
    const ws = path.join(top, 'packages', 'web');
    fs.mkdirSync(ws, { recursive: true });
    fs.writeFileSync(path.join(ws, 'index.js'), '1\n');
    spawnSync('chown', ['-R', `${uid}:${gid}`, top]);
    asUser(PERSON, ['git', 'init', '-q', '-b', 'main'], top);
    return { ws, marker: `${top}-host-marker` };
  };
  const cases: { name: string; command: (m: string) => string; where: string }[] = [
    {
      name: 'built in a subfolder, then renamed into place at the root',
      command: (m) =>
        `mkdir x && git -C x init -q && git -C x config core.fsmonitor ./fsmon.sh && ${plant(m, 'fsmon.sh')} && mv x/.git .git && echo planted`,
      where: '.',
    },
    {
      name: 'a `.git` file at the root naming a git dir in a subfolder',
      command: (m) =>
        `git init -q --bare x.git && git --git-dir=x.git config core.fsmonitor ./fsmon.sh && git --git-dir=x.git config core.bare false && ${plant(m, 'fsmon.sh')} && printf 'gitdir: x.git\\n' > .git && echo planted`,
      where: '.',
    },
    {
      name: 'a `.git` in a subfolder, where the person runs git',
      command: (m) =>
        `mkdir sub && cd sub && git init -q && git config core.fsmonitor ./fsmon.sh && ${plant(m, 'fsmon.sh')} && echo planted`,
      where: 'sub',
    },
  ];
  for (const { name, command, where } of cases)
    test(`${name}: the person's git status there does not run the session's fsmonitor`, async () => {
      const { ws, marker } = monorepoPackage();
      try {
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(command(marker));
        await s.close();
        expect(r.output).toMatch(/renamed in their folders to \.agent-jobs-quarantined-/);
        if (fs.existsSync(path.join(ws, where))) asUser(PERSON, ['git', 'status', '--short'], path.join(ws, where));
        expect(ran(marker)).toBe('not run');
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });

  test('a workspace in no repository at all: a `.git` made there is moved, the rest of the work stays', async () => {
    const { uid, gid } = ensurePerson(PERSON);
    const ws = tempDir();
    spawnSync('chown', [`${uid}:${gid}`, ws]);
    const marker = `${ws}-host-marker`;
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `echo kept > notes.txt && git init -q && git config core.fsmonitor ./fsmon.sh; ${plant(marker, 'fsmon.sh')}; echo done`,
      );
      // The renamed `.git` is the audit's own: not moved again, now or at the next command.
      const next = await s.run('echo next');
      await s.close();
      expect(r.output).toMatch(/\.git \(a \.git made at the root/);
      expect(r.output).not.toContain('a git repository of its own');
      expect(next.output).toBe('next\n');
      expect(fs.readFileSync(path.join(ws, 'notes.txt'), 'utf8')).toBe('kept\n');
      expect(fs.existsSync(path.join(ws, '.git'))).toBe(false);
      asUser(PERSON, ['git', 'status', '--short'], ws);
      expect(ran(marker)).toBe('not run');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});
