/**
 * `npm run screenshots`: the docs' pictures of runs in the Temporal UI
 * (docs/ui.md), taken with headless Chromium.
 *
 * 1. Finds Chromium, or installs the pinned Debian package (./chromium.ts).
 * 2. Starts what a run needs, the way the integration tests do, on free
 *    ports and in a temp dir: the codec server (src/codec/server.ts, with
 *    the keys every process of the bed encrypts with and a token made
 *    now), a dev server with its UI (its database a file in the temp dir)
 *    whose UI decodes through that codec server, the scripted Messages API
 *    server, one worker (`dist/worker.js`: build first). Its own server,
 *    not one already running: the UI's lists then hold these runs only, and
 *    the worker runs this checkout's code.
 * 3. Puts runs in the states to show: one waiting for approval of a
 *    command (approval mode `always`), one paused by a person (the `pause`
 *    Update, after its first command), one completed (its history read
 *    through the codec server).
 * 4. Saves a screenshot of each run's page once the page shows the run (its
 *    DOM names the run and its status) and the PNG is not blank.
 * 5. Restarts the dev server on the same database and ports without the
 *    codec endpoint, and saves the completed run's page once more: every
 *    payload as ciphertext, none of its plaintext on the page.
 *
 * `--out DIR` writes the PNGs there instead of docs/. A shot whose state
 * cannot be reached (a workflow without the `pause` Update) is skipped
 * with a message; any other failure exits 1.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ApplicationFailure } from '@temporalio/common';
import { Client, Connection, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { EncryptionCodec, loadCodecKeys, startCodecServer, type CodecServer } from '../../codec';
import { pauseUpdate, statusQuery, type AgentRunInput, type StatusView } from '../../contract';
import { freePort, startDevServer, type DevServer } from '../devserver';
import { startModelServer, type ModelServer, type ScriptFile } from '../model-server';
import { PROJECT_ROOT, workflowUiUrl } from '../../settings';
import { startAgentRun } from '../../client';
import { requestBindingInterceptor } from '../../request-binding';
import { codecClientOptions, scriptedWorkerEnv, sharedCodecKeys, spawnWorker, type WorkerProcess } from '../testing/worker-process';
import { capturePage } from './cdp';
import { blankReason, ensureChromium, pngStats } from './chromium';

const say = (line: string): void => void process.stdout.write(`screenshots: ${line}\n`);

/** Window size of every shot, in CSS pixels (= PNG pixels: the scale factor is 1). */
export const SHOT_SIZE = { width: 1400, height: 1000 } as const;

const TASK_APPROVAL = 'Add up the numbers in numbers.txt and write the total to total.txt.';
const TASK_PAUSED = 'Add up the numbers in numbers.txt, write the total to total.txt and show it.';
const TASK_ENCRYPTED = 'Add up the numbers in numbers.txt, keep the total in total.txt and tell me what it is.';
/** The second command of {@link SCREENSHOT_SCRIPT}: its output, `55`, is what the codec shots show or hide. */
const SHOWN_COMMAND = 'cat total.txt';
const FIRST_COMMAND = 'paste -sd+ numbers.txt | bc > total.txt';

/**
 * What the scripted model answers. Both runs get the same steps (a step is
 * chosen by the number of assistant messages, per conversation): the
 * awaiting-approval run stops at the first command; the paused run runs it
 * (approval `auto`) and is paused during the second model call, which takes
 * 3 s so that the pause comes in while it is in flight. The encrypted run
 * (approval `auto`) goes through all three steps and completes.
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
        { type: 'tool_use', name: 'bash', input: { command: SHOWN_COMMAND } },
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
  /** Texts the page shows once it has drawn the run's history in that state, besides the workflow id. */
  shows: readonly string[];
  /** Texts the page must not show (plaintext of an encrypted run). @default none */
  hides?: readonly string[];
  /**
   * Only the activity events (`?category=activity`, the UI's event filter),
   * in a 1600-pixel window so that a row's details are not cut, cropped to
   * the page's main column from its top down to the row of the last
   * `runCommand`'s scheduled event. @default false: the whole window, every event
   */
  activities?: boolean;
}

