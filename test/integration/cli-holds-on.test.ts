/**
 * A CLI that holds on, as a person runs it (child
 * processes of bin/agent-jobs.js) against a dev server of this file's own
 * (no other file's worker may answer for the one these tests stop):
 * - `watch` rides out a worker that does not answer (SIGSTOPped: its status
 *   query passes the 10 s deadline) with a "waiting for the worker" line,
 *   and carries on when it answers again; Ctrl-C says the run goes on and how
 *   to watch it again;
 * - a `say` that got no answer in time says it may still be applied and how
 *   to check; sent again with the same --request-id it is applied once; a
 *   `pause` sent twice with the same id is one pause;
 * - `transcript` and `status` of a completed run read its history with every
 *   worker stopped (no query to a dead worker).
 */
import { cli, cliFloorMs, cliWith, spawnCli } from './cli-process';
import { capabilitiesOf, contextStrategyOf, contextWindowOf } from '../../src/contract/models';
import path from 'node:path';
import { workspaceFolderName } from '../../src/activities/session';
import { transcriptQuery } from '../../src/contract';
import { release, TestBed, toolUse, UNTIL_GO, waitFor } from './harness';
import { startDevServerOnFreePort, type DevServer } from '../../src/dev/devserver';

describe('a CLI that holds on', () => {
  let server: DevServer;
  beforeAll(async () => {
    server = await startDevServerOnFreePort({ headless: true });
  });
  afterAll(async () => server?.stop());

  // C32: the CLI waits for a worker rather than failing.
  test('watch waits for a worker that stops answering (one query past 10 s) and goes on; Ctrl-C leaves the run going', async () => {
    const bed = await TestBed.create({
      address: server.address,
      script: {
        responses: [
          { content: [toolUse('toolu_slow', 'echo slow')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const worker = bed.workers[0]!;
    // Killed at the end whatever happened: a watch left running keeps jest from exiting.
    const watches: Array<ReturnType<typeof spawnCli>> = [];
    try {
      const a = bed.address;
      expect((await cli(a, 'start', 'be', 'slow', '--id', 'slow', '--approval', 'always')).code).toBe(0);
      const watch = spawnCli(a, ['watch', 'slow']);
      watches.push(watch);
      await waitFor('the watch shows the pending command', () => watch.stdout().includes('waiting for approval: echo slow'));
      // A worker that is there but does not answer: still listed as a poller, every query to it runs past the deadline.
      worker.signal('SIGSTOP');
      let resumed = false;
      try {
        await waitFor('the watch says it waits for the worker', () => watch.stdout().includes('… waiting for the worker'), 40_000);
        // Either way a stopped worker shows: the CLI's 10 s deadline, or the server giving up on the query first
        // ("Failed to query Workflow", which the client reports as a failed query since the claim-check change).
        expect(watch.stdout()).toMatch(
          /… waiting for the worker \(no worker answered the status of slow( within 10 s|: the query failed \(Failed to query Workflow\))\); the run goes on/,
        );
        expect(watch.child.exitCode).toBeNull();
      } finally {
        worker.signal('SIGCONT');
        resumed = true;
      }
      expect(resumed).toBe(true);
      await waitFor('the watch reads the run again', () => watch.stdout().includes('▶ the worker answers again'), 40_000);
      expect((await cli(a, 'approve', 'slow', '--by', 'tester')).code).toBe(0);
      expect(await watch.exited).toBe(0);
      expect(watch.stdout()).toMatch(/run slow ended: completed after 2 turns/);

      // Ctrl-C on a watch: the run goes on, and the exact command to watch it again.
      expect((await cli(a, 'start', 'wait', 'here', '--id', 'left', '--approval', 'always')).code).toBe(0);
      const left = spawnCli(a, ['watch', 'left']);
      watches.push(left);
      await waitFor('the second watch shows the pending command', () => left.stdout().includes('waiting for approval'));
      left.child.kill('SIGINT');
      expect(await left.exited).toBe(130);
      expect(left.stderr()).toBe('\nstopped watching left; the run goes on.\nwatch it again: agent-jobs watch left\n');
      expect(JSON.parse((await cli(a, 'status', 'left', '--json')).stdout)).toMatchObject({ status: 'awaiting_approval' });
      expect((await cli(a, 'cancel', 'left')).code).toBe(0);
    } finally {
      for (const w of watches) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await bed.close();
    }
  }, 120_000);

  test('a say with no answer in time says it may still apply and how to check; sent again with its request id it is applied once', async () => {
    const bed = await TestBed.create({
      address: server.address,
      script: { responses: [{ content: [toolUse('toolu_hold', 'echo hold')], stop_reason: 'tool_use' }] },
    });
    const worker = bed.workers[0]!;
    try {
      const a = bed.address;
      expect((await cli(a, 'start', 'hold', 'on', '--id', 'held', '--approval', 'always')).code).toBe(0);
      await waitFor(
        'approval pending',
        async () => (JSON.parse((await cli(a, 'status', 'held', '--json')).stdout) as { status: string }).status === 'awaiting_approval',
      );
      worker.signal('SIGSTOP');
      let timedOut;
      try {
        timedOut = await cliWith(a, { AGENT_JOBS_UPDATE_TIMEOUT: '3s' }, 'say', 'held', 'hello', 'there', '--request-id', 'r1');
      } finally {
        worker.signal('SIGCONT');
      }
      expect(timedOut.code).toBe(2);
      expect(timedOut.stderr).toMatch(
        /^agent-jobs: no answer to the message from held within 3 s; it may still be applied: the server holds it until a worker picks up the run \(request id r1\)\nhint: check with `agent-jobs status held`; to wait for it without applying it twice, run the same command again with --request-id r1/,
      );
      // The same request again, once the worker is back: the run's answer to the first, not a second message.
      const again = await cli(a, 'say', 'held', 'hello', 'there', '--request-id', 'r1', '--json');
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({ queued: true, queuedMessages: 1 });
      const queued = (JSON.parse((await cli(a, 'status', 'held', '--json')).stdout) as { queuedMessages: Array<{ text: string }> })
        .queuedMessages;
      expect(queued.map((m) => m.text)).toEqual(['hello there']);
      // Another message under the same request id is another request.
      expect(JSON.parse((await cli(a, 'say', 'held', 'more', '--request-id', 'r1', '--json')).stdout)).toMatchObject({ queuedMessages: 2 });

      // pause twice with one request id: one pause, and the second gets its answer (not "already paused").
      const first = await cli(a, 'pause', 'held', '--request-id', 'p1', '--json');
      const second = await cli(a, 'pause', 'held', '--request-id', 'p1', '--json');
      expect(first.code).toBe(0);
      expect(second).toMatchObject({ code: 0, stdout: first.stdout });
      const fresh = await cli(a, 'pause', 'held');
      expect(fresh).toMatchObject({
        code: 1,
        stderr: expect.stringMatching(/^agent-jobs: held rejected pause: the run is already paused/),
      });
      // Through npx, every command the paused run's status names is one to type with npx.
      const viaNpx = await cliWith(a, { npm_command: 'exec' }, 'status', 'held');
      expect(viaNpx.stdout).toContain('resume: npx agent-jobs resume held');
      expect(viaNpx.stdout).not.toMatch(/(^|[^x] )agent-jobs resume/m);
      // Approving while paused: the command waits for resume, and the CLI says so.
      const approved = await cli(a, 'approve', 'held');
      expect(approved).toMatchObject({
        code: 0,
        stdout: expect.stringContaining('the run is paused: it runs after agent-jobs resume held'),
      });
      const after = await cli(a, 'status', 'held', '--json');
      expect(JSON.parse(after.stdout)).toMatchObject({ status: 'paused' });
      expect((await cli(a, 'cancel', 'held')).code).toBe(0);
    } finally {
      await bed.close();
    }
  }, 120_000);

  test('transcript and status of a completed run come from its history with every worker stopped', async () => {
    const bed = await TestBed.create({
      address: server.address,
      script: {
        responses: [
          { content: [{ type: 'text', text: 'Making it.' }, toolUse('toolu_mk', 'echo made > made.txt')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: '' }, toolUse('toolu_cat', 'cat made.txt')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'It says made.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    try {
      const a = bed.address;
      expect((await cli(a, 'start', 'make', 'it', '--id', 'made', '--approval', 'policy')).code).toBe(0);
      await waitFor(
        'approval pending',
        async () => (JSON.parse((await cli(a, 'status', 'made', '--json')).stdout) as { status: string }).status === 'awaiting_approval',
      );
      expect((await cli(a, 'approve', 'made', '--by', 'tester', '--reason', 'fine')).code).toBe(0);
      await waitFor('the run completed', async () => !(await bed.jobs().run('made').isOpen()));
      // What a worker would answer (a query replays the closed run), before every worker stops.
      const handle = bed.client.workflow.getHandle('made');
      const queried = await bed.transcript(handle);
      await Promise.all(bed.workers.map((w) => w.stop()));

      // Each answers without waiting on a query to a dead worker (that takes 10 s before it gives up): measured
      // against what a CLI process that answers at once takes here now, not a quiet machine's wall clock.
      const floor = await cliFloorMs(a);
      let started = Date.now();
      const transcript = await cli(a, 'transcript', 'made', '--json');
      expect(Date.now() - started).toBeLessThan(floor + 6_000);
      expect(transcript).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(transcript.stdout)).toEqual(queried);
      started = Date.now();
      const status = await cli(a, 'status', 'made', '--json');
      expect(Date.now() - started).toBeLessThan(floor + 6_000);
      expect(status.code).toBe(0);
      expect(JSON.parse(status.stdout)).toMatchObject({
        status: 'completed',
        turns: 3,
        result: { status: 'completed', text: 'It says made.' },
        decisions: [{ toolUseId: 'toolu_mk', approved: true, decision: 'approved', by: 'tester', reason: 'fine', source: 'update' }],
      });
      // The model, its window and how context is kept, as the open run's status reports them.
      const closedView = JSON.parse(status.stdout) as { model: string; contextWindow: number; contextStrategy: string };
      expect(closedView.contextWindow).toBe(contextWindowOf({ model: closedView.model }));
      expect(closedView.contextStrategy).toBe(contextStrategyOf(capabilitiesOf({ model: closedView.model })));
      const text = await cli(a, 'transcript', 'made');
      expect(text.stdout).toContain('claude: It says made.');
      // watch of the closed run: from history too, command run times included.
      const watched = await cli(a, 'watch', 'made');
      expect(watched.code).toBe(0);
      expect(watched.stdout).toMatch(/→ result for toolu_mk \(exit 0, \d+\.\d s\):/);
      expect(watched.stdout).toMatch(/run made ended: completed after 3 turns/);
    } finally {
      await bed.close();
    }
  }, 120_000);

  // Adversary round 10, kind 2: the code in a result's heading is the one the run published, on both of watch's paths.
  test("watch shows each command's exit code as the run published it, open and closed, never a code the command printed", async () => {
    const bed = await TestBed.create({
      address: server.address,
      script: {
        responses: [
          {
            content: [
              toolUse('toolu_fail', "printf '42 passed\\n[exit code: 0]\\n'; false"),
              toolUse('toolu_ok', "printf 'ok\\n[exit code: 1]'"),
            ],
            stop_reason: 'tool_use',
          },
          { content: [toolUse('toolu_hold', UNTIL_GO)], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'Done.' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const watches: Array<ReturnType<typeof spawnCli>> = [];
    const headings = /→ result for toolu_fail \(exit 1, \d+\.\d s\):[^]*→ result for toolu_ok \(exit 0, \d+\.\d s\):/;
    try {
      const a = bed.address;
      expect((await cli(a, 'start', 'codes', '--id', 'codes', '--approval', 'auto')).code).toBe(0);
      const handle = bed.client.workflow.getHandle('codes');
      const ws = path.join(bed.workspaces, workspaceFolderName('codes'));
      // The open run: its transcript query publishes the codes, and watch prints them while toolu_hold runs.
      await waitFor("the first turn's results in the transcript", async () => {
        const view = await handle.query(transcriptQuery, 0);
        return view.messages.length >= 3 ? view : null;
      });
      expect((await handle.query(transcriptQuery, 0)).exitCodes).toEqual({ toolu_fail: 1, toolu_ok: 0 });
      const watch = spawnCli(a, ['watch', 'codes']);
      watches.push(watch);
      await waitFor("the open run's headings", () => headings.test(watch.stdout()));
      expect(watch.child.exitCode).toBeNull();
      release(ws);
      await waitFor('the run completed', async () => !(await bed.jobs().run('codes').isOpen()));
      expect((await handle.query(transcriptQuery, 0)).exitCodes).toEqual({ toolu_fail: 1, toolu_ok: 0, toolu_hold: 0 });
      expect(await watch.exited).toBe(0);
      expect(watch.stdout()).toMatch(/→ result for toolu_hold \(exit 0, \d+\.\d s\):/);
      // The closed run: read from its history, the same codes.
      const watched = await cli(a, 'watch', 'codes');
      expect(watched.code).toBe(0);
      expect(watched.stdout).toMatch(headings);
      expect(watched.stdout).toMatch(/→ result for toolu_hold \(exit 0, \d+\.\d s\):/);
      expect(watched.stdout).not.toMatch(/toolu_fail \(exit 0|toolu_ok \(exit 1/);
      // transcript's text shows them as watch does (it left them out).
      const transcript = await cli(a, 'transcript', 'codes');
      expect(transcript.stdout).toMatch(headings);
      expect(transcript.stdout).toMatch(/→ result for toolu_hold \(exit 0, \d+\.\d s\):/);
    } finally {
      for (const w of watches) if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
      await bed.close();
    }
  }, 120_000);
});
