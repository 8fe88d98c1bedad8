/**
 * The git state the person's next ordinary git command obeys (src/session/git-state-audit.ts), against real sessions
 * as root: a branch moved to a look-alike of the person's commit, HEAD detached, an operation in progress whose abort
 * resets to a commit of the session's (made by hand or by the session's own `git rebase -i`), `ORIG_HEAD`,
 * `BISECT_START`, a todo's `exec` line, a rewritten stash and its reflog, a nested repository, and HEAD moved by a
 * background job after the last command. Each asserts what the person's git does afterwards, or that it is named.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { hostBash, personsRepo } from './persons-repo';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** git as the person (root) in `cwd`: its output, trimmed. */
const gitIn = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' }).trim();

/** The person's repository with an unpushed commit "run.sh" (`echo hello`) on top of build.sh: `ws`, and HEAD's id. */
function repoWithRunSh(): { ws: string; head: string } {
  const { ws, git } = personsRepo();
  fs.writeFileSync(path.join(ws, 'run.sh'), 'echo hello\n');
  git('add', 'run.sh');
  git('commit', '-qm', 'run.sh');
  return { ws, head: gitIn(ws, 'rev-parse', 'HEAD') };
}

/** Shell text: the environment that makes a commit read as HEAD's (authors, committer and raw dates copied). */
const COPIED =
  `GIT_AUTHOR_NAME="$(git log -1 --format=%an)" GIT_AUTHOR_EMAIL="$(git log -1 --format=%ae)" GIT_AUTHOR_DATE="$(git log -1 --format=%ad --date=raw)" ` +
  `GIT_COMMITTER_NAME="$(git log -1 --format=%cn)" GIT_COMMITTER_EMAIL="$(git log -1 --format=%ce)" GIT_COMMITTER_DATE="$(git log -1 --format=%cd --date=raw)"`;

/** Shell text: `$c` set to a look-alike of HEAD (same message, authors, dates and parent) whose run.sh is the session's. */
const LOOK_ALIKE =
  `evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
  `tree=$(printf '100644 blob %s\\trun.sh\\n100644 blob %s\\tbuild.sh\\n' "$evil" "$(git rev-parse HEAD:build.sh)" | git mktree) && ` +
  `c=$(${COPIED} git commit-tree "$tree" -p HEAD~1 -m "$(git log -1 --format=%B)")`;

/** The close findings as text. */
const atClose = (s: { gitFindingsAtClose: readonly { path: string; why: string; movedTo?: string }[] }): string =>
  s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}${f.movedTo ? ` -> ${f.movedTo}` : ''}`).join('\n');

beforeAll(() => {
  if (process.getuid?.() !== 0) throw new Error('these attack tests need root (the worker setting)');
});

describe("the branch moved to a commit that reads as the person's", () => {
  test('commit --amend with the committer copied: the result and the close name the move, the files and the look-alike', async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `echo 'echo PWNED-by-session' > run.sh && git add run.sh && ${COPIED} git -c user.name=x -c user.email=x@x commit -q --amend --no-edit && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    const now = gitIn(ws, 'rev-parse', 'HEAD');
    expect(now).not.toBe(head);
    const said = new RegExp(
      `moved main from ${head.slice(0, 12)} to ${now.slice(0, 12)}.*git diff ${head.slice(0, 12)} ${now.slice(0, 12)}\` shows: run\\.sh.*reads as your ${head.slice(0, 12)}`,
    );
    expect(r.output).toMatch(said);
    // Told once: a next command that changes nothing says nothing of it.
    const r2 = await s.run('true');
    expect(r2.output).not.toMatch(/moved main/);
    await s.close();
    expect(atClose(s)).toMatch(said);
    // Nothing moved back: the session's commit is the person's to review.
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(now);
  });

  test("a visible commit on top of a look-alike parent (the person's reset --hard HEAD~1 lands on it): named with the files", async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `${LOOK_ALIKE} && git reset -q --hard "$c" && echo wip > wip.txt && git add wip.txt && git -c user.name=x -c user.email=x@x commit -qm WIP && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(
      new RegExp(`moved main from ${head.slice(0, 12)} .*shows: run\\.sh, wip\\.txt.*${head.slice(0, 12)} is no longer in its history`),
    );
  });

  test('a detached HEAD at the look-alike: named', async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${LOOK_ALIKE} && git checkout -q --detach "$c" && echo made-it`);
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(new RegExp(`left HEAD detached at [0-9a-f]{12} \\(it was main at ${head.slice(0, 12)}\\).*shows: run\\.sh`));
  });

  test('HEAD moved by a background job after the last command: named at close', async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `(while [ ! -e go ]; do sleep 0.1; done; echo 'echo PWNED-by-session' > run.sh && git add run.sh && ${COPIED} git -c user.name=x -c user.email=x@x commit -q --amend --no-edit; touch done) >/dev/null 2>&1 & echo started`,
    );
    expect(r.output).toContain('started');
    expect(r.output).not.toMatch(/moved main/);
    fs.writeFileSync(path.join(ws, 'go'), '');
    // The job's own signal that it is done (the person's repository changes under the test).
    while (!fs.existsSync(path.join(ws, 'done'))) await new Promise((res) => setTimeout(res, 50));
    expect(gitIn(ws, 'rev-parse', 'HEAD')).not.toBe(head);
    await s.close();
    expect(atClose(s)).toMatch(new RegExp(`moved main from ${head.slice(0, 12)} .*reads as your`));
  });
});

