/**
 * Adversary round 17: attacks on the round-16 fixes (sandbox.ts `heldBinds`/`checkHeldBinds`/
 * `bindIdentity`; git-guard.ts `readRegular`, `gitConfigList`; git-audit.ts `strayAdmin`), on the
 * code of b03f4e2, as root, in real sessions of the unit harness. The test asserts the safe
 * behaviour; I ran it un-skipped against b03f4e2 and it failed as written below (and again on
 * 7aa2591: the file on the host after 12 s). Fixed by held-binds.ts: the guard's paths are opened
 * at the session's start without following a symlink and bound from those descriptors
 * (`--bind-fd`/`--ro-bind-fd`) at every launch; more attacks on it: held-guard-binds.test.ts.
 *
 * Kind 6 (the sandbox's edges): the round-16 check is a check by path, then a mount by path (TOCTOU).
 * `mountOps` calls `checkHeldBinds` (realpath + stat of each held guard path, in the worker),
 * then the worker spawns bwrap, which resolves the same path again when it mounts, some
 * milliseconds later. Nothing holds the folder between the two. Steps (as round 16 kind 6): session
 * P runs `mkdir .git/worktrees`; session C starts on the same workspace (its guard binds
 * `.git/worktrees` onto itself and records its real path, dev and ino); a background job of P
 * loops without sleeping: `mv -T .git/worktrees .git/wt-real; ln -s ../../../var/tmp/aj-host-X
 * .git/worktrees; rm .git/worktrees; mv -T .git/wt-real .git/worktrees` (the same folder, so the
 * same dev/ino, comes back every turn); C's shell is restarted (`exit 0`) and runs
 * `echo … > /var/tmp/aj-host-X/pwned`, up to 150 times. OBSERVED: most launches are refused
 * ("refusing to start the sandbox: …/.git/worktrees no longer is the folder …") or fail in bwrap
 * ("Can't find source path"), but in each of 3 runs, after 18, 37 and 61 tries (1.5 to 3.5 s), one launch passed the check
 * while bwrap bound through the symlink: the write succeeded and `pwned` was on the host (a
 * control write in an earlier, unswapped launch did not land). Why: the identity is compared on the
 * path before bwrap runs, not on what bwrap binds. Fix: bind every held guard path from a
 * descriptor opened at session start (`O_PATH|O_DIRECTORY|O_NOFOLLOW` per component, as pins.ts
 * does for a worktree's git dirs) with `--bind-fd`/`--ro-bind-fd`, and compare dev/ino on that
 * descriptor (fstat) rather than the path; or re-open and bind by fd at each launch, refusing when
 * its fstat differs from the recorded identity.
 *
 * Held / not tried for lack of time (not reported): a held path missing at start (null) that
 * appears is refused (read); a file's held identity compares only the real path (read), but a file
 * swap needs the sibling to rename a read-only bind of its own sandbox (EBUSY) or a file absent at
 * its start, and a hard link to a host file across the workspace bind is EXDEV (round 16), not
 * tried further. Item 2 (blocking reads of session-written paths): the guard's remaining sync
 * reads are `readRegular` (regular files, non-blocking), `readdirSync` of `.git/worktrees` and of
 * folders at git-guard.ts:409 (a huge folder could slow a start; not measured).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { personsRepo } from './persons-repo';

/** The attack below worked on b03f4e2 (see the doc comment); fixed (held-binds.ts). */
const OPEN = false;
const t = OPEN ? test.skip : test;

afterEach(closeSessions);
afterAll(removeTempDirs);

const dRoot = process.getuid?.() === 0 ? describe : describe.skip;

dRoot("kind 6: a sibling swaps a held folder between sandbox.ts's check and bwrap's mount", () => {
  t(
    'a `.git/worktrees` swapped back and forth never becomes a writable bind of a host folder',
    async () => {
      const { ws } = personsRepo();
      const host = fs.mkdtempSync('/var/tmp/aj-host-');
      fs.chmodSync(host, 0o777);
      try {
        const p = await startSession({ cwd: ws, workspace: ws });
        expect((await p.run('mkdir .git/worktrees && echo made')).output.split('\n')[0]).toBe('made');
        const c = await startSession({ cwd: ws, workspace: ws });
        // Control: with no swap, C cannot write the host folder (the sandbox shows / read-only).
        expect((await c.run(`{ echo x > ${host}/before; } 2>/dev/null; echo tried`)).output).toContain('tried');
        expect(fs.existsSync(path.join(host, 'before'))).toBe(false);
        const link = path.relative(path.join(ws, '.git'), host);
        const loop =
          `while :; do if [ -d .git/worktrees ] && [ ! -L .git/worktrees ]; then mv -T .git/worktrees .git/wt-real; fi; ` +
          `[ -L .git/worktrees ] || ln -s ${link} .git/worktrees; ` +
          `[ -L .git/worktrees ] && rm -f .git/worktrees; [ -d .git/wt-real ] && mv -T .git/wt-real .git/worktrees; done`;
        await p.run(`(${loop}) >/dev/null 2>&1 & echo started`);
        const seen: string[] = [];
        for (let i = 0; i < 150 && !fs.existsSync(path.join(host, 'pwned')); i++) {
          await c.run('exit 0').catch(() => undefined);
          const r = await c.run(`{ echo from-the-session > ${host}/pwned; } 2>/dev/null; echo tried`).then(
            (res) => `ran:${res.output.trim().slice(0, 60)}`,
            (err: Error) => `err:${err.message.slice(0, 100)}`,
          );
          seen.push(r);
        }
        expect({ wroteOnTheHost: fs.existsSync(path.join(host, 'pwned')) }).toEqual({ wroteOnTheHost: false });
      } finally {
        fs.rmSync(host, { recursive: true, force: true });
      }
    },
    300_000,
  );
});
