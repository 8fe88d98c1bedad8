/**
 * Adversary round 14: attacks on the git audit (git-audit.ts) and guard (git-guard.ts), the
 * session's user namespace (userns.ts) and socket cgroup, and display.ts's round-13 rules, on the
 * code of b6d4373, as root (the worker's intended setting). Each test asserts the safe behaviour;
 * OPEN skips them while a fix is missing. Run un-skipped once against b6d4373: all 12 failed
 * (git: 3, walk: 1, epoll: 1, display: 7), and the 2 must-not-flag tests passed.
 * The 7 display tests run since the fix of display.ts (a number after a right-to-left letter,
 * skeletons of two or more ASCII letters).
 *
 * Kind 6 (the person's git, on the host, obeys what the session wrote), three ways past the audit,
 * each observed in a real sandboxed session (the unit harness's, session uid agent-jobs, in a
 * root-owned workspace) and then the person's git on the host, as root, running the planted code.
 * The planted git dir is made in a FOLDER OF THE PERSON'S (the session may rename any folder of the
 * workspace, and git's ownership check looks at the folder, not at the files in it), so the
 * person's git trusts it.
 * - A git dir split in two. Steps: copy `.git` to `.cache` with a textconv driver (and
 *   `info/attributes` `* diff=evil`) naming a planted script, remove `.cache/HEAD`; put `HEAD` and
 *   `commondir` (`../.cache`) in the person's `src/`. The person's `git show` (or `log -p`, or a
 *   pager in a terminal) anywhere under `src/` runs the script: git's discovery takes `src` for a
 *   bare repository (a valid HEAD, and objects/ and refs/ in the dir its commondir names) before it
 *   reaches the root's `.git`, and reads the common dir's config. Why: `walkGitDirs` knows a bare
 *   repository only as HEAD, objects/ and refs/ in ONE directory; nothing is reported. Fix (whole
 *   kind): decide "is a git dir" as git does (setup.c `is_git_directory`: HEAD, then objects/ and
 *   refs/ in the directory its `commondir` names), or flag every new `HEAD`, `commondir` and `gitdir`
 *   file anywhere in the workspace, whatever else stands beside it.
 * - The quarantine's own name. Steps: `touch .git/agent-jobs-quarantine`, then plant `src/.git`.
 *   Every move then fails (`Quarantine.quarantine` cannot mkdir there, and opening it with
 *   O_NOFOLLOW|O_DIRECTORY fails on a file or a symlink): the result says "could NOT be moved, check
 *   by hand", and the planted `src/.git` runs in the person's next `git status` in `src/`.
 * - A name too long to move. Steps: plant `.git` in a folder named by 85 `日` (255 bytes, a legal
 *   name). The quarantine's name is `<tag>-<ms>-<seq>-<path with / as _>` cut to 200 UTF-16 units,
 *   which is over NAME_MAX (255 bytes) for non-ASCII paths: ENAMETOOLONG, "could NOT be moved".
 * Fix (both): the worker's names only (`<tag>-<seq>`, with the original path in a log file beside
 * it), and a quarantine the session cannot touch: made before the sandbox starts and bound
 * read-only in it, or kept outside the workspace; and a finding that cannot be moved must stop the
 * run (or hide the entry) rather than leave it for the person's git.
 *
 * Kind 3 (a runaway is reported, not fatal to others), the cost of the walk: `walkGitDirs` runs
 * synchronously on the worker's event loop at session start, after every command and every edit.
 * Measured (this machine, load 10-13, warm cache): 1,000,000 entries in one folder (hard links of
 * 16 files: no inodes, no data) take 2.9 s per audit; 100,000 empty folders 1.1 s; 200,000 files
 * in 2,000 folders 0.2 s; observed in a session (the test below): `true` in a workspace of the
 * million froze the worker's event loop 3.3 s, at the audit after the command. Up to the cap of 2,000,000 entries that is about 6 s per command (extrapolated) of a
 * frozen worker: every other run's activities on it miss their 5-second heartbeat timeouts
 * (config.ts; inferred, not observed). And the cap is checked after `readdirSync` returns a whole
 * folder: one folder of 20 million hard links (about 100 s to make) is read whole, at the measured
 * 204 MB of heap per million entries (Dirents and the name Map), past Node's heap limit: the worker
 * dies (extrapolated, not run on this shared machine). Fix (whole kind): walk off the event loop
 * (a child process or worker thread with a time budget and a memory bound, reading folders in
 * batches with `opendir`), and treat a walk that cannot finish as a finding that stops the run.
 *
 * Kind 6 (per-user kernel counts shared with the owner), epoll watches: the user namespace bounds
 * what the kernel counts per user namespace (`/proc/sys/user/*`), but `fs.epoll.max_user_watches`
 * is counted per uid (`user_struct.epoll_watches`, fs/eventpoll.c `ep_insert`), whatever the
 * namespace. Steps: one python3 process in the session opens 4,000 pipes and registers them in
 * epoll instances until ENOSPC. Observed: it held 5,491,645 watches (the host's whole maximum) in
 * 9-12 s; then a process on the host as the session's uid (`setpriv --reuid`) got ENOSPC from
 * `epoll_ctl`: with the worker as root the session's uid is the workspace's owner (userns.ts), so
 * every program of the person that uses epoll (node, editors, systemd --user) fails while the run
 * lasts; the watches' kernel memory is outside every limit (the v1 memory cgroup limits TCP
 * buffers only, RLIMIT_AS counts no kernel memory). Fix (whole kind): a session uid that is no
 * one's (a uid of its own per session, mapped to the owner for the workspace's files, or the files
 * made writable to it), so every per-uid count the kernel keeps outside user namespaces
 * (epoll watches, pipe-user-pages, RLIMIT_NPROC's and SIGPENDING's top level) is the session's own;
 * and the session's memory cgroup bounds all its memory, kernel memory included.
 * Since: the shell's memory cgroup has a `memory.limit_in_bytes` (limits.ts `maxSessionMemoryBytes`,
 * half the machine's memory by default), which counts the kernel's objects made for the session:
 * measured 214 bytes per epoll watch, so at a 128 MiB limit a job is killed at 592,000 watches
 * (5,491,645 and ENOSPC without it), and 8 processes filling pipes are killed before they hold
 * 128 MiB together (512 MiB without it); the two "memory limit" tests below. The per-uid counts
 * stay OPEN (observed again with the bound: the host uid's epoll_ctl fails, and its new pipes get
 * 8,192 bytes, not 65,536, once the session holds 68.75 MiB of pipes past
 * `fs.pipe-user-pages-soft`): no sensible memory limit is below the 1.17 GiB the uid's whole epoll
 * maximum costs, nor the 64 MiB of the pipe soft limit. What is left is the session's own uid
 * (docs/security.md, "Per-uid kernel counts").
 *
 * Kind 5 (what the human reads is not what runs), two gaps in the round-13 rules:
 * - ONE right-to-left word before a number: the Unicode Bidirectional Algorithm gives the neutrals
 *   between a right-to-left letter and a European number the right-to-left direction (UAX #9 N1:
 *   numbers count as R), so the stretch is drawn reversed, brackets and `<>` mirrored:
 *   `sort א > 2024.csv` is drawn `sort 2024 < א.csv` (a read of 2024; bash writes 2024.csv),
 *   `cp גיבוי 2024` ("backup") as `cp 2024 גיבוי`, `rm -rf א/1` as `rm -rf 1/א`. Observed with
 *   fribidi 1.0.8's `fribidi_log2vis` (libfribidi0, LTR paragraph), as round 13; not in a browser.
 *   Why: `markReorderedRightToLeft` flags only two right-to-left characters with something between;
 *   a digit is no letter and no right-to-left character. Fix (whole kind): in a command, escape every
 *   strong right-to-left character, or flag one followed by a digit before the next left-to-right
 *   letter (or run the UBA and compare the visual order with the logical one).
 * - Letters whose TR39 skeleton is two ASCII letters, inside an ASCII word: `cat ~/bꝏks.txt` (U+A74F
 *   LATIN SMALL LETTER OO, skeleton `oo`), `git push -f origin mꜳin` (U+A733, `aa`), and
 *   `git checkout fᅇ` (U+1147 HANGUL CHOSEONG SSANGIEUNG, `oo`; Latin with Hangul is a mix TR39
 *   allows). A scan of unicode-security 0.1.3's tables (every source whose prototype is two or more
 *   ASCII letters or digits, as `cat xCHx`) found 31 shown verbatim: `æ œ ʣ ʦ ʪ ʫ ᵫ Ỻ ꜩ-ꜽ ꝏ ꝷ ꭃ ꭣ
 *   ᅇ ᇮ ㆀ` and capitals. Why: `isAsciiForm` is NFKC only, `markAsciiLookalikes` knows skeletons of
 *   one ASCII character only (round 13's suggested "any length" was not taken). Fix: flag every
 *   letter whose TR39 skeleton is ASCII letters and digits only, of any length, beside an ASCII letter
 *   or digit of its word (`æ`, `œ` of real words would be flagged too; `cat œuvre` is checked as the
 *   cost).
 *
 * Held (tried, not reported):
 * - Kind 6, a planted `.git` at a path whose absolute form exceeds PATH_MAX but whose relative one
 *   does not (the walk `readdirSync`s absolute paths: ENAMETOOLONG, skipped silently): observed on
 *   the host, the person's git cannot use it either (`git status` through a gitlink: fatal).
 * - Kind 6, `info/grafts`, `info/attributes` (`info/` is bound read-only), `config.worktree` of the
 *   main worktree (bound when worktreeConfig is on), `.gitmodules` `update = !cmd` (git refuses a
 *   command from .gitmodules since 2.20): read, not tried. `shallow`, `objects/info/alternates`, `FETCH_HEAD`,
 *   `MERGE_HEAD`: what git shows or merges, no code run, and `git status` shows a merge in progress;
 *   the same class as round 11's commit-graph (documented open), not repeated.
 * - Kind 6, the user namespace: no capability in it (CapEff and CapBnd 0, observed); inotify and
 *   fanotify maxima a quarter (observed 32 and 48,135); keyrings refused by seccomp (read); SysV and
 *   POSIX IPC in an IPC namespace of the sandbox's own (sandbox.ts `--unshare-ipc`, read).
 * - Kind 5, marks on ASCII: a mark NFC composes makes a visible accent (`ñ`); other marks are
 *   flagged (`markMarksOnAscii`, read).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { displayCommand } from '../../../src/shared/display';
import { closeSessions, removeTempDirs, startSession, waitUntil } from '../session/helpers';
import { personsRepo } from './persons-repo';
import { FLAGGED, flaggedEverywhere } from './lookalikes';

/** Every attack below works on b6d4373 (see the doc comment): skipped until fixed. */
const OPEN = true;
const t = OPEN ? test.skip : test;

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;