describe('an operation in progress whose abort resets the branch', () => {
  test("a rebase-merge by hand naming a look-alike: moved at close, the person's rebase --abort keeps main", async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `${LOOK_ALIKE} && mkdir .git/rebase-merge && echo refs/heads/main > .git/rebase-merge/head-name && echo "$c" > .git/rebase-merge/orig-head && ` +
        `git rev-parse HEAD~1 > .git/rebase-merge/onto && : > .git/rebase-merge/interactive && ` +
        `printf 'pick %s run.sh\\n' "$(git rev-parse --short HEAD)" > .git/rebase-merge/git-rebase-todo && : > .git/rebase-merge/done && ` +
        `echo 1 > .git/rebase-merge/end && echo 0 > .git/rebase-merge/msgnum && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    // Named during the session, not moved (the session's own rebase would go on).
    expect(r.output).toMatch(
      /left a rebase in progress: `git rebase --abort` would reset main to [0-9a-f]{12} \([0-9a-f]{12}: not a commit of yours/,
    );
    expect(fs.existsSync(path.join(ws, '.git', 'rebase-merge'))).toBe(true);
    await s.close();
    expect(atClose(s)).toMatch(/rebase-merge .*would reset main to .*not a commit of yours.*moved so that.* -> /);
    hostBash(ws, 'git rebase --abort');
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
    expect(fs.readFileSync(path.join(ws, 'run.sh'), 'utf8')).toBe('echo hello\n');
  });

  test("the session's own git rebase -i stopped at edit, over its own commit: moved at close; main's move named", async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `echo 'echo PWNED-by-session' > run.sh && git -c user.name=x -c user.email=x@x commit -qam tweak && ` +
        `GIT_SEQUENCE_EDITOR="sed -i 1s/^pick/edit/" git -c user.name=x -c user.email=x@x rebase -q -i HEAD~1 >/dev/null 2>&1; ` +
        `test -d .git/rebase-merge && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    const mainNow = gitIn(ws, 'rev-parse', 'refs/heads/main');
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(/rebase-merge .*would reset main to [0-9a-f]{12} \([0-9a-f]{12}: not a commit of yours.* -> /);
    expect(said).toMatch(new RegExp(`moved refs/heads/main from ${head.slice(0, 12)} to ${mainNow.slice(0, 12)}`));
    expect(said).toMatch(/left HEAD detached at/);
    expect(fs.existsSync(path.join(ws, '.git', 'rebase-merge'))).toBe(false);
  });

  test("the session's own git rebase -i over the person's commits only: named with the person's commit, left", async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `GIT_SEQUENCE_EDITOR="sed -i 1s/^pick/edit/" git -c user.name=x -c user.email=x@x rebase -q -i HEAD~1 >/dev/null 2>&1; test -d .git/rebase-merge && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toContain(`would reset main to ${head.slice(0, 12)} (a commit of yours at the start)`);
    expect(fs.existsSync(path.join(ws, '.git', 'rebase-merge'))).toBe(true);
  });

  test("a todo's exec line over the person's own orig-head: moved at close, the person's rebase --continue runs nothing", async () => {
    const { ws } = repoWithRunSh();
    const marker = `${ws}-exec-marker`;
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `mkdir .git/rebase-merge && echo refs/heads/main > .git/rebase-merge/head-name && git rev-parse HEAD > .git/rebase-merge/orig-head && ` +
        `git rev-parse HEAD > .git/rebase-merge/onto && : > .git/rebase-merge/interactive && ` +
        `printf 'exec touch ${marker}\\n' > .git/rebase-merge/git-rebase-todo && : > .git/rebase-merge/done && ` +
        `echo 1 > .git/rebase-merge/end && echo 0 > .git/rebase-merge/msgnum && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(/its todo runs `exec touch .*` at `git rebase --continue`.* -> /);
    hostBash(ws, 'git rebase --continue');
    expect(fs.existsSync(marker)).toBe(false);
  });

  test("ORIG_HEAD naming a look-alike: moved at close, the person's reset --hard ORIG_HEAD keeps main", async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${LOOK_ALIKE} && echo "$c" > .git/ORIG_HEAD && echo made-it`);
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(
      /ORIG_HEAD` \(the undo of a rebase, merge or reset\) would reset to [0-9a-f]{12} \([0-9a-f]{12}: not a commit of yours/,
    );
    await s.close();
    expect(atClose(s)).toMatch(/ORIG_HEAD .* -> /);
    hostBash(ws, 'git reset -q --hard ORIG_HEAD');
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
  });

  test("BISECT_START holding a look-alike's id: moved at close, the person's bisect reset keeps main", async () => {
    const { ws, head } = repoWithRunSh();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${LOOK_ALIKE} && echo "$c" > .git/BISECT_START && echo made-it`);
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(/BISECT_START .*`git bisect reset` would check out [0-9a-f]{12} .*not a commit of yours.* -> /);
    hostBash(ws, 'git bisect reset');
    expect(gitIn(ws, 'rev-parse', 'HEAD')).toBe(head);
    expect(fs.readFileSync(path.join(ws, 'run.sh'), 'utf8')).toBe('echo hello\n');
  });
});

describe('other refs and reflogs', () => {
  test("the person's stash rewritten with its reflog: named, as is the rewritten reflog", async () => {
    const { ws } = repoWithRunSh();
    fs.writeFileSync(path.join(ws, 'run.sh'), 'echo mine\n');
    hostBash(ws, 'git -c user.name=p -c user.email=p@example.com stash -q');
    const stash = gitIn(ws, 'rev-parse', 'refs/stash');
    const s = await startSession({ cwd: ws, workspace: ws });
    // A stash of the session's, and the reflog made to read as if it were the person's only one.
    const r = await s.run(
      `echo 'echo PWNED-by-session' > run.sh && git -c user.name=p -c user.email=p@example.com stash -q && ` +
        `tail -n 1 .git/logs/refs/stash > x && mv x .git/logs/refs/stash && git stash list | wc -l && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const said = atClose(s);
    expect(said).toMatch(
      new RegExp(`moved refs/stash from ${stash.slice(0, 12)} to [0-9a-f]{12}: \`git stash pop\` would apply the session's stash`),
    );
    expect(said).toMatch(/rewrote the reflog logs\/refs\/stash/);
  });

  test('a look-alike amended in a nested repository: named with its git dir', async () => {
    const { ws } = personsRepo();
    const sub = path.join(ws, 'sub');
    fs.mkdirSync(sub);
    const { git: subGit } = personsRepo(sub);
    fs.writeFileSync(path.join(sub, 'run.sh'), 'echo hello\n');
    subGit('add', 'run.sh');
    subGit('commit', '-qm', 'run.sh');
    const head = gitIn(sub, 'rev-parse', 'HEAD');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd sub && echo 'echo PWNED-by-session' > run.sh && git add run.sh && ${COPIED} git -c user.name=x -c user.email=x@x commit -q --amend --no-edit && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    expect(atClose(s)).toMatch(
      new RegExp(`moved main in the repository whose git dir is sub/\\.git from ${head.slice(0, 12)} .*reads as your`),
    );
  });
});