/** The shots, in the order they are taken. */
export const SHOTS = {
  // The approval wait is a `condition` with a timeout: a timer in the history.
  awaitingApproval: {
    file: 'ui-awaiting-approval.png',
    workflowId: 'docs-awaiting-approval',
    status: 'awaiting_approval',
    shows: ['Timer Started'],
  },
  // The pause comes after the first command ran.
  paused: { file: 'ui-paused.png', workflowId: 'docs-paused', status: 'paused', shows: ['Activity Task Completed'] },
  // Decoded by the codec server: the task (the input), the command (its activity's summary) and its output (the result).
  codecDecoded: {
    file: 'ui-codec-decoded.png',
    workflowId: 'docs-encrypted',
    status: 'completed',
    shows: [TASK_ENCRYPTED, SHOWN_COMMAND, '"output":"55'],
    activities: true,
  },
  // The same page from a UI without the codec endpoint: the same events, none of that text.
  codecEncrypted: {
    file: 'ui-codec-encrypted.png',
    workflowId: 'docs-encrypted',
    status: 'completed',
    shows: ['runCommand', 'Activity Task Completed'],
    hides: [TASK_ENCRYPTED, SHOWN_COMMAND, 'total.txt', '"output"', 'The total is'],
    activities: true,
  },
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
  return [shot.workflowId, 'Event History', ...shot.shows];
}

/** The window of a shot, CSS pixels (= PNG pixels before a crop). */
export function windowOf(shot: Shot): { width: number; height: number } {
  return shot.activities ? { width: 1600, height: 1200 } : SHOT_SIZE;
}

/**
 * The crop of an `activities` shot, as an expression evaluated in the page:
 * the `<main>` column (no navigation bar) from its top down to the bottom of
 * the events table's row of event `eventId`, or null when the
 * page has no such row.
 */
export function clipToEvent(eventId: number): string {
  return `(() => {
    const main = document.querySelector('main');
    const row = [...document.querySelectorAll('tr')].find((r) => r.cells[0] && r.cells[0].innerText.trim() === ${JSON.stringify(String(eventId))});
    if (!main || !row) return null;
    const m = main.getBoundingClientRect();
    return { x: m.x, y: m.y, width: m.width, height: row.getBoundingClientRect().bottom + 1 - m.y };
  })()`;
}

/** What {@link main} set up, to take apart at the end. */
interface Bed {
  dir: string;
  server: DevServer;
  uiBase: string;
  /** The dev server's ports and database file, to start it again on them ({@link restartWithoutCodec}). */
  ports: { port: number; uiPort: number };
  dbFile: string;
  codec: CodecServer;
  model: ModelServer;
  connection: Connection;
  client: Client;
  worker: WorkerProcess;
}

/**
 * Starts the codec server, the dev server (with its UI, decoding through
 * that codec server), the scripted model server and a worker, in `dir`.
 */
async function startBed(dir: string): Promise<Bed> {
  const port = await freePort();
  const uiPort = await freePort();
  // The keys every process of the bed encrypts with (the worker's and this process's clients'), and a token made now.
  sharedCodecKeys();
  const token = randomBytes(24).toString('base64url');
  const codec = await startCodecServer({
    codec: new EncryptionCodec(loadCodecKeys(process.env, dir)),
    token,
    corsOrigins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
  });
  const dbFile = path.join(dir, 'temporal.db');
  const server = await startDevServer({
    port,
    uiPort,
    dbFile,
    logFile: path.join(dir, 'dev-server.log'),
    // What `agent-jobs codec-server` prints as the UI's codec endpoint: the token rides in the path.
    uiCodecEndpoint: `${codec.url}/t/${token}`,
  });
  say(`dev server at ${server.address}, UI ${server.uiUrl} decoding through the codec server at ${codec.url} (log in ${server.logFile})`);
  const model = await startModelServer({ script: SCREENSHOT_SCRIPT, logFile: path.join(dir, 'model-requests.jsonl') });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({
    ...codecClientOptions(),
    connection,
    interceptors: { workflow: [requestBindingInterceptor(connection, 'default')] },
  });
  const worker = await spawnWorker({
    workerId: `screenshots-${process.pid}`,
    connection,
    env: scriptedWorkerEnv({ address: server.address, modelUrl: model.url, apiKey: 'scripted-screenshots-key', dataDir: dir }),
  });
  say(`worker started (pid ${worker.pid}); the model is the scripted Messages API server at ${model.url}`);
  return { dir, server, uiBase: server.uiUrl!, ports: { port, uiPort }, dbFile, codec, model, connection, client, worker };
}

/** Stops what {@link startBed} started; removes its folder, or keeps it with the worker's output when `keepLogs`. */
async function stopBed(bed: Bed, keepLogs: boolean): Promise<void> {
  await bed.worker.stop().catch(() => undefined);
  await bed.model.close().catch(() => undefined);
  await bed.connection.close().catch(() => undefined);
  await bed.server.stop().catch(() => undefined);
  await bed.codec.close().catch(() => undefined);
  if (!keepLogs) return rmSync(bed.dir, { recursive: true, force: true });
  writeFileSync(path.join(bed.dir, 'worker.log'), bed.worker.output());
  say(`kept ${bed.dir} (dev-server.log, worker.log, model-requests.jsonl)`);
}

