/**
 * Adversary round 31: attacks on adv29 (3d99f71), as root, in real sessions of the unit harness, aimed at the kinds
 * round 30 left alone (a forged result, limits of unasked runs, rules that approve evaluated words, display, the
 * sandbox's edges). Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags
 * below); each was run un-skipped on 3d99f71 and failed as written below (load averages 17 to 25: the machine was
 * shared).
 *
 * Kind 5 (what the person reads is not what is written): an edit drops a file's leading UTF-8 byte order mark, and
 * neither the review nor `view` shows it. Steps: the workspace's `build.sh` is the bytes EF BB BF then `echo
 * one\necho two\necho three\n`; the editor's `str_replace` of `echo three` by `echo 3` (the gate applies, as a person
 * approving the review would). OBSERVED: the review is `@@ -1,3 +1,3 @@`, ` echo one`, ` echo two`, `-echo three`,
 * `+echo 3` (nothing about line 1), and the file written starts with `echo one`: the three bytes are gone. Why:
 * edit.ts `asText` decodes with `new TextDecoder('utf-8', { fatal: true })`, whose default (`ignoreBOM: false`)
 * strips a leading mark, and the decoded text is what the change writes back; the helper's sha256 check is of the
 * bytes, so it passes. Fix: decode with `ignoreBOM: true` (the mark stays a U+FEFF of the text, which the display
 * escapes as any default-ignorable code point), or refuse such files as not plain text.
 *
 * Kind 3 (limits of auto-approved runs): `cat` of a large sparse file runs to the command timeout. Steps: an approved
 * command runs `truncate -s 8G big` (the default file size limit; no disk used); the policy lets `cat big big ...`
 * (40 operands) run unasked. OBSERVED: the exact run went on to its timeout (20,151 ms of a 20 s timeout in a first
 * run, 31,544 ms of 30 s in the test), killed with the timeout note; 2,642,411,520 bytes went through the worker in
 * the first run (its CPU: 1,526 ms user and 972 ms system), of which the person reads 30,000. With the default
 * 120 s timeout the session is held two minutes, no person asked: the effect rounds 22 and 23 found with a FIFO and a
 * file lease, fixed by watching for those two waits only. Fix for the kind: stop an unasked program once its output
 * is past the cap (the person reads no more of it), or give exact runs a short timeout of their own.
 *
 * Kind 6 (the sandbox's edges, for unasked runs): a symlink to `/dev/zero` swapped in after the check. Steps: an
 * approved command leaves a job that renames, in a loop, a symlink to `/dev/zero` and a copy of a regular file over
 * `x`; the policy lets `cat x` run unasked, 40 times (timeout 4 s). OBSERVED: most are refused at the check (the
 * link leaves the workspace); one of 40 (one of 20 in a first run) read `/dev/zero` to the timeout, 1,008,074,752
 * bytes (1,207,697,408 in the first). Why: exact.ts checks with realpath on the worker and `cat` opens the path in
 * its sandbox later; `EXACT_RUN_HIDDEN` covers `/etc`, `/home`, ... so that such a link "points at nothing", but
 * `/dev` keeps `zero`, `urandom` and `full` (and `ptmx`, whose read would wait: read, not run), and `fifoInUse`
 * (now `blockerInUse`) looked for FIFOs and leases only. Not run (it would take the shared machine's memory): `tail x` on such a link keeps
 * one endless line, so it grows to the session's memory limit (half the machine by default). Fix: bind what was
 * checked (round 22's `--ro-bind-fd` of a descriptor opened `O_PATH|O_NOFOLLOW` at the check), or the kind's fix above.
 *
 * Tried, held: a differential fuzz of the literal-word test (tree-sitter-bash and the strict tokenizer) against
 * bash 5.2's own argv, 24,000 accepted commands over the policy's characters, quotes and every shell metacharacter,
 * arguments and first words (through `command_not_found_handle`): no difference (a test below keeps the hard
 * cases). Noticed: a first word starting with `%` is a job to bash, which runs `fg` (no builtin name of builtins.ts's
 * table) and skips the command's redirections; the session shell has no job control, so it fails, and only a rule
 * whose own first word starts with `%` could match it. The edit's review applied with patch(1) gives the bytes
 * written for CRLF, a lone CR, no final newline, U+2028 and NEL, form feeds, an empty file, a create over a file and a
 * replace of a CR (only the mark above differs). The sandbox from inside (capabilities 0, no_new_privs, seccomp;
 * `/proc` of its own pid namespace, bwrap's links EACCES, bash's own fds EACCES, the session's folder not listable;
 * netlink dumps EPERM; `/dev` minimal, `/tmp` and `/dev/shm` tmpfs of 1 GiB). The session shell's `trap` disabled and
 * `enable` gone; aliases are on by design and the control line holds no word in an alias position (read). The
 * editor's helper on a swapped `/dev/zero`: it opens `O_NONBLOCK` and checks the descriptor's type and path (read).
 * `socketpair` of unix datagrams refused as `socket` is (read); the index audit's hashing is bounded per audit (read).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decideApproval, literalArgv } from '../../../src/policy';
import type { EditGate, ProposedEdit } from '../../../src/session';
import { editRuleSubject, parseEditInput, type EditRequest } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const OPEN_EDIT_BOM = false;
const OPEN_SPARSE_READ = false;
const OPEN_DEV_ZERO_SWAP = false;

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
