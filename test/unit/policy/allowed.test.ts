/**
 * What the policy still runs unasked, with the exact argv and paths it
 * reports; and the modes.
 */
import { decideApproval, READ_ONLY_PROGRAMS } from '../../../src/policy';

const ws = '/work/ws';
const ctx = { workspace: ws, cwd: ws };

describe('policy runs read-only commands', () => {
  test.each<[string, string[], string[]]>([
    ['ls -la', ['ls', '-la'], [ws]],
    ['cat README.md', ['cat', 'README.md'], [`${ws}/README.md`]],
    ['grep -rn foo src', ['grep', '-rn', 'foo', 'src'], [`${ws}/src`]],
    ["find . -name '*.ts' -type f", ['find', '.', '-name', '*.ts', '-type', 'f'], [ws]],
    ['head -n 5 a.txt', ['head', '-n', '5', 'a.txt'], [`${ws}/a.txt`]],
    ['wc -l src/a.ts', ['wc', '-l', 'src/a.ts'], [`${ws}/src/a.ts`]],
    ['  ls  ', ['ls'], [ws]],
    ['ls', ['ls'], [ws]],
    ['ls -la src test', ['ls', '-la', 'src', 'test'], [`${ws}/src`, `${ws}/test`]],
    ['ls --color=never -1 src/', ['ls', '--color=never', '-1', 'src/'], [`${ws}/src`]],
    ['ls --sort size', ['ls', '--sort', 'size'], [ws]],
    ['ls -- -weird', ['ls', '--', '-weird'], [`${ws}/-weird`]],
    [`ls ${ws}/src`, ['ls', `${ws}/src`], [`${ws}/src`]],
    [`ls ${ws}`, ['ls', ws], [ws]],
    ['ls ./src/./a', ['ls', './src/./a'], [`${ws}/src/a`]],
    ['cat "a b.txt" \'c d.txt\'', ['cat', 'a b.txt', 'c d.txt'], [`${ws}/a b.txt`, `${ws}/c d.txt`]],
    ['cat a"b"\'c\'', ['cat', 'abc'], [`${ws}/abc`]],
    ['head -5 a.txt', ['head', '-5', 'a.txt'], [`${ws}/a.txt`]],
    ['head -n5 a.txt', ['head', '-n5', 'a.txt'], [`${ws}/a.txt`]],
    ['tail -n +3 --lines=4 a.txt', ['tail', '-n', '+3', '--lines=4', 'a.txt'], [`${ws}/a.txt`]],
    ['grep -e -x -f pats.txt a.txt', ['grep', '-e', '-x', '-f', 'pats.txt', 'a.txt'], [`${ws}/pats.txt`, `${ws}/a.txt`]],
    ['grep -r TODO', ['grep', '-r', 'TODO'], [ws]],
    ["grep -rn --include='*.ts' 'a b' src", ['grep', '-rn', '--include=*.ts', 'a b', 'src'], [`${ws}/src`]],
    ["grep -c '$' a.txt", ['grep', '-c', '$', 'a.txt'], [`${ws}/a.txt`]],
    ['find src -newer a.txt -print0', ['find', 'src', '-newer', 'a.txt', '-print0'], [`${ws}/src`, `${ws}/a.txt`]],
    [
      "find . '(' -name a -o -name b ')' -printf '%p\\n'",
      ['find', '.', '(', '-name', 'a', '-o', '-name', 'b', ')', '-printf', '%p\\n'],
      [ws],
    ],
    ["find -name x '!' -type d", ['find', '-name', 'x', '!', '-type', 'd'], [ws]],
    ['stat -c %s a.txt', ['stat', '-c', '%s', 'a.txt'], [`${ws}/a.txt`]],
    ['file -b --mime-type a.png', ['file', '-b', '--mime-type', 'a.png'], [`${ws}/a.png`]],
    ['du -sh', ['du', '-sh'], [ws]],
    ['du -d 1 src', ['du', '-d', '1', 'src'], [`${ws}/src`]],
    ['realpath src', ['realpath', 'src'], [`${ws}/src`]],
    ['pwd', ['pwd'], []],
    ['echo hello world', ['echo', 'hello', 'world'], []],
    ['echo -n "a, b = c" --help /etc/passwd', ['echo', '-n', 'a, b = c', '--help', '/etc/passwd'], []],
    ['basename /a/b.ts .ts', ['basename', '/a/b.ts', '.ts'], []],
    ['dirname a/b', ['dirname', 'a/b'], []],
    ['whoami', ['whoami'], []],
    ['uname -a', ['uname', '-a'], []],
    ['true', ['true'], []],
    ['cat a.txt a.txt', ['cat', 'a.txt', 'a.txt'], [`${ws}/a.txt`]],
  ])('%j', (command, argv, paths) => {
    expect(decideApproval(command, 'policy', ctx)).toEqual({ action: 'run', reason: expect.any(String), argv, paths });
  });

  test('paths resolve against the cwd', () => {
    expect(decideApproval('cat a.txt', 'policy', { workspace: ws, cwd: `${ws}/src` })).toMatchObject({
      action: 'run',
      paths: [`${ws}/src/a.txt`],
    });
    expect(decideApproval('ls', 'policy', { workspace: ws, cwd: `${ws}/src` })).toMatchObject({ action: 'run', paths: [`${ws}/src`] });
  });

  test('the run reason names the program', () => {
    expect(decideApproval('ls', 'policy', ctx)).toMatchObject({
      reason: 'ls is a read-only command with allowed options, reading only inside the workspace',
    });
  });
});