/**
 * Stops the worker and the dev server, and starts the dev server again on
 * the same database file and ports without a codec endpoint: its UI then
 * shows the runs as Temporal stores them. The worker's output is kept in
 * the bed's folder first (for a failure after this point).
 */
async function restartWithoutCodec(bed: Bed): Promise<void> {
  await bed.worker.stop();
  writeFileSync(path.join(bed.dir, 'worker.log'), bed.worker.output());
  await bed.connection.close();
  await bed.server.stop();
  bed.server = await startDevServer({ ...bed.ports, dbFile: bed.dbFile, logFile: path.join(bed.dir, 'dev-server.log') });
  say(`dev server started again at ${bed.server.address} on the same database, its UI without the codec endpoint`);
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
 * A run that completes: approval `auto`, both commands run, Claude's last
 * answer ends it.
 * @returns its workflow id, run id and the id of the event that scheduled its last `runCommand` (the crop of the codec shots ends there)
 */
async function completedRun(bed: Bed): Promise<Captured> {
  const handle = await startRun(bed, SHOTS.codecDecoded.workflowId, { task: TASK_ENCRYPTED, approval: 'auto' });
  await handle.result();
  const history = await handle.fetchHistory();
  const E = temporal.api.enums.v1.EventType;
  const lastCommand = (history.events ?? [])
    .filter(
      (e) =>
        e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && e.activityTaskScheduledEventAttributes?.activityType?.name === 'runCommand',
    )
    .pop();
  if (!lastCommand) throw new Error(`run ${handle.workflowId} completed without a runCommand`);
  return { workflowId: handle.workflowId, runId: (await handle.describe()).runId, lastCommandEventId: Number(lastCommand.eventId) };
}

/** A run to capture: its ids, and for the codec shots the event their crop ends at. */
interface Captured {
  workflowId: string;
  runId: string;
  lastCommandEventId?: number;
}

/** The ids of a running run, for {@link capture}. */
async function ids(handle: WorkflowHandle): Promise<Captured> {
  return { workflowId: handle.workflowId, runId: (await handle.describe()).runId };
}

/**
 * Opens the run's page in headless Chromium, waits until it shows
 * {@link expectedTexts}, checks that it shows none of the shot's `hides`,
 * saves a screenshot (cropped for an `activities` shot) to `file` and checks
 * that it is not blank.
 * @throws Error when the page never shows the run, shows what it must not, or the PNG is blank
 */
async function capture(chromium: string, bed: Bed, run: Captured, shot: Shot, file: string): Promise<void> {
  const url = workflowUiUrl(bed.uiBase, 'default', run.workflowId, run.runId) + (shot.activities ? '?category=activity' : '');
  const userDataDir = mkdtempSync(path.join(bed.dir, 'chromium-'));
  const size = windowOf(shot);
  const clip = shot.activities && run.lastCommandEventId !== undefined ? clipToEvent(run.lastCommandEventId) : undefined;
  const { png, width, height, shownAfterMs } = await capturePage(chromium, {
    url,
    ...size,
    userDataDir,
    expect: expectedTexts(shot),
    ...(shot.hides ? { absent: [...shot.hides] } : {}),
    ...(clip ? { clip } : {}),
  });
  const blank = blankReason(pngStats(png), width, height);
  if (blank) throw new Error(`the screenshot of ${url} looks blank: ${blank}`);
  writeFileSync(file, png);
  say(
    `saved ${path.relative(process.cwd(), file)} (${width}×${height}, ${Math.round(png.length / 1024)} KiB; the page showed the run after ${(shownAfterMs / 1000).toFixed(1)} s): ${url}`,
  );
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { out: { type: 'string', default: path.join(PROJECT_ROOT, 'docs') } } });
  const out = path.resolve(values.out);
  mkdirSync(out, { recursive: true });
  const chromium = await ensureChromium(say);
  say(`chromium: ${chromium}`);
  const bed = await startBed(mkdtempSync(path.join(tmpdir(), 'agent-jobs-shots-')));
  const shoot = (run: Captured, shot: Shot): Promise<void> => capture(chromium, bed, run, shot, path.join(out, shot.file));
  let done = false;
  try {
    await shoot(await ids(await awaitingApprovalRun(bed)), SHOTS.awaitingApproval);
    const paused = await pausedRun(bed);
    if (paused) await shoot(await ids(paused), SHOTS.paused);
    const completed = await completedRun(bed);
    await shoot(completed, SHOTS.codecDecoded);
    await restartWithoutCodec(bed);
    await shoot(completed, SHOTS.codecEncrypted);
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
