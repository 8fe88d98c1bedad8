/**
 * Adversary round 16: attacks on the round-15 fixes (git-audit.ts and git-walk.ts by descriptor,
 * `heldLinks`/`holdLink`; git-guard.ts `valueFiles`, `pinFolders`, `createInside`) and on what the
 * sandbox binds by path, on the code of 47de383, as root (the worker's intended setting), each
 * observed in real sessions of the unit harness (session uid agent-jobs, root-owned workspace).
 * Each test asserts the safe behaviour and is skipped (OPEN) while its fix is missing; I ran all 4
 * un-skipped against 47de383 and each failed, as written below (stalls of 4,048 ms and 30,092 ms,
 * the plant ran on the host, the file was written on the host).
 * The 2 FIFO tests run since git-guard.ts reads only regular files without blocking and the
 * audit moves an admin folder holding a FIFO; the global-config test since the guard reads the
 * owner's system and global configs as the repository's (git-guard.ts `hostConfigsInto`; more
 * attacks on that fix in host-git-config.test.ts).
 *
 * Kind 6 (the sandbox's edges), the worst of this round: a sibling session makes another session's
 * writable bind a folder of the host. The guard's writable binds (`.git/worktrees`, each
 * `.git/worktrees/<id>`, every folder `pinFolders` pins) are passed to bwrap by path, and
 * sandbox.ts `mountOps` resolves each path again (`realpathSync`) at EVERY launch (a shell
 * restart, an exact run, the editor's helper). In the session's own sandbox those folders are
 * mount points (EBUSY), but in a sibling's sandbox (a second run or a sub-agent on the same
 * workspace, started before the folder existed) they are plain folders. Steps: session P runs
 * `mkdir .git/worktrees` (or `git worktree add`; the audit keeps both); session C starts on the
 * same workspace, so its guard binds `.git/worktrees` onto itself; C cannot write
 * `/var/tmp/aj-host-X` (a host folder of mode 0777; the sandbox shows `/` read-only); a background
 * job of P does `mv .git/worktrees .git/wt-away` and keeps a RELATIVE symlink
 * `.git/worktrees -> ../../../var/tmp/aj-host-X` in place (re-made every 50 ms, since C's audit
 * moves it to the quarantine after C's command); C's shell ends (`exit 0` here; a timeout, a
 * lowered ulimit, a bind lost restart it too) and its next command starts a new sandbox. Observed:
 * `echo … > /var/tmp/aj-host-X/pwned` in C succeeds, the file is on the host. With an absolute
 * symlink bwrap fails instead ("Can't bind mount … No such file or directory": it mounts before
 * entering the new root), and C's shell cannot start at all (a denial of service by the sibling;
 * observed). Why: a bind source is a path read again at each launch, not the folder the guard
 * checked at start; the sibling's audit comes after the fact and C's own audit cannot win a loop.
 * Tried once, not shown: a link to `../../..` (`/`) ended in "Can't find source path" and no
 * shell (not looked into); any host folder the session uid may write by its mode and that the
 * sandbox shows (`/var/tmp`, its home, sticky folders) can be the target as above. Fix (whole kind): bind
 * every guard path from a descriptor opened at session start without following a symlink, as
 * `pins.ts` does for a worktree's git dirs (`--bind-fd`), or refuse to launch when a path resolves
 * elsewhere than at start or outside the workspace; and a missing source (moved away by an audit)
 * must not leave the session without a shell.
 *
 * Kind 6/7 (the worker, as root, trusts what the session wrote in `.git`): the audit and the guard
 * read the same admin folder two ways. The audit (git-audit.ts `strayAdmin`) reads a new
 * `.git/worktrees/<id>/gitdir` without blocking (`readFile`: `O_NONBLOCK`; no regular file gives
 * undefined) and keeps the folder when that gives nothing ("a worktree of the repository's own");
 * the guard at the next session's start (git-guard.ts `linkedWorktrees`, synchronously on the
 * worker's main thread, in `BashSession`'s constructor) reads every `worktrees/<id>/gitdir` with
 * `fs.readFileSync` (`backlinkOf`), which opens a FIFO and waits for a writer, and every
 * `config.worktree` with `git config --file` (`configNamedPaths`, `gitConfigList`: `execFileSync`,
 * 10 s timeout each). Steps: a session runs `mkdir -p .git/worktrees/w && echo ../.. >
 * .git/worktrees/w/commondir && cp .git/HEAD .git/worktrees/w/ && mkfifo .git/worktrees/w/gitdir`
 * and closes (the final audit runs with no process of it left). Observed: no audit note, nothing
 * quarantined, the FIFO still there; the next session on the workspace (the person's next
 * `start --workdir`) blocks the worker's thread in open(2): every run, activity and heartbeat of
 * that worker stops, for ever (the test has a host job write the FIFO after 4 s so that it ends:
 * the event loop was frozen 4,048 ms, a 50 ms timer). The second variant: a FIFO as
 * `config.worktree` in 3 kept admin folders (`commondir` and a regular `gitdir` inside the
 * workspace): the next start froze the event loop 30,092 ms (git's 10 s per folder; a thousand
 * folders, a thousand times that). The same FIFO in an admin folder of the person's that has no
 * `config.worktree` (not bound then; the audit moves a `config.worktree` only of a new folder):
 * read, not run. Why: the guard reads the session's files by path with blocking reads on the
 * worker's thread, and keeps no deadline. Fix (whole kind): every read of the workspace by the
 * guard as the audit's (`O_NONBLOCK | O_NOFOLLOW`, `fstat` a regular file) and `git config` handed
 * only such a file (through `/proc/self/fd/N` or a copy); the audit moves an admin folder whose
 * `gitdir`, `commondir` or `config.worktree` is no regular file; the guard's work off the event
 * loop with a deadline, as the walk's.
 *
 * Kind 6 (the person's git, on the host, obeys what the session wrote): the guard asks git about
 * the repository's config only (`GIT_CONFIG_GLOBAL=/dev/null`, `GIT_CONFIG_NOSYSTEM`), but the
 * person's git also reads `~/.gitconfig`, `$XDG_CONFIG_HOME/git/config` and `/etc/gitconfig`,
 * whose relative paths git takes in the repository. Steps: the person's `~/.gitconfig` has
 * `core.hooksPath = .githooks` (a known way to share hooks across all one's repositories; a home
 * folder of the test's, never the machine's); the session runs `mkdir .githooks`, plants
 * `.githooks/pre-commit` and changes `build.sh`. Observed: the person's `git commit -am …` on the
 * host runs the plant (the marker written). The same holds, read, not run, for a relative
 * `alias.x = !./x.sh` there, or a program word naming a workspace file. Fix (whole kind): read the
 * system config and the workspace owner's global and XDG configs as the repository's (every word
 * of every value, `core.hooksPath` relative to the work tree; made and bound read-only), or refuse
 * a workspace whose global config names paths in it; and say in docs/security.md which person's
 * global config counts.
 *
 * Held (tried or read, not reported):
 * - `holdLink` (read): the link is made again only inside the workspace, its folder opened from the
 *   workspace without following a symlink; `lchown` on `/proc/self/fd/N/name` follows no last
 *   component; a hard link swapped in between `symlink` and `lchown` gets the link's recorded owner
 *   (the person), which gives the session nothing, and a hard link to a host file across the
 *   workspace's bind is EXDEV. A job keeping the name filled gets "could not be put back" after 3
 *   tries, as documented. What stands in the link's place goes to the quarantine, never deleted.
 * - `move`'s in-place fallback (read): `rename` over a name a job filled between `lstat` and
 *   `rename` replaces only that name (the job's own, or one more link of a file).
 * - `pinFolders` (read): only real folders of the workspace on the way to a read-only path, none in
 *   a read-only guard path; the one read-only bind in the workspace it does not know of is the
 *   quarantine, reached only when the person's config names a file inside it.
 * - By-name writes of root in src/session (grep of chown, rename, mkdir, writeFile, unlink, rm):
 *   the session's temporary folder (the worker's, 0710), cgroup files, `/proc/<pid>` files; the
 *   editor's helper (edit.ts) runs in the sandbox as the session user.
 * - Kind 5, `markReorderedRightToLeft`: no letter but `\p{Lm}` has a Bidi_Class other than L, R or
 *   AL (Python's unicodedata, Unicode 14: 0 code points), so no non-modifier letter ends a
 *   right-to-left stretch that the algorithm continues.
 * - Kind 3, the memory cgroup: the sandbox unshares IPC (System V shared memory dies with it).
 */
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { personsRepo, plant } from './persons-repo';

