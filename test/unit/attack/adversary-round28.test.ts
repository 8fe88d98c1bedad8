/**
 * Adversary round 28: attacks on main (0790d3b), as root, in real sessions of the unit harness (the `agent-jobs file`
 * one calls src/checkpoint/store.ts `fileAt` as the command does, on a checkpoint of a workspace), aimed at the code
 * new since 39e21a9. Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags
 * below); each was run un-skipped on 0790d3b and failed as written below (the packed-refs four last, at load average
 * 0.8: 4 failed of 4; the loose-object two at 0.7; the `file` one at 0.3).
 *
 * Kind 5 (what the person reads is not what is there): a packed replace ref whose object id is in upper-case hex, or
 * is followed by a tab. Steps: in the person's nested clone `vendor/lib` (or at the workspace's root) holding `run.sh`
 * (`echo hello`), a command runs `evil=$(printf 'echo PWNED\n' | git hash-object -w --stdin)` and appends to
 * `.git/packed-refs` the line `<evil in upper case> refs/replace/<HEAD:run.sh>` (or `<evil>`, a tab, then the name).
 * OBSERVED (each run): the person's `git status` prints nothing new and `git show HEAD:run.sh` prints `echo PWNED` on
 * the host after close (git 2.39 reads the id with `get_oid_hex`, which takes A-F, then any `isspace` byte); nothing
 * is dropped or named, in the result or at close. Why: the packed-refs scanners match `^[0-9a-f]+ (refs\/replace\/.+)$`
 * (git-audit.ts `nestedReplaceRefs` for the nested git dirs, git-walk.ts for the root's), so such a line is no replace
 * ref to them. Fix for the kind: read packed-refs as git does (a hex id in either case, then any byte git's isspace
 * takes, then the name), or count any line naming `refs/replace/` whatever precedes it.
 *
 * Kind 5: a loose object replaced by another object's bytes. Steps: in the nested clone `vendor/lib` (or at the
 * workspace's root), a command writes `echo PWNED-by-session` as a blob (`git hash-object -w`) and renames a copy of
 * its loose object file over the one of `HEAD:run.sh` (`.git/objects/2f/08be…`: the file is root's and read-only,
 * its folder is the session's to rename in). OBSERVED (each run, load average 0.7): `git status` at the top and there
 * print nothing; the person's `git checkout -- run.sh` (or `reset --hard`, `stash`) on the host writes
 * `PWNED-by-session`, and `git show HEAD:run.sh` prints it; nothing is named (only `git fsck` says "hash-path
 * mismatch"). Why: git does not hash a loose object it reads, and no audit looks at the objects that were there at
 * start (docs/security.md says so for a sub-agent's worktree only). Fix for the kind: hold the objects there at start
 * (the audit checks that the loose files and packs present at start are unchanged: inode and ctime, or bind them
 * read-only), or name every object file the session replaced.
 *
 * Kind 5: `agent-jobs file <run> <checkpoint> :/<path>` prints a symlink's target as a file's bytes. Steps: the
 * workspace holds a regular `notes.txt` and a folder named `:` with `notes.txt -> /etc/passwd` (a symlink); a
 * checkpoint records both; the person asks for `:/notes.txt`. OBSERVED (each run): `fileAt` returns the bytes
 * `/etc/passwd`, the link's target, as the file's content (`> PATH` then writes it as a regular file: round 27's
 * noticed case, fixed for plain paths by 236c25c). Why: store.ts `fileAt` takes the entry's mode from `git ls-tree
 * <id> -- <rel>`, which reads `<rel>` as a pathspec (`:/` is "from the top": the top's `notes.txt`, mode 100644), and
 * the bytes from `git cat-file blob <id>:<rel>`, which takes the path literally (`:/notes.txt`, the symlink). Fix:
 * one lookup for both (a literal pathspec, `--literal-pathspecs`, or the parent tree's listing by `<id>:<dir>`).
 *
 * Tried, held: the nested `.git` or its top folder moved aside to put a new `.git` with hooks there (EBUSY: bound); a
 * new `commondir` in a nested git dir naming a session-made git dir with hooks, or one whose config sets
 * core.fsmonitor (moved to the quarantine, named); in a nested clone a changed file marked skip-worktree or
 * assume-unchanged (the bit cleared, named), a commit made there or its branch ref rewritten by hand (named as staged
 * or committed by the session); git-path.ts against git's `verify_path` (read: the HFS+ check's malformed UTF-8 after
 * `.git` differs, git matches where the port does not, but the store's git runs with `core.protectHFS` off on Linux).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fileAt, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { hostBash, personsGit, plant, ran, withNested } from './persons-repo';

const OPEN_ODD_PACKED_REPLACE = false;
const OPEN_FILE_PATHSPEC_MAGIC = false;
const OPEN_SWAPPED_OBJECT = false;

afterEach(closeSessions);
afterAll(removeTempDirs);

const gitIn = personsGit;

/**
 * Shell text: in the repository at the current folder, a packed replace ref of HEAD:run.sh that git reads and a
 * lower-case-hex-and-one-space reading does not: its object id in upper case, or a tab after the id.
 */
