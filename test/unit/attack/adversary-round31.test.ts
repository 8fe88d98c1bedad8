/**
 * Adversary round 31: attacks on adv29 (3d99f71), as root, in real sessions of the unit harness, aimed at the kinds
 * round 30 left alone (a forged result, limits of unasked runs, rules that approve evaluated words, display, the
 * sandbox's edges). Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags
 * below); each was run un-skipped on 3d99f71 and failed as written below.
 *
 * FINDINGS
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decideApproval, literalArgv } from '../../../src/policy';
import type { EditGate, ProposedEdit } from '../../../src/session';
import { editRuleSubject, parseEditInput, type EditRequest } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const OPEN_EDIT_BOM = true;
const OPEN_SPARSE_READ = true;
const OPEN_DEV_ZERO_SWAP = true;

afterEach(closeSessions);
afterAll(removeTempDirs);

function req(input: Record<string, unknown>): EditRequest {
  const parsed = parseEditInput(input);
  if (!parsed.ok) throw new Error(parsed.text);
  return parsed.edit;
}

describe('kind 5: an edit of a file that starts with a UTF-8 byte order mark', () => {
  const t = OPEN_EDIT_BOM ? test.skip : test;
  t('a str_replace on line 3 keeps the first bytes, or the review the person approves shows their change', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = fs.realpathSync(tempDir('aj-mark-'));
    const file = path.join(ws, 'build.sh');
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    fs.writeFileSync(file, Buffer.concat([bom, Buffer.from('echo one\necho two\necho three\n')]));
    const s = await startSession({ cwd: ws, workspace: ws });
    const reviews: string[] = [];
    const gate = (p: ProposedEdit): EditGate => (reviews.push(p.review), { apply: true });
    const r = await s.edit(req({ command: 'str_replace', path: 'build.sh', old_str: 'echo three', new_str: 'echo 3' }), gate, {
      maxCharacters: 1000,
      ruleSubject: editRuleSubject,
    });
    expect(r.applied).toBe(true);
    expect(reviews).toHaveLength(1);
    const after = fs.readFileSync(file);
    // The change the review shows is there in any case (the attack is about what else was written).
    expect(after.toString('utf8')).toContain('echo 3\n');
    const keptBom = after.subarray(0, 3).equals(bom);
    // A review that shows line 1 changing (the mark escaped as \uFEFF, or said in words) tells the person.
    const reviewSaysIt = /\\u\{?feff|byte order mark/i.test(reviews[0] as string) || /^-.*echo one/m.test(reviews[0] as string);
    expect(keptBom || reviewSaysIt).toBe(true);
  });
});

describe('kind 3: an unasked read of a large sparse file', () => {
  const t = OPEN_SPARSE_READ ? test.skip : test;
  t('`cat` of an 8 GiB hole 40 times (the policy lets it run) is stopped long before the command timeout, not drained to it', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = fs.realpathSync(tempDir('aj-sparse-'));
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 30_000 });
    // An earlier, approved command: a file of 8 GiB (the default file size limit) that takes no disk.
    expect((await s.run('truncate -s 8G big && echo made')).output).toBe('made\n');
    const command = `cat${' big'.repeat(40)}`;
    const d = decideApproval(command, 'policy', { workspace: ws, cwd: ws });
    expect(d.action).toBe('run');
    if (d.action !== 'run') return;
    const r = await s.runExact(d.argv, { paths: d.paths, command });
    // The person reads at most the output cap (30,000 bytes) of it; the worker should not read gigabytes for 30 s.
    expect(r.timedOut).toBe(false);
    expect(r.outputBytes).toBeLessThan(1024 ** 3);
  });
});

describe('kind 6: an unasked run meets a symlink to /dev/zero swapped in after its check', () => {
  const t = OPEN_DEV_ZERO_SWAP ? test.skip : test;
  t('`cat x` while a job flips x between a file and a link to /dev/zero: refused or quick, never read until the timeout', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = fs.realpathSync(tempDir('aj-zero-'));
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 4000 });
    const job = await s.run(
      'echo hi > f; ( while :; do ln -sfn /dev/zero y.tmp && mv -fT y.tmp x; cp f x.tmp && mv -fT x.tmp x; done ) >/dev/null 2>&1 & echo started',
    );
    expect(job.output).toBe('started\n');
    const d = decideApproval('cat x', 'policy', { workspace: ws, cwd: ws });
    expect(d.action).toBe('run');
    if (d.action !== 'run') return;
    const readForever: number[] = [];
    for (let i = 0; i < 40; i++) {
      const r = await s.runExact(d.argv, { paths: d.paths, command: 'cat x' }).catch(() => undefined);
      if (r?.timedOut) readForever.push(r.outputBytes);
    }
    // Each entry is a run that read /dev/zero until the 4 s timeout (about 1.2 GB each, when observed).
    expect(readForever).toEqual([]);
  });
});
