/**
 * Draining a worker (SIGTERM, SIGINT to its process group as a terminal's
 * Ctrl-C sends it, SIGHUP as a closing terminal sends it, and a real
 * terminal that closes): the running command finishes and its output
 * reaches Claude, the worker exits within grace + force, the run moves to a
 * new session on another worker and Claude is told why. A second signal
 * exits at once with no process of the session left; a command longer than
 * the grace is killed at the grace and reported as such; an idle session's
 * next command runs in a new session, with Claude told first.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { workspaceFolderName } from '../../src/activities/session';
import { SHUTDOWN_FORCE_TIME_MS } from '../../src/config';
import { approveBySignal } from './steering-helpers';
import { napSeconds, processesMatching, release, TestBed, toolUse, UNTIL_GO, waitFor, type WorkerProcess } from './harness';

const WORKER_JS = path.resolve(__dirname, '../../dist/worker.js');

/** Whether a process `pid` is alive (signal 0). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function fileText(file: string): string {
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/** Env of a worker whose drain the test watches: its grace, INFO logs. */
function drainEnv(grace: string): Record<string, string> {
  return { AGENT_JOBS_SHUTDOWN_GRACE: grace, AGENT_JOBS_LOG_LEVEL: 'INFO' };
}

const MOVED =
  /the bash session was closed because its worker was shut down \((SIGTERM|SIGINT|SIGHUP)\): the run moved to a new bash session in \S+ on another worker; shell variables, functions, aliases and background jobs from before are gone/;

/** Sleep lengths only this suite uses (processesMatching is machine-wide). */
const NAP_SECOND = napSeconds('31.7');
const NAP_GRACE = napSeconds('27.3');

/**
 * The drained command: it runs until the test writes `go` beside `started` (at most 60 s), so it is
 * still running when the drain begins however slow the machine, and ends only once the test has
 * seen the drain. A trap shows a SIGINT or SIGHUP reaching the shell; the sleep would die of it too.
 */
const HELD_COMMAND = `echo start > started; bash -c 'trap "echo GOT-SIGNAL" INT HUP; ${UNTIL_GO}'; echo done`;

/** Waits until the draining worker's `sessionClosing` signal is in the run's history, then lets the held command end. */
async function releaseAfterDrainSignal(
  handle: {
    fetchHistory(): Promise<{ events?: { workflowExecutionSignaledEventAttributes?: { signalName?: string | null } | null }[] | null }>;
  },
  started: string,
): Promise<number> {
  await waitFor(
    'the draining worker to signal sessionClosing to the run',
    async () =>
      ((await handle.fetchHistory()).events ?? []).some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'sessionClosing'),
    60_000,
  );
  return release(path.dirname(started));
}

