/**
 * Checkpoints and rewind end to end (docs/rewind.md), on the real dev server with real workers,
 * real bash and the scripted model: files created, changed and deleted by commands and by edits
 * after a checkpoint come back as they were, across a SIGKILL of the worker that took the
 * checkpoints; the conversation is cut to what Claude had before the turn (the messages before it
 * byte for byte), and Claude is told.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { pauseUpdate, resumeUpdate, endUpdate, type Message, type TextBlock } from '../../src/contract';
import { rewindUpdate } from '../../src/contract/checkpoint';
import type { ScriptContentBlock } from '../../src/model-server';
import { TestBed, toolUse, waitFor } from './harness';
import { rejected } from './steering-helpers';

const edit = (id: string, input: Record<string, unknown>): ScriptContentBlock => ({
  type: 'tool_use',
  id,
  name: 'str_replace_based_edit_tool',
  input,
});
const turn = (...content: ScriptContentBlock[]) => ({ content, stop_reason: 'tool_use' as const });
const done = { content: [{ type: 'text' as const, text: 'done' }], stop_reason: 'end_turn' as const };

describe('rewind', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('restores what commands and edits changed after the checkpoint, across a worker crash; Claude is told; the prefix is unchanged', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          turn(
            toolUse(
              'toolu_1',
              "echo one > keep.txt; echo gone > gone.txt; printf '#!/bin/sh\\n' > run.sh; chmod +x run.sh; ln -s keep.txt link",
            ),
          ),
          turn(
            toolUse('toolu_2', 'echo two > keep.txt; rm gone.txt; mkdir -p new/deep; echo new > new/deep/file; chmod -x run.sh; rm link'),
          ),
          turn(
            toolUse('toolu_3r', 'cat keep.txt'),
            edit('toolu_3e', { command: 'create', path: 'edited.txt', file_text: 'by the editor\n' }),
            edit('toolu_3s', { command: 'str_replace', path: 'keep.txt', old_str: 'two', new_str: 'three' }),
          ),
          done,
        ],
      },
      workers: 1,
    });
    const handle = await bed.start({ task: 'change files', approval: 'auto', chat: true }, 'rewind-after-crash');
    await waitFor('the run to wait for a message', async () => (await bed.status(handle)).status === 'awaiting_message' || null, 60_000);
    const ws = path.join(bed.workspaces, handle.workflowId);
    expect(readFileSync(path.join(ws, 'keep.txt'), 'utf8')).toBe('three\n');
    expect(existsSync(path.join(ws, 'edited.txt'))).toBe(true);

    // Turn 1's checkpoint is the empty workspace; turn 3's read-only `cat` took none, its edit did.
    const refused = await rejected(handle.executeUpdate(rewindUpdate, { args: [{ toTurn: 4, by: 'alice' }] }));
    expect(refused).toContain('turn 4 has no checkpoint');
    expect(refused).toContain('turns with one: 1, 2, 3');

    // The worker that holds the session and took every checkpoint dies; another one takes over.
    const second = await bed.startWorker();
    await bed.workers[0]!.kill();
    const sentBefore = bed.sentMessages().length;
    await handle.executeUpdate(pauseUpdate, { args: [{ by: 'alice' }] });
    const answer = await handle.executeUpdate(rewindUpdate, { args: [{ toTurn: 2, by: 'alice', text: 'keep gone.txt this time' }] });
    expect(answer).toMatchObject({ toTurn: 2, by: 'alice', droppedMessages: 5 });

    // Paused after the rewind: the workspace is turn 2's checkpoint (after turn 1's command).
    expect((await bed.status(handle)).status).toBe('paused');
    expect(readFileSync(path.join(ws, 'keep.txt'), 'utf8')).toBe('one\n');
    expect(readFileSync(path.join(ws, 'gone.txt'), 'utf8')).toBe('gone\n');
    expect(statSync(path.join(ws, 'run.sh')).mode & 0o111).not.toBe(0);
    expect(readFileSync(path.join(ws, 'link'), 'utf8')).toBe('one\n');
    expect(existsSync(path.join(ws, 'new'))).toBe(false);
    expect(existsSync(path.join(ws, 'edited.txt'))).toBe(false);
    // Owned like the rest of the workspace (the session user's), so the agent can edit it.
    expect(statSync(path.join(ws, 'gone.txt')).uid).toBe(statSync(ws).uid);
    expect((await bed.status(handle)).session?.workerId).toBe(second.workerId);

    await handle.executeUpdate(resumeUpdate, { args: [{ by: 'alice' }] });
    await waitFor('the model call after the rewind', async () => bed.sentMessages().length > sentBefore || null, 60_000);
    const before = bed.sentMessages()[1]!; // turn 2's request
    const after = bed.sentMessages()[sentBefore]!;
    expect(after.length).toBe(before.length);
    // Every message before the last is byte for byte what turn 2 was sent; the last one gains the note.
    expect(JSON.stringify(after.slice(0, -1))).toBe(JSON.stringify(before.slice(0, -1)));
    const last = after.at(-1) as Message;
    const texts = (last.content as TextBlock[]).filter((b) => b.type === 'text').map((b) => b.text);
    expect(texts.at(-1)).toContain('[rewound by alice] The run was rewound to just before turn 2');
    expect(texts.at(-1)).toContain('keep gone.txt this time');
    expect(JSON.stringify((last.content as unknown[]).slice(0, -1))).toBe(JSON.stringify((before.at(-1) as Message).content));

    // The script runs turns 2 and 3 again and ends its turn; the chat is ended.
    await waitFor(
      'the run to wait for a message again',
      async () => (await bed.status(handle)).status === 'awaiting_message' || null,
      60_000,
    );
    expect(readFileSync(path.join(ws, 'keep.txt'), 'utf8')).toBe('three\n');
    await handle.executeUpdate(endUpdate, { args: [{ by: 'alice' }] });
    const result = await handle.result();
    expect(result.status).toBe('completed');
  }, 180_000);
});
