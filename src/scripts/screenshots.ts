/**
 * `npm run screenshots`: the docs' pictures of runs in the Temporal UI
 * (docs/ui.md), taken with headless Chromium.
 *
 * 1. Finds Chromium, or installs the pinned Debian package (./chromium.ts).
 * 2. Starts what a run needs, the way the integration tests do, on free
 *    ports and in a temp dir: an in-memory dev server with its UI, the
 *    scripted Messages API server, one worker (`dist/worker.js`: build
 *    first). Its own server, not one already running: the UI's lists then
 *    hold these runs only, and the worker runs this checkout's code.
 * 3. Puts runs in the states to show: one waiting for approval of a
 *    command (approval mode `always`), one paused by a person (the `pause`
 *    Update, after its first command).
 * 4. Saves a screenshot of each run's page once the page shows the run (its
 *    DOM names the run and its status) and the PNG is not blank.
 *
 * `--out DIR` writes the PNGs there instead of docs/. A shot whose state
 * cannot be reached (a workflow without the `pause` Update) is skipped
 * with a message; any other failure exits 1.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import { Client, Connection, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { pauseUpdate, statusQuery, type AgentRunInput, type StatusView } from '../contract';
import { freePort, startDevServer, type DevServer } from '../devserver';
import { startModelServer, type ModelServer, type ScriptFile } from '../model-server';
import { PROJECT_ROOT, workflowUiUrl } from '../settings';
import { startAgentRun } from '../client';
import { codecClientOptions, scriptedWorkerEnv, spawnWorker, type WorkerProcess } from '../testing/worker-process';
import { capturePage } from './cdp';
import { blankReason, ensureChromium, pngStats } from './chromium';

const say = (line: string): void => void process.stdout.write(`screenshots: ${line}\n`);

/** Window size of every shot, in CSS pixels (= PNG pixels: the scale factor is 1). */
export const SHOT_SIZE = { width: 1400, height: 1000 } as const;

const TASK_APPROVAL = 'Add up the numbers in numbers.txt and write the total to total.txt.';
const TASK_PAUSED = 'Add up the numbers in numbers.txt, write the total to total.txt and show it.';
const FIRST_COMMAND = 'paste -sd+ numbers.txt | bc > total.txt';

/**
 * What the scripted model answers. Both runs get the same steps (a step is
 * chosen by the number of assistant messages, per conversation): the
 * awaiting-approval run stops at the first command; the paused run runs it
 * (approval `auto`) and is paused during the second model call, which takes
 * 3 s so that the pause comes in while it is in flight.
 */
export const SCREENSHOT_SCRIPT: ScriptFile = {
  responses: [
    {
      content: [
        { type: 'text', text: 'I will add the numbers with paste and bc, and write the total to total.txt.' },
        { type: 'tool_use', name: 'bash', input: { command: FIRST_COMMAND } },
      ],
    },
    {
      content: [
        { type: 'text', text: 'Now I will show the total.' },
        { type: 'tool_use', name: 'bash', input: { command: 'cat total.txt' } },
      ],
      delay_ms: 3_000,
    },
    { content: [{ type: 'text', text: 'The total is 55; it is in total.txt.' }] },
  ],
};

/** One screenshot: which run, in which state, into which file. */
export interface Shot {
  /** File name in the output folder. */
  file: string;
  workflowId: string;
  /** The status the run must have (its `status` query says so) before its page is captured. */
  status: StatusView['status'];
  /** Text the page shows once it has drawn the run's history in that state, besides the workflow id. */
  shows: string;
}

/** The shots, in the order they are taken. */
export const SHOTS = {
  // The approval wait is a `condition` with a timeout: a timer in the history.
  awaitingApproval: {
    file: 'ui-awaiting-approval.png',
    workflowId: 'docs-awaiting-approval',
    status: 'awaiting_approval',
    shows: 'Timer Started',
  },
  // The pause comes after the first command ran.
  paused: { file: 'ui-paused.png', workflowId: 'docs-paused', status: 'paused', shows: 'Activity Task Completed' },
} as const satisfies Record<string, Shot>;