describe('worker shutdown (drain)', () => {
  let bed: TestBed;
  afterEach(async () => {
    await bed?.close();
  });

  /** A run whose first command is `first` (the held one, or a long sleep), then one more command, then the end. */
  async function runWithSlowCommand(first: string, name: string) {
    bed = await TestBed.create({
      workers: 0,
      script: {
        responses: [
          { content: [toolUse('toolu_1', first)], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_2', 'echo after; pwd')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'finished' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const workflowId = `it-drain-${name}-${process.pid}-${Date.now()}`;
    const started = path.join(bed.workspaces, workspaceFolderName(workflowId), 'started');
    return { workflowId, started };
  }

  /**
   * @param heldUntil what the worker must have printed before the held command may end (the drain
   *   must still be going on when the test checks how the worker treats it)
   */
  async function drainedWhileRunning(
    signalIt: (w: WorkerProcess) => void,
    signalName: 'SIGTERM' | 'SIGINT' | 'SIGHUP',
    name: string,
    heldUntil?: string,
  ) {
    const { workflowId, started } = await runWithSlowCommand(HELD_COMMAND, name);
    const first = await bed.startWorker(drainEnv('20s'), { detached: signalName !== 'SIGTERM' });
    const handle = await bed.start({ task: 'finish across a drain', approval: 'auto' }, name, workflowId);
    await waitFor('the slow command to start', () => fileText(started).includes('start'));
    expect((await bed.status(handle)).session?.workerId).toBe(first.workerId);
    const signalledAt = Date.now();
    signalIt(first);
    // The replacement starts while the first one drains, as in a rolling restart.
    const second = await bed.startWorker();
    if (heldUntil) await waitFor(`the draining worker to print "${heldUntil}"`, () => first.output().includes(heldUntil), 60_000);
    const releasedAt = await releaseAfterDrainSignal(handle, started);

    const result = await handle.result();
    const exit = await first.exited;
    const drainSeconds = (exit.at - signalledAt) / 1000;
    expect(result).toMatchObject({ status: 'completed', text: 'finished', turns: 3 });
    // The command ran to its end and its output reached Claude, with the move said plainly.
    const [ran] = bed.resultsSentIn(1);
    expect(ran).toMatchObject({ tool_use_id: 'toolu_1', is_error: true });
    expect(ran!.content).toMatch(/^done\n/);
    expect(ran!.content).not.toContain('GOT-SIGNAL');
    expect(ran!.content).toMatch(MOVED);
    expect(ran!.content).toContain(`(${signalName})`);
    // The next command ran in the new session on the other worker, plainly.
    const [next] = bed.resultsSentIn(2);
    expect(next).toMatchObject({ tool_use_id: 'toolu_2' });
    expect(next!.is_error).toBeFalsy();
    expect(next!.content).toMatch(/^after\n/);
    const sessions = new Set(bed.audit().map((l) => l.sessionId));
    expect(sessions.size).toBe(2);
    expect(bed.audit().map((l) => l.command.slice(0, 10))).toEqual(['echo start', 'echo after']);
    // The drained worker said what it did, exited cleanly, after the command and within grace + force.
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect(first.output()).toContain(`draining (${signalName}): 1 commands running, up to 20s`);
    expect(first.output()).toMatch(/told 1 of 1 runs their bash sessions are closing/);
    expect(first.output()).toMatch(/drained: stopped [\d.]+s after/);
    // It waited for the command, which ended only once the test released it.
    expect(exit.at).toBeGreaterThan(releasedAt);
    expect(drainSeconds).toBeLessThan(20 + SHUTDOWN_FORCE_TIME_MS / 1000);
    expect(second.alive()).toBe(true);
    console.log(`drain after ${signalName}: the worker exited ${drainSeconds.toFixed(2)} s after the signal`);
  }

  test('SIGTERM mid-command: the command completes, its output reaches Claude, the run moves to another worker', async () => {
    await drainedWhileRunning((w) => w.signal('SIGTERM'), 'SIGTERM', 'drain-mid-command');
  });

  test("SIGINT to the worker's process group (a terminal's Ctrl-C): same, and bash never gets the SIGINT", async () => {
    await drainedWhileRunning((w) => w.signal('SIGINT', true), 'SIGINT', 'drain-sigint-group');
  });

  test("SIGHUP twice to the worker's process group (as a hangup can send it): one drain, the second is ignored, bash never gets it", async () => {
    let signalled: WorkerProcess | undefined;
    await drainedWhileRunning(
      (w) => {
        signalled = w;
        w.signal('SIGHUP', true);
        // The second once the first is handled: two pending SIGHUPs would merge into one.
        void waitFor('the drain to start', () => w.output().includes('draining (SIGHUP)')).then(
          () => w.signal('SIGHUP', true),
          () => undefined,
        );
      },
      'SIGHUP',
      'drain-sighup-group',
      // The command runs until the second SIGHUP was handled: else the drain can end before it arrives.
      'SIGHUP after SIGHUP: ignored, the drain goes on',
    );
    expect(signalled!.output()).toContain('SIGHUP after SIGHUP: ignored, the drain goes on');
  });

  test('a worker in a terminal that closes (tmux kill-session): the hangup drains it, though its log has nowhere to go', async () => {
    const { workflowId, started } = await runWithSlowCommand(HELD_COMMAND, 'terminal-closes');
    const workerId = `it-tty-${process.pid}`;
    const env = { ...bed.workerEnvWith(drainEnv('20s')), AGENT_JOBS_WORKER_ID: workerId };
    const socket = `agent-jobs-shutdown-${process.pid}`;
    const tmux = (...args: string[]): string => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
    const envArgs = Object.entries(env).flatMap(([k, v]) => ['-e', `${k}=${v}`]);
    try {
      // The worker is the pane's foreground process, its stdout and stderr the terminal.
      tmux('new-session', '-d', '-s', 'w', '-x', '120', '-y', '40', ...envArgs, `exec ${process.execPath} ${WORKER_JS}`);
      const pid = Number(tmux('display-message', '-p', '-t', 'w', '#{pane_pid}').trim());
      const handle = await bed.start({ task: 'finish across a hangup', approval: 'auto' }, undefined, workflowId);
      await waitFor('the slow command to start', () => fileText(started).includes('start'), 60_000);
      expect((await bed.status(handle)).session?.workerId).toBe(workerId);
      await bed.startWorker();
      const closedAt = Date.now();
      tmux('kill-session', '-t', 'w');
      await releaseAfterDrainSignal(handle, started);
      const result = await handle.result();
      await waitFor('the worker to exit', () => !alive(pid), 30_000);
      const goneSeconds = (Date.now() - closedAt) / 1000;
      expect(result).toMatchObject({ status: 'completed', text: 'finished', turns: 3 });
      const [ran] = bed.resultsSentIn(1);
      expect(ran!.content).toMatch(/^done\n/);
      expect(ran!.content).not.toContain('GOT-SIGNAL');
      expect(ran!.content).toMatch(MOVED);
      expect(ran!.content).toContain('(SIGHUP)');
      expect(bed.audit().map((l) => l.command.slice(0, 10))).toEqual(['echo start', 'echo after']);
      expect(goneSeconds).toBeLessThan(20 + SHUTDOWN_FORCE_TIME_MS / 1000);
      console.log(`terminal closed: the worker drained and exited ${goneSeconds.toFixed(2)} s later`);
    } finally {
      // Gone with its last session, normally; quietly either way.
      spawnSync('tmux', ['-L', socket, 'kill-server'], { stdio: 'ignore' });
    }
  });

  test('a second signal exits at once and leaves no process of the session', async () => {
    const { workflowId, started } = await runWithSlowCommand(`echo start > started; sleep ${NAP_SECOND}; echo never`, 'second');
    const first = await bed.startWorker(drainEnv('60s'));
    const handle = await bed.start({ task: 'second signal', approval: 'auto' }, undefined, workflowId);
    await waitFor('the slow command to start', () => fileText(started).includes('start'));
    expect(processesMatching(`sleep ${NAP_SECOND}`)).toHaveLength(1);
    await bed.startWorker();
    first.signal('SIGTERM');
    await waitFor('the drain to start', () => first.output().includes('draining (SIGTERM): 1 commands running'));
    const secondAt = Date.now();
    first.signal('SIGTERM');
    const exit = await first.exited;
    expect(exit.code).toBe(143);
    expect((exit.at - secondAt) / 1000).toBeLessThan(2);
    expect(first.output()).toContain('second signal (SIGTERM after SIGTERM): exiting now');
    expect(first.output()).toContain('exiting now: killed every process of 1 bash sessions');
    expect(processesMatching(`sleep ${NAP_SECOND}`)).toEqual([]);
    // The run goes on elsewhere; Claude is told the shell was lost mid-command.
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', turns: 3 });
    const [lost] = bed.resultsSentIn(1);
    expect(lost).toMatchObject({ tool_use_id: 'toolu_1', is_error: true });
    expect(lost!.content).toMatch(/bash session was lost/);
    expect(fileText(started)).not.toContain('never');
  });

  test('a command longer than the grace is killed at the grace and Claude is told so', async () => {
    const { workflowId, started } = await runWithSlowCommand(`echo start > started; echo printed; sleep ${NAP_GRACE}; echo never`, 'grace');
    const first = await bed.startWorker(drainEnv('2s'));
    const handle = await bed.start({ task: 'outlast the grace', approval: 'auto' }, 'drain-grace-kills', workflowId);
    await waitFor('the slow command to start', () => fileText(started).includes('start'));
    await bed.startWorker();
    const signalledAt = Date.now();
    first.signal('SIGTERM');
    const result = await handle.result();
    const exit = await first.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    const drainSeconds = (exit.at - signalledAt) / 1000;
    expect(drainSeconds).toBeGreaterThan(2);
    expect(drainSeconds).toBeLessThan(2 + SHUTDOWN_FORCE_TIME_MS / 1000);
    expect(first.output()).toContain('shutdown grace of 2s over: killing 1 commands still running');
    expect(processesMatching(`sleep ${NAP_GRACE}`)).toEqual([]);
    expect(result).toMatchObject({ status: 'completed', turns: 3 });
    const [killed] = bed.resultsSentIn(1);
    expect(killed).toMatchObject({ tool_use_id: 'toolu_1', is_error: true });
    expect(killed!.content).toMatch(/^printed\n/);
    expect(killed!.content).not.toContain('never');
    expect(killed!.content).toContain(
      'the worker holding the bash session was shut down while this command ran: it was still running when the shutdown grace of 2 s ran out, so its process group was killed',
    );
    expect(killed!.content).toMatch(MOVED);
    console.log(`grace 2 s: the worker exited ${drainSeconds.toFixed(2)} s after SIGTERM`);
  });

  test('a worker stopped while its session is idle (the run waits for approval): it exits at once; the approved command runs in a new session, and Claude is told first', async () => {
    bed = await TestBed.create({
      workers: 0,
      script: {
        responses: [
          { content: [toolUse('toolu_1', 'export MARK=set; echo first')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_2', 'echo "second ${MARK:-unset}"')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'finished' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const first = await bed.startWorker(drainEnv('20s'));
    const handle = await bed.start({ task: 'idle drain', approval: 'always' }, 'drain-idle-session');
    await bed.pendingApproval(handle);
    await approveBySignal(handle, 'toolu_1', 'alice');
    await waitFor('the second approval', async () => (await bed.status(handle)).pendingApproval?.toolUseId === 'toolu_2');
    const signalledAt = Date.now();
    first.signal('SIGTERM');
    const exit = await first.exited;
    expect(exit).toMatchObject({ code: 0, signal: null });
    expect((exit.at - signalledAt) / 1000).toBeLessThan(5);
    expect(first.output()).toContain('draining (SIGTERM): 0 commands running, up to 20s; 1 sessions held');
    expect(first.output()).toMatch(/told 1 of 1 runs their bash sessions are closing/);
    await bed.startWorker();
    await approveBySignal(handle, 'toolu_2', 'alice');
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'finished', turns: 3 });
    const [moved] = bed.resultsSentIn(2);
    expect(moved).toMatchObject({ tool_use_id: 'toolu_2', is_error: true });
    expect(moved!.content).toMatch(
      /^\[before this command ran, the bash session was restarted because its worker was shut down \(SIGTERM\): the command ran in a new bash session in \S+ on another worker; shell variables, functions, aliases and background jobs from before are gone\]\nsecond unset$/,
    );
    expect(new Set(bed.audit().map((l) => l.sessionId)).size).toBe(2);
  });
});
