/**
 * Attacks on the approval policy, by kind. Each input in the `both` tables is
 * one that the old text policy (src/workflows/approval-policy.ts) lets run
 * unasked and that src/policy must ask for: both are asserted, so each row
 * fails on the old policy and passes on the new one. `new only` rows are
 * attacks the old policy already happened to stop; they pin the new one.
 */
import { decideApproval as oldDecide } from '../../../src/workflows/approval-policy';
import { decideApproval } from '../../../src/policy';

const ctx = { workspace: '/work/ws', cwd: '/work/ws' };

/** [command, a substring of the new policy's reason] */
type Row = [string, string];

function bothAsk(rows: Row[]) {
  test.each(rows)('%j: old policy runs it, new policy asks (%s)', (command, why) => {
    expect(oldDecide(command, 'policy').action).toBe('run');
    const d = decideApproval(command, 'policy', ctx);
    expect(d).toEqual({ action: 'ask', reason: expect.stringContaining(why) });
  });
}
function newAsks(rows: Row[]) {
  test.each(rows)('%j: new policy asks (%s)', (command, why) => {
    expect(decideApproval(command, 'policy', ctx)).toEqual({ action: 'ask', reason: expect.stringContaining(why) });
  });
}

describe('kind 1: words bash rewrites', () => {
  bothAsk([
    ['find . -maxdepth 0 -ex"ec" touch x {} +', 'brace expansion'],
    ["find . -ex'ec' touch x '{}' +", "find option -exec is not on find's option allowlist"],
    ['find . -"delete"', 'find option -delete'],
    ["find . '-delete'", 'find option -delete'],
    ['find . -de""lete', 'find option -delete'],
    ['find . -de\\lete', 'not a plain literal: backslash escape'],
    ["find . $'-delete'", "ANSI-C quoting $'...'"],
    ["find . $'\\x2ddelete'", 'ANSI-C quoting'],
    ['find . -{delete,print}', 'not a plain literal: brace expansion'],
    ['find . -dele{t,}e', 'brace expansion'],
    ['find . ${x:--delete}', 'word 3 ("${x:--delete}") is not a plain literal: parameter expansion'],
    ['find . ${x=-delete}', 'parameter expansion'],
    ['echo ${x@P}', 'parameter expansion'],
    ['cat ${!x}', 'parameter expansion'],
    ['cat "${!x}"', 'parameter expansion'],
    ['cat "$HOME/.ssh/id_rsa"', 'word 2 ("\\"$HOME/.ssh/id_rsa\\"") is not a plain literal: parameter expansion'],
    ['find .${IFS}-delete', 'parameter expansion'],
    ['find . $x', 'parameter expansion'],
    ['ls $[y]', 'arithmetic expansion'],
    ['cat /???/p?sswd', 'globbing'],
    ['cat /e*/shadow', 'globbing'],
    ['cat [/]etc/passwd', 'globbing'],
    ['cat ~/.ssh/id_rsa', 'tilde expansion'],
    ['ls ~root', 'tilde expansion'],
    ['ls x=~/y', 'tilde expansion'],
    ['echo "!!"', 'history expansion'],
    ['cat a\\ b', 'backslash escape'],
    // under `set -k`, assignment-like words leave argv for the environment
    ['cat LD_PRELOAD=./x.so a.txt', 'word 2 ("LD_PRELOAD=./x.so") looks like a variable assignment'],
    ['grep -r BASH_ENV=x', 'looks like a variable assignment'],
    ['ls PATH+=.', 'looks like a variable assignment'],
    ['ls FOO="1"', 'looks like a variable assignment'],
  ]);

  newAsks([
    ['ls $((y))', 'arithmetic expansion'],
    ['ls "$(id)"', 'command substitution'],
    ['ls `id`', 'not a plain literal'],
    ['ls $', 'parameter expansion'],
  ]);
});

