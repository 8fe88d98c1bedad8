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
 *
 * Adversary round 33: the probe ran while a job had moved tools/git away (F5: the workspace's git
 * ran for 7 and 11 of 60 rule-approved commands), `hash -p /usr/bin/python3 git` passed as a system
 * program (F6), and only `LD_*`, `BASH_ENV` and `ENV` of the variables were checked. Now every PATH
 * entry searched up to the program's folder must be one the session cannot change, a hashed path must
 * be what the search finds, and no exported variable or function may differ from the start.
 *
 * Round 34: paths were judged in the worker's namespaces (`/proc/<job pid>/cwd` named a host process there), the
 * bookkeeping after every command assigned variables the session could make namerefs, and the session's HOME could
 * hold a `~/.gitconfig` that the system's git runs code from. Now paths are looked up under the shell's own root and
 * never through /proc, the bookkeeping uses no variable, a shell tracing commands refuses, and a rule for a program
 * applies only while HOME holds no dot-entry new since the start.
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
  ['hash -p', [FAKE, 'hash -p "$PWD/tools/git" git'], /git is hashed to .*tools\/git, not to what a search of PATH finds \(.*\/git\)/],
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
  // Round 33 (F6): a hashed path to another program of the system, which the old probe took for git's.
  [
    'hash -p of another system program',
    ['hash -p /usr/bin/env git'],
    /git is hashed to \/usr\/bin\/env, not to what a search of PATH finds/,
  ],
  ['BASH_CMDS naming another system program', ['BASH_CMDS[git]=/bin/sh'], /git is hashed to \/bin\/sh, not to what a search of PATH finds/],
  // Round 33 (F5's kind): a PATH entry the session can change, though what it finds now is the system's git.
  [
    'a PATH entry of the workspace that is a symlink to the system folder',
    ['ln -s /usr/bin sysbin', 'export PATH="$PWD/sysbin:$PATH"'],
    /git resolves to .*\/sysbin\/git now, but the shell's PATH searches .*\/sysbin for git first, and \/var\/tmp is not root's alone, so another file could run by the command/,
  ],
  [
    'a PATH entry of the workspace, empty now, before the system folder',
    ['mkdir -p tools', 'export PATH="$PWD/tools:$PATH"'],
    /the shell's PATH searches .*\/tools for git first, and \/var\/tmp is not root's alone/,
  ],
  [
    'a relative PATH entry, empty now, before the system folder',
    ['export PATH="tools:$PATH"'],
    /PATH searches tools for git first, and tools is looked up from the working directory/,
  ],
  ['an empty PATH entry with no git in the working directory', ['export PATH=":$PATH"'], /PATH searches an empty entry for git first/],
  // Round 33 (the variables): each exported variable added or changed since the start, not only LD_*, BASH_ENV and ENV.
  ...(
    [
      ['PYTHONPATH', '$PWD'],
      ['PYTHONSTARTUP', '$PWD/s.py'],
      ['PERL5LIB', '$PWD'],
      ['PERL5OPT', '-Mevil'],
      ['RUBYOPT', '-revil'],
      ['NODE_OPTIONS', '--require=$PWD/e.js'],
      ['GIT_EXEC_PATH', '$PWD/tools'],
      ['GIT_SSH_COMMAND', '$PWD/tools/git'],
      ['GIT_EXTERNAL_DIFF', '$PWD/tools/git'],
      ['GIT_PAGER', '$PWD/tools/git'],
      ['GIT_DIR', '$PWD/other'],
      ['PAGER', '$PWD/tools/git'],
      ['EDITOR', '$PWD/tools/git'],
      ['LD_AUDIT', '$PWD/a.so'],
      ['AJ_SOME_NEW_NAME', '1'],
    ] as const
  ).map(([name, value]): [string, string[], RegExp] => [
    `${name} exported`,
    [`export ${name}="${value}"`],
    new RegExp(`the session exports ${name}, added or changed`),
  ]),
  [
    'GIT_CONFIG_* exported',
    ['export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0="$PWD/tools/git"'],
    /exports (GIT_CONFIG_COUNT, )?GIT_CONFIG_KEY_0, GIT_CONFIG_VALUE_0, added or changed/,
  ],
  ['HOME changed', ['export HOME="$PWD"'], /exports HOME, added or changed/],
  ['a variable exported by set -a', ['set -a', 'AJ_ALL=1', 'set +a'], /exports AJ_ALL/],
  ['a variable exported by declare -x', ['declare -x GIT_WORK_TREE=/'], /exports GIT_WORK_TREE/],
  ['a value that looks like a line of export -p', [`export AJ_X=$'1\\nexport PATH="/usr/bin"'`], /exports AJ_X, added or changed/],
  [
    'an exported function',
    ['aj_fn() { echo FAKE >> fake.log; }', 'export -f aj_fn'],
    /exports the function aj_fn, which a program that is a shell script runs/,
  ],
  // Round 34 (F1's kind): a path whose names the worker and bash read alike only outside /proc.
  ['a PATH entry through /dev/fd (a link into /proc)', [FAKE, 'exec 5<tools', 'export PATH="/dev/fd/5:$PATH"'], /goes through \/proc/],
  // Configuration the session wrote in its HOME (its private /tmp in the sandbox), which the system's git reads.
  [
    'a ~/.gitconfig with core.fsmonitor',
    [`printf '[core]\\n\\tfsmonitor = "echo FAKE >> $PWD/fake.log; false"\\n' > ~/.gitconfig`],
    /in the session's HOME, \/tmp\/\.gitconfig is new or changed since the session started/,
  ],
  [
    'a ~/.config/git/config with an alias',
    [`mkdir -p ~/.config/git && printf '[alias]\\n\\tst = !echo FAKE\\n' > ~/.config/git/config`],
    /in the session's HOME, \/tmp\/\.config is new or changed/,
  ],
  ['an empty dotfile in HOME', ['touch ~/.aj-any'], /\/tmp\/\.aj-any is new or changed/],
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

  // Round 34 (F1): bash searches /proc/<job>/cwd/usr/bin in the sandbox, the job's folder; the worker read the same
  // name as the host's process of that pid, a kernel thread whose folder is /, and took the session's git for /usr/bin/git.
  maybe("a PATH entry through /proc/<a job's pid>/cwd is refused, whatever that pid names in the worker's view", async () => {
    if (!gitPath) return;
    const ws = workspace();
    const s = await setUp(
      ws,
      `mkdir -p fake/usr/bin && printf '#!/bin/sh\\necho FAKE >> ${ws}/fake.log\\n' > fake/usr/bin/git && chmod +x fake/usr/bin/git`,
    );
    const jobs = await s.run('for i in $(seq 12); do (cd fake && exec sleep 600) >/dev/null 2>&1 & echo $!; done');
    const pids = jobs.output.trim().split('\n').map(Number);
    // The attacker's pick: a job pid that names, in the worker's view, a process whose folder holds the system's git.
    const p =
      pids.find((n) => {
        try {
          return fs.realpathSync(`/proc/${n}/cwd/usr/bin/git`) === fs.realpathSync(gitPath);
        } catch {
          return false;
        }
      }) ?? pids[0]!;
    expect((await s.run(`export PATH=/proc/${p}/cwd/usr/bin:$PATH && type -P git`)).output).toBe(`/proc/${p}/cwd/usr/bin/git\n`);
    const verdict = await gate(s, 'git status');
    expect(verdict).toEqual(expect.stringMatching(/git resolves to \/proc\/\d+\/cwd\/usr\/bin\/git, but .*goes through \/proc/));
    // What bash would run is the session's file: the refusal is what keeps it from running unasked.
    await s.run('git status');
    expect(fs.readFileSync(path.join(ws, 'fake.log'), 'utf8')).toBe('FAKE\n');
    await s.run('kill $(jobs -p)');
  });

  // A variable the bookkeeping after every command assigned, made a nameref to an array element whose subscript runs code.
  maybe('a nameref on a bookkeeping variable runs nothing around a rule-approved command', async () => {
    if (!gitPath) return;
    const ws = workspace();
    const s = await setUp(ws, `declare -n __aj_f='x[$(echo FAKE >> ${ws}/fake.log)]' __aj_x='y[$(echo FAKE >> ${ws}/fake.log)]'`);
    fs.rmSync(path.join(ws, 'fake.log'), { force: true });
    expect(await gate(s, 'git status')).toBe(1);
    await s.run('git status');
    expect(fs.existsSync(path.join(ws, 'fake.log'))).toBe(false);
  });

  // xtrace left on past the bookkeeping (its `\\builtin set +o xtrace` taken by a function named builtin that then
  // removes itself), trace lines sent away so that the probe's answer reads clean: PS4 runs code with every command.
  maybe('xtrace on at the probe refuses the rule', async () => {
    const ws = workspace();
    const s = await setUp(
      ws,
      `PS4='$(echo TRACE >> ${ws}/trace.log)+ '; exec 7>/dev/null; BASH_XTRACEFD=7; set -x; builtin() { if [ "$1" = set ]; then unset -f builtin; return 0; fi; command builtin "$@"; }`,
    );
    const verdict = await gate(s, 'git status');
    expect(verdict).toEqual(expect.stringMatching(/the shell traces commands \(set -x\), and its PS4 can run code/));
  });

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

  // Round 33, F5: the probe ran while tools/git was away (so git was the system's), the command while it was back.
  maybe('a job flipping tools/git in and out of a PATH folder of the workspace, hashing off: the rule never applies', async () => {
    if (!gitPath) return;
    const ws = workspace();
    const s = await setUp(
      ws,
      FAKE,
      'mv tools/git tools/git.off',
      'set +h',
      'export PATH="$PWD/tools:$PATH"',
      '(while :; do mv tools/git.off tools/git; mv tools/git tools/git.off; done) >/dev/null 2>&1 &',
    );
    const verdicts: Array<number | string> = [];
    for (let i = 0; i < 60; i++) {
      const verdict = await gate(s, 'git status --short');
      verdicts.push(verdict);
      // What the worker does when the rule applies: the command runs in the shell.
      if (verdict === 1) await s.run('git status --short');
    }
    await s.run('kill %1');
    // How many times the workspace's git ran for a command the rule let through (on the code before: 7 and 11 of 60 in two runs).
    const log = path.join(ws, 'fake.log');
    expect(fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\n').length - 1 : 0).toBe(0);
    expect(verdicts.filter((v) => v === 1)).toEqual([]);
    // Any refusal is safe; which one depends on where the job was (`not found` when a search met the file mid-move).
    for (const v of verdicts) expect(String(v)).toMatch(/tools\/git|PATH searches .*\/tools for git first|git is not found/);
  });

  maybe('a path to the system git through a symlink of the workspace is refused; the session could turn the symlink', async () => {
    if (!gitPath) return;
    const ws = workspace();
    const s = await setUp(ws, `ln -s ${path.dirname(gitPath)} sysbin`);
    expect(await gate(s, './sysbin/git status')).toEqual(
      expect.stringMatching(/\/var\/tmp is not root's alone, so another file could run/),
    );
    expect(await gate(s, `${gitPath} status`)).toBe(1);
  });

  maybe('what is left of the starting state still lets the rule apply: same values, PWD, a size, unexported, hashed git', async () => {
    if (!gitPath) return;
    const ws = workspace();
    const odd = `a\nb"$\`\\ \u0001é\t'z`;
    const s = await startSession({ cwd: ws, workspace: ws, env: { AJ_ODD: odd } });
    expect(await gate(s, 'git status')).toBe(1);
    for (const c of [
      'mkdir -p sub && cd sub && cd ..',
      'export HOME="$HOME" AJ_ODD="$AJ_ODD"',
      'export COLUMNS=120 LINES=40',
      'PYTHONPATH=$PWD; AJ_LOCAL=1',
      'export -n HOME',
      `hash -p ${gitPath} git`,
      'hash -r; git --version >/dev/null; hash -t git',
      'set +h',
      'export PATH="/aj-no-such-folder:$PATH"',
    ]) {
      expect((await s.run(c)).exitCode).toBe(0);
      expect([c, await gate(s, 'git status')]).toEqual([c, 1]);
    }
    // The session has the odd value (so export -p wrote it quoted, and the probe read it back as it was).
    expect((await s.run(`[ "$AJ_ODD" = $'a\\nb"$\`\\\\ \\001é\\t\\'z' ] && echo same`)).output.trim()).toBe('same');
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
