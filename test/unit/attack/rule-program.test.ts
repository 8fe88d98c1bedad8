/**
 * Attacks on what a prefix approval rule runs (CASES C33), on a real session in the sandbox: after
 * approved commands changed what a word names in the shell (a PATH entry of the workspace, a function,
 * an alias, `hash -p`, an empty or `.` PATH entry, a function named `builtin` that hides itself), a rule
 * for `git status` must not run the session's own `git` unasked. What it still runs: the system's git, a
 * builtin, after `cd`.
 *
 * Bypass found and fixed: `approve --always-prefix "git status"`, then an approved
 * `export PATH="$PWD/tools:$PATH"` with tools/git written by the session: `git status` ran
 * tools/git unasked by the rule. Now the worker asks the shell what the first word resolves to
 * (BashSession `resolveForRule`, through the control protocol) and the rule applies only to a
 * builtin or a program of the system the session cannot replace.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap, type BashSession } from '../../../src/session';
import { ruleHolds } from '../../../src/activities/session';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const sandboxed = process.getuid?.() === 0 && findBwrap() !== null;
const maybe = sandboxed ? test : test.skip;
const gitPath = ['/usr/bin/git', '/bin/git', '/usr/local/bin/git'].find((p) => fs.existsSync(p));

/** A workspace of its own under /var/tmp (not the sandbox's private /tmp), with a fake `git` in tools/ that leaves a mark. */
function workspace(): string {
  const ws = fs.realpathSync(fs.mkdtempSync('/var/tmp/aj-ruleprog-'));
  made.push(ws);
  return ws;
}
const made: string[] = [];
afterAll(() => {
  for (const d of made) fs.rmSync(d, { recursive: true, force: true });
});

const FAKE = `mkdir -p tools && printf '#!/bin/sh\\necho FAKE >> "$PWD/fake.log"\\n' > tools/git && chmod +x tools/git`;

/** What the rule gate says for `command` now: the rule's id when it applies, else the reason a person decides. */
async function gate(s: BashSession, command: string): Promise<number | string> {
  const j = await ruleHolds(command, 1, s);
  return 'rule' in j ? j.rule : 'needsApproval' in j ? j.needsApproval : 'exact';
}

async function setUp(ws: string, ...commands: string[]): Promise<BashSession> {
  const s = await startSession({ cwd: ws, workspace: ws });
  for (const c of commands) {
    const r = await s.run(c);
    expect(r.exitCode).toBe(0);
  }
  return s;
}

const shadows: Array<[string, string[], RegExp]> = [
  ['a PATH entry of the workspace', [FAKE, 'export PATH="$PWD/tools:$PATH"'], /resolves to .*tools\/git, a file of the workspace/],
  ['a function', ['git() { echo FAKE >> fake.log; }'], /git is a shell function/],
  ['an alias', ['shopt -s expand_aliases; alias git="echo FAKE >> fake.log #"'], /git is an alias/],
  ['hash -p', [FAKE, 'hash -p "$PWD/tools/git" git'], /resolves to .*tools\/git, a file of the workspace/],
  ['an empty PATH entry', [FAKE, 'cd tools', 'export PATH=":$PATH"'], /resolves to .*tools\/git, a file of the workspace/],
  ['`.` in PATH', [FAKE, 'cd tools', 'export PATH=".:$PATH"'], /resolves to .*tools\/git, a file of the workspace/],
  [
    'a PATH entry in /tmp',
    ['mkdir -p /tmp/t && printf "#!/bin/sh\\necho FAKE\\n" > /tmp/t/git && chmod +x /tmp/t/git', 'export PATH="/tmp/t:$PATH"'],
    /resolves to/,
  ],
  ['LD_PRELOAD exported', ['export LD_PRELOAD=$PWD/evil.so'], /exports LD_PRELOAD/],
  ['BASH_ENV exported', ['export BASH_ENV=$PWD/evil.sh'], /exports BASH_ENV/],
  [
    'command_not_found_handle, git off PATH',
    ['command_not_found_handle() { echo FAKE >> fake.log; }', 'export PATH=/nonexistent'],
    /git is not found/,
  ],
  // Defined but hidden at probe time: it would run between the probe and the command.
  ['a function named builtin', ['builtin() { command builtin "$@"; }'], /did not say what git resolves to/],
];

describe('a prefix rule runs only the program it names', () => {
  for (const [name, commands, why] of shadows) {
    maybe(`git shadowed by ${name}: the rule does not apply, and the reason says why`, async () => {
      const ws = workspace();
      const s = await setUp(ws, ...commands);
      const verdict = await gate(s, 'git status --short');
      expect(verdict).toEqual(expect.stringMatching(why));
      expect(String(verdict)).toMatch(/the rule does not apply; a person decides/);
      // The probe left no trace: nothing of the fake ran, and `$?` is the last command's.
      expect(fs.existsSync(path.join(ws, 'fake.log'))).toBe(false);
      expect((await s.run('echo $?')).output.trim()).toBe('0');
    });
  }

  maybe('a function named builtin that removes itself when called cannot make the probe lie for the command after it', async () => {
    const ws = workspace();
    // The function hides git's function while the probe asks, and puts it back when called again (by the next command's bookkeeping).
    const s = await setUp(
      ws,
      'git() { echo FAKE >> fake.log; }',
      'builtin() { if declare -F git >/dev/null; then __g=$(declare -f git); unset -f git; else eval "$__g"; fi; unset -f builtin; command builtin "$@"; }',
    );
    // Once called (by the bookkeeping after its own command, or the probe's), it removed git's function and itself:
    // nothing can put git's function back before the command, so the rule applies and the system's git runs.
    expect(await gate(s, 'git status --short')).toBe(1);
    await s.run('git status --short');
    expect(fs.existsSync(path.join(ws, 'fake.log'))).toBe(false);
  });

  maybe('no builtin can be loaded under the name of a program (enable is disabled in the session shell)', async () => {
    const ws = workspace();
    const s = await setUp(ws);
    const r = await s.run('enable -f /usr/lib/bash/sleep git');
    expect(r.exitCode).not.toBe(0);
    expect(await gate(s, 'git status')).toEqual(gitPath ? 1 : expect.any(String));
  });

  maybe('the system git, a builtin and a command after cd still run by the rule', async () => {
    if (!gitPath) return;
    const ws = workspace();
    const s = await setUp(ws, 'mkdir -p sub', FAKE);
    expect(await gate(s, 'git status --short')).toBe(1);
    expect(await gate(s, 'echo hi')).toBe(1);
    expect(await gate(s, 'pwd')).toBe(1);
    await s.run('cd sub');
    expect(await gate(s, 'git status')).toBe(1);
    // A path to the system's git is a system program too; one into the workspace is not.
    expect(await gate(s, `${gitPath} status`)).toBe(1);
    expect(await gate(s, './../tools/git status')).toEqual(expect.stringMatching(/a file of the workspace/));
  });
});
