/** The subagent tool's input, its child's workflow id, and the input fields that turn it on (src/contract/subagent.ts). */
import { resolveInput } from '../../../src/contract/input';
import { MAX_SUBAGENTS, parseSubagentInput, subagentWorkflowId, workspaceFolderName } from '../../../src/contract/subagent';

describe('the subagent tool', () => {
  test('its input needs a non-empty prompt and a short non-empty description', () => {
    expect(parseSubagentInput({ description: ' count ', prompt: 'count the files' })).toEqual({
      ok: true,
      request: { description: 'count', prompt: 'count the files' },
    });
    for (const bad of [
      null,
      'text',
      {},
      { description: 'x' },
      { description: 'x', prompt: '  ' },
      { prompt: 'p' },
      { description: 'x'.repeat(201), prompt: 'p' },
    ]) {
      const r = parseSubagentInput(bad);
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.text).toMatch(/^Error: /);
    }
  });

  test("a child's workflow id is derived from the parent's and the tool_use id; its workspace folder is the parent's", () => {
    expect(subagentWorkflowId('run-1', 'toolu_01')).toBe('run-1.subagent.toolu_01');
    expect(workspaceFolderName('a/b c')).toBe('a_b_c');
    expect(workspaceFolderName('..x')).toBe('_x');
  });

  test('subagents is 1..16; a sub-agent (subagentOf set) never offers the tool itself', () => {
    const on = resolveInput({ task: 't', subagents: 2 });
    expect(on.ok && on.input.subagents).toBe(2);
    const off = resolveInput({ task: 't' });
    expect(off.ok && off.input.subagents).toBeUndefined();
    const child = resolveInput({ task: 't', subagents: 2, subagentOf: 'run-1' });
    expect(child.ok && child.input.subagents).toBeUndefined();
    expect(child.ok && child.input.subagentOf).toBe('run-1');
    expect(resolveInput({ task: 't', subagents: 0 }).ok).toBe(false);
    expect(resolveInput({ task: 't', subagents: MAX_SUBAGENTS + 1 }).ok).toBe(false);
  });

  test("worktreeGit is kept only on a sub-agent's input (its parent sets it), with exactly its two paths", () => {
    const git = { commonDir: '/w/p/.git', gitDir: '/w/p/.git/worktrees/c' };
    const child = resolveInput({ task: 't', subagentOf: 'run-1', worktreeGit: git });
    expect(child.ok && child.input.worktreeGit).toEqual(git);
    const top = resolveInput({ task: 't', worktreeGit: git });
    expect(top.ok && top.input.worktreeGit).toBeUndefined();
    expect(resolveInput({ task: 't', subagentOf: 'run-1', worktreeGit: { ...git, extra: '/' } }).ok).toBe(false);
    expect(resolveInput({ task: 't', subagentOf: 'run-1', worktreeGit: { commonDir: '/w/p/.git' } }).ok).toBe(false);
  });
});
