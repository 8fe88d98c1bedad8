/**
 * Adversary round 31: attacks on adv29 (3d99f71), as root, in real sessions of the unit harness, aimed at the kinds
 * round 30 left alone (a forged result, limits of unasked runs, rules that approve evaluated words, display, the
 * sandbox's edges). Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags
 * below); each was run un-skipped on 3d99f71 and failed as written below.
 *
 * FINDINGS
 */
import { execFileSync, spawnSync } from 'node:child_process';
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

describe('held: what the policy reads as plain words is what bash runs', () => {
  // Words the literal-word test accepts, taken from a differential fuzz (12,000 accepted commands over the policy's
  // characters, quotes and the shell's metacharacters; no difference): glued quotes, quoted metacharacters, `#` and
  // `=` inside words, `%` and `@` words, empty words.
  const commands = [
    `x "a b"'c'd`,
    `x '#'a "a#b" "#"`,
    `x %1 @x +y ,z :w`,
    `x -- -a --b=c`,
    `x '' "" ''""`,
    `x "~" '~' "*" '?' "[a]" "{a,b}"`,
    `x "a;b" 'a|b' "a&b" '$(id)' "<a>" '\\'`,
    `x 1=b -a=b a:=b`,
    `'x' y`,
    `"x"'y' z`,
  ];
  test('argv from literalArgv equals the argv bash gives a command it does not find', () => {
    const script =
      'command_not_found_handle() { printf "%s\\001" "$@"; }\nPATH=/nonexistent\n' +
      commands.map((c) => `${c}; printf "\\002\\n"`).join('\n') +
      '\n';
    const out = execFileSync('bash', ['--noprofile', '--norc'], { input: script, encoding: 'latin1', env: { PATH: '/usr/bin:/bin' } });
    const got = out
      .split('\x02\n')
      .slice(0, commands.length)
      .map((l) => l.split('\x01').slice(0, -1));
    const want = commands.map((c) => {
      const r = literalArgv(c);
      if (!r.ok) throw new Error(`${c}: ${r.reason}`);
      return r.argv;
    });
    expect(got).toEqual(want);
  });
  test('a word starting with % runs fg (bash reads it as a job), and fails: the session shell has no job control', () => {
    // Not a builtin name of the table (src/policy/builtins.ts), so only a rule whose own first word starts with `%` could match it.
    // Its redirections are never applied (bash runs fg before them), so the message is on bash's own stderr.
    const r = spawnSync('bash', ['--noprofile', '--norc', '-c', '%1 a 2>/dev/null; echo "rc=$?"'], { encoding: 'utf8' });
    expect([r.stdout, r.stderr]).toEqual(['rc=1\n', 'bash: line 1: fg: no job control\n']);
    expect(literalArgv('%1 a')).toEqual({ ok: true, argv: ['%1', 'a'] });
  });
});

describe('held: the review of an edit, applied with patch(1), gives the bytes written', () => {
  const cases: [string, string, Record<string, unknown>][] = [
    ['no-final-newline', 'a\nb', { command: 'insert', insert_line: 2, insert_text: 'c' }],
    ['crlf', 'a\r\nb\r\n', { command: 'insert', insert_line: 1, insert_text: 'x' }],
    ['lone-cr', 'a\rb\rc\n', { command: 'insert', insert_line: 1, insert_text: 'x' }],
    ['line-separator', 'a\u2028b\u0085c\n', { command: 'insert', insert_line: 1, insert_text: 'x' }],
    ['create-over', 'a\r\nb', { command: 'create', file_text: 'a\nb\n' }],
    ['replace-cr', 'a\r\nb\r\n', { command: 'str_replace', old_str: 'a\r', new_str: 'a' }],
  ];
  test('CRLF, lone CR, no final newline, U+2028 and NEL, create over a file, a replace of a CR', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = fs.realpathSync(tempDir('aj-review-'));
    const scratch = tempDir('aj-patch-');
    const s = await startSession({ cwd: ws, workspace: ws });
    for (const [name, orig, input] of cases) {
      fs.writeFileSync(path.join(ws, name), orig);
      let review = '';
      const gate = (p: ProposedEdit): EditGate => ((review = p.review), { apply: true });
      const r = await s.edit(req({ ...input, path: name }), gate, { maxCharacters: 1000, ruleSubject: editRuleSubject });
      expect(r.applied).toBe(true);
      const o = path.join(scratch, name);
      fs.writeFileSync(o, orig);
      fs.writeFileSync(`${o}.diff`, review);
      execFileSync('patch', ['-s', '-o', `${o}.out`, o, `${o}.diff`], { stdio: 'pipe' });
      expect([name, fs.readFileSync(`${o}.out`, 'latin1')]).toEqual([name, fs.readFileSync(path.join(ws, name), 'latin1')]);
    }
  });
});
