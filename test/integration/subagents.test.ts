/**
 * Sub-agents as child workflows (docs/subagents.md), on the real dev server with real workers,
 * real bash and the scripted model (each child's conversation answered by its own `conversations`
 * entry): parallel calls run at once and come back as tool_results; a child's approval is listed
 * by `pending` with its parent and decided through the CLI; cancelling the parent ends its
 * children; a child's failure is an `is_error` result and the parent goes on; with
 * `subagentWorkspace: 'worktree'` a child works in a git worktree of the parent's workspace.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import path from 'node:path';
import type { ScriptContentBlock } from '../../src/dev/model-server';
import { subagentWorkflowId } from '../../src/contract/subagent';
import { statusQuery, type AgentRunResult, type ToolResultBlock } from '../../src/contract';
import { cli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';

const subagent = (id: string, description: string, prompt: string): ScriptContentBlock => ({
  type: 'tool_use',
  id,
  name: 'subagent',
  input: { description, prompt },
});
const turn = (...content: ScriptContentBlock[]) => ({ content, stop_reason: 'tool_use' as const });
const say = (text: string) => ({ content: [{ type: 'text' as const, text }], stop_reason: 'end_turn' as const });
/** A child's script: one command, then its answer. */
const child = (task: string, command: string, answer: string) => ({
  task,
  responses: [turn(toolUse(`toolu_${task.replace(/\W/g, '')}`, command)), say(answer)],
});

/** The `tool_result` blocks of the `i`-th answered request (0-based) of the conversation whose task holds `task` (the parent's and its children's requests interleave). */
function resultsSentTo(bed: TestBed, task: string, i: number): ToolResultBlock[] {
  const messages = bed.sentMessages().filter((m) => JSON.stringify(m[0]).includes(task))[i]!;
  return messages[messages.length - 1]!.content as ToolResultBlock[];
}

