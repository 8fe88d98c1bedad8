/**
 * The CLI as a person uses it (child processes of bin/agent-jobs.js) against
 * a real run: start --json, status while awaiting approval, approve, deny,
 * approve with nothing pending, list by status and newest first, transcript,
 * watch (and a watch that waits for a worker), cancel (and cancel of an ended run), a --workdir that is created,
 * the workspace of a closed run in its status, and what the Temporal UI shows (static summary, activity summaries,
 * AgentStatus).
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { workspaceFolderName } from '../../src/activities/session';
import { AGENT_STATUS } from '../../src/config';
import { sha256 } from '../../src/shared/sha256';
import { startDevServerOnFreePort } from '../../src/dev/devserver';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { cli, cliFloorMs, cliWith, spawnCli } from './cli-process';
import { TestBed, toolUse, waitFor } from './harness';

describe('agent-jobs CLI', () => {
  let bed: TestBed;
  afterAll(async () => bed?.close());

  test('start, status, approve, deny, list, transcript, watch', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [{ type: 'text', text: 'Writing a file.' }, toolUse('toolu_w', 'echo hi > hi.txt')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_rm', 'rm hi.txt')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'Kept hi.txt.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const a = bed.address;
    const id = `cli-${Date.now()}`;
    const started = await cli(a, 'start', 'write', 'a', 'file', '--id', id, '--approval', 'policy', '--json');
    expect(started.code).toBe(0);
    const info = JSON.parse(started.stdout) as { workflowId: string; runId: string; uiUrl: string | null };
    // The suite's dev server is started --headless (global-setup.ts): no UI, so no link to one.
    expect(info).toEqual({ workflowId: id, runId: expect.any(String), uiUrl: null });

    const pending = await waitFor('approval pending', async () => {
      const s = JSON.parse((await cli(a, 'status', id, '--json')).stdout) as {
        status: string;
        pendingApproval: { toolUseId: string; command: string } | null;
      };
      return s.status === 'awaiting_approval' ? s : null;
    });
    expect(pending).toMatchObject({
      workflowId: id,
      turns: 1,
      pendingApproval: { toolUseId: 'toolu_w', command: 'echo hi > hi.txt', requestedAt: expect.any(String) },
      usage: expect.any(Object),
      result: null,
    });
    // status --json carries the session as docs/cli.md documents it (with its user and sandbox).
    expect((pending as unknown as { session: Record<string, unknown> }).session).toMatchObject({
      sessionId: expect.any(String),
      workerId: expect.any(String),
      taskQueue: expect.any(String),
      cwd: expect.any(String),
      sandbox: expect.stringMatching(/^(bwrap|none)$/),
    });
    // An open run's workspace is where its session is; `workspace` is a closed run's.
    expect((pending as unknown as { workspace: unknown }).workspace).toBeNull();
    const { workerId, sandbox } = (pending as unknown as { session: { workerId: string; sandbox: string } }).session;

    // The UI: the task as static summary, AgentStatus searchable, one-line activity summaries.
    const handle = bed.client.workflow.getHandle(id);
    expect(await (await handle.describe()).staticSummary()).toBe('write a file');
    const listed = await waitFor('AgentStatus indexed', async () => {
      const r = await cli(a, 'list', '--status', 'awaiting_approval', '--json');
      const rows = JSON.parse(r.stdout) as Array<{ workflowId: string; status: string }>;
      return rows.find((row) => row.workflowId === id);
    });
    expect(listed.status).toBe('awaiting_approval');

    // The confirmation reads the reason back as it was sent (deny's says it goes to Claude).
    const approved = await cli(a, 'approve', id, '--by', 'tester', '--reason', 'a new file only');
    expect(approved).toMatchObject({
      code: 0,
      stdout: `approved toolu_w in ${id} by tester: echo hi > hi.txt\n  sha256 ${sha256('echo hi > hi.txt').slice(0, 12)} · 16 characters\n  reason: a new file only\n`,
    });
    await waitFor(
      'rm pending',
      async () =>
        (JSON.parse((await cli(a, 'status', id, '--json')).stdout) as { pendingApproval: { toolUseId: string } | null }).pendingApproval
          ?.toolUseId === 'toolu_rm',
    );
    const wrongId = await cli(a, 'deny', id, '--reason', 'x', '--tool-use-id', 'toolu_nope');
    expect(wrongId.code).toBe(1);
    expect(wrongId.stderr).toMatch(/^agent-jobs: tool_use toolu_nope is not awaiting approval; toolu_rm is \(rm hi.txt\)\nhint: /);
    const denied = await cli(a, 'deny', id, '--reason', 'keep it', '--json');
    expect(denied.code).toBe(0);
    expect(JSON.parse(denied.stdout)).toEqual({
      applied: true,
      toolUseId: 'toolu_rm',
      wait: expect.any(Number),
      decision: 'denied',
      by: expect.any(String),
      command: 'rm hi.txt',
    });

    const watched = await cli(a, 'watch', id);
    expect(watched.code).toBe(0);
    expect(watched.stdout).toContain('claude asks to run: echo hi > hi.txt    [toolu_w]');
    expect(watched.stdout).toContain('Command not run: denied by');
    expect(watched.stdout).toMatch(/run .* ended: completed after 3 turns/);

    const nothing = await cli(a, 'approve', id);
    expect(nothing.code).toBe(1);
    expect(nothing.stderr).toMatch(/nothing in .* is awaiting approval \(status: completed\)/);

    const transcript = JSON.parse((await cli(a, 'transcript', id, '--json')).stdout) as Array<{ role: string }>;
    expect(transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'user', 'assistant', 'user', 'assistant']);
    const status = JSON.parse((await cli(a, 'status', id, '--json')).stdout) as { status: string; result: { text: string } };
    expect(status).toMatchObject({ status: 'completed', result: { status: 'completed', text: 'Kept hi.txt.' } });
    // The session is closed; where the run's files are is read from its history: the default folder, on the worker that held it.
    const workspace = path.join(bed.workspaces, workspaceFolderName(id));
    expect(existsSync(path.join(workspace, 'hi.txt'))).toBe(true);
    // With the sandbox mode its session had, which the worker chose (mode none when bwrap is missing there).
    expect(status).toMatchObject({ session: null, workspace: { path: workspace, workerId, sandboxes: [sandbox] } });
    const closedText = await cli(a, 'status', id);
    expect(closedText.code).toBe(0);
    expect(closedText.stdout).toContain(`\n  workspace: ${workspace} on ${workerId}, its sessions in sandbox ${sandbox}\n`);
    expect(closedText.stdout).not.toContain('  shell:');
    expect(closedText.stdout).not.toMatch(/UI:|localhost:\d+\/namespaces/);

    // The summaries are encrypted like every payload: read through the codec.
    const history = await decodedHistory(await handle.fetchHistory());
    const summaries = (history.events ?? [])
      .filter((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => {
        const data = e.userMetadata?.summary?.data;
        return data ? (JSON.parse(Buffer.from(data).toString()) as string) : null;
      });
    // Under policy the session's worker judges each command first (`(policy)`); the approved one then runs in the shell; the denied rm never runs.
    expect(summaries).toEqual([
      'claude: turn 1',
      'session: open',
      'bash #1 (policy): `echo hi > hi.txt`',
      'bash #1: `echo hi > hi.txt`',
      'claude: turn 2',
      'bash #2 (policy): `rm hi.txt`',
      'claude: turn 3',
      'session: close',
    ]);
    const finalAttrs = (await handle.describe()).typedSearchAttributes;
    expect(finalAttrs.get(AGENT_STATUS)).toBe('completed');
  });

  test('a worker stopped moments ago (still listed as a poller): questions give up with a hint instead of hanging', async () => {
    // A server of its own: any other worker on the suite's server would answer.
    const server = await startDevServerOnFreePort({ headless: true });
    const lost = await TestBed.create({
      address: server.address,
      script: { responses: [{ content: [toolUse('toolu_x', 'touch x && echo made')], stop_reason: 'tool_use' }] },
    });
    try {
      const a = lost.address;
      expect((await cli(a, 'start', 'make', 'x', '--id', 'orphaned', '--approval', 'always', '--json')).code).toBe(0);
      await waitFor(
        'approval pending',
        async () =>
          (JSON.parse((await cli(a, 'status', 'orphaned', '--json')).stdout) as { status: string }).status === 'awaiting_approval',
      );
      await lost.workers[0]!.stop();
      // The three side by side: each waits up to a query's 10 s for the worker, and none changes what another sees.
      const asked = [
        ['status', 'status'],
        ['transcript', 'transcript'],
        ['approve', 'status'],
      ] as const;
      const answers = await Promise.all(asked.map(([command]) => cli(a, command, 'orphaned')));
      for (const [i, [, what]] of asked.entries()) {
        const r = answers[i]!;
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(
          new RegExp(
            `^agent-jobs: no worker answered the ${what} of orphaned(: the worker the server still listed has stopped polling \\(a stopped worker stays listed for up to 90 s\\)| within 10 s|: the query failed \\(Failed to query Workflow\\))\nhint: .*agent-jobs worker.\n$`,
          ),
        );
      }
    } finally {
      await lost.close();
      await server.stop();
    }
  });

  test('without a worker: questions fail at once with a hint; cancel is recorded', async () => {
    const server = await startDevServerOnFreePort({ headless: true });
    try {
      const a = server.address;
      const started0 = await cli(a, 'start', 'nobody', 'listens', '--id', 'lonely', '--json');
      expect(started0.code).toBe(0);
      // start says the run will wait, on stderr (stdout stays one JSON line).
      expect(started0.stderr).toBe(
        'warning: no worker polls the agent-jobs task queue, so lonely waits until one starts (agent-jobs worker)\n',
      );
      expect(JSON.parse(started0.stdout)).toMatchObject({ workflowId: 'lonely' });
      for (const args of [
        ['status', 'lonely'],
        ['approve', 'lonely'],
        ['transcript', 'lonely'],
      ]) {
        // "At once": well within a query's 10 s wait for a worker, on top of what a CLI process takes here now.
        const floor = await cliFloorMs(a);
        const started = Date.now();
        const r = await cli(a, ...args);
        expect(r.code).toBe(1);
        expect(r.stderr).toMatch(
          /^agent-jobs: no worker is polling the agent-jobs task queue, so nothing can answer .*\nhint: start one with `agent-jobs worker`\n$/,
        );
        expect(Date.now() - started).toBeLessThan(floor + 5_000);
      }
      // watch does not give up: it says it waits for a worker, and Ctrl-C leaves the run as it is.
      const watch = spawnCli(a, ['watch', 'lonely']);
      await waitFor('watch waits for a worker', () => watch.stdout().includes('… waiting for the worker'));
      expect(watch.stdout()).toBe(
        '… waiting for the worker (no worker is polling the agent-jobs task queue, so nothing can answer the status of lonely); the run goes on, and this watch picks up when it answers\n',
      );
      watch.child.kill('SIGINT');
      expect(await watch.exited).toBe(130);
      expect(watch.stderr()).toContain('watch it again: agent-jobs watch lonely');
      // The list reads visibility, which may lag the start: wait for the run to be listed, then check it is the only one.
      const listed = await waitFor('the started run listed as running', async () => {
        const rows = JSON.parse((await cli(a, 'list', '--status', 'running', '--json')).stdout) as Array<{ workflowId: string }>;
        return rows.length > 0 ? rows : null;
      });
      expect(listed.map((r) => r.workflowId)).toEqual(['lonely']);
      // Newest start first: a run started later and already closed comes before the older open one.
      expect((await cli(a, 'start', 'started', 'later', '--id', 'later', '--json')).code).toBe(0);
      const connection = await Connection.connect({ address: a });
      try {
        await new Client({ connection }).workflow.getHandle('later').terminate('closed for the list order');
      } finally {
        await connection.close();
      }
      const all = await waitFor('the terminated run listed as closed', async () => {
        const rows = JSON.parse((await cli(a, 'list', '--json')).stdout) as Array<{ workflowId: string; executionStatus: string }>;
        return rows.find((r) => r.workflowId === 'later')?.executionStatus === 'TERMINATED' ? rows : null;
      });
      expect(all.map((r) => [r.workflowId, r.executionStatus])).toEqual([
        ['later', 'TERMINATED'],
        ['lonely', 'RUNNING'],
      ]);
      expect(
        (JSON.parse((await cli(a, 'list', '--limit', '1', '--json')).stdout) as Array<{ workflowId: string }>).map((r) => r.workflowId),
      ).toEqual(['later']);
      // The table shows each start time whole, to the second, in UTC (it once cut them at 20 characters).
      const table = (await cli(a, 'list')).stdout;
      expect(table).toContain('started (UTC)');
      for (const id of ['later', 'lonely']) expect(table).toMatch(new RegExp(`${id} .*\\d{4}-\\d{2}-\\d{2} \\d{2}:\\d{2}:\\d{2} `));
      expect(table).not.toContain('…');
      const again = await cli(a, 'start', 'x', '--id', 'lonely');
      expect(again.stderr).toBe(
        'agent-jobs: a run with id lonely already exists\nhint: choose another --id, or leave it out for a fresh one\n',
      );
      const cancelled = await cli(a, 'cancel', 'lonely');
      expect(cancelled).toMatchObject({ code: 0, stdout: expect.stringContaining('cancel requested for lonely') });
    } finally {
      await server.stop();
    }
  });

  test("cancel, then cancel again: the second names the run's own status (cancelled)", async () => {
    const a = bed.address;
    const id = `cli-cancel-${Date.now()}`;
    expect((await cli(a, 'start', 'write', 'a', 'file', '--id', id, '--approval', 'policy')).code).toBe(0);
    await waitFor(
      'approval pending',
      async () => (JSON.parse((await cli(a, 'status', id, '--json')).stdout) as { status: string }).status === 'awaiting_approval',
    );
    expect(await cli(a, 'cancel', id)).toMatchObject({ code: 0, stdout: `${id}: cancelled (the run was cancelled)\n` });
    // Temporal's execution status is COMPLETED here (the workflow returned a cancelled result); the CLI says cancelled.
    expect((await bed.client.workflow.getHandle(id).describe()).status.name).toBe('COMPLETED');
    const again = await cli(a, 'cancel', id);
    expect(again).toMatchObject({ code: 1, stdout: '' });
    expect(again.stderr).toBe(`agent-jobs: ${id} has already ended (cancelled)\nhint: see \`agent-jobs status ${id}\`\n`);
  });

  test('start --workdir: a directory that does not exist is created by the worker', async () => {
    // Outside the bed's data dir, which the worker refuses (a folder its sandbox hides from every session).
    const outside = mkdtempSync(path.join(tmpdir(), 'aj-it-cli-workdir-'));
    const workdir = path.join(outside, 'not', 'there', 'yet');
    expect(existsSync(workdir)).toBe(false);
    const id = `cli-workdir-${Date.now()}`;
    const r = await cli(bed.address, 'start', 'write', 'a', 'file', '--id', id, '--workdir', workdir, '--approval', 'auto', '--follow');
    expect(r.stdout).toMatch(/ended: completed/);
    expect(r.code).toBe(0);
    expect(existsSync(workdir)).toBe(true);
    // The closed run's status names the workdir it was given.
    const status = JSON.parse((await cli(bed.address, 'status', id, '--json')).stdout) as { workspace: { path: string } | null };
    expect(status.workspace).toEqual({ path: workdir, workerId: expect.any(String), sandboxes: [expect.stringMatching(/^(bwrap|none)$/)] });
    rmSync(outside, { recursive: true, force: true });
  });

  test('bad input and unknown runs: one line, a hint, exit 1', async () => {
    const a = bed.address;
    const badTurns = await cli(a, 'start', 'x', '--max-turns', '0');
    expect(badTurns.code).not.toBe(0);
    expect(badTurns.stderr).toMatch(/max-turns.*positive integer/);
    const badMode = await cli(a, 'start', 'x', '--approval', 'sometimes');
    expect(badMode.code).not.toBe(0);
    expect(badMode.stderr).toMatch(/Allowed choices are auto, policy, always/);
    const unknown = await cli(a, 'status', 'no-such-run');
    expect(unknown).toMatchObject({ code: 1, stdout: '' });
    expect(unknown.stderr).toBe('agent-jobs: no run with id no-such-run in this namespace\nhint: list runs with `agent-jobs list`\n');
    // Run through npx (npm sets npm_command=exec), the hint says to type npx too: `agent-jobs` alone is not on the PATH there.
    const viaNpx = await cliWith(a, { npm_command: 'exec' }, 'status', 'no-such-run');
    expect(viaNpx.stderr).toBe('agent-jobs: no run with id no-such-run in this namespace\nhint: list runs with `npx agent-jobs list`\n');
    const busyPort = bed.model.port;
    const script = path.resolve(__dirname, '../fixtures/scripts/two-tool-uses.json');
    const portInUse = await cli(a, 'model-server', '--script', script, '--port', String(busyPort));
    expect(portInUse).toMatchObject({ code: 1, stdout: '' });
    expect(portInUse.stderr).toBe(
      `agent-jobs: listen EADDRINUSE: address already in use 127.0.0.1:${busyPort}\nhint: another process listens on port ${busyPort}: choose another --port, or leave --port out for a free one\n`,
    );
    // server --stop takes its port from a local TEMPORAL_ADDRESS: nothing was started on port 1, and the suite's server keeps running.
    const stopElsewhere = await cli('127.0.0.1:1', 'server', '--stop');
    expect(stopElsewhere).toMatchObject({
      code: 1,
      stderr: expect.stringMatching(/^agent-jobs: no background dev server recorded for port 1\nhint: /),
    });
    const noServer = await cli('127.0.0.1:1', 'list');
    expect(noServer.code).toBe(1);
    expect(noServer.stderr).toMatch(
      /^agent-jobs: no Temporal server answers at 127\.0\.0\.1:1 .*\nhint: start a dev server with `agent-jobs server`/,
    );
  });
});