/** Runs git as the person on the host in `cwd`; never throws. */
const hostGit = (cwd: string, ...a: string[]): void => void spawnSync('git', a, { cwd, stdio: 'pipe' });

/**
 * Shell text that makes `dir` (an existing folder of the person's: git's ownership check looks at
 * the folder) a copy of the workspace's git dir whose fsmonitor and a textconv driver for every file
 * run a script at `<final>/fsm` that leaves `marker` (`final`: where `dir` ends up, relative to the workspace).
 */
const evilGitDir = (dir: string, final: string, marker: string): string =>
  [
    `cp -r .git/. ${dir}/`,
    `printf '#!/bin/sh\\nid -un > ${marker}\\nprintf x\\n' > ${dir}/fsm && chmod +x ${dir}/fsm`,
    `git --git-dir=${dir} config core.fsmonitor "$PWD/${final}/fsm"`,
    `git --git-dir=${dir} config core.worktree "$PWD"`,
    `git --git-dir=${dir} config diff.evil.textconv "$PWD/${final}/fsm"`,
    `echo '* diff=evil' > ${dir}/info/attributes`,
  ].join(' && ');

/** The person's repository with their folders `src/` (a file in it, committed) and `docs/`. */
function personsRepoWithFolders(): ReturnType<typeof personsRepo> {
  const repo = personsRepo();
  fs.mkdirSync(path.join(repo.ws, 'src'));
  fs.writeFileSync(path.join(repo.ws, 'src', 'main.c'), 'int main;\n');
  fs.mkdirSync(path.join(repo.ws, 'docs'));
  repo.git('add', '-A');
  repo.git('commit', '-qm', 'src');
  return repo;
}