/**
 * Whether an Update failed because the workflow has no handler of that
 * name (the SDK rejects it with "No registered handler for update: …"),
 * as opposed to its validator or handler rejecting it.
 */
export function isUnknownUpdate(err: unknown): boolean {
  return (
    err instanceof WorkflowUpdateFailedError &&
    err.cause instanceof ApplicationFailure &&
    /^No registered handler for update\b/.test(err.cause.message)
  );
}

/**
 * The texts a run's page (its event history, the UI's default tab) must
 * show before it is captured: the workflow id in the header, and the
 * shot's event in the history table.
 */
export function expectedTexts(shot: Shot): string[] {
  return [shot.workflowId, 'Event History', shot.shows];
}

/** What {@link main} set up, to take apart at the end. */
interface Bed {
  dir: string;
  server: DevServer;
  uiBase: string;
  model: ModelServer;
  connection: Connection;
  client: Client;
  worker: WorkerProcess;
}

/** Starts the dev server (with its UI), the scripted model server and a worker, in `dir`. */
async function startBed(dir: string): Promise<Bed> {
  const port = await freePort();
  const uiPort = await freePort();
  const server = await startDevServer({ port, uiPort, logFile: path.join(dir, 'dev-server.log') });
  say(`dev server at ${server.address}, UI ${server.uiUrl} (in memory; log in ${server.logFile})`);
  const model = await startModelServer({ script: SCREENSHOT_SCRIPT, logFile: path.join(dir, 'model-requests.jsonl') });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ ...codecClientOptions(), connection });
  const worker = await spawnWorker({
    workerId: `screenshots-${process.pid}`,
    connection,
    env: scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'scripted-screenshots-key', dataDir: dir }),
  });
  say(`worker started (pid ${worker.pid}); the model is the scripted Messages API server at ${model.url}`);
  return { dir, server, uiBase: server.uiUrl!, model, connection, client, worker };
}

/** Stops what {@link startBed} started; removes its folder, or keeps it with the worker's output when `keepLogs`. */
async function stopBed(bed: Bed, keepLogs: boolean): Promise<void> {
  await bed.worker.stop().catch(() => undefined);
  await bed.model.close().catch(() => undefined);
  await bed.connection.close().catch(() => undefined);
  await bed.server.stop().catch(() => undefined);
  if (!keepLogs) return rmSync(bed.dir, { recursive: true, force: true });
  writeFileSync(path.join(bed.dir, 'worker.log'), bed.worker.output());
  say(`kept ${bed.dir} (dev-server.log, worker.log, model-requests.jsonl)`);
}

/**
 * Polls the run's `status` query every 200 ms until `ok` holds.
 * @throws Error with the last status seen when `timeoutMs` passes
 */
async function waitForStatus(
  handle: WorkflowHandle,
  what: string,
  ok: (s: StatusView) => boolean,
  timeoutMs = 30_000,
): Promise<StatusView> {
  const deadline = Date.now() + timeoutMs;
  let last: StatusView | null = null;
  while (Date.now() < deadline) {
    last = await handle.query(statusQuery).catch(() => last);
    if (last && ok(last)) return last;
    await sleep(200);
  }
  throw new Error(`run ${handle.workflowId} did not reach ${what} within ${timeoutMs / 1000} s (last: ${last?.status}: ${last?.details})`);
}

/** Starts a run of `input` with its own workspace holding numbers.txt (1..10). */
async function startRun(bed: Bed, workflowId: string, input: Omit<AgentRunInput, 'workdir'>): Promise<WorkflowHandle> {
  const workdir = path.join(bed.dir, 'workspaces', workflowId);
  mkdirSync(workdir, { recursive: true });
  writeFileSync(path.join(workdir, 'numbers.txt'), `${Array.from({ length: 10 }, (_, i) => i + 1).join('\n')}\n`);
  return startAgentRun(bed.client, { ...input, workdir, maxTurns: 12 }, workflowId);
}

