import { decideApproval, READ_ONLY_PROGRAMS } from '../../../src/workflows/approval-policy';

describe('approval policy', () => {
  test.each([
    'ls',
    'ls -la src',
    'cat README.md',
    'echo hello world',
    'pwd',
    'grep -rn foo .',
    'find . -name "*.ts"',
    'wc -l a b',
    'head -n 3 x',
    'tail x',
    '  ls  ',
  ])('policy runs the read-only simple command %j', (command) =>
    expect(decideApproval(command, 'policy')).toMatchObject({ action: 'run' }),
  );

  test.each([
    ['rm -rf /', 'not on the read-only allowlist'],
    ['npm test', 'not on the read-only allowlist'],
    ['ls; rm -rf x', '";"'],
    ['ls;rm -rf x', '";"'],
    ['cat a && rm b', '"&&"'],
    ['cat a || rm b', '"||"'],
    ['cat a | sh', '"|"'],
    ['ls &', '"&"'],
    ['echo x > file', '">"'],
    ['echo x>>file', '">>"'],
    ['cat < /etc/passwd', '"<"'],
    ['echo $(rm -rf x)', '"$("'],
    ['echo `rm -rf x`', '"`"'],
    ['ls\nrm x', '"\\n"'],
    ['echo "a;b"', '";"'],
    ['find . -delete', 'find -delete'],
    ['find . -exec rm {} +', 'find -exec'],
    ['/bin/ls', 'not on the read-only allowlist'],
    ['FOO=1 ls', 'not on the read-only allowlist'],
    ['', 'empty command'],
  ])('policy asks for %j (%s)', (command, why) => {
    const d = decideApproval(command, 'policy');
    expect(d.action).toBe('ask');
    expect(d.reason).toContain(why);
  });

  test.each([
    ['touch a.txt && echo made', '&&'],
    ['ls || true', '||'],
    ['cat a |& tee b', '|&'],
    ['ls | wc -l', '|'],
    ['echo x >> log', '>>'],
    ['echo x >| log', '>|'],
    ['ls &> out', '&>'],
    ['cat <<EOF', '<<'],
    ['cat <<< hi', '<<<'],
    ['diff <(ls a) b', '<('],
    ['echo $(date) && ls', '$('],
    ['echo a; b && c', ';'],
    ['ls & wait', '&'],
    ['echo "ok" > f && rm g', '>'],
    ['ls\nrm x', '\n'],
  ])('the reason for %j names the first operator whole: %s', (command, operator) => {
    expect(decideApproval(command, 'policy')).toEqual({ action: 'ask', reason: `contains the shell operator ${JSON.stringify(operator)}` });
  });

  test('always asks even for ls; auto never asks', () => {
    expect(decideApproval('ls', 'always').action).toBe('ask');
    expect(decideApproval('rm -rf /', 'auto').action).toBe('run');
  });

  test('the allowlist holds at least the programs the issue names', () => {
    expect(READ_ONLY_PROGRAMS).toEqual(expect.arrayContaining(['ls', 'cat', 'echo', 'pwd', 'grep', 'find', 'wc', 'head', 'tail']));
  });
});
