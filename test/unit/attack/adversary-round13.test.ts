/**
 * Adversary round 13: attacks on the latest fixes (display.ts `markAsciiLookalikes`,
 * `isAsciiForm`, `markMixedScriptWords`; git-guard.ts; the sandbox's bounded devpts and BPF
 * refusals; the policy's builtins), on the code of 1959896. Each test asserts the safe behaviour.
 * Run before the fixes, all 20 failed (and the 5 must-not-flag tests passed).
 *
 * FIXED, kind 5 (its 16 tests run): display.ts flags every non-ASCII code point whose NFKC form is
 * made only of ASCII letters and digits (`isAsciiForm`, superscripts included), a combining mark
 * on an ASCII letter that NFC does not compose (`markMarksOnAscii`), every right-to-left letter of
 * a command where two of them stand with other characters but no left-to-right letter between
 * (`markReorderedRightToLeft`; a lone Hebrew or Arabic word stays as it is), and unassigned code
 * points (`\p{Cn}`).
 *
 * FIXED, kind 6 (its 4 tests run): git-guard.ts asks git, not a hand parser, what the config makes
 * it read or run (`git config --file F --null --list` on `.git/config` and on each file it
 * includes, to git's depth of 10, with no repository, hooks, system or global config, before the
 * sandbox starts): every include whatever its condition (created empty when missing), the
 * `core.hooksPath` directory (created when missing), each existing file that a word of
 * `core.fsmonitor`, a filter, diff, merge driver, `sshCommand`, editor, pager, credential helper,
 * gpg program or alias names, and the targets of hooks that are symlinks; all resolved with
 * realpath and bound read-only when they lie in the workspace. A `.git`, `config`, `hooks/` or
 * `info/` that is a symlink into the workspace counts by its target (`.git -> .gitdir` binds
 * `.gitdir` onto itself and its code read-only).
 *
 * FIXED, kind 6, the symlink itself (was the one skipped test): a symlink is no mount point, so the
 * session could remove the link itself (`rm .git/config`, or `rm .git`) and put a file or `.git` of
 * its own in its place: observed, planted and run by the person's `git status` (the `.git` variant
 * stopped in this harness only by git's ownership check, the session's uid not being the
 * person's). Now the git audit (git-audit.ts `heldLinks`, `holdLink`) records at start every
 * symlink met on the way to `.git`, its `config`, `hooks`, `info` and `config.worktree`, and after
 * each command, edit and at close moves what stands in a changed link's place to the quarantine
 * (`.gitdir/agent-jobs-quarantine/` for `.git -> .gitdir`) and makes the link again, owned as it
 * was; the result says so. Chosen over refusing such a workspace (a config kept tracked is a
 * layout some teams use) and a mount on the link (bwrap binds no symlink; the new mount API
 * would need a step of our own in the sandbox's namespace). The session can still plant for the
 * length of one command (and a job between audits): the window the audit has for everything it
 * holds. The "kind 6, the symlink itself" tests run the attacker's variants (replaced by a file,
 * a directory, a link elsewhere, renamed aside, the link's target a link replaced too, a `.git`
 * file), with the person's git taking every repository as safe, and each failed before the fix.
 * Found on the way, the same kind (the name git reads is not held, only what it led to at start):
 * a folder holding a guarded path outside `.git` could be renamed aside and made again (`mv .husky
 * .husky.old`, a new `.husky/_/pre-commit`; the shell restart for a "replaced on the host" bind
 * then bound the session's folder read-only): each such folder is now bound onto itself
 * (git-guard.ts `holdAncestors`); and a symlink on the way to an include or `core.hooksPath`
 * (`githooks -> tools/hooks`) is held by the audit as the others.
 *
 * Kind 5 (what the human reads is not what runs), letters whose compatibility form is ASCII:
 * `isAsciiForm` flags only two blocks (fullwidth, Mathematical Alphanumeric) and only forms of ONE
 * ASCII character. Shown verbatim with no warning, in the approval prompt, the UI's summary and
 * details: the Latin ligatures and digraphs `ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ ĳ Ĳ ǉ ǌ ǳ ...` even INSIDE an ASCII
 * word (`git push ﬆaging main`, `cat ~/.ssh/conﬁg`: their NFKC form is two letters, which neither
 * table holds, and they are Latin, so no mixed script; a browser draws `fi` as that very ligature), the
 * Roman numerals (`ⅱ ⅲ ⅳ ⅵ ... ⅻ` inside a word too; `ⅽ ⅾ ⅰ ⅿ ⅴ ⅹ Ⅴ Ⅹ` and the rest as a word:
 * `ⅵ notes.txt`, `ⅿⅴ a b`, Latin script, so not round 12's accepted "one non-Latin script"), the
 * segmented and outlined digits (`sleep 🯹🯹🯹🯹`, U+1FBF0-9, U+1CCF0-9: round 12's `𝟫𝟫𝟫𝟫` in
 * another block). Steps: send any as a command needing approval. Why: display.ts `isAsciiForm`
 * tests `cp` in U+FF10-FF5A or U+1D400-1D7FF and NFKC of length one; `markAsciiLookalikes` knows
 * only single-character skeletons. A scan of every code point (NFKC all ASCII letters or digits,
 * not flagged as `x CH y`) found 240: besides those, superscripts and subscripts (`¹ ⁿ ₓ`), modifier
 * letters (`ᴬ ᵈ`), letterlike symbols (`K` KELVIN SIGN, `ℎ ℓ ℹ ⅆ`), circled numbers (`① ⑩ ㉑`).
 * Fix (whole kind): in a command, flag every non-ASCII code point whose NFKC form is non-empty
 * and made only of ASCII letters and digits, wherever it stands (superscripts included: a rule,
 * not a block list), and every letter whose TR39 skeleton is ASCII only (any length) inside a
 * word with ASCII letters.
 *
 * Kind 5, a combining mark on an ASCII letter: a mark after a letter is "part of a visible letter"
 * (`classIn`), so `git push origi\u0307n main` (U+0307 COMBINING DOT ABOVE on `i`, drawn over the
 * i's own dot by a terminal that places marks at a fixed height; not observed in a terminal) is
 * shown verbatim: git reads another remote. Why: `MARK_BASE` takes any letter; only the overlay
 * marks of EXTRA_LOOKALIKES are flagged. Fix: flag a mark on an ASCII letter that NFC does not
 * compose away (`e\u0301` becomes `é`, macOS's decomposed names stay readable; `i\u0307` stays two).
 *
 * Kind 5, right-to-left letters: the Unicode Bidirectional Algorithm (browsers: the Temporal UI's
 * summaries and details; bidi terminals: Konsole, GNOME's VTE since 0.58) reorders the words and
 * mirrors the brackets between two right-to-left letters, with no control character: `cat א > ב`
 * is drawn `cat ב < א` (a harmless read; bash truncates ב), `cp -f גיבוי נתונים` ("backup",
 * "data") is drawn with the words swapped, so a reader taking argv left to right reads "copy data
 * to backup", and bash overwrites the data with the backup; `ls אב/גד` is drawn `ls גד/אב`.
 * Observed: fribidi 1.0.8's `fribidi_log2vis` (libfribidi0, the UBA) with an LTR paragraph gives
 * those orders (not observed in a browser). Why: display.ts flags bidi CONTROLS only (BIDI); a
 * word of one script, Hebrew or Arabic, "stays readable", and nothing looks between words.
 * Fix: in a command, escape (or warn and isolate per word where the medium allows) every strong
 * right-to-left letter (Bidi_Class R or AL), or at least any command where two of them are
 * separated only by neutrals (spaces, `>`, `/`, brackets).
 *
 * Kind 5, unassigned code points: `rm -rf src\u0378` is shown raw (category Cn is no class of
 * `classOf` but for the Default_Ignorable and noncharacter ranges): how a terminal or font draws
 * one is its own (a blank, a box, or a later Unicode's letter; not observed). Fix: escape `\p{Cn}`
 * as the invisible ones.
 *
 * Kind 6 (the person's git, on the host, runs what the session wrote), three ways git-guard.ts
 * misses where the person's repository tells git to find code, each run in a real sandboxed
 * session (the unit harness's, as root, in a root-owned workspace): the person's git on the host,
 * as root, ran the planted program:
 * - the hooks directory the person's config names (`core.hooksPath`) when it lies in the
 *   workspace: husky 9 (`npx husky init`) sets `core.hooksPath = .husky/_`, whose files git
 *   ignores. Steps: the session rewrites `.husky/_/h`; the person's `git status` is empty, and
 *   their next `git commit` runs it. Why: `codeEntries` binds `.git/hooks` only. (`.githooks`
 *   tracked, and `.git/hooks/<name>` symlinks to workspace scripts, are the same, with a trace in
 *   `git status`; so is any key of the person's config that names a program in the workspace:
 *   `core.fsmonitor`, `diff.*.textconv`, `filter.*.clean`, `merge.*.driver`; read, not run.)
 * - `.git`, `.git/config` (or `hooks`, `info`) a SYMLINK to a path in the workspace (`.git ->
 *   .gitdir`; a config kept tracked, `.git/config -> ../repo.gitconfig`): `guardedGit` and
 *   `codeEntries` `lstat` and bind only a directory or a regular file, so a symlink gets nothing
 *   and the session writes `core.fsmonitor` through it; `git status` runs it.
 * - an include written with a comment after it (`path = extra.conf ; shared settings`, git's own
 *   syntax): `includedFiles` parses config by hand and takes the comment as part of the path, so
 *   the guard creates and binds `.git/extra.conf ; shared settings` and leaves `.git/extra.conf`,
 *   which git includes, writable. The same parser also diverges from git on escapes in a quoted
 *   value (`"extra\\.conf"`) and on a value continued by a backslash at the end of a line (read,
 *   not run).
 * Fix (whole kind): ask git, not a hand parser, which files and directories the config makes it
 * read or run (`git config --file F --includes --get-regexp` for `include(if)?.*.path`,
 * `core.hookspath`, `core.fsmonitor` and every key that names a program; its origins with
 * `--show-origin`), resolve each with realpath, and bind read-only every one that lies in the
 * workspace (created empty when missing, as `hooks/`), `.git` itself when it resolves inside; or
 * refuse to start a run in a workspace whose repository names code in itself that the guard
 * cannot bind.
 *
 * Held (tried, not reported):
 * - Kind 4, the plain builtins (observed, bash 5.2.15, `a=(1)` set, `a[$(touch F)]` as the word):
 *   `printf '%d' W`, `printf '%*d' W 1`, `printf '%.*d' W 1`, `printf '%(W)T'`, `test W -eq 0`,
 *   `[ -t W ]`, `test -o W`, `test a -nt W`, `kill -l W`, `kill -s W 1`, `kill -n W $$`,
 *   `caller W`, `dirs +W`, `wait W`, `wait -n W`, `jobs W`, `help W`, `type W`: no F made.
 * - Kind 6, seccomp (read): setsockopt level/option, `prctl` option and `seccomp` op are compared
 *   on the low words the kernel reads; other cBPF/eBPF attach points need AF_PACKET, AF_XDP,
 *   /dev/net/tun, /dev/ppp or a capability the session lacks; MPTCP's SOL_SOCKET path keeps level 1.
 *   Bounded devpts: as round 12 (read).
 * - Kind 5, non-ASCII letters of no shell meaning drawn like ASCII punctuation (a scan of about 100
 *   candidates as `echo aCHb;echo CH`): all flagged but `乙 亅 乀 乁 〵 〢 〣 ᆖ ꞈ ꞏ ꜗ-ꜟ`, none drawn
 *   as a character bash gives a meaning (judged by eye). Marks after punctuation or a space are
 *   flagged (`combining`).
 * - Kind 6, includes with `~` (a home outside the workspace), `.git/remotes`, alternates: as round 11.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { displayCommand } from '../../../src/shared/display';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { personsRepo, plant, withoutStateNote } from './persons-repo';
import { FLAGGED, flaggedEverywhere } from './lookalikes';

afterEach(closeSessions);
afterAll(removeTempDirs);

describe('kind 5: letters and digits whose compatibility form is ASCII, outside the fullwidth and mathematical blocks', () => {
  const commands: [string, string][] = [
    ['git push ﬆaging main', 'U+FB06 LATIN SMALL LIGATURE ST inside an ASCII word'],
    ['cat ~/.ssh/conﬁg', 'U+FB01 LATIN SMALL LIGATURE FI inside an ASCII word'],
    ['rm -rf ﬂaky', 'U+FB02 LATIN SMALL LIGATURE FL'],
    ['git checkout -b ĳssel', 'U+0133 LATIN SMALL LIGATURE IJ'],
    ['ⅵ notes.txt', 'U+2175 SMALL ROMAN NUMERAL SIX as the program vi'],
    ['git push -f origin ⅾⅰⅿ', 'small Roman numerals D, I, M as a word'],
    ['ⅿⅴ a b', 'small Roman numerals M, V as the program mv'],
    ['sleep 🯹🯹🯹🯹', 'U+1FBF9 SEGMENTED DIGIT NINE'],
    ['kill -9 🯱', 'U+1FBF1 SEGMENTED DIGIT ONE'],
    ['sleep 𜳹𜳹𜳹', 'U+1CCF9 OUTLINED DIGIT NINE'],
  ];
  for (const [command, what] of commands) {
    test(`${JSON.stringify(command)} (${what}) is not shown verbatim`, () => {
      expect(flaggedEverywhere(command)).toEqual(FLAGGED);
    });
  }

  // What the fix must not flag: letters of other scripts, composed or decomposed accents.
  test.each(['echo Straße', 'git commit -m "日本語のテキスト"', "echo 'привет'", 'cat café.txt', 'cat cafe\u0301.txt'])(
    '%j is shown as it is',
    (command) => {
      const d = displayCommand(command);
      expect({ text: d.text, warnings: d.warnings }).toEqual({ text: command, warnings: [] });
    },
  );
});

describe('kind 5: a combining mark on an ASCII letter that composes with nothing', () => {
  for (const command of ['git push origi\u0307n main', 'rm -rf bui\u0307ld']) {
    test(`${JSON.stringify(command)} (U+0307 on i) is not shown verbatim`, () => {
      expect(flaggedEverywhere(command)).toEqual(FLAGGED);
    });
  }
});

describe('kind 5: right-to-left letters reorder the words and operators between them', () => {
  for (const command of ['cat א > ב', 'cp -f גיבוי נתונים', 'ls אב/גד']) {
    test(`${JSON.stringify(command)} is not shown verbatim`, () => {
      expect(flaggedEverywhere(command)).toEqual(FLAGGED);
    });
  }
});

describe('kind 5: unassigned code points', () => {
  test('an unassigned code point (U+0378) is not shown verbatim', () => {
    expect(flaggedEverywhere('rm -rf src\u0378')).toEqual(FLAGGED);
  });
});

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;

/**
 * Runs `command` in a session of `ws`, then the person's `git status` on the host: whether the
 * command printed `planted` and whether the marker appeared. A session that refuses to start in
 * such a workspace is a safe answer too (nothing planted).
 */
