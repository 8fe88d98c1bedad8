/**
 * Attacks on held-binds.ts (the git guard's binds held by descriptor since the session's start and bound with bwrap's
 * `--bind-fd` / `--ro-bind-fd`), by a sibling session P on the same workspace against session C, as root, in real
 * sessions: what C's next launch binds when P moved a held folder away and left a symlink to a host folder, put another
 * folder in its place, or moved it elsewhere in the workspace; a held read-only file swapped for a symlink to a
 * root-only host file; and what the person's own changes on the host (a file replaced by rename, a folder removed and
 * made again) give. Also what a refused launch tells the session, and that a later one starts once the cause is gone.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { BashSession } from '../../../src/session';
import { editRuleSubject, parseEditInput } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, waitUntil } from '../session/helpers';
import { personsRepo } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

const dRoot = process.getuid?.() === 0 ? describe : describe.skip;

/** A host folder outside the workspace that the session user may write by its mode (the sandbox shows it read-only). */
function hostFolder(): string {
  const host = fs.mkdtempSync('/var/tmp/aj-host-');
  fs.chmodSync(host, 0o777);
  return host;
}

/** Runs `command` in `s`: `ran:<output>` or `err:<message>`. */
async function attempt(s: BashSession, command: string): Promise<string> {
  return s.run(command).then(
    (r) => `ran:${r.output}`,
    (err: Error) => `err:${err.message}`,
  );
}

/** P made `.git/worktrees` after it started (so it is no mount point in P's sandbox); C started after, and holds it. */
async function siblings(): Promise<{ ws: string; p: BashSession; c: BashSession }> {
  const { ws } = personsRepo();
  const p = await startSession({ cwd: ws, workspace: ws });
  expect((await p.run('mkdir .git/worktrees && echo made')).output.split('\n')[0]).toBe('made');
  const c = await startSession({ cwd: ws, workspace: ws });
  return { ws, p, c };
}

/**
 * P moves `.git/worktrees` away and a job of P keeps a relative symlink to the host folder `host` in its
 * place (made again every 50 ms: C's audit moves a symlink there to the quarantine after each command), until
 * `/tmp/stop-link` exists in P's sandbox. The job stops itself: a `kill` could end it while its `ln` runs on, and that
 * `ln` then made the symlink again after P had removed it.
 */
async function keepLinkInPlace(ws: string, p: BashSession, host: string): Promise<void> {
  const link = path.relative(path.join(ws, '.git'), host);
  const swap = `mv -T .git/worktrees .git/wt-away && (while [ ! -e /tmp/stop-link ]; do [ -L .git/worktrees ] || ln -s ${link} .git/worktrees; sleep 0.05; done) >/dev/null 2>&1 & echo swapped`;
  expect((await p.run(swap)).output).toContain('swapped');
}