const oddReplace = (form: 'upper' | 'tab'): string =>
  `evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && orig=$(git rev-parse HEAD:run.sh) && ` +
  (form === 'upper'
    ? `printf '%s refs/replace/%s\\n' "$(echo "$evil" | tr a-f A-F)" "$orig"`
    : `printf '%s\\trefs/replace/%s\\n' "$evil" "$orig"`) +
  ` >> .git/packed-refs && git show HEAD:run.sh && echo made-it`;

describe('kind 5: a packed replace ref whose object id is in upper-case hex, or followed by a tab', () => {
  const t = OPEN_ODD_PACKED_REPLACE ? test.skip : test;
  for (const where of ['vendor/lib', '.'] as const)
    for (const form of ['upper', 'tab'] as const)
      t(
        `${form === 'upper' ? 'upper-case id' : 'a tab after the id'}, in ${where === '.' ? "the workspace's root" : 'the nested clone vendor/lib'}: the person's git shows the reviewed run.sh, or the ref is named`,
        async () => {
          if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
          const { ws } = withNested();
          const repo = path.join(ws, where);
          const s = await startSession({ cwd: ws, workspace: ws });
          const r = await s.run(`cd ${where} && ${oddReplace(form)}`);
          expect(r.output).toContain('made-it');
          await s.close();
          const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
          const named = /refs\/replace|replace ref/.test(r.output + atClose);
          expect(named || !gitIn(repo, 'show', 'HEAD:run.sh').includes('PWNED')).toBe(true);
        },
      );
});

/** Shell text: in the repository at the current folder, the loose object of HEAD:run.sh overwritten by the session's blob's loose object. */
const SWAPPED_OBJECT =
  `o=$(git rev-parse HEAD:run.sh) && e=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
  `f=.git/objects/\${o:0:2}/\${o:2} && cp .git/objects/\${e:0:2}/\${e:2} .git/objects/swap.tmp && mv -f .git/objects/swap.tmp "$f" && git status --porcelain && echo made-it`;

describe("kind 5: a loose object overwritten by another's bytes", () => {
  const t = OPEN_SWAPPED_OBJECT ? test.skip : test;
  for (const where of ['vendor/lib', '.'] as const)
    t(
      `in ${where === '.' ? "the workspace's root" : 'the nested clone vendor/lib'}: the person's checkout writes the reviewed run.sh, or the object is named`,
      async () => {
        if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
        const { ws } = withNested();
        const repo = path.join(ws, where);
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(`cd ${where} && ${SWAPPED_OBJECT}`);
        expect(r.output).toContain('made-it');
        await s.close();
        const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
        const named = /objects\/[0-9a-f]{2}\/|run\.sh/.test(r.output.replace(/made-it/g, '') + atClose);
        fs.rmSync(path.join(repo, 'run.sh'));
        gitIn(repo, 'checkout', '--', 'run.sh');
        const checkedOut = fs.readFileSync(path.join(repo, 'run.sh'), 'utf8');
        expect(named || !checkedOut.includes('PWNED')).toBe(true);
      },
    );
});

describe('kind 5: `agent-jobs file` given a path beginning `:/`', () => {
  const t = OPEN_FILE_PATHSPEC_MAGIC ? test.skip : test;
  t("a symlink in a folder named `:` is named as one, never given out as a file's bytes", async () => {
    const ws = tempDir();
    fs.writeFileSync(path.join(ws, 'notes.txt'), 'mine\n');
    fs.mkdirSync(path.join(ws, ':'));
    fs.symlinkSync('/etc/passwd', path.join(ws, ':', 'notes.txt'));
    const cp = (await takeCheckpoint(tempDir(), ws, { maxBytes: 1e6 }, 't')) as Checkpoint;
    // Control: the plain path is the regular file.
    expect((await fileAt(cp.store, cp.id, 'notes.txt')).toString()).toBe('mine\n');
    let got: string;
    try {
      got = (await fileAt(cp.store, cp.id, ':/notes.txt')).toString();
    } catch (err) {
      got = `refused: ${(err as Error).message}`;
    }
    expect(got).not.toBe('/etc/passwd');
  });
});

describe("held: what the person's git obeys or shows in a nested clone", () => {
  test('a new commondir in vendor/lib/.git naming a session-made git dir with a pre-commit hook: moved, the hook does not run', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withNested();
    const marker = `${ws}-host-marker`;
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `mkdir -p evilc/hooks && ${plant(marker, 'evilc/hooks/pre-commit')} && ` +
        `cp -r vendor/lib/.git/objects vendor/lib/.git/refs vendor/lib/.git/HEAD vendor/lib/.git/config evilc/ && ` +
        `echo ../../../evilc > vendor/lib/.git/commondir && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    hostBash(lib, 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty');
    expect(ran(marker)).toBe('not run');
    expect(fs.existsSync(path.join(lib, '.git', 'commondir'))).toBe(false);
  });

  test('a changed run.sh in vendor/lib marked skip-worktree: the bit is cleared and the file named', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`cd vendor/lib && echo 'echo PWNED' > run.sh && git update-index --skip-worktree run.sh && echo made-it`);
    expect(r.output).toContain('made-it');
    await s.close();
    expect(gitIn(lib, 'status', '--porcelain')).toContain('run.sh');
    expect(r.output).toMatch(/vendor\/lib\/run\.sh/);
  });
});
