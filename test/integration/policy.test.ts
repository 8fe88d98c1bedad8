/**
 * The approval policy end to end (docs/security.md): under `policy`, the session's
 * worker judges each command on what bash would run and on the workspace's
 * real paths; only a plain read-only command runs unasked, exactly (no
 * shell); every bypass of the old text rules waits for a human and runs
 * nothing. Real dev server, real worker, scripted model server.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { approveBySignal } from './steering-helpers';
import { TestBed, toolUse } from './harness';

describe('policy, judged at the session', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('bypasses of the old text policy wait for a human; reads run unasked, exactly, even after the shell was rigged', async () => {
    const outside = fs.mkdtempSync('/tmp/aj-outside-');
    fs.writeFileSync(path.join(outside, 'secret.txt'), 'outside secret\n');
    // Each of these ran unasked under the old policy (it judged the raw text).
    const bypasses = [
      ['toolu_find', 'find . -maxdepth 0 -ex"ec" touch pwned-find {} +'],
      ['toolu_brace', 'find . -maxdepth 0 -{exec,} touch pwned-brace {} +'],
      ['toolu_fn', 'ls() { touch pwned-fn; }'],
      ['toolu_link', 'cat link.txt'],
      ['toolu_dotdot', 'cat "$PWD/../x"'],
    ];
    bed = await TestBed.create({
      script: {
        responses: [
          // An approved command rigs the shell: a function named cat and a PATH entry in the workspace.
          {
            content: [
              toolUse(
                'toolu_rig',
                `echo real > notes.txt; ln -s ${outside}/secret.txt link.txt; cat() { touch pwned-cat; }; mkdir -p bin; printf '#!/bin/sh\\ntouch pwned-path\\n' > bin/grep; chmod +x bin/grep; export PATH="$PWD/bin:$PATH"`,
              ),
            ],
            stop_reason: 'tool_use',
          },
          { content: [toolUse('toolu_cat', 'cat notes.txt'), toolUse('toolu_grep', 'grep -n real notes.txt')], stop_reason: 'tool_use' },
          { content: bypasses.map(([id, cmd]) => toolUse(id!, cmd!)), stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'policy end to end', approval: 'policy', approvalTimeout: '2s' }, 'policy-at-session');
    const rig = await bed.pendingApproval(handle);
    expect(rig.toolUseId).toBe('toolu_rig');
    await approveBySignal(handle, 'toolu_rig', 'alice');

    // Each bypass waits for a human (and times out as a denial after 2 s).
    for (const [id] of bypasses) {
      await bed.pendingApprovalOf(handle, id!, 30_000);
    }
    const result = await handle.result();
    expect(result.status).toBe('completed');

    const ws = path.join(
      bed.workspaces,
      fs.readdirSync(bed.workspaces).find((d) => fs.existsSync(path.join(bed.workspaces, d, 'notes.txt')))!,
    );
    expect(fs.readdirSync(ws).filter((f) => f.startsWith('pwned'))).toEqual([]);
    // The reads ran unasked, as the real programs, despite the function and the PATH entry.
    expect(bed.resultsSentIn(2)).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_cat', content: 'real' },
      { type: 'tool_result', tool_use_id: 'toolu_grep', content: '1:real' },
    ]);
    // Every bypass got an is_error denial; none ran (the audit log holds only the rig and the two reads).
    for (const r of bed.resultsSentIn(3)) expect(r).toMatchObject({ is_error: true });
    expect(bed.audit().map((a) => a.command)).toEqual([expect.stringContaining('ln -s'), 'cat notes.txt', 'grep -n real notes.txt']);
    // The audit log names the run and marks the commands the policy ran exactly.
    const audit = bed.audit() as Array<{ command: string; runId?: string; exactArgv?: string[] }>;
    expect(audit.map((a) => a.exactArgv ?? null)).toEqual([null, ['cat', 'notes.txt'], ['grep', '-n', 'real', 'notes.txt']]);
    expect(new Set(audit.map((a) => a.runId))).toEqual(new Set([handle.workflowId]));
    // The reason the human saw names what was seen (the symlink one from the worker's realpath check).
    const decisions = (await bed.status(handle)).decisions;
    expect(decisions.map((d) => d.toolUseId)).toEqual(['toolu_rig', ...bypasses.map(([id]) => id)]);
    fs.rmSync(outside, { recursive: true, force: true });
  });
});