dRoot("held-binds.ts: a sibling changes a folder the other session's guard holds", () => {
  test('moved away and a symlink to a host folder left: the restart is refused, said, nothing lands on the host, and the shell starts once it is back', async () => {
    const { ws, p, c } = await siblings();
    const host = hostFolder();
    try {
      await keepLinkInPlace(ws, p, host);
      // The command that ends C's shell ran: its result comes back with the note that no new shell could be started.
      const ended = await c.run('exit 0');
      expect(ended.output).toMatch(
        /the shell could not be started again after this command: .*refusing to start the sandbox: .*\.git\/worktrees no longer is the folder .*\((it is missing|a symlink is on the way|it cannot be opened \(ENOTDIR\))\).*the next command tries to start one/,
      );
      // The next command: not run, the cause named.
      expect(await attempt(c, `echo x > ${host}/pwned; echo tried`)).toMatch(
        /^err:.*refusing to start the sandbox: .*\.git\/worktrees no longer is the folder/,
      );
      expect(fs.readdirSync(host)).toEqual([]);
      // The cause gone (the folder back), the next command starts a shell, and the held folder is what it shows.
      expect(
        (await p.run('touch /tmp/stop-link; wait; rm -f .git/worktrees && mv -T .git/wt-away .git/worktrees && echo back')).output,
      ).toContain('back');
      const held = fs.statSync(path.join(ws, '.git/worktrees')).ino;
      const r = await c.run(`stat -c %i .git/worktrees; { echo x > ${host}/pwned; } 2>/dev/null; echo tried`);
      expect(r.output.split('\n')[0]).toBe(String(held));
      expect(r.output).toContain('tried');
      expect(fs.readdirSync(host)).toEqual([]);
    } finally {
      fs.rmSync(host, { recursive: true, force: true });
    }
  }, 90_000);

  test("an exact run and the editor's helper launch their own sandbox: refused the same way, the host untouched", async () => {
    const { ws, p, c } = await siblings();
    const host = hostFolder();
    try {
      await keepLinkInPlace(ws, p, host);
      await new Promise((r) => setTimeout(r, 200));
      const exact = await c.runExact(['touch', 'made-by-exact']).then(
        (r) => `ran:${r.output}`,
        (err: Error) => `err:${err.message}`,
      );
      expect(exact).toMatch(/^err:.*refusing to start the sandbox: .*\.git\/worktrees no longer is the folder/);
      const parsed = parseEditInput({ command: 'create', path: `${ws}/new.txt`, file_text: 'x\n' });
      if (!parsed.ok) throw new Error(parsed.text);
      const edit = await c
        .edit(parsed.edit, () => ({ apply: true }), { maxCharacters: 50, ruleSubject: editRuleSubject })
        .then(
          (o) => `ran:${o.text}`,
          (err: Error) => `err:${err.message}`,
        );
      expect(edit).toMatch(/^err:.*refusing to start the sandbox: .*\.git\/worktrees no longer is the folder/);
      expect([fs.existsSync(path.join(ws, 'made-by-exact')), fs.existsSync(path.join(ws, 'new.txt'))]).toEqual([false, false]);
      expect(fs.readdirSync(host)).toEqual([]);
    } finally {
      fs.rmSync(host, { recursive: true, force: true });
    }
  }, 90_000);

  test("replaced by another folder (moved away, a new one made): refused, whatever C's audit moves", async () => {
    const { ws, p, c } = await siblings();
    const held = fs.statSync(path.join(ws, '.git/worktrees')).ino;
    expect((await p.run('mv -T .git/worktrees .git/wt-away && mkdir .git/worktrees && echo replaced')).output).toContain('replaced');
    await c.run('exit 0');
    const r = await attempt(c, 'stat -c %i .git/worktrees');
    // Refused, or (when an audit put the held folder back at its path first) the held folder itself: never the new one.
    if (r.startsWith('err:'))
      expect(r).toMatch(/refusing to start the sandbox: .*\.git\/worktrees no longer is the folder .*\(it is (another folder|missing)\)/);
    else expect(r.split('\n')[0]).toBe(`ran:${held}`);
  }, 90_000);

  test('renamed inside `.git`, nothing left at its path: refused; moved out of `.git`: a copy (EXDEV across the bind), the held one deleted, nothing bound', async () => {
    const { ws, p, c } = await siblings();
    const held = fs.statSync(path.join(ws, '.git/worktrees')).ino;
    // Inside `.git` (one mount in P's sandbox): a rename, the same folder.
    expect((await p.run('mv -T .git/worktrees .git/wt-away && echo moved')).output).toContain('moved');
    expect(fs.statSync(path.join(ws, '.git/wt-away')).ino).toBe(held);
    await c.run('exit 0');
    expect(await attempt(c, 'echo ran')).toMatch(
      /refusing to start the sandbox: .*\.git\/worktrees no longer is the folder .*\(it is missing\)/,
    );
    // Out of `.git` (P's sandbox binds `.git` onto itself): rename(2) gives EXDEV, mv copies and deletes the held folder.
    expect((await p.run('mkdir sub && mv -T .git/wt-away sub/moved && echo moved')).output).toContain('moved');
    expect(fs.statSync(path.join(ws, 'sub/moved')).ino).not.toBe(held);
    // Nothing left to bind, nothing at the path: the launch goes on without that bind, as a session started now would.
    const r = await c.run('ls -d .git/worktrees 2>&1; echo ran');
    expect(r.output).toMatch(/No such file or directory[\s\S]*ran/);
  }, 90_000);

  test('a folder swapped back and forth with a symlink to another folder: what each launch binds is the held folder, or it is refused', async () => {
    // The race of round 17 with a symlink into the workspace (a decoy folder), so that a bind through it would start: the
    // mount at `.git/worktrees` (or where the held folder is then) always has the held folder as its source, never the decoy.
    const { ws, p, c } = await siblings();
    const held = fs.statSync(path.join(ws, '.git/worktrees')).ino;
    expect((await p.run('mkdir decoy && echo ok')).output).toContain('ok');
    // Until the test makes `stop`; then it says it ended (`ended`), so that nothing of it runs after.
    const loop =
      'while [ ! -e stop ]; do mv -T .git/worktrees .git/wt-real 2>/dev/null && ln -s ../decoy .git/worktrees; ' +
      'rm -f .git/worktrees 2>/dev/null; mv -T .git/wt-real .git/worktrees 2>/dev/null; done; : > ended';
    await p.run(`(${loop}) >/dev/null 2>&1 & echo started`);
    // unbound: bwrap found nothing at the path (the sibling between `rm` and `mv`), made a folder there and mounted the
    // held one on it, and the sibling's `mv -T` over that folder then dropped the mount: the real folder, by path.
    const seen = { bound: 0, decoy: 0, refused: 0, unbound: 0 };
    // Field 4 of mountinfo: the source's path in its filesystem when it was mounted.
    const probe = `awk '$5 ~ /\\.git\\/(worktrees|wt-real)$/ || $4 ~ /decoy$/ {print "root=" $4}' /proc/self/mountinfo; echo tried`;
    for (let i = 0; i < 60; i++) {
      await c.run('exit 0').catch(() => undefined);
      const r = await attempt(c, probe);
      if (r.startsWith('err:')) seen.refused++;
      else if (/root=\S*decoy/.test(r)) seen.decoy++;
      else if (/root=\S*\.git\/(worktrees|wt-real)/.test(r)) seen.bound++;
      else seen.unbound++;
    }
    console.log(`held-guard-binds race: ${JSON.stringify(seen)}`);
    // The loop stopped and ended, its swap is undone on the host: the held folder back at its path, no symlink.
    fs.writeFileSync(path.join(ws, 'stop'), '');
    await waitUntil('the swap loop to end', () => fs.existsSync(path.join(ws, 'ended')), 20_000);
    const at = path.join(ws, '.git/worktrees');
    if (fs.lstatSync(at, { throwIfNoEntry: false })?.isSymbolicLink()) fs.unlinkSync(at);
    if (fs.existsSync(path.join(ws, '.git/wt-real'))) fs.renameSync(path.join(ws, '.git/wt-real'), at);
    expect(fs.statSync(at).ino).toBe(held);
    expect(fs.existsSync(path.join(ws, 'decoy'))).toBe(true);
    expect(seen.decoy).toBe(0);
    // How many launches of the race bound the folder depends on the machine's load (none of 200 bound it under CI's
    // load once): the bind itself is proved here, once the race has stopped, with the same shell and guard.
    await c.run('exit 0').catch(() => undefined);
    const after = await attempt(c, probe);
    expect(after).toMatch(/root=\S*\.git\/worktrees/);
    expect(after).not.toMatch(/decoy/);
  }, 600_000);
});