describe('a root repository whose git dir is `.gitdir`: audited once, as the root', () => {
  const layouts: [string, (ws: string) => void][] = [
    ['`.git -> .gitdir`', (ws) => fs.symlinkSync('.gitdir', path.join(ws, '.git'))],
    ['a `.git` file `gitdir: .gitdir`', (ws) => fs.writeFileSync(path.join(ws, '.git'), 'gitdir: .gitdir\n')],
  ];
  for (const [layout, makeDotGit] of layouts)
    test(`${layout}: a branch the session moves is named exactly once after the command and once at close`, async () => {
      const { ws, head } = repoWithRunSh();
      fs.renameSync(path.join(ws, '.git'), path.join(ws, '.gitdir'));
      makeDotGit(ws);
      fs.appendFileSync(path.join(ws, '.gitdir', 'info', 'exclude'), '/.gitdir\n');
      expect(gitIn(ws, 'status', '--porcelain')).toBe('');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`echo more >> run.sh && git -c user.name=x -c user.email=x@x commit -qam more && echo made-it`);
      expect(r.output).toContain('made-it');
      const now = gitIn(ws, 'rev-parse', 'HEAD');
      expect(now).not.toBe(head);
      await s.close();
      const moved = (text: string): string[] => text.match(/moved main(?: in the repository whose git dir is \S+)? from \w+ to \w+/g) ?? [];
      // Named as the root's branch (no "in the repository whose git dir is"), once in each.
      const once = [`moved main from ${head.slice(0, 12)} to ${now.slice(0, 12)}`];
      expect({ afterCommand: moved(r.output), atClose: moved(atClose(s)) }).toEqual({ afterCommand: once, atClose: once });
    });
});