describe('sub-agents', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('two subagent calls in one answer run at once; the parent gets both final answers as tool_results', async () => {
    // Each child notes when its command started and ended (ns) and, between, waits (at most about 60 s) until the
    // other's has started: run at once, both go on; run one after the other, the first ends alone, after its wait,
    // before the second starts, and the overlap checks below fail. (A fixed sleep could end before a loaded machine
    // had started the other child at all.)
    const timed = (name: string, other: string) =>
      `date +%s%N > ${name}.start; for i in $(seq 1200); do [ -e ${other}.start ] && break; sleep 0.05; done; ` +
      `echo ${name} > ${name}.txt; date +%s%N > ${name}.end`;
    bed = await TestBed.create({
      script: {
        responses: [
          turn(subagent('toolu_sa', 'write a', 'child-a: write a.txt'), subagent('toolu_sb', 'write b', 'child-b: write b.txt')),
          say('both children answered'),
        ],
        conversations: [child('child-a', timed('a', 'b'), 'A is written'), child('child-b', timed('b', 'a'), 'B is written')],
      },
      workers: 1,
    });
    const handle = await bed.start(
      { task: 'split the work', approval: 'auto', subagents: 2 },
      'subagents-parallel',
      // Saved histories replay under their file name as workflow id, from which the children's ids are derived.
      'subagents-parallel',
    );
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'both children answered' });

    // Both children worked in the parent's workspace, at the same time.
    const ws = path.join(bed.workspaces, handle.workflowId);
    const ns = (f: string): bigint => BigInt(readFileSync(path.join(ws, f), 'utf8').trim());
    expect(readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('a\n');
    expect(readFileSync(path.join(ws, 'b.txt'), 'utf8')).toBe('b\n');
    expect(ns('a.start')).toBeLessThan(ns('b.end'));
    expect(ns('b.start')).toBeLessThan(ns('a.end'));

    // The parent's second request carries both results, in tool_use order.
    const results = resultsSentTo(bed, 'split the work', 1);
    expect(results.map((r) => [r.tool_use_id, r.content, r.is_error ?? false])).toEqual([
      ['toolu_sa', 'A is written', false],
      ['toolu_sb', 'B is written', false],
    ]);
    // The children are the parent's child workflows, with ids derived from it and the tool_use ids.
    for (const id of ['toolu_sa', 'toolu_sb']) {
      const d = await bed.client.workflow.getHandle(subagentWorkflowId(handle.workflowId, id)).describe();
      expect(d.status.name).toBe('COMPLETED');
      expect(d.raw.workflowExecutionInfo?.parentExecution?.workflowId).toBe(handle.workflowId);
    }
    // A child offers no subagent tool of its own; the parent does.
    const toolsOf = (task: string): string[] => {
      const r = bed.requests().find((q) => JSON.stringify((q.body as { messages?: unknown[] })?.messages?.[0] ?? '').includes(task));
      return ((r?.body as { tools: Array<{ name: string }> }).tools ?? []).map((t) => t.name);
    };
    expect(toolsOf('split the work')).toContain('subagent');
    expect(toolsOf('child-a')).not.toContain('subagent');
  }, 120_000);

  test('at most N at once: with subagents 1 the second call waits until the first child has ended', async () => {
    const timed = (name: string) => `date +%s%N > ${name}.start; sleep 1; date +%s%N > ${name}.end`;
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_s1', 'first', 'child-1: go'), subagent('toolu_s2', 'second', 'child-2: go')), say('in turn')],
        conversations: [child('child-1', timed('one'), 'one done'), child('child-2', timed('two'), 'two done')],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'one at a time', approval: 'auto', subagents: 1 });
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'in turn' });
    const ws = path.join(bed.workspaces, handle.workflowId);
    const ns = (f: string): bigint => BigInt(readFileSync(path.join(ws, f), 'utf8').trim());
    expect(ns('one.end')).toBeLessThan(ns('two.start'));
    expect(resultsSentTo(bed, 'one at a time', 1).map((r) => r.content)).toEqual(['one done', 'two done']);
  }, 120_000);

  test("a child's approval is listed by pending with the parent's id and decided through the CLI", async () => {
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_sp', 'write under policy', 'child-p: write p.txt')), say('the child is done')],
        conversations: [child('child-p', 'echo p > p.txt', 'p is written')],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'hand over a write', approval: 'policy', subagents: 1 }, undefined);
    const childId = subagentWorkflowId(handle.workflowId, 'toolu_sp');
    const listed = await waitFor(
      'the child in pending',
      async () => {
        const r = await cli(bed.address, 'pending');
        return r.stdout.includes(childId) && r.stdout;
      },
      60_000,
    );
    expect(listed).toContain(`sub-agent of ${handle.workflowId}`);
    const json = JSON.parse((await cli(bed.address, 'pending', '--json')).stdout) as Array<{ workflowId: string; parentId?: string }>;
    expect(json.find((r) => r.workflowId === childId)).toMatchObject({ parentId: handle.workflowId });
    const status = await cli(bed.address, 'status', childId);
    expect(status.stdout).toContain(`sub-agent of: ${handle.workflowId}`);
    // The parent, meanwhile, says it waits for its sub-agent (not for Claude: its model call is long done).
    const parent = await cli(bed.address, 'status', handle.workflowId);
    expect(parent.stdout).toContain(`now:    waiting for its sub-agent \`${childId}\` (turn 1)`);
    expect(parent.stdout).not.toContain('waiting for Claude');

    const approved = await cli(bed.address, 'approve', childId, '--by', 'alice');
    expect(approved.code).toBe(0);
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'the child is done' });
    expect(resultsSentTo(bed, 'hand over a write', 1)[0]).toMatchObject({ tool_use_id: 'toolu_sp', content: 'p is written' });
    expect(readFileSync(path.join(bed.workspaces, handle.workflowId, 'p.txt'), 'utf8')).toBe('p\n');
  }, 120_000);

  test("the parent's approval rules apply to a child: a command a rule allows runs without a person", async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          turn(toolUse('toolu_px', 'touch x.txt')),
          turn(subagent('toolu_sr', 'write again', 'child-r: write x.txt again')),
          say('the rule held'),
        ],
        conversations: [child('child-r', 'touch x.txt', 'x is written again')],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'rules for the child', approval: 'policy', subagents: 1 });
    await bed.pendingApproval(handle, 60_000);
    const approved = await cli(bed.address, 'approve', handle.workflowId, '--always', '--by', 'alice');
    expect(approved.code).toBe(0);
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'the rule held' });
    expect(resultsSentTo(bed, 'rules for the child', 2)[0]).toMatchObject({ tool_use_id: 'toolu_sr', content: 'x is written again' });
    const childView = await bed.client.workflow.getHandle(subagentWorkflowId(handle.workflowId, 'toolu_sr')).query(statusQuery);
    expect(childView.rules).toEqual([expect.objectContaining({ kind: 'exact', text: 'touch x.txt', by: 'alice' })]);
    expect(childView.decisions).toEqual([expect.objectContaining({ source: 'rule', approved: true, command: 'touch x.txt' })]);
  }, 120_000);

  test('cancelling the parent ends its children', async () => {
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_sc', 'wait long', 'child-c: sleep')), say('never')],
        conversations: [child('child-c', 'sleep 120', 'slept')],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'start a long child', approval: 'auto', subagents: 1 }, undefined);
    const childHandle = bed.client.workflow.getHandle(subagentWorkflowId(handle.workflowId, 'toolu_sc'));
    // The child's command runs (its details name it) when the parent is cancelled.
    await waitFor('the child to run sleep', async () => (await childHandle.query(statusQuery)).details.includes('sleep'), 60_000);
    await handle.cancel();
    expect(await handle.result()).toMatchObject({ status: 'cancelled' });
    const closed = await waitFor(
      'the child to close',
      async () => {
        const d = await childHandle.describe();
        return d.status.name !== 'RUNNING' && d;
      },
      30_000,
    );
    expect(['COMPLETED', 'CANCELLED', 'TERMINATED']).toContain(closed.status.name);
    if (closed.status.name === 'COMPLETED') expect(((await childHandle.result()) as AgentRunResult).status).toBe('cancelled');
  }, 120_000);

  test("a child's failure comes back as an is_error tool_result and the parent goes on", async () => {
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_sf', 'fail', 'child-f: fail')), say('went on without it')],
        conversations: [
          {
            task: 'child-f',
            responses: [
              {
                error: {
                  status: 400,
                  body: { type: 'error', error: { type: 'invalid_request_error', message: 'scripted refusal of the child' } },
                },
              },
            ],
          },
        ],
      },
      workers: 1,
    });
    const handle = await bed.start(
      { task: 'hand over a doomed task', approval: 'auto', subagents: 1 },
      'subagents-failure',
      'subagents-failure',
    );
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'went on without it' });
    const [result] = resultsSentTo(bed, 'hand over a doomed task', 1);
    expect(result).toMatchObject({ tool_use_id: 'toolu_sf', is_error: true });
    expect(result!.content).toContain('ended failed');
    expect(result!.content).toContain('scripted refusal of the child');
  }, 120_000);
  test('with subagentWorkspace worktree a child works in a git worktree of the parent workspace, kept and named in the result', async () => {
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_sw', 'write in a worktree', 'child-w: write w.txt')), say('the child wrote in its worktree')],
        conversations: [child('child-w', 'echo w > w.txt && pwd', 'w is written')],
      },
      workers: 1,
    });
    // The parent's default workspace, a git repository with one commit.
    const id = 'subagents-worktree';
    const ws = path.join(bed.workspaces, id);
    mkdirSync(ws, { recursive: true });
    const git = (cwd: string, ...args: string[]): string =>
      execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' });
    git(ws, 'init', '-q');
    writeFileSync(path.join(ws, 'README'), 'base\n');
    git(ws, 'add', 'README');
    git(ws, 'commit', '-q', '-m', 'base');

    const handle = await bed.start(
      { task: 'work in a worktree', approval: 'auto', subagents: 1, subagentWorkspace: 'worktree' },
      'subagents-worktree',
      id,
    );
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'the child wrote in its worktree' });

    const childId = subagentWorkflowId(id, 'toolu_sw');
    const worktree = path.join(bed.workspaces, '.subagent-worktrees', childId);
    // The file is in the worktree (an untracked file of the repository's worktree), not in the parent's workspace.
    expect(readFileSync(path.join(worktree, 'w.txt'), 'utf8')).toBe('w\n');
    expect(readFileSync(path.join(worktree, 'README'), 'utf8')).toBe('base\n');
    expect(existsSync(path.join(ws, 'w.txt'))).toBe(false);
    expect(git(worktree, 'status', '--porcelain')).toBe('?? w.txt\n');
    expect(git(ws, 'status', '--porcelain')).toBe('');
    expect(git(ws, 'worktree', 'list')).toContain(worktree);
    // The child's bash ran there, and the tool_result names the worktree.
    const [result] = resultsSentTo(bed, 'work in a worktree', 1);
    expect(result).toMatchObject({ tool_use_id: 'toolu_sw' });
    expect(result!.is_error ?? false).toBe(false);
    expect(result!.content).toContain('w is written');
    expect(result!.content).toContain(`git worktree ${worktree}`);
    const childRun = bed.sentMessages().find((m) => JSON.stringify(m[0]).includes('child-w') && JSON.stringify(m).includes('toolu_childw'));
    expect(JSON.stringify(childRun)).toContain(worktree);
  }, 120_000);

  test("in its worktree a child runs git status, add and commit under the sandbox; the parent's repository has the commit; the child cannot plant a hook or config, move a branch or write the parent's files", async () => {
    const commit =
      'git status --porcelain --branch && echo c > c.txt && git add c.txt && ' +
      'git -c user.name=child -c user.email=child@example.com commit -q -m "from the child" && git log --format=%H:%s -1';
    // Each attack prints its marker only when it worked; the folder listing shows what the child sees of the parent.
    const attacks = [
      'common=$(git rev-parse --path-format=absolute --git-common-dir)',
      `(printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > "$common/hooks/post-commit" && chmod +x "$common/hooks/post-commit" && echo HOOK-PLANTED)`,
      '(git config core.hooksPath "$PWD/.hooks" && echo HOOKSPATH-SET)',
      `(printf '[filter "x"]\\n\\tsmudge = touch /tmp/pwned\\n' >> "$common/config" && echo FILTER-ADDED)`,
      '(git update-ref refs/heads/main HEAD && echo BRANCH-MOVED)',
      '(echo x > "$common/../planted" && echo PLANTED)',
      '(echo x >> "$common/../README" && echo README-CHANGED)',
      'echo "parent: $(ls -A "$common/..")"',
    ].join('; ');
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_sg', 'commit in a worktree', 'child-g: commit c.txt')), say('the child committed')],
        conversations: [
          {
            task: 'child-g',
            responses: [turn(toolUse('toolu_gcommit', commit)), turn(toolUse('toolu_gattack', attacks)), say('committed')],
          },
        ],
      },
      workers: 1,
    });
    const id = 'subagents-worktree-git';
    const ws = path.join(bed.workspaces, id);
    mkdirSync(ws, { recursive: true });
    const git = (cwd: string, ...args: string[]): string =>
      execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' }).trim();
    git(ws, 'init', '-q', '-b', 'main');
    writeFileSync(path.join(ws, 'README'), 'base\n');
    git(ws, 'add', 'README');
    git(ws, 'commit', '-q', '-m', 'base');
    const main = git(ws, 'rev-parse', 'main');
    const common = path.join(ws, '.git');
    const config = readFileSync(path.join(common, 'config'), 'utf8');
    const hooks = readdirSync(path.join(common, 'hooks')).sort();

    const handle = await bed.start(
      { task: 'commit in a worktree', approval: 'auto', subagents: 1, subagentWorkspace: 'worktree' },
      'subagents-worktree-git',
      id,
    );
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'the child committed' });

    // The child's session ran in the sandbox, where git worked: its first result is the commit.
    const [committed] = resultsSentTo(bed, 'child-g', 1);
    expect(committed).toMatchObject({ tool_use_id: 'toolu_gcommit' });
    expect(committed!.is_error ?? false).toBe(false);
    const lines = String(committed!.content).trim().split('\n');
    expect(lines[0]).toBe('## HEAD (no branch)');
    const [sha, subject] = lines[lines.length - 1]!.split(':');
    expect(subject).toBe('from the child');
    expect(sha).toMatch(/^[0-9a-f]{40}$/);
    // The parent's repository has it by sha; its branch and working tree did not move.
    const worktree = path.join(bed.workspaces, '.subagent-worktrees', subagentWorkflowId(id, 'toolu_sg'));
    expect(git(ws, 'cat-file', '-t', sha!)).toBe('commit');
    expect(git(ws, 'show', `${sha}:c.txt`)).toBe('c');
    expect(git(worktree, 'rev-parse', 'HEAD')).toBe(sha);
    expect(git(ws, 'rev-parse', 'main')).toBe(main);
    expect(git(ws, 'status', '--porcelain')).toBe('');

    // Every attack failed, seen from inside and on the host.
    const [attacked] = resultsSentTo(bed, 'child-g', 2);
    expect(attacked).toMatchObject({ tool_use_id: 'toolu_gattack' });
    const said = String(attacked!.content);
    for (const marker of ['HOOK-PLANTED', 'HOOKSPATH-SET', 'FILTER-ADDED', 'BRANCH-MOVED', 'PLANTED', 'README-CHANGED'])
      expect([marker, said.includes(marker)]).toEqual([marker, false]);
    expect(said).toMatch(/^parent: \.git$/m);
    expect(readFileSync(path.join(common, 'config'), 'utf8')).toBe(config);
    expect(readdirSync(path.join(common, 'hooks')).sort()).toEqual(hooks);
    expect(existsSync(path.join(ws, 'planted'))).toBe(false);
    expect(readFileSync(path.join(ws, 'README'), 'utf8')).toBe('base\n');
    // The directories reached the child's session in its input (set by the parent's workflow from createWorktree's answer).
    const history = await decodedHistory(await bed.client.workflow.getHandle(subagentWorkflowId(id, 'toolu_sg')).fetchHistory());
    const payload = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    const childInput = JSON.parse(Buffer.from(payload!.data!).toString('utf8')) as { worktreeGit?: unknown };
    const realCommon = realpathSync(common);
    expect(childInput.worktreeGit).toEqual({ commonDir: realCommon, gitDir: path.join(realCommon, 'worktrees', path.basename(worktree)) });
  }, 120_000);

  test('with subagentWorkspace worktree a workspace that is no git repository is an is_error result and no child starts', async () => {
    bed = await TestBed.create({
      script: {
        responses: [turn(subagent('toolu_sn', 'no repository', 'child-n: write n.txt')), say('went on without a worktree')],
        conversations: [child('child-n', 'echo n > n.txt', 'n is written')],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'worktree without git', approval: 'auto', subagents: 1, subagentWorkspace: 'worktree' });
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'went on without a worktree' });
    const [result] = resultsSentTo(bed, 'worktree without git', 1);
    const ws = path.join(bed.workspaces, handle.workflowId);
    expect(result).toMatchObject({
      tool_use_id: 'toolu_sn',
      is_error: true,
      content: `The sub-agent was not started: --subagent-workspace worktree needs a git repository, and ${ws} is not in one.`,
    });
    // No child was started: no workflow, no request of its conversation, no file.
    await expect(bed.client.workflow.getHandle(subagentWorkflowId(handle.workflowId, 'toolu_sn')).describe()).rejects.toThrow();
    expect(bed.sentMessages().some((m) => JSON.stringify(m[0]).includes('child-n'))).toBe(false);
    expect(existsSync(path.join(ws, 'n.txt'))).toBe(false);
  }, 120_000);
});