dRoot('held-binds.ts: a held read-only file', () => {
  /** A repository whose config names `tools/run.sh` (made by P after it started), so that C's guard binds it read-only. */
  async function withProgram(): Promise<{ ws: string; p: BashSession; c: BashSession }> {
    const { ws, git } = personsRepo();
    const p = await startSession({ cwd: ws, workspace: ws });
    expect((await p.run("mkdir tools && printf 'echo one\\n' > tools/run.sh && echo made")).output).toContain('made');
    git('config', 'alias.x', '!./tools/run.sh');
    const c = await startSession({ cwd: ws, workspace: ws });
    expect(await attempt(c, 'echo two > tools/run.sh; cat tools/run.sh')).toMatch(/Read-only file system[\s\S]*echo one/);
    return { ws, p, c };
  }

  test("swapped for a symlink to a root-only host file: refused, the file's content never shown", async () => {
    const { p, c } = await withProgram();
    const secretDir = fs.mkdtempSync('/var/tmp/aj-secret-');
    fs.chmodSync(secretDir, 0o700);
    fs.writeFileSync(path.join(secretDir, 'key'), 'the-host-secret\n', { mode: 0o600 });
    try {
      expect((await p.run(`mv tools/run.sh tools/r2 && ln -s ${secretDir}/key tools/run.sh && echo swapped`)).output).toContain('swapped');
      // C's shell is started again before its next command (the bind of a replaced file is lost): refused, not run.
      const r = await attempt(c, 'cat tools/run.sh');
      expect(r).toMatch(/^err:.*refusing to start the sandbox: .*tools\/run\.sh no longer is the file/);
      expect(r).not.toContain('the-host-secret');
    } finally {
      fs.rmSync(secretDir, { recursive: true, force: true });
    }
  }, 90_000);

  test("replaced by rename on the host (the person's git does so): the new file is bound read-only at the next launch", async () => {
    const { ws, c } = await withProgram();
    fs.writeFileSync(path.join(ws, 'tools/run.sh.new'), 'echo three\n');
    fs.renameSync(path.join(ws, 'tools/run.sh.new'), path.join(ws, 'tools/run.sh'));
    const r = await c.run('cat tools/run.sh; echo four > tools/run.sh; cat tools/run.sh');
    expect(r.output).toMatch(/echo three[\s\S]*Read-only file system[\s\S]*echo three/);
    expect(fs.readFileSync(path.join(ws, 'tools/run.sh'), 'utf8')).toBe('echo three\n');
  }, 90_000);
});

