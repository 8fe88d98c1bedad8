/**
 * Sub-agents under the parent's budgets and audit log (docs/subagents.md, "Budgets"; issue
 * item "the policy, rules, audit log, budgets and sandbox apply to sub-agents as to the
 * parent"), on the real dev server with real workers, real bash and the scripted model: a child
 * whose model never stops asking for commands is ended by its share of the parent's turns, its
 * end comes back to the parent as an `is_error` tool_result, and every command it ran is in the
 * worker's audit log under the child's own run id.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ScriptContentBlock } from '../../src/dev/model-server';
import { subagentWorkflowId } from '../../src/contract/subagent';
import type { AgentRunResult } from '../../src/contract';
import { TestBed, toolUse } from './harness';

const turn = (...content: ScriptContentBlock[]) => ({ content, stop_reason: 'tool_use' as const });

describe('sub-agents under the parent budgets and audit log', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test("a child is ended by its share of the parent's turns; its commands are audited under its own id", async () => {
    // The child would go on for 8 turns; the parent allows 4 model calls and has used 1 when it delegates.
    const childTurns = Array.from({ length: 8 }, (_, i) => turn(toolUse(`toolu_c${i}`, `echo child-step-${i} >> steps.txt`)));
    bed = await TestBed.create({
      script: {
        responses: [
          turn({ type: 'tool_use', id: 'toolu_sb', name: 'subagent', input: { description: 'loop', prompt: 'child-loop: go on' } }),
          { content: [{ type: 'text', text: 'the child ran out of turns' }], stop_reason: 'end_turn' },
        ],
        conversations: [
          { task: 'child-loop', responses: [...childTurns, { content: [{ type: 'text', text: 'never' }], stop_reason: 'end_turn' }] },
        ],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'delegate within a budget', approval: 'auto', subagents: 1, maxTurns: 4 });
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'the child ran out of turns' });

    // The child's share: what the parent had left (4 - 1 turns), for its one sub-agent.
    const childId = subagentWorkflowId(handle.workflowId, 'toolu_sb');
    const child = (await bed.client.workflow.getHandle(childId).result()) as AgentRunResult;
    expect(child.status).toBe('max_turns');
    expect(child.turns).toBe(3);
    const ws = path.join(bed.workspaces, handle.workflowId);
    const steps = readFileSync(path.join(ws, 'steps.txt'), 'utf8').trim().split('\n');
    expect(steps.length).toBeGreaterThanOrEqual(1);
    expect(steps.length).toBeLessThanOrEqual(3);

    // The parent got the child's end as an is_error tool_result naming the spent budget.
    const sent = bed.sentMessages().filter((m) => JSON.stringify(m[0]).includes('delegate within a budget'));
    const last = sent[sent.length - 1]!;
    const results = last[last.length - 1]!.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>;
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ tool_use_id: 'toolu_sb', is_error: true });
    expect(results[0]!.content).toContain('max_turns');

    // Every command the child ran is in the audit log, under the child's run id, as the parent's would be.
    const audited = bed.audit() as Array<{ command: string; runId?: string }>;
    const childLines = audited.filter((a) => /child-step-/.test(a.command));
    expect(childLines.map((a) => a.command)).toEqual(steps.map((s) => `echo ${s} >> steps.txt`));
    for (const a of childLines) expect(a.runId).toBe(childId);
  }, 180_000);
});