/**
 * The global-config attack below works on 47de383 (see the doc comment): true while its fix is missing. Fixed: the
 * guard reads the owner's global and system configs as the repository's (git-guard.ts `hostConfigsInto`).
 */
const OPEN = false;
const t = OPEN ? test.skip : test;

afterEach(closeSessions);
afterAll(removeTempDirs);

const dRoot = process.getuid?.() === 0 ? describe : describe.skip;

/**
 * The longest the event loop went without running a 50 ms timer while `fn` ran (ms), and its result.
 * `writeFifos`: FIFOs a host job writes after `afterMs`, so that a worker blocked on one goes on.
 */
async function stallWhile<T>(fn: () => Promise<T>, writeFifos: string[], afterMs: number): Promise<{ value: T; stallMs: number }> {
  const writers = writeFifos.map((f) => spawn('sh', ['-c', `sleep ${afterMs / 1000}; echo x > "$1"`, 'sh', f], { stdio: 'ignore' }));
  let last = Date.now();
  let stallMs = 0;
  const tick = setInterval(() => {
    const now = Date.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 50);
  try {
    const value = await fn();
    await new Promise((r) => setTimeout(r, 100));
    return { value, stallMs: Math.max(stallMs, Date.now() - last) };
  } finally {
    clearInterval(tick);
    // Only the writers started here, by their own pid: one the worker never read from still waits for a reader.
    for (const w of writers) if (w.exitCode === null) w.kill('SIGKILL');
  }
}

dRoot('kind 6/7: what the audit keeps in .git, the guard reads blocking at the next start', () => {
  test("a FIFO as a new worktree admin folder's `gitdir` does not freeze the worker when the next session starts", async () => {
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      [
        'mkdir -p .git/worktrees/w && echo ../.. > .git/worktrees/w/commondir && cp .git/HEAD .git/worktrees/w/',
        'mkfifo .git/worktrees/w/gitdir',
        'echo planted',
      ].join(' && '),
    );
    expect(r.output.split('\n')[0]).toBe('planted');
    // The audit after the command moves the admin folder away: git would wait on the FIFO too.
    expect(r.output).toContain('gitdir is no regular file');
    await s.close();
    const fifo = path.join(ws, '.git/worktrees/w/gitdir');
    const { value: next, stallMs } = await stallWhile(() => startSession({ cwd: ws, workspace: ws }), [fifo], 4000);
    expect((await next.run('echo ok')).output.split('\n')[0]).toBe('ok');
    expect({ stallMs: stallMs < 2000 ? 'under 2 s' : stallMs }).toEqual({ stallMs: 'under 2 s' });
  }, 60_000);

  test('FIFOs as `config.worktree` in kept admin folders do not freeze the worker when the next session starts', async () => {
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      [
        'for i in 1 2 3; do mkdir -p .git/worktrees/w$i && echo ../.. > .git/worktrees/w$i/commondir',
        'cp .git/HEAD .git/worktrees/w$i/ && echo "$PWD/wt$i/.git" > .git/worktrees/w$i/gitdir',
        'mkfifo .git/worktrees/w$i/config.worktree || exit 1; done',
        'echo planted',
      ].join(' && '),
    );
    expect(r.output.split('\n')[0]).toBe('planted');
    await s.close();
    const { value: next, stallMs } = await stallWhile(() => startSession({ cwd: ws, workspace: ws }), [], 0);
    expect((await next.run('echo ok')).output.split('\n')[0]).toBe('ok');
    expect({ stallMs: stallMs < 2000 ? 'under 2 s' : stallMs }).toEqual({ stallMs: 'under 2 s' });
  }, 90_000);
});