describe('kind 2: options that write, execute or never end', () => {
  bothAsk([
    ['file -C -m magic', "file option -C is not on file's option allowlist"],
    ['file -Cm magic', 'file option -C (in -Cm)'],
    ['file -z a.gz', 'file option -z'],
    ['file -p a.txt', 'file option -p'],
    ['file -f names.txt', 'file option -f'],
    ['tail -f a.txt', 'tail option -f'],
    ['tail -5f a.txt', 'tail option -5'],
    ['tail -n 5 -F a.txt', 'tail option -F'],
    ['tail --follow=name a.txt', 'tail option --follow'],
    ['tail --fol a.txt', 'tail option --fol '],
    ['tail --pid=1 -f a.txt', 'tail option --pid'],
    ['tail +5f a.txt', 'obsolete +N syntax'],
    ['wc --files0-from=list', 'wc option --files0-from'],
    ['du --files0-from=list', 'du option --files0-from'],
    ['du -L', 'du option -L'],
    ['grep -R foo .', 'grep option -R'],
    ['grep -D read foo a', 'grep option -D'],
    ['find -L . -name x', 'find option -L'],
    ['find . -follow', 'find option -follow'],
    ['find . -files0-from list', 'find option -files0-from'],
    ['find . -newermt 2020-01-01', 'find option -newermt'],
    ['ls -L -R', 'ls option -L'],
    ['ls --dereference', 'ls option --dereference'],
    ['stat --help-me a', 'stat option --help-me'],
  ]);
  newAsks([
    ['sort -o out.txt in.txt', 'sort is not on the read-only allowlist'],
    ['find . -delete', 'find option -delete'],
    ['find . -exec rm {} +', 'brace expansion'],
    ["find . -exec rm '{}' +", 'find option -exec'],
    ['find . -fprint out', 'find option -fprint'],
    ['tree -o out', 'tree is not on the read-only allowlist'],
  ]);
});

describe('kind 3: definitions that pass as programs', () => {
  bothAsk([
    ['ls () ( rm -rf x )', 'function definition'],
    ['ls ( ) ( rm -rf x )', 'function definition'],
    ['cat () [[ -n x ]]', 'function definition'],
    ['echo () (( x=1 ))', 'function definition'],
    ['find () ( touch x )', 'function definition'],
  ]);
  newAsks([
    ['ls() { rm x; }', 'function definition'],
    ['function cat { rm x; }', 'function definition'],
    ['alias ls=rm', 'alias is not on the read-only allowlist'],
    ["alias ls='rm -rf'", 'alias is not on the read-only allowlist'],
    ['( ls )', 'subshell'],
    ['(ls; rm x)', 'subshell'],
    ['{ ls; }', 'group'],
    ['x=1 ls', 'variable assignment'],
    ['declare -f ls', 'declaration'],
  ]);
});

describe('kind 5: reads beyond the workspace', () => {
  bothAsk([
    ['cat /proc/self/environ', 'path /proc/self/environ is outside the workspace /work/ws'],
    ['cat /etc/passwd', 'outside the workspace'],
    ['cat ../secret', 'path ../secret leaves the workspace'],
    ['head src/../../other/x', '".." component'],
    ['cat ./..', '".." component'],
    ['cat "$PWD/../outside.txt"', 'parameter expansion'],
    ['ls ~', 'tilde expansion'],
    ['grep -r foo /', 'path / is outside'],
    ['find / -name id_rsa', 'path / is outside'],
    ['cat /work/ws-other/x', 'outside the workspace'],
    ['cat /work', 'outside the workspace'],
    ['grep -f /etc/shadow a.txt', 'path /etc/shadow is outside'],
    ['grep --file=/etc/shadow a.txt', 'path /etc/shadow is outside'],
    ['grep --exclude-from=../x -r foo', '".." component'],
    ['find . -newer /etc/passwd', 'path /etc/passwd is outside'],
    ['realpath --relative-to=/ a', 'path / is outside'],
    ['cat -', 'reads standard input'],
  ]);

  test('with the cwd outside the workspace, relative and implicit paths ask', () => {
    const out = { workspace: '/work/ws', cwd: '/work' };
    expect(decideApproval('ls', 'policy', out)).toEqual({
      action: 'ask',
      reason: 'path . resolves to /work, outside the workspace /work/ws',
    });
    expect(decideApproval('cat ws/a', 'policy', out)).toMatchObject({ action: 'run' }); // /work/ws/a is inside
    expect(decideApproval('cat a', 'policy', out)).toMatchObject({ action: 'ask' });
  });

  test('without a context every path, explicit or implicit, asks', () => {
    for (const c of ['ls', 'cat a.txt', 'grep -r foo', 'find -name x', 'du -sh', 'cat /work/ws/a']) {
      expect(decideApproval(c, 'policy')).toEqual({
        action: 'ask',
        reason: expect.stringContaining('cannot be judged without a workspace context'),
      });
    }
    for (const c of ['pwd', 'echo hi', 'whoami', 'uname -a', 'basename a/b']) {
      expect(decideApproval(c, 'policy')).toMatchObject({ action: 'run', paths: [] });
    }
  });

  test('a malformed context asks', () => {
    expect(decideApproval('ls', 'policy', { workspace: 'ws', cwd: '/ws' })).toMatchObject({
      action: 'ask',
      reason: expect.stringContaining('context.workspace'),
    });
    expect(decideApproval('ls', 'policy', { workspace: '/ws', cwd: '/ws/a/..' })).toMatchObject({
      action: 'ask',
      reason: expect.stringContaining('context.cwd'),
    });
    expect(decideApproval('ls', 'policy', { workspace: '/', cwd: '/' })).toMatchObject({
      action: 'ask',
      reason: expect.stringContaining('whole filesystem'),
    });
    expect(decideApproval('ls', 'policy', { workspace: '/ws', cwd: '/ws//a' })).toMatchObject({
      action: 'ask',
      reason: expect.stringContaining('context.cwd'),
    });
    // a trailing slash is not malformed
    expect(decideApproval('cat a', 'policy', { workspace: '/ws/', cwd: '/ws/' })).toMatchObject({ action: 'run', paths: ['/ws/a'] });
    expect(decideApproval('cat /ws2/a', 'policy', { workspace: '/ws/', cwd: '/ws/' })).toMatchObject({ action: 'ask' });
  });
});