dRoot("held-binds.ts: the person's own changes on the host, and what the session holds", () => {
  test('a held folder removed on the host: the next launch binds nothing there; made again: binds the new one', async () => {
    const { ws, c } = await siblings();
    fs.rmdirSync(path.join(ws, '.git/worktrees'));
    expect((await c.run('exit 0')).output).not.toContain('could not be started');
    expect((await c.run('ls -d .git/worktrees 2>&1; echo ran')).output).toMatch(/No such file or directory[\s\S]*ran/);
    fs.mkdirSync(path.join(ws, '.git/worktrees'));
    await c.run('exit 0');
    const made = fs.statSync(path.join(ws, '.git/worktrees')).ino;
    // Bound (a mount point: no rename) and the new folder.
    expect((await c.run('stat -c %i .git/worktrees; mv .git/worktrees .git/w2; echo ran')).output).toMatch(
      new RegExp(`^${made}\n[\\s\\S]*Device or resource busy[\\s\\S]*ran`),
    );
  }, 90_000);

  test("no held descriptor reaches the sandbox, and the worker's descriptors come back when the session closes", async () => {
    const { ws } = personsRepo();
    const inWs = (): string[] =>
      fs.readdirSync('/proc/self/fd').flatMap((fd) => {
        try {
          const to = fs.readlinkSync(`/proc/self/fd/${fd}`);
          return to === ws || to.startsWith(`${ws}/`) ? [to] : [];
        } catch {
          return [];
        }
      });
    const s = await startSession({ cwd: ws, workspace: ws });
    const during = inWs();
    // bash's own 0-2 and what the session passes on purpose (its control FIFO and the like), no O_PATH directory.
    const r = await s.run('for f in /proc/$$/fd/*; do readlink "$f"; done');
    expect(r.output).not.toMatch(/\.git/);
    await s.close();
    await closeSessions();
    // The workspace, .git, hooks, info, config, the quarantine: one each (held-binds.ts), none left once closed.
    expect({ during: during.length, after: inWs() }).toEqual({ during: 6, after: [] });
  }, 60_000);
});
