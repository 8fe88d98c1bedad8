/**
 * An edit's workspace checkpoint is taken once the edit may be written, as a command's once it is
 * approved: an edit that waits for a person takes none (adversary round 24: a checkpoint costs root's
 * git a time the session sizes, and any edit request made one before anyone was asked). Real
 * `runEdit` activity, real session and store.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSessionActivities, SessionRegistry } from '../../../src/activities/session';
import { sha256Hex } from '../../../src/session/edit';
import type { OpenSessionOutput } from '../../../src/contract/activities';
import { parseEditInput, type EditRequest, type RunEditInput, type RunEditOutput } from '../../../src/contract/text-editor';

function req(input: Record<string, unknown>): EditRequest {
  const parsed = parseEditInput(input);
  if (!parsed.ok) throw new Error(parsed.text);
  return parsed.edit;
}

describe('runEdit and the workspace checkpoint', () => {
  let root: string;
  let registry: SessionRegistry;
  beforeEach(() => (root = mkdtempSync(path.join(tmpdir(), 'agent-jobs-edit-cp-'))));
  afterEach(async () => {
    await registry?.closeAll();
    rmSync(root, { recursive: true, force: true });
  });

  test('none while a person decides; the approved edit takes it before writing; a failed or view edit takes none', async () => {
    registry = new SessionRegistry(1);
    const checkpoints = path.join(root, 'checkpoints');
    const acts = createSessionActivities({
      registry,
      workerId: 'w1',
      taskQueue: 'q1',
      workspaceRoot: path.join(root, 'workspaces'),
      checkpointRoot: checkpoints,
      sessionOptions: { sandbox: 'none', user: null, auditLog: path.join(root, 'audit.jsonl') },
    });
    const env = new MockActivityEnvironment();
    const ref: OpenSessionOutput = await env.run(acts.openSession, { workflowId: 'run-1' });
    const runEdit = (input: RunEditInput): Promise<RunEditOutput> => env.run(acts.runEdit, input);
    const ws = path.join(root, 'workspaces', 'run-1');
    writeFileSync(path.join(ws, 'a.txt'), 'one\n');
    const base = { sessionId: ref.sessionId, workflowId: 'run-1', checkpoint: { turn: 1, maxBytes: 1e9, exclude: [] } };
    const change = req({ command: 'str_replace', path: 'a.txt', old_str: 'one', new_str: 'two' });

    const asked = await runEdit({ ...base, toolUseId: 'toolu_1', edit: change, autoApprove: 'policy' as const });
    expect(asked.needsApproval).toBeDefined();
    expect(asked.checkpoint).toBeUndefined();
    // Nothing of the workspace was read into a store: no store at all.
    expect(existsSync(checkpoints) ? readdirSync(checkpoints) : []).toEqual([]);

    const failed = await runEdit({
      ...base,
      toolUseId: 'toolu_2',
      edit: req({ command: 'str_replace', path: 'a.txt', old_str: 'absent', new_str: 'x' }),
    });
    expect(failed).toMatchObject({ isError: true, applied: false });
    expect(failed.checkpoint).toBeUndefined();
    const viewed = await runEdit({ ...base, toolUseId: 'toolu_3', edit: req({ command: 'view', path: 'a.txt' }) });
    expect(viewed.checkpoint).toBeUndefined();
    expect(existsSync(checkpoints) ? readdirSync(checkpoints) : []).toEqual([]);

    const approved = await runEdit({
      ...base,
      toolUseId: 'toolu_1',
      edit: change,
      approvedSha256: sha256Hex(asked.needsApproval!.review),
    });
    expect(approved).toMatchObject({ applied: true, isError: false });
    expect(readFileSync(path.join(ws, 'a.txt'), 'utf8')).toBe('two\n');
    const cp = approved.checkpoint;
    if (!cp || !('id' in cp)) throw new Error(`no checkpoint: ${JSON.stringify(cp)}`);
    expect(cp.turn).toBe(1);
    // Taken before the write: it holds the file as it was.
    expect(execFileSync('git', ['--git-dir', cp.store, 'show', `${cp.id}:a.txt`], { encoding: 'utf8' })).toBe('one\n');
  });
});
