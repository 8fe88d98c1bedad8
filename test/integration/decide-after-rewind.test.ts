/**
 * A decision after a rewind, through the CLI as a person runs it (real dev server, worker, bash,
 * scripted model): Claude asks again for a command with the same `tool_use` id it had before the
 * rewind. The decision must apply to the new wait (the command runs again, the run goes on), not
 * come back as Temporal's answer to the earlier decision's Update id; a decision naming the
 * earlier wait is refused.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { decideUpdate, type DecideAnswer } from '../../src/contract';
import { workspaceFolderName } from '../../src/activities/session';
import type { ScriptContentBlock } from '../../src/dev/model-server';
import { cli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';
import { rejected } from './steering-helpers';

const turn = (...content: ScriptContentBlock[]) => ({ content, stop_reason: 'tool_use' as const });
const done = { content: [{ type: 'text' as const, text: 'done' }], stop_reason: 'end_turn' as const };

describe('decide after a rewind', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('the same tool_use id asked again is a new decision: approve applies it, a decision for the earlier wait is refused', async () => {
    const again = 'echo two >> f.txt';
    bed = await TestBed.create({
      script: {
        responses: [
          turn(toolUse('toolu_1', 'echo one > f.txt')),
          turn(toolUse('toolu_2', again)),
          done,
          turn(toolUse('toolu_2', again)),
          done,
        ],
      },
    });
    const a = bed.address;
    const handle = await bed.start({ task: 'write f.txt', approval: 'always', chat: true }, 'decide-after-rewind');
    const id = handle.workflowId;
    const approve = async (): Promise<DecideAnswer> => {
      const pending = await bed.pendingApproval(handle, 60_000);
      const r = await cli(a, 'approve', id, '--sha', pending.commandSha256.slice(0, 12), '--json');
      expect([r.code, r.stderr]).toEqual([0, '']);
      return JSON.parse(r.stdout) as DecideAnswer;
    };
    expect(await approve()).toMatchObject({ applied: true, toolUseId: 'toolu_1', wait: 1 });
    const first = await approve();
    expect(first).toMatchObject({ applied: true, toolUseId: 'toolu_2', wait: 2 });
    await waitFor('the run to wait for a message', async () => (await bed.status(handle)).status === 'awaiting_message' || null, 60_000);

    const rewound = await cli(a, 'rewind', id, '--to-turn', '2');
    expect([rewound.code, rewound.stderr]).toEqual([0, '']);
    const pending = await bed.pendingApproval(handle, 60_000);
    expect(pending).toMatchObject({ toolUseId: 'toolu_2', wait: 3 });

    // What a stale client would send: the earlier wait's number (the run rejects it; nothing applies).
    const staleArgs = { toolUseId: 'toolu_2', approved: true, by: 'mallory', commandSha256: pending.commandSha256, runId: pending.runId };
    expect(await rejected(handle.executeUpdate(decideUpdate, { args: [{ ...staleArgs, wait: 2 }] }))).toContain(
      'this decision is for approval wait 2, which is over',
    );
    // The user's exact step: the same command, the same default --by as the first approval of toolu_2.
    expect(await approve()).toMatchObject({ applied: true, toolUseId: 'toolu_2', wait: 3, by: first.by });
    await waitFor(
      'the run to wait for a message again',
      async () => (await bed.status(handle)).status === 'awaiting_message' || null,
      60_000,
    );
    const status = await bed.status(handle);
    expect(status.decisions.map((d) => [d.toolUseId, d.wait])).toEqual([
      ['toolu_1', 1],
      ['toolu_2', 2],
      ['toolu_2', 3],
    ]);
    // The command ran again after the rewind restored turn 2's workspace.
    expect(bed.audit().filter((x) => x.command === again)).toHaveLength(2);
    expect(readFileSync(path.join(bed.workspaces, workspaceFolderName(id), 'f.txt'), 'utf8')).toBe('one\ntwo\n');
    expect((await cli(a, 'end', id)).code).toBe(0);
    expect((await handle.result()).status).toBe('completed');
  }, 240_000);
});