dRoot("kind 6: what the person's global git config names in the workspace", () => {
  t(
    "a relative `core.hooksPath` in the person's ~/.gitconfig: the session's `.githooks/pre-commit` does not run at the person's commit",
    async () => {
      const { ws, marker } = personsRepo();
      // The person's own home (a folder of the test's, never the machine's root home): hooks from `.githooks` in every repository.
      const home = tempDir('aj-home-');
      fs.writeFileSync(path.join(home, '.gitconfig'), '[core]\n\thooksPath = .githooks\n[user]\n\tname = p\n\temail = p@example.com\n');
      // The worker runs as the person here (root, the workspace's owner), so its $HOME is the person's.
      const saved = process.env.HOME;
      process.env.HOME = home;
      try {
        const s = await startSession({ cwd: ws, workspace: ws }).finally(() => {
          process.env.HOME = saved;
        });
        // Each step on its own: the fix makes `.githooks` (empty, read-only) before the session starts.
        const r = await s.run(
          ['mkdir -p .githooks', plant(marker, '.githooks/pre-commit'), 'echo more >> build.sh', 'echo done'].join('; '),
        );
        expect(r.output).toContain('done');
        await s.close();
        const c = spawnSync('git', ['commit', '-qam', "the agent's change"], {
          cwd: ws,
          env: { ...process.env, HOME: home },
          stdio: 'pipe',
        });
        expect({ ranOnTheHost: fs.existsSync(marker), committed: c.status }).toEqual({ ranOnTheHost: false, committed: 0 });
      } finally {
        process.env.HOME = saved;
        fs.rmSync(marker, { force: true });
      }
    },
    60_000,
  );
});

