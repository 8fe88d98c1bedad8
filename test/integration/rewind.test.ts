/**
 * Checkpoints and rewind end to end (docs/rewind.md), on the real dev server with real workers,
 * real bash and the scripted model: files created, changed and deleted by commands and by edits
 * after a checkpoint come back as they were, across a SIGKILL of the worker that took the
 * checkpoints; the conversation is cut to what Claude had before the turn (the messages before it
 * byte for byte), and Claude is told.
 */
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { WorkflowUpdateStage, type WorkflowHandle } from '@temporalio/client';
import { workspaceFolderName } from '../../src/activities/session';
import { pauseUpdate, resumeUpdate, endUpdate, type Message, type TextBlock } from '../../src/contract';
import { rewindUpdate } from '../../src/contract/checkpoint';
import type { ScriptContentBlock } from '../../src/dev/model-server';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { storeFor } from '../../src/checkpoint/store';
import type { agentRun } from '../../src/workflows';
import { cli } from './cli-process';
import { release, TestBed, toolUse, UNTIL_GO, waitFor } from './harness';
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
  /** Folders made outside the test bed's data dir by {@link outsideWorkspace}: removed after each test, passed or not. */
  const outsides: string[] = [];
  afterEach(async () => {
    await bed?.close();
    for (const dir of outsides.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  /** A new empty workspace `<tmp>/<prefix>XXXXXX/ws` outside the data dir (and its parent, `outside`), removed after the test. */
  const outsideWorkspace = (prefix: string): { outside: string; ws: string } => {
    const outside = mkdtempSync(path.join(tmpdir(), prefix));
    outsides.push(outside);
    const ws = path.join(outside, 'ws');
    mkdirSync(ws, { recursive: true });
    return { outside, ws };
  };

  /** Waits (60 s deadline, named by `what`) until the run of `handle` waits for a person's message. */
  const untilAwaitingMessage = (handle: WorkflowHandle, what: string): Promise<unknown> =>
    waitFor(what, async () => (await bed.status(handle)).status === 'awaiting_message' || null, 60_000);

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
    await untilAwaitingMessage(handle, 'the run to wait for a message');
    const ws = path.join(bed.workspaces, handle.workflowId);
    expect(readFileSync(path.join(ws, 'keep.txt'), 'utf8')).toBe('three\n');
    expect(existsSync(path.join(ws, 'edited.txt'))).toBe(true);

    // Turn 1's checkpoint is the empty workspace; turn 3's read-only `cat` took none, its edit did.
    const refused = await rejected(handle.executeUpdate(rewindUpdate, { args: [{ toTurn: 4, by: 'alice' }] }));
    expect(refused).toContain('turn 4 has no checkpoint');
    expect(refused).toContain('turns with a checkpoint: 1, 2, 3');

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
    await waitFor('the model call after the rewind', () => Promise.resolve(bed.sentMessages().length > sentBefore || null), 60_000);
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
    await untilAwaitingMessage(handle, 'the run to wait for a message again');
    expect(readFileSync(path.join(ws, 'keep.txt'), 'utf8')).toBe('three\n');
    // What the rewind dropped stays readable: transcript --all shows turn 2's first answer and turn 3's edits.
    const all = await cli(bed.address, 'transcript', handle.workflowId, '--all', '--json');
    const { rewound } = JSON.parse(all.stdout) as { rewound: Array<{ from: number; messages: Message[] }> };
    expect(rewound).toHaveLength(1);
    expect(rewound[0]!.from).toBe(2);
    expect(JSON.stringify(rewound[0]!.messages)).toContain('toolu_3e');
    const listed = await cli(bed.address, 'checkpoints', handle.workflowId);
    expect(listed.stdout).toContain('rewound to turn 2 by alice');
    await handle.executeUpdate(endUpdate, { args: [{ by: 'alice' }] });
    const result = await handle.result();
    expect(result.status).toBe('completed');
  }, 180_000);

  test('a rewind asked while a command runs waits for it, then applies before the next model call', async () => {
    // Turn 2's command runs until the test has seen the rewind accepted (and, after the rewind, until it runs again).
    const slow = `${UNTIL_GO}; echo y > y.txt`;
    bed = await TestBed.create({
      script: { responses: [turn(toolUse('toolu_x', 'echo x > x.txt')), turn(toolUse('toolu_y', slow)), done] },
    });
    const handle = await bed.start({ task: 'slow', approval: 'auto' }, 'rewind-mid-command');
    const ws = path.join(bed.workspaces, workspaceFolderName(handle.workflowId));
    // Running after the second model call: turn 2's command (turn 1's ended before that call).
    await waitFor(
      'the slow command to run',
      async () => bed.sentMessages().length >= 2 && (await bed.status(handle)).details.startsWith('running'),
      60_000,
    );
    const asked = await handle.startUpdate(rewindUpdate, {
      args: [{ toTurn: 1, by: 'alice', text: 'again' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    // Accepted while the command still runs: no model call came after it.
    expect((await bed.status(handle)).details).toMatch(/^running/);
    expect(bed.sentMessages()).toHaveLength(2);
    release(ws);
    const answer = await asked.result();
    // Answered once the command had finished and turn 2's results were in: [task, a1, u1, a2, u2] cut to [task].
    expect(answer).toMatchObject({ toTurn: 1, droppedMessages: 4 });
    await waitFor('the model call after the rewind', () => Promise.resolve(bed.sentMessages().length >= 3 || null), 60_000);
    const afterRewind = bed.sentMessages()[2]!;
    expect(afterRewind).toHaveLength(1);
    expect(JSON.stringify(afterRewind[0])).toContain('[rewound by alice]');
    // The rewind put the workspace back as it was before turn 1 (without `go`): the command, run again, waits for it again.
    release(ws);
    expect((await handle.result()).status).toBe('completed');
    expect(readFileSync(path.join(ws, 'y.txt'), 'utf8')).toBe('y\n');
    expect(bed.audit().filter((a) => a.command === slow && a.exitCode === 0)).toHaveLength(2);
  }, 180_000);

  test('checkpoints lists what each turn changed, diff shows a turn, fork starts from a copy and leaves the original unchanged', async () => {
    bed = await TestBed.create({
      script: { responses: [turn(toolUse('toolu_a', 'echo a > a.txt')), turn(toolUse('toolu_b', 'echo b > b.txt; rm a.txt')), done] },
    });
    const handle = await bed.start({ task: 'files', approval: 'auto' }, 'rewind-fork-source');
    expect((await handle.result()).status).toBe('completed');
    const a = bed.address;
    const ws = path.join(bed.workspaces, handle.workflowId);

    const listed = await cli(a, 'checkpoints', handle.workflowId, '--json');
    expect(listed.code).toBe(0);
    const turns = JSON.parse(listed.stdout) as Array<{ turn: number; changes: Array<{ status: string; path: string }> }>;
    expect(turns.map((t) => t.turn)).toEqual([1, 2]);
    expect(turns[0]!.changes).toEqual([{ status: 'A', path: 'a.txt' }]);
    expect(turns[1]!.changes).toEqual([
      { status: 'D', path: 'a.txt' },
      { status: 'A', path: 'b.txt' },
    ]);
    const text = await cli(a, 'checkpoints', handle.workflowId);
    expect(text.stdout).toMatch(/turn 1 +checkpoint [0-9a-f]{12} +before toolu_a/);
    expect(text.stdout).toContain('+ a.txt');
    const diff = await cli(a, 'diff', handle.workflowId, '--turn', '2');
    expect(diff.code).toBe(0);
    // The run is closed and turn 2 its last: the diff says it compares with the workspace now, others' changes included.
    expect(diff.stdout.split('\n')[0]).toMatch(
      /^# from turn 2's checkpoint [0-9a-f]{12} .*the workspace as it is now.*a person, another run/,
    );
    expect(diff.stdout).toContain('--- a/a.txt');
    expect(diff.stdout).toContain('+b');
    const none = await cli(a, 'diff', handle.workflowId, '--turn', '3');
    expect(none.code).not.toBe(0);
    expect(none.stderr).toContain('turn 3 of');

    const originalTranscript = JSON.stringify(await bed.transcript(handle));
    const forkId = `${handle.workflowId}-fork`;
    const forked = await cli(a, 'fork', handle.workflowId, '--at-turn', '2', '--id', forkId, '--say', 'try again', '--by', 'bob');
    expect(forked.stderr).toBe('');
    expect(forked.code).toBe(0);
    // Not a git repository, nothing nested, nothing excluded: nothing to name.
    expect(forked.stdout).not.toContain('Not restored');
    // Said before its first command runs, when the fork's folder does not exist yet.
    expect(forked.stdout).toContain('is made from the checkpoint when its bash session opens, at its first command');
    expect(forked.stdout).toContain(`agent-jobs file ${handle.workflowId} `);
    const fork = bed.client.workflow.getHandle<typeof agentRun>(forkId);
    bed.nameRun(fork, 'rewind-fork');
    expect((await fork.result()).status).toBe('completed');
    // The fork's first request: what turn 2 of the original was sent, then the note.
    const sent = bed.sentMessages();
    const original2 = sent[1]!;
    const forkFirst = sent.find((m, i) => i > 2 && m.length === original2.length)!;
    expect(JSON.stringify(forkFirst.slice(0, -1))).toBe(JSON.stringify(original2.slice(0, -1)));
    expect(JSON.stringify(forkFirst.at(-1))).toContain('[forked by bob]');
    expect(JSON.stringify(forkFirst.at(-1))).toContain('try again');
    // Its workspace started as the copy of turn 2's checkpoint (a.txt there), which its own turn changed.
    const forkTurns = JSON.parse((await cli(a, 'checkpoints', forkId, '--json')).stdout) as typeof turns;
    expect(forkTurns[0]!.changes).toEqual(turns[1]!.changes);
    // The original is untouched.
    expect(readFileSync(path.join(ws, 'b.txt'), 'utf8')).toBe('b\n');
    expect(existsSync(path.join(ws, 'a.txt'))).toBe(false);
    expect(JSON.stringify(await bed.transcript(handle))).toBe(originalTranscript);
  }, 180_000);

  test('the checkpoint store cannot be read or changed from inside the session', async () => {
    const workflowId = `it-rewind-attack-${process.pid}-${Date.now()}`;
    // A checkpoint root outside the data dir: hidden because it is the checkpoint root, not by luck.
    const { outside, ws } = outsideWorkspace('agent-jobs-cp-');
    const root = path.join(outside, 'stores');
    const store = await storeFor(root, ws);
    bed = await TestBed.create({
      workerEnv: { AGENT_JOBS_CHECKPOINT_DIR: root },
      script: {
        responses: [
          turn(toolUse('toolu_1', 'echo first > f.txt')),
          turn(
            toolUse(
              'toolu_2',
              `ls -la ${root} ${store}; cat ${store}/HEAD; git --git-dir=${store} log --all --oneline; echo pwned > ${store}/HEAD; rm -rf ${store}/objects; echo done`,
            ),
          ),
          done,
        ],
      },
    });
    const handle = await bed.start({ task: 'attack', approval: 'auto', workdir: ws }, undefined, workflowId);
    expect((await handle.result()).status).toBe('completed');
    const out = JSON.stringify(bed.resultsSentIn(2));
    expect(out).not.toContain('refs');
    expect(out).not.toMatch(/[0-9a-f]{7} /);
    // The store holds both checkpoints, untouched.
    expect(readFileSync(path.join(store, 'HEAD'), 'utf8')).not.toContain('pwned');
    const listed = JSON.parse((await cli(bed.address, 'checkpoints', workflowId, '--json')).stdout) as Array<{ changes: unknown[] }>;
    expect(listed).toHaveLength(2);
    expect(listed[0]!.changes).toEqual([{ status: 'A', path: 'f.txt' }]);
  }, 180_000);

  test("a rewind names what it changed (a person's edit too), the record to get it back from, and what it left; fork names what it did not copy; restored files get no execute bit", async () => {
    const { ws } = outsideWorkspace('agent-jobs-rw-');
    mkdirSync(path.join(ws, 'vendor', 'lib'), { recursive: true });
    mkdirSync(path.join(ws, 'cache'));
    const git = (dir: string, ...args: string[]): string =>
      execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { encoding: 'utf8' });
    git(ws, 'init', '-q');
    writeFileSync(path.join(ws, 'base.txt'), 'base\n');
    git(path.join(ws, 'vendor', 'lib'), 'init', '-q');
    writeFileSync(path.join(ws, 'vendor', 'lib', 'lib.txt'), 'lib1\n');
    git(path.join(ws, 'vendor', 'lib'), 'add', '-A');
    git(path.join(ws, 'vendor', 'lib'), 'commit', '-qm', 'lib');
    git(ws, 'add', 'base.txt');
    git(ws, 'commit', '-qm', 'base');
    bed = await TestBed.create({
      script: {
        responses: [
          turn(
            toolUse(
              'toolu_1',
              'echo one >> base.txt; echo lib2 >> vendor/lib/lib.txt; echo c > cache/c.txt; echo a > a.txt; echo b > b.txt',
            ),
          ),
          turn(toolUse('toolu_2', 'echo two > a.txt; rm b.txt')),
          done,
        ],
      },
    });
    const handle = await bed.start(
      { task: 'files', approval: 'auto', chat: true, workdir: ws, checkpoints: { enabled: true, maxBytes: 1 << 30, exclude: ['cache'] } },
      'rewind-report',
    );
    const id = handle.workflowId;
    await untilAwaitingMessage(handle, 'the run to wait for a message');
    // The person's own edit on the host, after the run's turns: the rewind reverts it, and must say so.
    appendFileSync(path.join(ws, 'base.txt'), 'mine\n');
    await handle.executeUpdate(pauseUpdate, { args: [{ by: 'ana' }] });

    const r = await cli(bed.address, 'rewind', id, '--to-turn', '2', '--by', 'ana', '--json');
    expect(r.stderr).toBe('');
    const answer = JSON.parse(r.stdout) as {
      restore: {
        before: string;
        changes: Array<{ status: string; path: string }>;
        changeCount: number;
        notRestored: unknown;
        gitHead?: string | null;
      };
    };
    expect(answer.restore.notRestored).toEqual({ nested: ['vendor/lib'], git: true, excluded: ['cache'] });
    expect(answer.restore.changes).toEqual(
      expect.arrayContaining([
        { status: 'M', path: 'base.txt' },
        { status: 'M', path: 'a.txt' },
        { status: 'A', path: 'b.txt' },
      ]),
    );
    expect(answer.restore.changeCount).toBe(answer.restore.changes.length);
    // Which commit the files now match: the repository's HEAD, which the rewind leaves where it is.
    const head = git(ws, 'rev-parse', 'HEAD').trim();
    expect(answer.restore.gitHead).toBe(head);
    // What it restored, and what it did not.
    expect(readFileSync(path.join(ws, 'base.txt'), 'utf8')).toBe('base\none\n');
    expect(readFileSync(path.join(ws, 'b.txt'), 'utf8')).toBe('b\n');
    expect(readFileSync(path.join(ws, 'vendor', 'lib', 'lib.txt'), 'utf8')).toBe('lib1\nlib2\n');
    // Restored into a folder whose default ACL grants the session user rwx: no execute bit for the group class.
    const mode = execFileSync('stat', ['-c', '%A', path.join(ws, 'b.txt')], { encoding: 'utf8' }).trim();
    expect(mode).toBe('-rw-rw-r--');
    expect(execFileSync('getfacl', ['-p', path.join(ws, 'b.txt')], { encoding: 'utf8' })).toMatch(/^mask::rw-$/m);

    // The person's line comes back from the record the answer names; only this run's records are read.
    const before = answer.restore.before.slice(0, 12);
    const back = await cli(bed.address, 'file', id, before, 'base.txt');
    expect(back.stdout).toBe('base\none\nmine\n');
    for (const [bad, why] of [
      [['deadbeef0', 'base.txt'], 'no checkpoint or rewind record'],
      [[before, '../../../../../etc/passwd'], 'not a path inside the workspace'],
      [[before, '/etc/passwd'], 'not a path inside the workspace'],
      [[before, 'vendor'], '(a folder)'],
      [[before, 'vendor/lib/lib.txt'], 'nested repository'],
      [['HEAD', 'base.txt'], 'not a checkpoint id'],
    ] as const) {
      const refused = await cli(bed.address, 'file', id, ...bad);
      expect(refused.code).not.toBe(0);
      expect(refused.stdout).toBe('');
      expect(refused.stderr).toContain(why);
    }

    // The listing: what each entry compares, the undone turn's changes (up to the record), the rewind's report.
    const listed = (await cli(bed.address, 'checkpoints', id)).stdout;
    expect(listed.split('\n')[0]).toContain("each turn: what changed from its checkpoint (the workspace before the turn's tools wrote)");
    const undone = listed.slice(listed.indexOf('turn 2 '), listed.indexOf('rewound to turn 2'));
    expect(undone).toContain('until the rewind to turn 2 undid it');
    expect(undone).toContain('- b.txt');
    expect(undone).toContain('~ a.txt');
    expect(listed).toContain(`the workspace before it is recorded as ${before}`);

    // Text answer of a second rewind: the record, how to get a file back, what it left.
    const text = await cli(bed.address, 'rewind', id, '--to-turn', '1', '--by', 'ana');
    expect(text.stderr).toBe('');
    expect(text.stdout).toMatch(/the rewind changed \d+ paths \(the workspace before it is recorded as [0-9a-f]{12}\)/);
    expect(text.stdout).toContain(`file ${id} `);
    expect(text.stdout).toContain('Not restored, left as it is now: `.git`');
    expect(text.stdout).toContain('the nested git repositories vendor/lib');
    expect(text.stdout).toContain('the excluded paths cache');
    expect(text.stdout).toContain(`\nthe workspace's git HEAD is ${head} (\`git rev-parse HEAD\` there): the rewind leaves .git as it is`);

    // Claude is told the same.
    await handle.executeUpdate(resumeUpdate, { args: [{ by: 'ana' }] });
    await untilAwaitingMessage(handle, 'the run to wait for a message again');
    const notes = bed
      .sentMessages()
      .flatMap((m) => m.flatMap((msg) => (Array.isArray(msg.content) ? (msg.content as TextBlock[]) : [])))
      .filter((b) => b.type === 'text' && b.text.startsWith('[rewound by ana]'));
    expect(notes.length).toBeGreaterThan(0);
    for (const note of notes) {
      expect(note.text).toContain('Not restored, left as it is now: `.git`');
      expect(note.text).toContain('vendor/lib');
      expect(note.text).toContain('cache');
    }

    // A fork says what it did not copy: .git, the nested repository's files, the excluded paths.
    const forked = await cli(bed.address, 'fork', id, '--at-turn', '2', '--id', `${id}-fork`, '--json');
    expect(forked.stderr).toBe('');
    expect(JSON.parse(forked.stdout)).toMatchObject({ notCopied: { nested: ['vendor/lib'], git: true, excluded: ['cache'] } });
    const fork = bed.client.workflow.getHandle<typeof agentRun>(`${id}-fork`);
    await untilAwaitingMessage(fork, 'the fork to wait for a message');
    const forkNote = JSON.stringify(bed.sentMessages().at(-1));
    expect(forkNote).toContain('[forked by');
    expect(forkNote).toContain('Not restored, not copied: `.git` (this workspace has none');
    await fork.executeUpdate(endUpdate, { args: [{ by: 'ana' }] });
    await handle.executeUpdate(endUpdate, { args: [{ by: 'ana' }] });
    expect((await handle.result()).status).toBe('completed');
  }, 240_000);
});
