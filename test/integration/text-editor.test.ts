/**
 * The text editor tool (`text_editor_20250728`, `str_replace_based_edit_tool`) end to end
 * (docs/text-editor.md): offered beside bash by default and not with `tools: ['bash']`;
 * view/create/str_replace/insert with the documented texts and errors; under `policy` a view
 * runs unasked and a change waits with its unified diff bound by sha256; a worker lost while an
 * approved edit is on its way never applies it twice. Real dev server, real workers, the
 * scripted model server.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import { decideUpdate, removeRuleUpdate } from '../../src/contract';
import { DEFAULT_EDITOR_SYSTEM_PROMPT, DEFAULT_SYSTEM_PROMPT } from '../../src/contract/input';
import { workspaceFolderName } from '../../src/activities/session';
import type { ScriptContentBlock } from '../../src/dev/model-server';
import { cli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';
import { rejected } from './steering-helpers';

const edit = (id: string, input: Record<string, unknown>): ScriptContentBlock => ({
  type: 'tool_use',
  id,
  name: 'str_replace_based_edit_tool',
  input,
});
const sha = (s: string): string => createHash('sha256').update(s, 'utf8').digest('hex');
const done = { content: [{ type: 'text' as const, text: 'done' }], stop_reason: 'end_turn' };

describe('text editor', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('view, create, str_replace, insert and their errors, with the documented texts; files owned like those bash creates', async () => {
    const workflowId = `it-editor-${process.pid}-${Date.now()}`;
    bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [
              toolUse('toolu_prep', 'printf "x\\nx\\n" > dup.txt; ln -s /etc etc-link; echo bash > by-bash.txt'),
              edit('toolu_create', { command: 'create', path: 'notes.txt', file_text: 'alpha\nbeta\n' }),
              edit('toolu_view', { command: 'view', path: 'notes.txt' }),
            ],
          },
          {
            content: [
              edit('toolu_replace', { command: 'str_replace', path: 'notes.txt', old_str: 'beta', new_str: 'gamma' }),
              edit('toolu_insert', { command: 'insert', path: 'notes.txt', insert_line: 0, insert_text: 'top\n' }),
              edit('toolu_range', { command: 'view', path: 'notes.txt', view_range: [2, -1] }),
              toolUse('toolu_owner', 'stat -c %U:%G by-bash.txt notes.txt'),
            ],
          },
          {
            content: [
              edit('toolu_missing', { command: 'view', path: 'missing.txt' }),
              edit('toolu_dup', { command: 'str_replace', path: 'dup.txt', old_str: 'x', new_str: 'y' }),
              edit('toolu_nomatch', { command: 'str_replace', path: 'notes.txt', old_str: 'delta', new_str: 'y' }),
              edit('toolu_outside', { command: 'view', path: '/etc/passwd' }),
              edit('toolu_dotdot', { command: 'create', path: '../escape.txt', file_text: 'x' }),
              edit('toolu_symlink', { command: 'create', path: 'etc-link/evil.conf', file_text: 'x' }),
              edit('toolu_undo', { command: 'undo_edit', path: 'notes.txt' }),
            ],
          },
          done,
        ],
      },
    });
    const handle = await bed.start({ task: 'edit files', approval: 'auto' }, 'text-editor-auto', workflowId);
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    const ws = path.join(bed.workspaces, workspaceFolderName(workflowId));

    // The request offers both tools, in order, with max_characters, and the editor's system prompt.
    const first = bed.requests().find((r) => r.path === '/v1/messages')!.body as { tools: unknown[]; system: Array<{ text: string }> };
    expect(first.tools.map((t) => ({ ...(t as object), cache_control: undefined }))).toEqual([
      { type: 'bash_20250124', name: 'bash', cache_control: undefined },
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 20000, cache_control: undefined },
    ]);
    expect(first.system[0]!.text).toBe(DEFAULT_EDITOR_SYSTEM_PROMPT);
    // Every later request sends the same tools, byte for byte.
    const toolBytes = new Set(
      bed
        .requests()
        .filter((r) => r.path === '/v1/messages')
        .map((r) => JSON.stringify((r.body as { tools: unknown }).tools)),
    );
    expect(toolBytes.size).toBe(1);

    expect(bed.resultsSentIn(1).slice(1)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_create', content: `Successfully created file ${ws}/notes.txt.` },
      { type: 'tool_result', tool_use_id: 'toolu_view', content: '1: alpha\n2: beta' },
    ]);
    const second = bed.resultsSentIn(2);
    expect(second.slice(0, 3)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_replace', content: 'Successfully replaced text at exactly one location.' },
      { type: 'tool_result', tool_use_id: 'toolu_insert', content: 'Successfully inserted text after line 0.' },
      { type: 'tool_result', tool_use_id: 'toolu_range', content: '2: alpha\n3: gamma' },
    ]);
    const [bashOwner, editorOwner] = String(second[3]!.content).split('\n');
    expect(editorOwner).toBe(bashOwner);
    expect(fs.readFileSync(path.join(ws, 'notes.txt'), 'utf8')).toBe('top\nalpha\ngamma\n');

    const errors = bed.resultsSentIn(3);
    for (const r of errors) expect(r.is_error).toBe(true);
    expect(errors.map((r) => r.content)).toEqual([
      'Error: File not found',
      'Error: Found 2 matches for replacement text. Please provide more context to make a unique match.',
      'Error: No match found for replacement. Please check your text and try again.',
      expect.stringMatching(/^Error: \/etc\/passwd is outside the workspace/),
      expect.stringMatching(/has a "\.\." component/),
      expect.stringMatching(/resolves outside the workspace/),
      expect.stringMatching(/undo_edit is not supported/),
    ]);
    expect(fs.existsSync(path.join(bed.workspaces, 'escape.txt'))).toBe(false);
    // The audit log covers edits: one line per editor command, with whether it wrote.
    const audit = bed.audit() as Array<{ command: string; edit?: { applied: boolean } }>;
    expect(audit.filter((a) => a.edit?.applied).map((a) => a.command)).toEqual([
      `str_replace_based_edit_tool create ${ws}/notes.txt`,
      `str_replace_based_edit_tool str_replace ${ws}/notes.txt`,
      `str_replace_based_edit_tool insert ${ws}/notes.txt`,
    ]);
  });

  test('under policy a view runs unasked; a change waits with its diff, a wrong sha is refused, the right one applies it; a denial writes nothing', async () => {
    const workflowId = `it-editor-policy-${process.pid}-${Date.now()}`;
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_prep', 'echo "one two" > a.txt')] },
          {
            content: [
              edit('toolu_view', { command: 'view', path: 'a.txt' }),
              edit('toolu_change', { command: 'str_replace', path: 'a.txt', old_str: 'two', new_str: 'three' }),
            ],
          },
          { content: [edit('toolu_new', { command: 'create', path: 'b.txt', file_text: 'b\n' })] },
          done,
        ],
      },
    });
    const handle = await bed.start(
      { task: 'edit under policy', approval: 'policy', approvalTimeout: '2 minutes' },
      'text-editor-policy',
      workflowId,
    );
    const ws = path.join(bed.workspaces, workspaceFolderName(workflowId));
    const prep = await bed.pendingApproval(handle);
    await handle.executeUpdate(decideUpdate, {
      args: [
        { toolUseId: prep.toolUseId, approved: true, by: 'alice', commandSha256: prep.commandSha256, runId: prep.runId, wait: prep.wait },
      ],
    });

    const p = await waitFor('the edit to wait', async () => {
      const v = (await bed.status(handle)).pendingApproval;
      return v?.toolUseId === 'toolu_change' ? v : null;
    });
    const diff = `--- a${ws}/a.txt\n+++ b${ws}/a.txt\n@@ -1 +1 @@\n-one two\n+one three\n`;
    expect(p.command).toBe(diff);
    expect(p.display).toBe(diff);
    expect(p.commandSha256).toBe(sha(diff));
    expect(p.edit).toEqual({
      command: 'str_replace',
      path: `${ws}/a.txt`,
      ruleSubject: `str_replace_based_edit_tool str_replace ${ws}/a.txt`,
    });
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('one two\n');
    expect(
      await rejected(
        handle.executeUpdate(decideUpdate, {
          args: [
            { toolUseId: 'toolu_change', approved: true, by: 'alice', commandSha256: sha('something else'), runId: p.runId, wait: p.wait },
          ],
        }),
      ),
    ).toMatch(/not the hash of the pending command/);
    expect(
      await rejected(
        handle.executeUpdate(decideUpdate, {
          args: [
            {
              toolUseId: 'toolu_change',
              approved: true,
              by: 'alice',
              commandSha256: p.commandSha256,
              runId: p.runId,
              wait: p.wait,
              edit: 'rm -rf .',
            },
          ],
        }),
      ),
    ).toMatch(/cannot be replaced by the reviewer/);
    expect(
      await rejected(
        handle.executeUpdate(decideUpdate, {
          args: [
            {
              toolUseId: 'toolu_change',
              approved: true,
              by: 'alice',
              commandSha256: p.commandSha256,
              runId: p.runId,
              wait: p.wait,
              alwaysPrefix: 'echo',
            },
          ],
        }),
      ),
    ).toMatch(/a rule for edits is a word prefix/);
    // Approved through the CLI, which shows the diff line by line as status does (not one escaped line with a warning).
    const approved = await cli(bed.address, 'approve', workflowId, '--sha', p.commandSha256.slice(0, 12), '--by', 'alice');
    expect(approved.code).toBe(0);
    expect(approved.stdout).toBe(
      [
        `approved toolu_change in ${workflowId} by alice: text editor str_replace ${ws}/a.txt`,
        ...diff
          .replace(/\n$/, '')
          .split('\n')
          .map((l) => `    ${l}`),
        `    sha256 ${p.commandSha256.slice(0, 12)} (${p.commandSha256})`,
        // What the approved edit then did, read back from the run.
        '  written',
        '',
      ].join('\n'),
    );

    const create = await waitFor('the create to wait', async () => {
      const v = (await bed.status(handle)).pendingApproval;
      return v?.toolUseId === 'toolu_new' ? v : null;
    });
    expect(create.command).toBe(`--- /dev/null\n+++ b${ws}/b.txt\n@@ -0,0 +1 @@\n+b\n`);
    await handle.executeUpdate(decideUpdate, {
      args: [
        {
          toolUseId: 'toolu_new',
          approved: false,
          by: 'alice',
          reason: 'no new files',
          commandSha256: create.commandSha256,
          runId: create.runId,
          wait: create.wait,
        },
      ],
    });
    expect(await handle.result()).toMatchObject({ status: 'completed' });

    expect(bed.resultsSentIn(2)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_view', content: '1: one two' },
      { type: 'tool_result', tool_use_id: 'toolu_change', content: 'Successfully replaced text at exactly one location.' },
    ]);
    expect(bed.resultsSentIn(3)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_new', content: 'Edit not made: denied by alice. Reason: no new files.', is_error: true },
    ]);
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('one three\n');
    expect(fs.existsSync(path.join(ws, 'b.txt'))).toBe(false);
    const decisions = (await bed.status(handle)).decisions;
    expect(decisions.map((d) => [d.toolUseId, d.decision, d.command])).toEqual([
      ['toolu_prep', 'approved', 'echo "one two" > a.txt'],
      ['toolu_change', 'approved', `str_replace_based_edit_tool str_replace ${ws}/a.txt`],
      ['toolu_new', 'denied', `str_replace_based_edit_tool create ${ws}/b.txt`],
    ]);
  });

  test('an approved edit the worker then refuses (the file changed since it was shown): approve says nothing was written, and why', async () => {
    const workflowId = `it-editor-refused-${process.pid}-${Date.now()}`;
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_prep', 'echo "one two" > a.txt')] },
          { content: [edit('toolu_change', { command: 'str_replace', path: 'a.txt', old_str: 'two', new_str: 'three' })] },
          done,
        ],
      },
    });
    const handle = await bed.start(
      { task: 'edit refused', approval: 'policy', approvalTimeout: '2 minutes' },
      'text-editor-refused',
      workflowId,
    );
    const ws = path.join(bed.workspaces, workspaceFolderName(workflowId));
    const prep = await bed.pendingApproval(handle);
    await handle.executeUpdate(decideUpdate, {
      args: [
        { toolUseId: prep.toolUseId, approved: true, by: 'alice', commandSha256: prep.commandSha256, runId: prep.runId, wait: prep.wait },
      ],
    });
    const p = await waitFor('the edit to wait', async () => {
      const v = (await bed.status(handle)).pendingApproval;
      return v?.toolUseId === 'toolu_change' ? v : null;
    });
    // Someone writes the file while the edit waits: the change it would make now is not the one shown.
    fs.appendFileSync(path.join(ws, 'a.txt'), 'more\n');
    const approved = await cli(bed.address, 'approve', workflowId, '--sha', p.commandSha256.slice(0, 12), '--by', 'alice');
    expect(approved.stdout).toMatch(new RegExp(`^approved toolu_change in ${workflowId} by alice: text editor str_replace `));
    expect(approved.stdout).toContain(`\n  but nothing was written: Error: ${ws}/a.txt changed since the edit was shown for approval`);
    expect(approved.code).toBe(1);
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('one two\nmore\n');
    expect((await handle.result()).status).toBe('completed');
  }, 120_000);

  test("under always an edit or a command an approval rule lets through is recorded as the rule's decision, in status and read back from a closed run's history", async () => {
    const workflowId = `it-editor-rule-${process.pid}-${Date.now()}`;
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [edit('toolu_mk', { command: 'create', path: 'a.txt', file_text: 'one\n' })] },
          { content: [edit('toolu_r1', { command: 'str_replace', path: 'a.txt', old_str: 'one', new_str: 'two' })] },
          { content: [edit('toolu_r2', { command: 'str_replace', path: 'a.txt', old_str: 'two', new_str: 'three' })] },
          { content: [toolUse('toolu_b1', 'touch b.txt')] },
          { content: [toolUse('toolu_b2', 'touch b.txt')] },
          done,
        ],
      },
    });
    const handle = await bed.start(
      { task: 'edit by rule', approval: 'always', approvalTimeout: '2 minutes' },
      'text-editor-rule',
      workflowId,
    );
    const ws = path.join(bed.workspaces, workspaceFolderName(workflowId));
    const approveNext = async (id: string, always: boolean): Promise<void> => {
      const p = await bed.pendingApprovalOf(handle, id);
      await handle.executeUpdate(decideUpdate, {
        args: [
          {
            toolUseId: id,
            approved: true,
            by: 'rita',
            commandSha256: p.commandSha256,
            runId: p.runId,
            wait: p.wait,
            ...(always ? { always: true } : {}),
          },
        ],
      });
    };
    await approveNext('toolu_mk', false);
    await approveNext('toolu_r1', true);
    // Rule 1 removed while toolu_b1 waits (toolu_r2 ran by it already): the closed run's rules are what the removal left.
    await waitFor('toolu_b1 to wait', async () => (await bed.status(handle)).pendingApproval?.toolUseId === 'toolu_b1');
    await handle.executeUpdate(removeRuleUpdate, { args: [{ id: 1, by: 'rita' }] });
    await approveNext('toolu_b1', true);
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    expect(fs.readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('three\n');
    const decisions = (await bed.status(handle)).decisions;
    const expected = [
      ['toolu_mk', 'update', undefined],
      ['toolu_r1', 'update', 1],
      ['toolu_r2', 'rule', 1],
      ['toolu_b1', 'update', 2],
      ['toolu_b2', 'rule', 2],
    ];
    expect(decisions.map((d) => [d.toolUseId, d.source, d.rule])).toEqual(expected);
    expect(decisions[2]).toMatchObject({ by: 'rita', approved: true });
    // A closed run's status is read from its history (no query): the rules' decisions are there too, as the run recorded them.
    const closed = JSON.parse((await cli(bed.address, 'status', workflowId, '--json')).stdout) as { decisions: typeof decisions };
    expect(closed.decisions.map((d) => [d.toolUseId, d.source, d.rule])).toEqual(expected);
    const strip = (d: (typeof decisions)[number]): object => ({ ...d, at: undefined });
    expect(closed.decisions.filter((d) => d.source === 'rule').map(strip)).toEqual(decisions.filter((d) => d.source === 'rule').map(strip));
    // The rules as the run left them, read from the history as the query (a replay) reads them.
    const rules = (await bed.status(handle)).rules;
    expect(rules).toEqual([expect.objectContaining({ id: 2, kind: 'exact', text: 'touch b.txt', by: 'rita', toolUseId: 'toolu_b1' })]);
    expect((closed as unknown as { rules: unknown }).rules).toEqual(rules);
    const text = (await cli(bed.address, 'status', workflowId)).stdout;
    expect(text).toMatch(/\n {2}approval rules:\n {4}2\. exactly "touch b\.txt"/);
  }, 120_000);

  test('tools: [bash] offers no editor: the request lists bash alone, the old system prompt, and an editor call is an unknown tool', async () => {
    bed = await TestBed.create({
      script: { responses: [{ content: [edit('toolu_e', { command: 'view', path: '.' })] }, done] },
    });
    const handle = await bed.start({ task: 'bash only', approval: 'auto', tools: ['bash'] }, 'text-editor-bash-only');
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    const body = bed.requests().find((r) => r.path === '/v1/messages')!.body as {
      tools: Array<{ name: string }>;
      system: Array<{ text: string }>;
    };
    expect(body.tools.map((t) => t.name)).toEqual(['bash']);
    expect(body.system[0]!.text).toBe(DEFAULT_SYSTEM_PROMPT);
    expect(bed.resultsSentIn(1)).toEqual([
      {
        type: 'tool_result',
        tool_use_id: 'toolu_e',
        content: 'Unknown tool "str_replace_based_edit_tool": the only tool here is "bash".',
        is_error: true,
      },
    ]);
  });

  test('the worker holding the session is killed while an approved edit is on its way: the edit is never applied twice, Claude is told', async () => {
    const workflowId = `it-editor-crash-${process.pid}-${Date.now()}`;
    const change = { command: 'insert', path: 'log.txt', insert_line: 1, insert_text: 'once\n' };
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [edit('toolu_create', { command: 'create', path: 'log.txt', file_text: 'start\n' })] },
          { content: [edit('toolu_insert', change)] },
          { content: [edit('toolu_again', change)] },
          done,
        ],
      },
    });
    const first = bed.workers[0]!;
    const handle = await bed.start(
      { task: 'edit across a crash', approval: 'always', approvalTimeout: '5 minutes', tools: ['text_editor'] },
      'text-editor-worker-lost',
      workflowId,
    );
    const ws = path.join(bed.workspaces, workspaceFolderName(workflowId));
    const c = await bed.pendingApproval(handle);
    await handle.executeUpdate(decideUpdate, {
      args: [{ toolUseId: c.toolUseId, approved: true, by: 'alice', commandSha256: c.commandSha256, runId: c.runId, wait: c.wait }],
    });
    const p = await waitFor('the insert to wait', async () => {
      const v = (await bed.status(handle)).pendingApproval;
      return v?.toolUseId === 'toolu_insert' ? v : null;
    });
    // The session's worker dies; the approval sends the edit to its queue, where nobody takes it.
    await first.kill();
    await bed.startWorker();
    await handle.executeUpdate(decideUpdate, {
      args: [{ toolUseId: 'toolu_insert', approved: true, by: 'alice', commandSha256: p.commandSha256, runId: p.runId, wait: p.wait }],
    });
    const again = await waitFor(
      'the second insert to wait',
      async () => {
        const v = (await bed.status(handle)).pendingApproval;
        return v?.toolUseId === 'toolu_again' ? v : null;
      },
      60_000,
    );
    const lost = bed.resultsSentIn(2)[0]!;
    expect(lost).toMatchObject({ tool_use_id: 'toolu_insert', is_error: true });
    expect(lost.content).toMatch(/session was lost/);
    expect(lost.content).toMatch(/edit was not made|may or may not have been written/);
    expect(fs.readFileSync(path.join(ws, 'log.txt'), 'utf8')).toBe('start\n');
    await handle.executeUpdate(decideUpdate, {
      args: [
        { toolUseId: 'toolu_again', approved: true, by: 'alice', commandSha256: again.commandSha256, runId: again.runId, wait: again.wait },
      ],
    });
    expect(await handle.result()).toMatchObject({ status: 'completed' });
    expect(fs.readFileSync(path.join(ws, 'log.txt'), 'utf8')).toBe('start\nonce\n');
    const body = bed.requests().find((r) => r.path === '/v1/messages')!.body as { tools: Array<{ name: string }> };
    expect(body.tools.map((t) => t.name)).toEqual(['str_replace_based_edit_tool']);
  }, 180_000);
});