dRoot('kind 6: a sibling session swaps a folder another session binds by path', () => {
  // Fixed: each launch binds the guard's paths from descriptors held since the start, and refuses one whose path no longer
  // names what is held (held-binds.ts; the race left by a check by path: adversary-round17.test.ts).
  const OPEN_SWAP = false;
  (OPEN_SWAP ? test.skip : test)(
    "a `.git/worktrees` a sibling replaced by a symlink does not become a writable bind of the host's folder at the other session's restart",
    async () => {
      const { ws } = personsRepo();
      // A folder of the host outside the workspace that the session user may write by its mode (as /var/tmp itself): the
      // sandbox shows it read-only, as all of `/` outside the workspace.
      const host = fs.mkdtempSync('/var/tmp/aj-host-');
      fs.chmodSync(host, 0o777);
      try {
        const p = await startSession({ cwd: ws, workspace: ws });
        // An empty .git/worktrees (the audit keeps it): the next session's guard binds it onto itself, by path.
        expect((await p.run('mkdir .git/worktrees && echo made')).output.split('\n')[0]).toBe('made');
        const c = await startSession({ cwd: ws, workspace: ws });
        expect((await c.run(`{ echo x > ${host}/before; } 2>/dev/null; echo tried`)).output).toContain('tried');
        expect(fs.existsSync(path.join(host, 'before'))).toBe(false);
        // In P's sandbox .git/worktrees is no mount point (it was not there when P started): a job swaps it after P's audit,
        // and puts the symlink back whenever an audit (C's) has moved it.
        // Relative, so that bwrap, which mounts before it enters the new root, finds the same folder through it.
        const link = path.relative(path.join(ws, '.git'), host);
        const loop = `while :; do [ -L .git/worktrees ] || ln -s ${link} .git/worktrees; sleep 0.05; done`;
        await p.run(`(sleep 2; mv .git/worktrees .git/wt-away; ${loop}) >/dev/null 2>&1 & echo started`);
        await new Promise((r) => setTimeout(r, 3000));
        // C's shell ends (a timeout, `exit`, a lowered ulimit, a bind lost: anything that restarts it); the new sandbox binds again.
        // Fixed: the restart after it is refused already (the error of this run); the next run tries again below.
        await c.run('exit 0').catch(() => undefined);
        await new Promise((r) => setTimeout(r, 1000));
        // Fixed: the launch is refused (fail closed) with the path named, rather than bound from where the symlink leads.
        const r = await c.run(`{ echo from-the-session > ${host}/pwned; } 2>/dev/null; echo tried`).then(
          (res) => ({ ran: res.output }),
          (err: Error) => ({ refused: err.message }),
        );
        expect({ wroteOnTheHost: fs.existsSync(path.join(host, 'pwned')) }).toEqual({ wroteOnTheHost: false });
        expect(r).toEqual({ refused: expect.stringMatching(/\.git\/worktrees no longer is the folder .*a process changed it/) });
      } finally {
        fs.rmSync(host, { recursive: true, force: true });
      }
    },
    90_000,
  );
});