/** Puts a run in the awaiting-approval state: approval `always`, the first command waits. */
async function awaitingApprovalRun(bed: Bed): Promise<WorkflowHandle> {
  const handle = await startRun(bed, SHOTS.awaitingApproval.workflowId, { task: TASK_APPROVAL, approval: 'always' });
  await waitForStatus(handle, 'awaiting_approval', (s) => s.status === 'awaiting_approval');
  return handle;
}

/**
 * Puts a run in the paused state: it runs its first command (approval
 * `auto`), and `alice` pauses it during the second model call.
 * @returns the handle, or null when the workflow has no `pause` Update (the message says so)
 */
async function pausedRun(bed: Bed): Promise<WorkflowHandle | null> {
  const handle = await startRun(bed, SHOTS.paused.workflowId, { task: TASK_PAUSED, approval: 'auto' });
  await waitForStatus(handle, 'its second model call', (s) => s.turns >= 1 && /^waiting for Claude/.test(s.details));
  try {
    await bed.client.workflow.getHandle(handle.workflowId).executeUpdate(pauseUpdate, { args: [{ by: 'alice' }] });
  } catch (err) {
    if (!isUnknownUpdate(err)) throw err;
    say(
      `SKIPPED ${SHOTS.paused.file}: the workflow has no \`pause\` Update yet (the server said: ${(err as WorkflowUpdateFailedError).cause?.message}); run again once it has`,
    );
    await handle.terminate('screenshots: no pause Update to show');
    return null;
  }
  await waitForStatus(handle, 'paused', (s) => s.status === 'paused');
  return handle;
}

/**
 * Opens the run's page in headless Chromium, waits until it shows
 * {@link expectedTexts}, saves a screenshot to `file` and checks that it is
 * not blank.
 * @throws Error when the page never shows the run, or the PNG is blank
 */
async function capture(chromium: string, bed: Bed, handle: WorkflowHandle, shot: Shot, file: string): Promise<void> {
  const runId = (await handle.describe()).runId;
  const url = workflowUiUrl(bed.uiBase, 'default', shot.workflowId, runId);
  const userDataDir = mkdtempSync(path.join(bed.dir, 'chromium-'));
  const { png, shownAfterMs } = await capturePage(chromium, { url, ...SHOT_SIZE, userDataDir, expect: expectedTexts(shot) });
  const blank = blankReason(pngStats(png), SHOT_SIZE.width, SHOT_SIZE.height);
  if (blank) throw new Error(`the screenshot of ${url} looks blank: ${blank}`);
  writeFileSync(file, png);
  say(
    `saved ${path.relative(process.cwd(), file)} (${Math.round(png.length / 1024)} KiB; the page showed the run after ${(shownAfterMs / 1000).toFixed(1)} s): ${url}`,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string', default: path.join(PROJECT_ROOT, 'docs') } } });
  const out = path.resolve(values.out);
  mkdirSync(out, { recursive: true });
  const chromium = await ensureChromium(say);
  say(`chromium: ${chromium}`);
  const bed = await startBed(mkdtempSync(path.join(tmpdir(), 'agent-jobs-shots-')));
  let done = false;
  try {
    const waiting = await awaitingApprovalRun(bed);
    await capture(chromium, bed, waiting, SHOTS.awaitingApproval, path.join(out, SHOTS.awaitingApproval.file));
    const paused = await pausedRun(bed);
    if (paused) await capture(chromium, bed, paused, SHOTS.paused, path.join(out, SHOTS.paused.file));
    done = true;
  } finally {
    await stopBed(bed, !done);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.exitCode = 1;
    process.stderr.write(`screenshots failed: ${err instanceof Error ? err.message : String(err)}\n`);
  });
}