async function plantAndLook(
  ws: string,
  marker: string,
  command: string,
  git: (...a: string[]) => string,
): Promise<{ planted: boolean; ranOnTheHost: boolean }> {
  const s = await startSession({ cwd: ws, workspace: ws }).catch(() => undefined);
  if (s === undefined) return { planted: false, ranOnTheHost: fs.existsSync(marker) };
  const planted = (await s.run(command)).output.includes('planted');
  git('status', '--short');
  return { planted, ranOnTheHost: fs.existsSync(marker) };
}

dRoot("kind 6: code the person's repository names in the workspace, which the git guard leaves writable", () => {
  test("a husky hook (`core.hooksPath = .husky/_`, files git ignores) rewritten by the session does not run in the person's `git commit`", async () => {
    const { ws, marker, git } = personsRepo();
    // What `npx husky init` (husky 9) leaves: the config names .husky/_, whose files git ignores.
    const underscore = path.join(ws, '.husky', '_');
    fs.mkdirSync(underscore, { recursive: true });
    fs.writeFileSync(path.join(underscore, '.gitignore'), '*\n');
    fs.writeFileSync(
      path.join(underscore, 'h'),
      '#!/usr/bin/env sh\nn=$(basename "$0")\n[ -f ".husky/$n" ] && sh -e ".husky/$n"\nexit 0\n',
      {
        mode: 0o755,
      },
    );
    fs.writeFileSync(path.join(underscore, 'pre-commit'), '#!/usr/bin/env sh\n. "$(dirname "$0")/h"\n', { mode: 0o755 });
    fs.writeFileSync(path.join(ws, '.husky', 'pre-commit'), 'echo lint\n');
    git('config', 'core.hooksPath', '.husky/_');
    git('add', '-A');
    git('commit', '-qm', 'husky');
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`printf '#!/bin/sh\\nid -un > ${marker}\\n' > .husky/_/h && echo planted`);
      // Later, on the host: nothing shows in the person's status, and their next commit would run the hooks.
      git('status', '--short');
      git('commit', '-q', '--allow-empty', '-m', 'two');
      expect({ planted: r.output.includes('planted'), ranOnTheHost: fs.existsSync(marker) }).toEqual({
        planted: false,
        ranOnTheHost: false,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test("a `.git` that is a symlink to a git dir in the workspace gets the guard's binds", async () => {
    const { ws, marker, git } = personsRepo();
    fs.renameSync(path.join(ws, '.git'), path.join(ws, '.gitdir'));
    fs.symlinkSync('.gitdir', path.join(ws, '.git'));
    fs.appendFileSync(path.join(ws, '.gitdir', 'info', 'exclude'), '/.gitdir\n');
    try {
      const command = `${plant(marker, '.gitdir/fsm')} && git config core.fsmonitor "$PWD/.gitdir/fsm" && echo planted`;
      expect(await plantAndLook(ws, marker, command, git)).toEqual({ planted: false, ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a `.git/config` that is a symlink to a file in the workspace is bound read-only', async () => {
    const { ws, marker, git } = personsRepo();
    // A config kept in the repository, as some teams share one.
    fs.renameSync(path.join(ws, '.git', 'config'), path.join(ws, 'repo.gitconfig'));
    fs.symlinkSync('../repo.gitconfig', path.join(ws, '.git', 'config'));
    git('add', 'repo.gitconfig');
    git('commit', '-qm', 'config');
    try {
      const command = `${plant(marker, '.git/fsm')} && git config core.fsmonitor "$PWD/.git/fsm" && echo planted`;
      expect(await plantAndLook(ws, marker, command, git)).toEqual({ planted: false, ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('an include written with a comment after its path (`path = extra.conf ; shared`) is bound read-only', async () => {
    const { ws, marker, git } = personsRepo();
    fs.appendFileSync(path.join(ws, '.git', 'config'), '[include]\n\tpath = extra.conf ; shared settings\n');
    fs.writeFileSync(path.join(ws, '.git', 'extra.conf'), '');
    try {
      const command = `${plant(marker, '.git/fsm')} && printf '[core]\\n\\tfsmonitor = %s\\n' "$PWD/.git/fsm" > .git/extra.conf && echo planted`;
      expect(await plantAndLook(ws, marker, command, git)).toEqual({ planted: false, ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  // Was OPEN (a symlink is no mount point): planted, and the person's `git status` ran it. Held by the git audit now.
  test('the symlink itself: a `.git/config` symlink the session removes and replaces by a file of its own', async () => {
    const { ws, marker, git } = personsRepo();
    fs.renameSync(path.join(ws, '.git', 'config'), path.join(ws, 'repo.gitconfig'));
    fs.symlinkSync('../repo.gitconfig', path.join(ws, '.git', 'config'));
    try {
      const command = `${plant(marker, '.git/fsm')} && rm .git/config && cp repo.gitconfig .git/config && git config core.fsmonitor "$PWD/.git/fsm" && echo planted`;
      // The session can still plant (`planted`): the audit after the command moves its file away and puts the link back.
      const r = await plantAndLook(ws, marker, command, git);
      expect({ ranOnTheHost: r.ranOnTheHost, link: linkTo(path.join(ws, '.git', 'config'), '../repo.gitconfig') }).toEqual({
        ranOnTheHost: false,
        link: true,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});

/** Whether `p` is a symlink saying `target`. */
const linkTo = (p: string, target: string): boolean =>
  (fs.lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() ?? false) && fs.readlinkSync(p) === target;

/**
 * Runs `command` in a session of `ws`, then the person's git on the host (`status`, and a `commit`, which runs
 * hooks), with every repository taken as safe (`-c safe.directory=*`: the session's uid is not the person's here,
 * and git's ownership check is no guard a person can count on: their own uid runs the session when the workspace is theirs).
 * Returns whether the command got through (`planted`) and whether the marker appeared, and the result's text.
 */
async function replaceAndLook(
  ws: string,
  marker: string,
  command: string,
): Promise<{ planted: boolean; ranOnTheHost: boolean; text: string }> {
  const s = await startSession({ cwd: ws, workspace: ws });
  const r = await s.run(command);
  const host = (...a: string[]): void => {
    spawnSync('git', ['-C', ws, '-c', 'safe.directory=*', '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { stdio: 'pipe' });
  };
  host('status', '--short');
  host('commit', '-q', '--allow-empty', '-m', 'host');
  return { planted: r.output.includes('planted'), ranOnTheHost: fs.existsSync(marker), text: r.output };
}

/** A hook script that leaves `marker`. */
const hookText = (marker: string): string => `printf '#!/bin/sh\\nid -un > ${marker}\\n'`;

dRoot('kind 6, the symlink itself: every way to change a symlink the git guard holds by its target is undone by the audit', () => {
  /** The person's repository with `.git/config` a symlink to a tracked `repo.gitconfig` (through `shared/cfg` when `twice`). */
  function configLink(twice = false): ReturnType<typeof personsRepo> {
    const r = personsRepo();
    fs.renameSync(path.join(r.ws, '.git', 'config'), path.join(r.ws, 'repo.gitconfig'));
    if (twice) {
      fs.mkdirSync(path.join(r.ws, 'shared'));
      fs.symlinkSync('../repo.gitconfig', path.join(r.ws, 'shared', 'cfg'));
      fs.symlinkSync('../shared/cfg', path.join(r.ws, '.git', 'config'));
    } else fs.symlinkSync('../repo.gitconfig', path.join(r.ws, '.git', 'config'));
    return r;
  }
  const fsmonitor = (file: string): string => `git config --file ${file} core.fsmonitor "$PWD/.fsm"`;

  const configVariants: [string, boolean, string][] = [
    ['replaced by a file', false, `cp repo.gitconfig .evil && ${fsmonitor('.evil')} && rm .git/config && mv .evil .git/config`],
    ['replaced by a directory', false, 'rm .git/config && mkdir .git/config'],
    [
      'replaced by a link to a file of the session',
      false,
      `cp repo.gitconfig evil.conf && ${fsmonitor('evil.conf')} && ln -sfn ../evil.conf .git/config`,
    ],
    [
      'renamed aside and a file put in its place',
      false,
      `mv .git/config .git/config.orig && cp repo.gitconfig .git/config && ${fsmonitor('.git/config')}`,
    ],
    ['its target, itself a link, replaced by a file', true, `rm shared/cfg && cp repo.gitconfig shared/cfg && ${fsmonitor('shared/cfg')}`],
    [
      'both the link and its target replaced, the target through the link',
      true,
      `rm .git/config shared/cfg && cp repo.gitconfig shared/evil && ${fsmonitor('shared/evil')} && ln -s evil shared/cfg && ln -s ../shared/cfg .git/config`,
    ],
  ];
  for (const [how, twice, command] of configVariants) {
    test(`a \`.git/config\` symlink ${how}`, async () => {
      const { ws, marker } = configLink(twice);
      try {
        const r = await replaceAndLook(ws, marker, `${plant(marker, '.fsm')} && ${command} && echo planted`);
        expect({
          ranOnTheHost: r.ranOnTheHost,
          link: linkTo(path.join(ws, '.git', 'config'), twice ? '../shared/cfg' : '../repo.gitconfig'),
        }).toEqual({
          ranOnTheHost: false,
          link: true,
        });
        if (twice) expect(linkTo(path.join(ws, 'shared', 'cfg'), '../repo.gitconfig')).toBe(true);
        // The attack got through the sandbox (so the audit is what held), and the result says what was put back.
        expect(r.planted).toBe(true);
        expect(r.text).toContain('put back');
        expect(fs.readFileSync(path.join(ws, 'repo.gitconfig'), 'utf8')).not.toContain('fsmonitor');
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
  }

  test("the link's final target cannot be replaced (a read-only bind: EBUSY), nor written through a new link", async () => {
    const { ws, marker } = configLink();
    try {
      const r = await replaceAndLook(
        ws,
        marker,
        `${plant(marker, '.fsm')}; rm -f .git/config; rm -f repo.gitconfig; mv repo.gitconfig old.gitconfig; ln -s ../repo.gitconfig .git/config; ${fsmonitor('repo.gitconfig')} && echo planted`,
      );
      expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost }).toEqual({ planted: false, ranOnTheHost: false });
      expect(linkTo(path.join(ws, '.git', 'config'), '../repo.gitconfig')).toBe(true);
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  /** The person's repository with `.git/<name>` a symlink to a tracked directory `git<name>`. */
  function dirLink(name: 'hooks' | 'info'): ReturnType<typeof personsRepo> {
    const r = personsRepo();
    fs.renameSync(path.join(r.ws, '.git', name), path.join(r.ws, `git${name}`));
    fs.symlinkSync(`../git${name}`, path.join(r.ws, '.git', name));
    return r;
  }

  const hookVariants: [string, string][] = [
    ['replaced by a directory', 'rm .git/hooks && mkdir .git/hooks && P=.git/hooks/pre-commit'],
    [
      'replaced by a link to a directory of the session',
      'mkdir .myhooks && rm .git/hooks && ln -s ../.myhooks .git/hooks && P=.myhooks/pre-commit',
    ],
    ['renamed aside and a directory put in its place', 'mv .git/hooks .git/hooks.orig && mkdir .git/hooks && P=.git/hooks/pre-commit'],
  ];
  for (const [how, command] of hookVariants) {
    test(`a \`.git/hooks\` symlink ${how}: the person's \`git commit\` runs no hook of the session`, async () => {
      const { ws, marker } = dirLink('hooks');
      try {
        const r = await replaceAndLook(ws, marker, `${command} && ${hookText(marker)} > $P && chmod +x $P && echo planted`);
        expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost, link: linkTo(path.join(ws, '.git', 'hooks'), '../githooks') }).toEqual({
          planted: true,
          ranOnTheHost: false,
          link: true,
        });
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
  }

  test('a `.git/info` symlink replaced by a directory is put back, the directory quarantined', async () => {
    const { ws, marker } = dirLink('info');
    const r = await replaceAndLook(ws, marker, `rm .git/info && mkdir .git/info && echo '* diff=x' > .git/info/attributes && echo planted`);
    expect({ planted: r.planted, link: linkTo(path.join(ws, '.git', 'info'), '../gitinfo') }).toEqual({ planted: true, link: true });
    const q = path.join(ws, '.git', 'agent-jobs-quarantine');
    const moved = fs.readdirSync(q).filter((n) => fs.existsSync(path.join(q, n, 'attributes')));
    expect(moved).toHaveLength(1);
  });

  /** The person's repository with `.git -> .gitdir`. */
  function dotGitLink(): ReturnType<typeof personsRepo> {
    const r = personsRepo();
    fs.renameSync(path.join(r.ws, '.git'), path.join(r.ws, '.gitdir'));
    fs.symlinkSync('.gitdir', path.join(r.ws, '.git'));
    fs.appendFileSync(path.join(r.ws, '.gitdir', 'info', 'exclude'), '/.gitdir\n');
    return r;
  }

  /** Shell text: `dir`, a copy of the git dir whose config runs the planted `.fsm` as fsmonitor. */
  const evilCopy = (dir: string): string => `cp -r .gitdir ${dir} && git --git-dir=${dir} config core.fsmonitor "$PWD/.fsm"`;
  const dotGitVariants: [string, string][] = [
    ['replaced by a directory of its own', `${evilCopy('.evil')} && rm .git && mv .evil .git`],
    ['renamed aside and a directory put in its place', `${evilCopy('.evil')} && mv .git .git.orig && mv .evil .git`],
    ['replaced by a link to a directory of the session', `${evilCopy('.evil')} && ln -sfn .evil .git`],
    ['replaced by a `.git` file naming a directory of the session', `${evilCopy('.evil')} && rm .git && echo 'gitdir: .evil' > .git`],
  ];
  for (const [how, command] of dotGitVariants) {
    test(`a \`.git -> .gitdir\` symlink ${how}: put back, what stood there quarantined in \`.gitdir\``, async () => {
      const { ws, marker } = dotGitLink();
      try {
        const r = await replaceAndLook(ws, marker, `${plant(marker, '.fsm')} && ${command} && echo planted`);
        expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost, link: linkTo(path.join(ws, '.git'), '.gitdir') }).toEqual({
          planted: true,
          ranOnTheHost: false,
          link: true,
        });
        expect(r.text).toContain('moved to .gitdir/agent-jobs-quarantine');
        const log = fs.readFileSync(path.join(ws, '.gitdir', 'agent-jobs-quarantine', 'log.jsonl'), 'utf8');
        expect(log).toContain('"path":".git"');
      } finally {
        fs.rmSync(marker, { force: true });
      }
    });
  }

  test('the folder holding the husky hooks (`core.hooksPath = .husky/_`) cannot be renamed aside and made again', async () => {
    const { ws, marker, git } = personsRepo();
    fs.mkdirSync(path.join(ws, '.husky', '_'), { recursive: true });
    fs.writeFileSync(path.join(ws, '.husky', '_', '.gitignore'), '*\n');
    git('config', 'core.hooksPath', '.husky/_');
    try {
      const r = await replaceAndLook(
        ws,
        marker,
        `mv .husky .husky.old && mkdir -p .husky/_ && ${hookText(marker)} > .husky/_/pre-commit && chmod +x .husky/_/pre-commit && echo planted`,
      );
      expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost }).toEqual({ planted: false, ranOnTheHost: false });
      expect(r.text).not.toContain('replaced on the host');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a config behind `.git/config -> ../conf/repo.gitconfig`: the session starts, and `conf` cannot be renamed aside and made again', async () => {
    const { ws, marker } = personsRepo();
    fs.mkdirSync(path.join(ws, 'conf'));
    fs.renameSync(path.join(ws, '.git', 'config'), path.join(ws, 'conf', 'repo.gitconfig'));
    fs.symlinkSync('../conf/repo.gitconfig', path.join(ws, '.git', 'config'));
    try {
      // Before: no session started here at all (bwrap: "Can't find source path .../conf/repo.gitconfig").
      const r = await replaceAndLook(
        ws,
        marker,
        `${plant(marker, '.fsm')} && mv conf conf.old && mkdir conf && cp conf.old/repo.gitconfig conf/ && ${fsmonitor('conf/repo.gitconfig')} && echo planted`,
      );
      expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost }).toEqual({ planted: false, ranOnTheHost: false });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('an include reached through a symlinked folder (`path = ../shared/extra.conf`, `shared -> conf`): the folder link replaced is put back', async () => {
    const { ws, marker } = personsRepo();
    fs.mkdirSync(path.join(ws, 'conf'));
    fs.writeFileSync(path.join(ws, 'conf', 'extra.conf'), '');
    fs.symlinkSync('conf', path.join(ws, 'shared'));
    fs.appendFileSync(path.join(ws, '.git', 'config'), '[include]\n\tpath = ../shared/extra.conf\n');
    try {
      const r = await replaceAndLook(
        ws,
        marker,
        `${plant(marker, '.fsm')} && rm shared && mkdir shared && git config --file shared/extra.conf core.fsmonitor "$PWD/.fsm" && echo planted`,
      );
      expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost, link: linkTo(path.join(ws, 'shared'), 'conf') }).toEqual({
        planted: true,
        ranOnTheHost: false,
        link: true,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a `core.hooksPath` that is a symlink (`githooks -> tools/hooks`) replaced by a directory is put back', async () => {
    const { ws, marker, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'tools', 'hooks'), { recursive: true });
    fs.symlinkSync('tools/hooks', path.join(ws, 'githooks'));
    git('config', 'core.hooksPath', 'githooks');
    try {
      const r = await replaceAndLook(
        ws,
        marker,
        `rm githooks && mkdir githooks && ${hookText(marker)} > githooks/pre-commit && chmod +x githooks/pre-commit && echo planted`,
      );
      expect({ planted: r.planted, ranOnTheHost: r.ranOnTheHost, link: linkTo(path.join(ws, 'githooks'), 'tools/hooks') }).toEqual({
        planted: true,
        ranOnTheHost: false,
        link: true,
      });
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });

  test('a link put back by a job after the last command is held at close too, and ordinary git keeps working through the links', async () => {
    const { ws, marker } = dotGitLink();
    fs.renameSync(path.join(ws, '.gitdir', 'config'), path.join(ws, 'repo.gitconfig'));
    fs.symlinkSync('../repo.gitconfig', path.join(ws, '.gitdir', 'config'));
    fs.appendFileSync(path.join(ws, '.gitdir', 'info', 'exclude'), '/repo.gitconfig\n');
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const work = await s.run(
        'echo more >> build.sh && git add build.sh && git -c user.name=a -c user.email=a@b commit -qm two && git checkout -qb topic && git log --oneline | wc -l && git status --short',
      );
      // The session's commit and branch are named by the git state audit; what git printed is the claim here.
      expect(withoutStateNote(work.output).output).toBe('2\n');
      expect(withoutStateNote(work.output).note).toContain('the session moved refs/heads/main');
      expect(work.output).not.toContain('put back');
      await s.run(
        `${plant(marker, '.fsm')} && (sleep 1; cp repo.gitconfig .e && git config --file .e core.fsmonitor "$PWD/.fsm" && rm .gitdir/config && mv .e .gitdir/config) >/dev/null 2>&1 & echo started`,
      );
      await new Promise((r) => setTimeout(r, 2500));
      await s.close();
      spawnSync('git', ['-C', ws, '-c', 'safe.directory=*', 'status', '--short'], { stdio: 'pipe' });
      expect({ ranOnTheHost: fs.existsSync(marker), link: linkTo(path.join(ws, '.gitdir', 'config'), '../repo.gitconfig') }).toEqual({
        ranOnTheHost: false,
        link: true,
      });
      expect(s.gitNoteAtClose).toContain('.gitdir/config -> ../repo.gitconfig');
    } finally {
      fs.rmSync(marker, { force: true });
    }
  });
});
