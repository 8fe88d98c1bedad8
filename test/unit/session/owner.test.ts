/**
 * Files keep their owner: as root, bash (and the text editor) act on a
 * workspace as its owner would. A repository owned by a user other than root: bash runs as that
 * user, files it creates are the owner's, git works inside and outside the session, files the
 * owner adds during the run are editable, nothing changes owner. A root-owned workspace: bash
 * runs as the session user, granted it by ACL entries, root keeps ownership, git works. Either
 * way the worker's secrets stay out of reach. Real bash, real bwrap, real users; needs root.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap, type BashSession, type EditGate } from '../../../src/session';
import { lookupUser } from '../../../src/session/identity';
import { editRuleSubject } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

const isRoot = process.getuid?.() === 0;
const bwrap = findBwrap();
const ready = isRoot && bwrap !== null;
/** The human who owns the repository (created when missing, with a home holding a secret). */
const OWNER = 'aj-owner-test';
/** Another user, whose private file outside the workspace the session must not read. */
const OTHER = 'aj-other-test';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

function sh(argv: string[], cwd?: string): { status: number | null; out: string } {
  const r = spawnSync(argv[0]!, argv.slice(1), {
    cwd,
    encoding: 'utf8',
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/nonexistent' },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Runs argv as `user` (runuser), as the human would from their own shell. */
function as(user: string, argv: string[], cwd?: string): { status: number | null; out: string } {
  return sh(['runuser', '-u', user, '--', 'env', `HOME=/home/${user}`, ...argv], cwd);
}

function ensureUser(name: string): { uid: number; gid: number; home: string } {
  if (!lookupUser(name)) sh(['useradd', '--create-home', '--shell', '/bin/bash', name]);
  const u = lookupUser(name);
  if (!u) throw new Error(`cannot create the test user ${name}`);
  return u;
}

/** Every path under `dir` (itself included) with its owner uid. */
function owners(dir: string): Map<string, number> {
  const out = new Map<string, number>();
  const walk = (p: string) => {
    out.set(p, fs.lstatSync(p).uid);
    if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) walk(path.join(p, e));
  };
  walk(dir);
  return out;
}

const allow = (): EditGate => ({ apply: true });
const edit = (s: BashSession, e: Parameters<BashSession['edit']>[0]) =>
  s.edit(e, allow, { maxCharacters: 100_000, ruleSubject: editRuleSubject });

if (!ready) {
  if (process.env.CI === 'true') {
    test('ownership tests can run here (CI needs root and bwrap)', () => {
      throw new Error('ownership tests need root and a working bwrap');
    });
  } else test.skip('workspace ownership (needs root and bwrap)', () => undefined);
}

const d = ready ? describe : describe.skip;

d('a repository owned by a user other than root', () => {
  let owner: { uid: number; gid: number; home: string };
  let other: { uid: number; gid: number; home: string };
  /** Parent of the workspace, with a sibling file: neither may change owner. */
  let parent: string;
  let ws: string;

  beforeAll(() => {
    owner = ensureUser(OWNER);
    other = ensureUser(OTHER);
    fs.mkdirSync(path.join(owner.home, '.ssh'), { recursive: true });
    fs.writeFileSync(path.join(owner.home, '.ssh', 'id_test'), 'OWNER-PRIVATE-KEY\n', { mode: 0o600 });
    sh(['chown', '-R', `${owner.uid}:${owner.gid}`, path.join(owner.home, '.ssh')]);
  });

  beforeEach(() => {
    // Under the owner's home, as a human's clone is: the sandbox hides the rest of that home.
    parent = fs.mkdtempSync(path.join(owner.home, 'aj-clone-'));
    fs.chownSync(parent, owner.uid, owner.gid);
    fs.writeFileSync(path.join(parent, 'sibling.txt'), 'sibling\n');
    ws = path.join(parent, 'repo');
    expect(as(OWNER, ['git', 'init', '-q', ws]).status).toBe(0);
    fs.writeFileSync(path.join(ws, 'README.md'), 'hello\n');
    fs.chownSync(path.join(ws, 'README.md'), owner.uid, owner.gid);
    expect(as(OWNER, ['git', '-c', 'user.name=o', '-c', 'user.email=o@x', 'commit', '-qm', 'first', '--allow-empty'], ws).status).toBe(0);
    expect(as(OWNER, ['git', 'add', 'README.md'], ws).status).toBe(0);
  });

  afterEach(() => fs.rmSync(parent, { recursive: true, force: true }));

  test('bash and the editor run as the owner; git works inside and, afterwards, as the owner; nothing changes owner', async () => {
    const before = owners(ws);
    const parentBefore = owners(parent);
    const s = await startSession({ cwd: ws, workspace: ws });
    expect(s.sandbox).toBe('bwrap');
    expect(s.user).toBe(OWNER);
    const id = await s.run("id -u; id -g; id -G; grep -E '^(CapEff|NoNewPrivs)' /proc/self/status");
    expect(id.output).toBe(`${owner.uid}\n${owner.gid}\n${owner.gid}\nCapEff:\t0000000000000000\nNoNewPrivs:\t1\n`);

    const work = await s.run(
      [
        'echo created > new.txt',
        'mkdir -p src && echo "x = 1" > src/a.py',
        "sed -i 's/hello/hello world/' README.md",
        'git status --short',
        'git add -A',
        'git -c user.name=agent -c user.email=agent@x commit -qm "agent work" && echo committed',
      ].join(' && '),
    );
    expect(work.exitCode).toBe(0);
    expect(work.output).not.toContain('dubious');
    expect(work.output).toContain('?? new.txt');
    expect(work.output).toContain('committed');
    // An auto-approved read (runExact: its own sandbox, /home covered but the workspace) runs as the owner too.
    const exact = await s.runExact(['stat', '-c', '%u %n', 'README.md'], { paths: ['README.md'] });
    expect(exact.output).toBe(`${owner.uid} README.md\n`);
    const created = await edit(s, { command: 'create', path: 'edited.txt', fileText: 'by the editor\n' });
    expect(created.isError).toBe(false);
    const replaced = await edit(s, { command: 'str_replace', path: 'new.txt', oldStr: 'created', newStr: 'created and edited' });
    expect(replaced.isError).toBe(false);
    await s.close();

    // Everything in the workspace is the owner's: what was there, and what the agent made.
    for (const [p, uid] of owners(ws)) expect([p, uid]).toEqual([p, owner.uid]);
    for (const [p, uid] of before) expect([p, fs.lstatSync(p).uid]).toEqual([p, uid]);
    // Outside the workspace nothing changed owner.
    for (const [p, uid] of parentBefore) if (!p.startsWith(ws)) expect([p, fs.lstatSync(p).uid]).toEqual([p, uid]);
    expect(fs.readFileSync(path.join(ws, 'new.txt'), 'utf8')).toBe('created and edited\n');

    // The owner, without sudo: git works, and it edits and deletes what the agent made.
    const status = as(OWNER, ['git', 'status', '--short'], ws);
    expect(status.status).toBe(0);
    expect(status.out.split('\n').sort()).toEqual(['', ' M new.txt', '?? edited.txt']);
    expect(as(OWNER, ['git', 'log', '--format=%s'], ws).out).toBe('agent work\nfirst\n');
    expect(as(OWNER, ['sh', '-c', 'echo more >> edited.txt && rm new.txt src/a.py && rmdir src'], ws).status).toBe(0);
  });

  test('a file the owner adds during the run is editable by bash and the editor, and git sees it', async () => {
    const s = await startSession({ cwd: ws, workspace: ws });
    expect(as(OWNER, ['sh', '-c', 'echo later > later.txt && mkdir later-dir && echo deep > later-dir/f.txt'], ws).status).toBe(0);
    const r = await s.run('echo appended >> later.txt && echo more >> later-dir/f.txt && git status --short');
    expect(r.exitCode).toBe(0);
    expect(r.output).toBe('A  README.md\n?? later-dir/\n?? later.txt\n');
    const e = await edit(s, { command: 'str_replace', path: 'later-dir/f.txt', oldStr: 'deep', newStr: 'deeper' });
    expect(e.isError).toBe(false);
    expect(fs.readFileSync(path.join(ws, 'later.txt'), 'utf8')).toBe('later\nappended\n');
    expect(fs.readFileSync(path.join(ws, 'later-dir', 'f.txt'), 'utf8')).toBe('deeper\nmore\n');
    for (const [p, uid] of owners(ws)) expect([p, uid]).toEqual([p, owner.uid]);
  });

  test('a file of another user in the repository stays theirs, and the session can change it no more than the owner could', async () => {
    const foreign = path.join(ws, 'root-file.txt');
    fs.writeFileSync(foreign, 'root\n', { mode: 0o644 });
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('echo x >> root-file.txt; cat root-file.txt');
    expect(r.output).toContain('Permission denied');
    expect(fs.statSync(foreign).uid).toBe(0);
    expect(fs.readFileSync(foreign, 'utf8')).toBe('root\n');
  });

  test("bash as the owner reaches none of the worker's secrets, nor the owner's home, nor another user's files", async () => {
    const keysDir = tempDir('aj-keys-');
    fs.writeFileSync(path.join(keysDir, 'codec.key'), 'CODEC-KEY-SECRET\n', { mode: 0o600 });
    const privateOther = path.join(other.home, 'private.txt');
    fs.writeFileSync(privateOther, 'OTHER-PRIVATE\n', { mode: 0o600 });
    fs.chownSync(privateOther, other.uid, other.gid);
    fs.chmodSync(other.home, 0o755);
    // The owner's runtime directory (D-Bus, agents' sockets): a stand-in file there.
    const runtime = `/run/user/${owner.uid}`;
    const madeRuntime = !fs.existsSync(runtime);
    fs.mkdirSync(runtime, { recursive: true });
    fs.writeFileSync(path.join(runtime, 'bus'), 'OWNER-RUNTIME\n');
    fs.chownSync(runtime, owner.uid, owner.gid);
    const saved = process.env.ANTHROPIC_API_KEY;
    process.env.ANTHROPIC_API_KEY = 'sk-ant-owner-test-secret';
    let s: BashSession;
    try {
      s = await startSession({ cwd: ws, workspace: ws, hidePaths: [keysDir] });
    } finally {
      if (saved === undefined) delete process.env.ANTHROPIC_API_KEY;
      else process.env.ANTHROPIC_API_KEY = saved;
    }
    expect(s.user).toBe(OWNER);
    const r = await s.run(
      [
        'env | grep -c sk-ant-owner-test-secret',
        `cat /proc/${process.pid}/environ 2>&1 | grep -c sk-ant`,
        'cat /proc/1/environ 2>&1 | grep -c sk-ant',
        `ls ${keysDir} 2>/dev/null | wc -l`,
        `cat ${keysDir}/codec.key 2>&1 | grep -c CODEC`,
        `cat ${owner.home}/.ssh/id_test 2>&1 | grep -c OWNER-PRIVATE`,
        `cat ${privateOther} 2>&1 | grep -c OTHER-PRIVATE`,
        'cat /etc/shadow 2>&1 | grep -c root',
        'ls /root | wc -l',
        `touch ${parent}/escape 2>/dev/null && echo wrote || echo 1`,
        `cat ${runtime}/bus 2>&1 | grep -c OWNER-RUNTIME`,
      ].join('; '),
    );
    if (madeRuntime) fs.rmSync(runtime, { recursive: true, force: true });
    else fs.rmSync(path.join(runtime, 'bus'), { force: true });
    expect(r.output.split('\n').filter(Boolean)).toEqual(['0', '0', '0', '0', '0', '0', '0', '0', '0', '1', '0']);
    expect(fs.existsSync(path.join(parent, 'escape'))).toBe(false);
    // The editor too: the owner's key outside the workspace is refused.
    const v = await edit(s, { command: 'view', path: path.join(owner.home, '.ssh', 'id_test') });
    expect(v.isError).toBe(true);
    expect(v.text).not.toContain('OWNER-PRIVATE');
  });
});

d('a uid with no passwd entry (a repository bind-mounted into a container)', () => {
  test('bash runs as that uid with the directory group; what it makes is that uid’s', async () => {
    const uid = 4242;
    expect(lookupUser(String(uid))).toBeUndefined();
    const parent = fs.mkdtempSync(path.join('/var/tmp', 'aj-uid-'));
    try {
      fs.chmodSync(parent, 0o755);
      const ws = path.join(parent, 'repo');
      fs.mkdirSync(ws);
      // The uid's repository, made on the host: a `.git` the session made at a root that had none would be moved (git-audit.ts).
      execFileSync('git', ['init', '-q', ws]);
      execFileSync('chown', ['-R', `${uid}:4343`, ws]);
      const s = await startSession({ cwd: ws, workspace: ws });
      expect(s.user).toBe(String(uid));
      const r = await s.run('id -u; id -g; echo made > made.txt && git status --short');
      expect(r.output).toBe(`${uid}\n4343\n?? made.txt\n`);
      expect(fs.statSync(path.join(ws, 'made.txt'))).toMatchObject({ uid, gid: 4343 });
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});

d('without the sandbox', () => {
  test('bash runs as the session user, not the owner (whose whole account it would reach); the owner still edits what it makes, and git works', async () => {
    const owner = ensureUser(OWNER);
    const parent = fs.mkdtempSync(path.join('/var/tmp', 'aj-nosandbox-'));
    try {
      fs.chmodSync(parent, 0o755);
      fs.chownSync(parent, owner.uid, owner.gid);
      const ws = path.join(parent, 'repo');
      expect(as(OWNER, ['git', 'init', '-q', ws]).status).toBe(0);
      const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
      expect(s.user).toBe('agent-jobs');
      const r = await s.run('echo made > made.txt && git add made.txt && git status --short && echo ok');
      expect(r.output).toBe('A  made.txt\nok\n');
      await s.close();
      expect(fs.statSync(ws).uid).toBe(owner.uid);
      expect(as(OWNER, ['sh', '-c', 'echo owner >> made.txt && git status --short'], ws)).toEqual({ status: 0, out: 'AM made.txt\n' });
      expect(as(OWNER, ['rm', 'made.txt'], ws).status).toBe(0);
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});

d('a root-owned workspace', () => {
  test('bash runs as the session user, granted by ACL entries; root keeps ownership; git works in and out; files root adds later are editable', async () => {
    const ws = tempDir('aj-rootrepo-');
    expect(sh(['git', 'init', '-q', ws]).status).toBe(0);
    fs.writeFileSync(path.join(ws, 'tracked.txt'), 'one\n');
    expect(sh(['git', 'add', 'tracked.txt'], ws).status).toBe(0);
    const before = owners(ws);
    const s = await startSession({ cwd: ws, workspace: ws });
    expect(s.user).toBe('agent-jobs');
    const agent = lookupUser('agent-jobs')!;
    fs.writeFileSync(path.join(ws, 'added-later.txt'), 'root adds\n');
    const r = await s.run(
      'echo two >> tracked.txt && echo mine > mine.txt && echo edit >> added-later.txt && git add -A && git -c user.name=a -c user.email=a@x commit -qm agent && git status --short && echo ok',
    );
    // The commit is the session's, named for the person's review (git-state-audit.ts).
    expect(r.output).toMatch(
      /^ok\n\[agent-jobs: the session left git state that your next git command obeys; review it: \.git\/HEAD \(the session (moved \S+ from [0-9a-f]{12} to|made \S+'s first commit,) [0-9a-f]{12}/,
    );
    // Nothing that was there changed owner (directories, a file changed in place; git replaces its index with a new file,
    // which is then the session user's); what the agent created is the session user's, which root edits as any file.
    for (const [p, uid] of before)
      if (fs.lstatSync(p).isDirectory() || p.endsWith('tracked.txt')) expect([p, fs.lstatSync(p).uid]).toEqual([p, uid]);
    expect(fs.readFileSync(path.join(ws, 'added-later.txt'), 'utf8')).toBe('root adds\nedit\n');
    expect(fs.statSync(path.join(ws, 'added-later.txt')).uid).toBe(0);
    expect(fs.statSync(path.join(ws, 'mine.txt')).uid).toBe(agent.uid);
    expect(sh(['git', 'status', '--short'], ws)).toEqual({ status: 0, out: '' });
    expect(sh(['git', 'log', '--format=%s'], ws).out).toBe('agent\n');
  });
});
