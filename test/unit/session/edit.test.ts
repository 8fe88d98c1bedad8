/**
 * The text editor on a real session: the documented texts
 * (https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool), the path
 * rules (outside the workspace, `..`, symlinks out), files owned like the shell's, and the
 * gate that decides before anything is shown or written. Real bash, real sandbox, real helper.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap } from '../../../src/session';
import type { EditGate, ProposedEdit } from '../../../src/session';
import { editRuleSubject, parseEditInput, type EditRequest } from '../../../src/contract/text-editor';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const sandboxed = process.getuid?.() === 0 && findBwrap() !== null;

function req(input: Record<string, unknown>): EditRequest {
  const parsed = parseEditInput(input);
  if (!parsed.ok) throw new Error(parsed.text);
  return parsed.edit;
}

async function setup(): Promise<{
  ws: string;
  edit: (
    input: Record<string, unknown>,
    gate?: (p: ProposedEdit) => EditGate,
  ) => ReturnType<import('../../../src/session').BashSession['edit']>;
  run: (c: string) => Promise<string>;
}> {
  const ws = fs.realpathSync(tempDir('aj-edit-'));
  fs.writeFileSync(path.join(ws, 'primes.py'), 'def f():\n    for n in range(3)\n        print(n)\n');
  const s = await startSession({ cwd: ws, workspace: ws });
  return {
    ws,
    edit: (input, gate = () => ({ apply: true })) => s.edit(req(input), gate, { maxCharacters: 50, ruleSubject: editRuleSubject }),
    run: async (c) => (await s.run(c)).output,
  };
}

test('view numbers the lines as the docs show ("1: ..."), view_range selects, -1 reads to the end, max_characters cuts', async () => {
  const { edit } = await setup();
  expect((await edit({ command: 'view', path: 'primes.py' })).text).toBe('1: def f():\n2:     for n in range(3)\n3:         print(n)');
  expect((await edit({ command: 'view', path: 'primes.py', view_range: [2, -1] })).text).toBe(
    '2:     for n in range(3)\n3:         print(n)',
  );
  expect((await edit({ command: 'view', path: 'primes.py', view_range: [2, 2] })).text).toBe('2:     for n in range(3)');
  const bad = await edit({ command: 'view', path: 'primes.py', view_range: [9, 10] });
  expect(bad.isError).toBe(true);
});

test('str_replace, insert and create: the documented success text, the file changed once', async () => {
  const { ws, edit } = await setup();
  const r = await edit({ command: 'str_replace', path: 'primes.py', old_str: '    for n in range(3)', new_str: '    for n in range(3):' });
  expect(r).toMatchObject({ text: 'Successfully replaced text at exactly one location.', isError: false, applied: true });
  expect(fs.readFileSync(path.join(ws, 'primes.py'), 'utf8')).toBe('def f():\n    for n in range(3):\n        print(n)\n');
  const i = await edit({ command: 'insert', path: 'primes.py', insert_line: 0, insert_text: '"""Primes."""\n' });
  expect(i).toMatchObject({ text: 'Successfully inserted text after line 0.', applied: true });
  expect(fs.readFileSync(path.join(ws, 'primes.py'), 'utf8').split('\n')[0]).toBe('"""Primes."""');
  const c = await edit({ command: 'create', path: 'sub/dir/new.txt', file_text: 'hello\n' });
  expect(c).toMatchObject({ text: `Successfully created file ${ws}/sub/dir/new.txt.`, applied: true });
  expect(fs.readFileSync(path.join(ws, 'sub/dir/new.txt'), 'utf8')).toBe('hello\n');
});

test('insert into a CRLF file adds CRLF line breaks (after a last line without one too); an LF file keeps LF; a bare CR is no line ending', async () => {
  const { ws, edit } = await setup();
  const read = (f: string): string => fs.readFileSync(path.join(ws, f), 'latin1');
  fs.writeFileSync(path.join(ws, 'crlf.txt'), 'alpha\r\nbeta\r\n');
  await edit({ command: 'insert', path: 'crlf.txt', insert_line: 1, insert_text: 'middle' });
  await edit({ command: 'insert', path: 'crlf.txt', insert_line: 0, insert_text: 'first' });
  expect(read('crlf.txt')).toBe('first\r\nalpha\r\nmiddle\r\nbeta\r\n');
  // The last line without a break: the break put before the inserted line is the file's too.
  fs.writeFileSync(path.join(ws, 'open.txt'), 'one\r\ntwo');
  await edit({ command: 'insert', path: 'open.txt', insert_line: 2, insert_text: 'three' });
  expect(read('open.txt')).toBe('one\r\ntwo\r\nthree\r\n');
  // Text that ends with its own break is written as given; an LF file gets LF; a bare CR is no line ending.
  await edit({ command: 'insert', path: 'primes.py', insert_line: 0, insert_text: 'x = 1' });
  expect(read('primes.py').startsWith('x = 1\ndef f():\n')).toBe(true);
  fs.writeFileSync(path.join(ws, 'cr.txt'), 'a\rb\n');
  await edit({ command: 'insert', path: 'cr.txt', insert_line: 1, insert_text: 'c' });
  expect(read('cr.txt')).toBe('a\rb\nc\n');
});

test('documented errors: file not found, several matches, no match; each is_error and nothing written', async () => {
  const { ws, edit } = await setup();
  expect(await edit({ command: 'view', path: 'nope.py' })).toMatchObject({ text: 'Error: File not found', isError: true });
  expect(await edit({ command: 'str_replace', path: 'nope.py', old_str: 'a', new_str: 'b' })).toMatchObject({
    text: 'Error: File not found',
    isError: true,
  });
  fs.writeFileSync(path.join(ws, 'dup.txt'), 'x\nx\nx\n');
  expect(await edit({ command: 'str_replace', path: 'dup.txt', old_str: 'x', new_str: 'y' })).toMatchObject({
    text: 'Error: Found 3 matches for replacement text. Please provide more context to make a unique match.',
    isError: true,
    applied: false,
  });
  expect(await edit({ command: 'str_replace', path: 'dup.txt', old_str: 'zzz', new_str: 'y' })).toMatchObject({
    text: 'Error: No match found for replacement. Please check your text and try again.',
    isError: true,
  });
  expect(fs.readFileSync(path.join(ws, 'dup.txt'), 'utf8')).toBe('x\nx\nx\n');
});

test('paths outside the workspace, with "..", or through a symlink out are refused; nothing outside is read or written', async () => {
  const { ws, edit, run } = await setup();
  const outside = tempDir('aj-edit-outside-');
  fs.writeFileSync(path.join(outside, 'secret.txt'), 'secret\n');
  expect((await edit({ command: 'view', path: '/etc/passwd' })).text).toMatch(/^Error: \/etc\/passwd is outside the workspace/);
  expect((await edit({ command: 'view', path: '../x' })).text).toMatch(/has a "\.\." component/);
  expect((await edit({ command: 'create', path: 'a/../../x', file_text: 'x' })).text).toMatch(/has a "\.\." component/);
  await run(`ln -s ${outside} out && ln -s ${outside}/secret.txt link.txt`);
  for (const input of [
    { command: 'view', path: 'link.txt' },
    { command: 'view', path: 'out/secret.txt' },
    { command: 'create', path: 'out/new.txt', file_text: 'x' },
    { command: 'str_replace', path: 'link.txt', old_str: 'secret', new_str: 'gone' },
  ]) {
    const r = await edit(input);
    expect(r.isError).toBe(true);
    expect(r.text).toMatch(/resolves outside the workspace/);
  }
  expect(fs.readFileSync(path.join(outside, 'secret.txt'), 'utf8')).toBe('secret\n');
  expect(fs.existsSync(path.join(outside, 'new.txt'))).toBe(false);
  expect(fs.lstatSync(path.join(ws, 'link.txt')).isSymbolicLink()).toBe(true);
});

test('the gate decides before a view is shown or a change written; a change comes with its unified diff', async () => {
  const { ws, edit } = await setup();
  const seen: ProposedEdit[] = [];
  const ask = (p: ProposedEdit): EditGate => (seen.push(p), { ask: 'a person must approve' });
  const v = await edit({ command: 'view', path: 'primes.py' }, ask);
  expect(v.needsApproval).toEqual({
    reason: 'a person must approve',
    review: `str_replace_based_edit_tool view ${ws}/primes.py`,
    ruleSubject: `str_replace_based_edit_tool view ${ws}/primes.py`,
  });
  expect(v.text).toBe('');
  const r = await edit({ command: 'str_replace', path: 'primes.py', old_str: 'range(3)', new_str: 'range(3):' }, ask);
  expect(r.applied).toBe(false);
  expect(r.needsApproval?.review).toBe(
    `--- a${ws}/primes.py\n+++ b${ws}/primes.py\n@@ -1,3 +1,3 @@\n def f():\n-    for n in range(3)\n+    for n in range(3):\n         print(n)\n`,
  );
  expect(fs.readFileSync(path.join(ws, 'primes.py'), 'utf8')).toContain('range(3)\n');
  const refused = await edit({ command: 'str_replace', path: 'primes.py', old_str: 'range(3)', new_str: 'range(4)' }, () => ({
    refuse: 'Error: no',
  }));
  expect(refused).toMatchObject({ text: 'Error: no', isError: true, applied: false });
});

(sandboxed ? test : test.skip)(
  'a file the editor creates is owned like one bash creates (the session user), and keeps its mode when changed',
  async () => {
    const { ws, edit, run } = await setup();
    await run('echo a > by-bash.txt && chmod 0750 by-bash.txt');
    await edit({ command: 'create', path: 'by-editor.txt', file_text: 'b\n' });
    const bash = fs.statSync(path.join(ws, 'by-bash.txt'));
    const editor = fs.statSync(path.join(ws, 'by-editor.txt'));
    expect([editor.uid, editor.gid]).toEqual([bash.uid, bash.gid]);
    expect(editor.uid).not.toBe(0);
    await edit({ command: 'str_replace', path: 'by-bash.txt', old_str: 'a', new_str: 'c' });
    const after = fs.statSync(path.join(ws, 'by-bash.txt'));
    expect(after.mode & 0o7777).toBe(0o750);
    expect(after.uid).toBe(bash.uid);
    // A file the session user may not write: the documented permission error.
    fs.writeFileSync(path.join(ws, 'root-only.txt'), 'r\n');
    fs.chownSync(path.join(ws, 'root-only.txt'), 0, 0);
    fs.chmodSync(path.join(ws, 'root-only.txt'), 0o600);
    expect((await edit({ command: 'view', path: 'root-only.txt' })).text).toBe('Error: Permission denied. Cannot read file.');
  },
);