// Fixed since (src/session/git-audit.ts, git-walk.ts): these three and the walk's run.
dRoot('kind 6: git metadata the audit does not find, or cannot move', () => {
  test("a git dir split in two (HEAD and commondir in the person's `src/`) is found: the person's `git show` in src/ runs nothing", async () => {
    const { ws, marker } = personsRepoWithFolders();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `mkdir .cache && ${evilGitDir('.cache', '.cache', marker)} && rm .cache/HEAD && cp .git/HEAD src/HEAD && echo ../.cache > src/commondir && echo planted`,
      );
      expect(r.output.split('\n')[0]).toBe('planted');
      await s.close();
      hostGit(path.join(ws, 'src'), 'show');
      expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a file the session puts at `.git/agent-jobs-quarantine` does not keep a planted `src/.git` in place', async () => {
    const { ws, marker } = personsRepoWithFolders();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      // Every way to put something else at the quarantine's name, or to write into it (each refused since the fix:
      // the worker makes it before the sandbox and binds it read-only), then the plant.
      const block = [
        'touch .git/agent-jobs-quarantine',
        'rm -rf .git/agent-jobs-quarantine',
        'mv .git/agent-jobs-quarantine .git/q2',
        'ln -sfn /tmp .git/agent-jobs-quarantine',
        'touch .git/agent-jobs-quarantine/x',
        'mkdir .git/agent-jobs-quarantine/x',
      ].join('; ');
      const r = await s.run(`(${block}) 2>/dev/null; ${evilGitDir('docs', 'src/.git', marker)} && mv docs src/.git && echo planted`);
      expect(r.output.split('\n')[0]).toBe('planted');
      await s.close();
      hostGit(path.join(ws, 'src'), 'status', '--short');
      expect({ left: fs.existsSync(path.join(ws, 'src', '.git')), ranOnTheHost: fs.existsSync(marker) }).toEqual({
        left: false,
        ranOnTheHost: false,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a planted `.git` in a folder with a long non-ASCII name (85 × 日, 255 bytes) is moved', async () => {
    const { ws, marker } = personsRepoWithFolders();
    const dir = '日'.repeat(85);
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      // The person's `src/` renamed, so that the folder holding the `.git` passes git's ownership check.
      const r = await s.run(`mv src ${dir} && ${evilGitDir('docs', `${dir}/.git`, marker)} && mv docs ${dir}/.git && echo planted`);
      expect(r.output.split('\n')[0]).toBe('planted');
      await s.close();
      hostGit(path.join(ws, dir), 'status', '--short');
      expect({ left: fs.existsSync(path.join(ws, dir, '.git')), ranOnTheHost: fs.existsSync(marker) }).toEqual({
        left: false,
        ranOnTheHost: false,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

dRoot("kind 3: the audit's walk does not freeze the worker", () => {
  test("a command in a workspace of a million entries does not block the worker's event loop for half a second", async () => {
    const { ws } = personsRepo();
    // One folder of hard links (the kernel allows 65,000 links to a file): no inodes, no data, fast to make.
    const big = path.join(ws, 'big');
    fs.mkdirSync(big);
    for (let f = 0; f < 16; f++) {
      const src = path.join(big, `s${f}`);
      fs.writeFileSync(src, '');
      for (let i = 0; i < 62_500; i++) fs.linkSync(src, path.join(big, `l${f}_${i}`));
    }
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      let last = Date.now();
      let longestStallMs = 0;
      const tick = setInterval(() => {
        longestStallMs = Math.max(longestStallMs, Date.now() - last);
        last = Date.now();
      }, 10);
      let output = '';
      try {
        // A `.git` past the million: the walk must still get there (not stop at a budget and pass).
        output = (await s.run('mkdir -p zz/.git')).output;
        // The audit ends the command, so the stall shows at the first tick after it.
        await new Promise((r) => setTimeout(r, 100));
      } finally {
        clearInterval(tick);
      }
      expect(longestStallMs).toBeLessThan(500);
      expect(output).toContain('zz/.git (a .git below the root');
      expect(output).not.toContain('NOT checked');
    } finally {
      fs.rmSync(big, { recursive: true, force: true });
    }
  }, 180_000);
});

/** Registers pipes in epoll instances until the kernel refuses, prints how many and the errno, and holds them. */
const HOLD_EPOLL = `import os, select, time
fds = [os.pipe()[0] for _ in range(4000)]
held, n = [], 0
try:
    while True:
        e = select.epoll()
        held.append(e)
        for f in fds:
            e.register(f, select.EPOLLIN)
            n += 1
except OSError as x:
    print(n, x.errno, flush=True)
time.sleep(60)
`;

/** Fills 1,100 pipes (64 KiB each, 68.75 MiB: past `fs.pipe-user-pages-soft`'s 64 MiB), prints `held`, and holds them. */
const HOLD_PIPES = `import os, time
held = []
for _ in range(1100):
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        while True:
            os.write(w, b'x' * 65536)
    except BlockingIOError:
        pass
    held.append((r, w))
print('held', flush=True)
time.sleep(60)
`;

/** Python that makes a pipe as the calling uid and prints its buffer's size (F_GETPIPE_SZ): 65536, or 8192 (two pages) past the uid's soft limit. */
const PIPE_SIZE = 'import fcntl, os\nprint(fcntl.fcntl(os.pipe()[1], 1032))';

/** Runs python3 `code` on the host as `uid`:`gid` (a program of the session's uid outside the sandbox); its stdout, trimmed. */
function pythonAs(uid: string, gid: string, code: string): string {
  const r = spawnSync('setpriv', [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups', '/usr/bin/python3', '-c', code], {
    encoding: 'utf8',
  });
  return r.stdout.trim();
}

/** The session's host uid and gid, as `id` prints them in it (its user namespace maps every id to itself). */
async function sessionIds(s: Awaited<ReturnType<typeof startSession>>): Promise<[string, string]> {
  const [uid, gid] = (await s.run('id -u; id -g')).output.trim().split('\n');
  return [uid!, gid!];
}

dRoot('kind 6: per-uid kernel counts outside the user namespace', () => {
  // OPEN: the session's uid is still the workspace owner's (identity.ts); the memory cgroup bounds the
  // watches' memory (test below) but not this count, whose whole maximum costs 1.17 GiB here.
  t(
    "a session holding every epoll watch its uid may have leaves the uid's other programs on the host able to use epoll",
    async () => {
      const { ws } = personsRepo();
      fs.writeFileSync(path.join(ws, 'hold.py'), HOLD_EPOLL);
      const held = path.join(ws, 'held.txt');
      const s = await startSession({ cwd: ws, workspace: ws });
      const [uid, gid] = await sessionIds(s);
      await s.run('python3 hold.py > held.txt 2>&1 &');
      await waitUntil('the job holds its watches', () => fs.existsSync(held) && fs.readFileSync(held, 'utf8').includes('\n'), 120_000);
      // A program of the same uid on the host (the workspace's owner, in production).
      const other = pythonAs(uid, gid, "import os, select\nselect.epoll().register(os.pipe()[0], select.EPOLLIN)\nprint('ok')");
      expect({ held: fs.readFileSync(held, 'utf8').trim() !== '', other }).toEqual({ held: true, other: 'ok' });
    },
    180_000,
  );

  // OPEN, as above: the attacker's variant through another per-uid count, pipe buffers (`user_struct.pipe_bufs`).
  t(
    "a session holding more pipe buffers than its uid's soft limit leaves the uid's new pipes on the host their full size",
    async () => {
      const { ws } = personsRepo();
      fs.writeFileSync(path.join(ws, 'pipes.py'), HOLD_PIPES);
      const held = path.join(ws, 'held.txt');
      const s = await startSession({ cwd: ws, workspace: ws });
      const [uid, gid] = await sessionIds(s);
      const before = pythonAs(uid, gid, PIPE_SIZE);
      await s.run('python3 pipes.py > held.txt 2>&1 &');
      await waitUntil('the job holds its pipes', () => fs.existsSync(held) && fs.readFileSync(held, 'utf8').includes('\n'), 60_000);
      expect({ held: fs.readFileSync(held, 'utf8').trim(), before, other: pythonAs(uid, gid, PIPE_SIZE) }).toEqual({
        held: 'held',
        before: '65536',
        other: '65536',
      });
    },
    120_000,
  );
});

/**
 * Counts epoll watches into `n.txt` (the last count), registering pipes in epoll instances until
 * the kernel refuses (then `err <count> <errno>`) or kills it.
 */
const COUNT_EPOLL = `import os, select
fds = [os.pipe()[0] for _ in range(4000)]
held, n = [], 0
out = open('n.txt', 'w')
try:
    while True:
        e = select.epoll()
        held.append(e)
        for f in fds:
            e.register(f, select.EPOLLIN)
            n += 1
        out.seek(0); out.write('%d          ' % n); out.flush()
except OSError as x:
    out.write('\\nerr %d %d\\n' % (n, x.errno)); out.flush()
`;

/**
 * Forks 8 children; each fills pipes (64 KiB each while its uid is under \`fs.pipe-user-pages-soft\`,
 * one page each past it) until it holds 64 MiB or runs out of descriptors, then prints what it holds
 * and keeps it 20 s, while the others fill theirs. A child the kernel kills prints nothing.
 */
const FILL_PIPES = `import os, sys, time
for c in range(8):
    if os.fork() == 0:
        held, total = [], 0
        try:
            while total < 64 << 20:
                r, w = os.pipe()
                os.set_blocking(w, False)
                try:
                    while True:
                        total += os.write(w, b'x' * 4096)
                except BlockingIOError:
                    pass
                held.append((r, w))
        except OSError:
            pass
        print('child', total, flush=True)
        # Held while the others fill theirs (a few seconds), so what the reports add up to was held at once.
        time.sleep(20)
        os._exit(0)
for c in range(8):
    os.wait()
`;

const MiB = 1024 * 1024;

dRoot("kind 6: the kernel's memory for a session's objects counts in its memory limit", () => {
  test("epoll watches (214 bytes each of kernel memory, outside every ulimit) stop at the session's memory limit, with a note", async () => {
    const { ws } = personsRepo();
    fs.writeFileSync(path.join(ws, 'count.py'), COUNT_EPOLL);
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
    const r = await s.run('python3 count.py');
    const counted = fs.readFileSync(path.join(ws, 'n.txt'), 'utf8');
    const watches = Number(counted.trim().split(/\s+/)[0]);
    // Without the bound the job holds the uid's whole maximum (5,491,645 here) and stops at ENOSPC (28).
    expect({ refused: counted.includes('err'), exitCode: r.exitCode, note: /reached its memory limit/.test(r.output) }).toEqual({
      refused: false,
      exitCode: 137,
      note: true,
    });
    expect(watches * 150).toBeLessThan(128 * MiB);
    expect((await s.run('echo alive')).output.trim()).toBe('alive');
  }, 180_000);

  test("pipe buffers held by many processes stop at the session's memory limit, together", async () => {
    const { ws } = personsRepo();
    fs.writeFileSync(path.join(ws, 'fill.py'), FILL_PIPES);
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000, limits: { maxSessionMemoryBytes: 128 * MiB } });
    const r = await s.run('python3 fill.py');
    const held = [...r.output.matchAll(/^child (\d+)$/gm)].map((m) => Number(m[1]));
    const total = held.reduce((a, b) => a + b, 0);
    // Without the bound all 8 report, about 64 + 7 × 40 MiB (past the soft limit a pipe holds one page).
    expect({ reported: held.length < 8, note: /reached its memory limit/.test(r.output) }).toEqual({ reported: true, note: true });
    expect(total).toBeLessThan(128 * MiB);
  }, 180_000);
});

describe('kind 5: one right-to-left word before a number is drawn reversed', () => {
  for (const command of ['sort א > 2024.csv', 'cp גיבוי 2024', 'rm -rf א/1', 'cat א > 1']) {
    test(`${JSON.stringify(command)} is not shown verbatim`, () => {
      expect(flaggedEverywhere(command)).toEqual(FLAGGED);
    });
  }
});

describe('kind 5: letters whose TR39 skeleton is two ASCII letters, in an ASCII word', () => {
  const commands: [string, string][] = [
    ['cat ~/bꝏks.txt', 'U+A74F LATIN SMALL LETTER OO'],
    ['git push -f origin mꜳin', 'U+A733 LATIN SMALL LETTER AA'],
    ['git checkout fᅇ', 'U+1147 HANGUL CHOSEONG SSANGIEUNG, in a mix TR39 allows'],
  ];
  for (const [command, what] of commands) {
    test(`${JSON.stringify(command)} (${what}) is not shown verbatim`, () => {
      expect(flaggedEverywhere(command)).toEqual(FLAGGED);
    });
  }

  // What the fix must not flag: a single right-to-left word, and Latin letters of other languages alone.
  test.each(['grep -r שלום src', 'echo Straße'])('%j is shown as it is', (command) => {
    const d = displayCommand(command);
    expect({ text: d.text, warnings: d.warnings }).toEqual({ text: command, warnings: [] });
  });
});
