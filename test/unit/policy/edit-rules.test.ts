/**
 * Approval rules for text editor edits: matched on `str_replace_based_edit_tool <command>
 * <path>` (the path one word), and never letting a bash command run, whatever is on the PATH.
 * Also the editor's path rules and input checks (pure).
 */
import { matchEditRule, matchRule } from '../../../src/policy';
import { editRuleSubject, editRuleWords, parseEditInput } from '../../../src/contract/text-editor';
import { resolveEditPath } from '../../../src/session/edit';

const subject = (command: 'view' | 'create' | 'str_replace' | 'insert', p: string) => ({
  words: editRuleWords(command, p),
  text: editRuleSubject(command, p),
});

test('an exact rule approves the same command on the same file; a prefix rule by whole words; a path with spaces is one word', () => {
  const rules = [
    { id: 1, kind: 'exact' as const, text: 'str_replace_based_edit_tool str_replace /ws/a b.txt' },
    { id: 2, kind: 'prefix' as const, text: 'str_replace_based_edit_tool insert' },
  ];
  expect(matchEditRule(subject('str_replace', '/ws/a b.txt'), rules)).toEqual({ id: 1 });
  expect(matchEditRule(subject('str_replace', '/ws/a b.txt.bak'), rules)).toEqual({ reason: 'no approval rule matches this edit' });
  expect(matchEditRule(subject('create', '/ws/a b.txt'), rules)).toEqual({ reason: 'no approval rule matches this edit' });
  expect(matchEditRule(subject('insert', '/ws/x'), rules)).toEqual({ id: 2 });
  // A bash rule never approves an edit.
  expect(matchEditRule(subject('create', '/ws/x'), [{ id: 3, kind: 'prefix', text: 'touch' }])).toEqual({
    reason: 'no approval rule matches this edit',
  });
});

test('a rule for edits never lets a bash command of the same words run (a program of that name could be on the PATH)', () => {
  const rules = [
    { id: 1, kind: 'exact' as const, text: 'str_replace_based_edit_tool create /ws/x' },
    { id: 2, kind: 'prefix' as const, text: 'str_replace_based_edit_tool' },
  ];
  expect(matchRule('str_replace_based_edit_tool create /ws/x', rules)).toEqual({ reason: 'no approval rule' });
  expect(matchRule('ls', [...rules, { id: 3, kind: 'exact', text: 'ls' }])).toEqual({ id: 3 });
});

test('editor paths: relative to the cwd, inside the workspace, no ".." anywhere', () => {
  expect(resolveEditPath('a.txt', '/ws/sub', '/ws')).toEqual({ abs: '/ws/sub/a.txt' });
  expect(resolveEditPath('/ws/a.txt', '/ws', '/ws')).toEqual({ abs: '/ws/a.txt' });
  expect(resolveEditPath('./a/./b', '/ws', '/ws')).toEqual({ abs: '/ws/a/b' });
  for (const p of ['../a', 'a/../../b', 'a/..', '/ws/../etc/passwd'])
    expect(resolveEditPath(p, '/ws', '/ws')).toMatchObject({ error: expect.stringMatching(/"\.\." component/) });
  for (const p of ['/etc/passwd', '/wsx/a', '/'])
    expect(resolveEditPath(p, '/ws', '/ws')).toMatchObject({ error: expect.stringMatching(/outside the workspace \/ws/) });
});

test('editor input: the documented parameters; insert_text (or new_str of older copies of the page); wrong shapes are is_error texts', () => {
  expect(parseEditInput({ command: 'view', path: 'a', view_range: [1, -1] })).toEqual({
    ok: true,
    edit: { command: 'view', path: 'a', viewRange: [1, -1] },
  });
  expect(parseEditInput({ command: 'insert', path: 'a', insert_line: 0, insert_text: 'x' })).toMatchObject({
    ok: true,
    edit: { insertText: 'x' },
  });
  expect(parseEditInput({ command: 'insert', path: 'a', insert_line: 0, new_str: 'y' })).toMatchObject({
    ok: true,
    edit: { insertText: 'y' },
  });
  expect(parseEditInput({ command: 'str_replace', path: 'a', old_str: 'x' })).toMatchObject({ ok: true, edit: { newStr: '' } });
  for (const bad of [
    null,
    [],
    { command: 'view' },
    { command: 'view', path: 'a', view_range: [1] },
    { command: 'create', path: 'a' },
    { command: 'str_replace', path: 'a', old_str: '' },
    { command: 'insert', path: 'a', insert_line: -1, insert_text: 'x' },
    { command: 'undo_edit', path: 'a' },
    { command: 'rm', path: 'a' },
  ]) {
    const r = parseEditInput(bad);
    expect(r.ok).toBe(false);
    expect(!r.ok && r.text).toMatch(/^Error: /);
  }
});