describe('C16/C17: more than one command, wrappers', () => {
  newAsks([
    ['git status && rm -f keep.txt', 'a list (&&) is more than one simple command'],
    ['git status-stash', 'git is not on the read-only allowlist'],
    ['git status', 'git is not on the read-only allowlist'],
    ['ls\nrm -f keep.txt', 'control character U+000A'],
    ['ls\rrm -f keep.txt', 'control character U+000D'],
    ['ls\trm', 'control character U+0009'],
    ['ls\0rm', 'control character U+0000'],
    ['ls; rm x', 'command list (;)'],
    ['ls | sh', 'a pipeline (|)'],
    ['ls & rm x', 'command list'],
    ['ls 2>/dev/null', 'redirection'],
    ['cat <<EOF', 'could not read'],
    ['cat <<EOF\nx\nEOF', 'control character U+000A'],
    ['cat <<< x', 'here-string'],
    ['cat <(rm x)', 'process substitution'],
    ['! ls', 'negation'],
    ['timeout 5 rm x', 'timeout is not on the read-only allowlist'],
    ['env rm x', 'env is not on the read-only allowlist'],
    ['xargs rm', 'xargs is not on the read-only allowlist'],
    ["bash -c 'rm x'", 'bash is not on the read-only allowlist'],
    ['sh -c ls', 'sh is not on the read-only allowlist'],
    ['command rm x', 'command is not on the read-only allowlist'],
    ['builtin echo x', 'builtin is not on the read-only allowlist'],
    ['nice rm x', 'nice is not on the read-only allowlist'],
    ['nohup rm x', 'nohup is not on the read-only allowlist'],
    ['exec rm x', 'exec is not on the read-only allowlist'],
    ['time rm x', 'time is not on the read-only allowlist'],
    ['eval ls', 'eval is not on the read-only allowlist'],
    ['/bin/ls', 'named by a path'],
    ['./ls', 'named by a path'],
    ['ls\u202e', 'non-ASCII character U+202E'],
    ['ls\u200b', 'non-ASCII character U+200B'],
    ['cat caf\u00e9', 'non-ASCII character U+00E9'],
  ]);
  test('argv[0] is judged as bash reads it, quotes removed', () => {
    expect(decideApproval("'r'm x", 'policy', ctx)).toMatchObject({ action: 'ask', reason: 'rm is not on the read-only allowlist' });
    expect(decideApproval('"ls"', 'policy', ctx)).toMatchObject({ action: 'run', argv: ['ls'] });
  });
});