describe('options and operands that ask', () => {
  test.each<[string, string]>([
    ['ls --colr', 'ls option --colr is not on'],
    ['ls --all=x', '--all takes no value'],
    ['head -n', 'option -n lacks its value'],
    ['head --lines', 'option --lines lacks its value'],
    ['find . -name', 'find -name lacks its argument'],
    ['find . -name a x', 'find expression word "x" is not a known predicate'],
    ['find -D tree .', 'find option -D'],
    ['grep -r', 'grep has no pattern'],
    ['cat', 'cat with no file operand reads standard input'],
    ['wc', 'reads standard input'],
    ['pwd x', 'pwd takes no operands'],
    ['true x', 'true takes no operands'],
    ['cat ""', 'an empty path'],
    ['ls --color -L', 'ls option -L'],
    ['stat -', 'reads standard input'],
    ['', 'empty command'],
    ['   ', 'empty command'],
    ['cat a\\', 'could not read'],
    ['cat a\\ b', 'not a plain literal: backslash escape'],
    ['echo "a', 'could not read'],
    [`cat ${'a'.repeat(5000)}`, 'longer than 4096'],
  ])('%j asks (%s)', (command, why) => {
    expect(decideApproval(command, 'policy', ctx)).toEqual({ action: 'ask', reason: expect.stringContaining(why) });
  });
});

describe('modes', () => {
  test('auto runs everything, with empty argv and paths (nothing is parsed)', () => {
    expect(decideApproval('rm -rf /', 'auto')).toEqual({ action: 'run', reason: 'approval mode is auto', argv: [], paths: [] });
  });
  test('always asks for everything', () => {
    expect(decideApproval('ls', 'always', ctx)).toEqual({ action: 'ask', reason: 'approval mode is always' });
  });
  test('the allowlist holds no wrapper, shell or writer', () => {
    for (const p of [
      'env',
      'timeout',
      'xargs',
      'bash',
      'sh',
      'command',
      'exec',
      'nice',
      'nohup',
      'time',
      'eval',
      'sort',
      'git',
      'df',
      'tee',
      'sed',
      'awk',
    ]) {
      expect(READ_ONLY_PROGRAMS).not.toContain(p);
    }
    expect(READ_ONLY_PROGRAMS).toEqual(
      expect.arrayContaining(['ls', 'cat', 'head', 'tail', 'wc', 'grep', 'find', 'stat', 'file', 'du', 'pwd', 'echo']),
    );
  });
});
