/**
 * `npm run demo`: one real agent run on a local Temporal dev server.
 *
 * 1. Uses the dev server at TEMPORAL_ADDRESS (default 127.0.0.1:7233) if one
 *    answers, else starts one in the background (installing the pinned
 *    Temporal CLI when needed) and leaves it running so the UI link works.
 * 2. Encrypts every payload it writes to Temporal: the keys of
 *    AGENT_JOBS_CODEC_KEYS, or a keys file it makes once in the data folder.
 * 3. With ANTHROPIC_API_KEY set, talks to Claude; without one, starts the
 *    scripted Messages API server on `examples/demo-script.json` and says so.
 * 4. Starts a worker, prepares a scratch workspace, starts the run through
 *    the CLI (`agent-jobs start --approval policy`) and follows it live. A
 *    command that needs approval is approved through the CLI (`agent-jobs
 *    approve`) when the answers are scripted; with a real key the person at
 *    the terminal decides each one at `watch`'s prompt, and without a
 *    terminal the demo stops there, leaves the run waiting and prints how to
 *    decide (it never approves Claude's own commands unattended).
 * 5. Checks the effect, not the answer: the run must have completed and
 *    total.txt must hold 55; otherwise it exits 1 and says what is missing.
 *    Prints whether bash ran in the sandbox, the result, and where to see
 *    the run in the Temporal UI.
 */
import { spawn, execFile } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { watchRun } from '../cli/follow';
import { shortHash } from '../shared/display';
import { DEV_SERVER_PORT, pidFile, recordedDevServer, serverAnswers, startDevServer, stopCommand } from './devserver';
import { startModelServer, type ModelServer } from './model-server';
import { PROJECT_ROOT, dataDir } from '../settings';
import { connect } from '../client';
import { createKeysFile, readCodecKeys } from '../codec';
import { resolveSandbox, sandboxModeFromEnv } from '../session/sandbox';
import { findSeccompLauncher } from '../session/seccomp-launch';
import { CliError } from '../cli/errors';

const run = promisify(execFile);
const CLI = path.join(PROJECT_ROOT, 'bin', 'agent-jobs.js');
const label = process.stdout.isTTY ? '\x1b[1mdemo:\x1b[0m' : 'demo:';
const say = (line: string): void => void process.stdout.write(`${label} ${line}\n`);

/** What total.txt must hold when the task was done (the sum of 1..10). */
const EXPECTED_TOTAL = '55';

/** The demo stopped at a command only a person may approve, and left the run waiting for them. */
class LeftForHuman extends Error {}

const TASK =
  'In this workspace, add up the numbers in numbers.txt, write the total to total.txt, ' +
  'check the total a second way, and tell me the result.';

async function main(): Promise<void> {
  // scripts/demo.sh passes its own start time, so the figure includes installing and building.
  const started = Number(process.env.AGENT_JOBS_DEMO_STARTED_MS) || Date.now();

  // 1. Temporal
  if (await serverAnswers(address)) {
    const ours = recordedDevServer(port);
    say(
      ours !== null
        ? `using the dev server this folder started earlier (pid ${ours}), already answering at ${address}`
        : `using the Temporal server already answering at ${address}, which this folder did not start (its pid file names none):` +
            ' on a machine others use, it may be theirs; set TEMPORAL_ADDRESS to a server of your own (docs/development.md)',
    );
  } else {
    say(`starting a Temporal dev server at 127.0.0.1:${port} (data in data/temporal.db)`);
    await startDevServer({ port, dbFile: path.join(dataDir(), 'temporal.db'), detached: true });
    startedServer = true;
  }

  // 2. Encryption: the keys of AGENT_JOBS_CODEC_KEYS, or a keys file the demo makes once in the data folder;
  // the worker, the CLI and this process all use them (docs/security.md, "Encryption").
  if (!process.env.AGENT_JOBS_CODEC_KEYS) {
    const file = path.join(dataDir(), 'codec-keys');
    if (createKeysFile(file))
      say(`made a payload encryption key: ${path.relative(process.cwd(), file)} (keep it: runs it wrote need it to be read)`);
    process.env.AGENT_JOBS_CODEC_KEYS = file;
  }
  const keys = readCodecKeys(process.env.AGENT_JOBS_CODEC_KEYS);
  say(`payloads encrypted (AES-256-GCM) with key ${keys.current.id} from ${path.relative(process.cwd(), keys.source) || keys.source}`);

  // 3. The model
  const workerEnv: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address };
  const realKey = Boolean(process.env.ANTHROPIC_API_KEY);
  const terminal = Boolean(process.stdin.isTTY && process.stdout.isTTY);
  if (realKey) {
    const baseUrl = process.env.ANTHROPIC_BASE_URL;
    say(
      baseUrl
        ? `ANTHROPIC_API_KEY is set: this run talks to the Messages API at ${baseUrl} (ANTHROPIC_BASE_URL), not to a scripted server of the demo's.`
        : 'ANTHROPIC_API_KEY is set: this run talks to Claude (the real API).',
    );
    const url = baseUrl ?? ANTHROPIC_API_URL;
    if (!(await httpAnswers(url))) {
      throw new CliError(
        `nothing answers at ${url}: every model call of the run would fail and be retried for minutes`,
        baseUrl
          ? 'start the server ANTHROPIC_BASE_URL names, or `unset ANTHROPIC_BASE_URL ANTHROPIC_API_KEY` to use the scripted server'
          : 'check this machine reaches the Claude API, or `unset ANTHROPIC_API_KEY` to use the scripted server',
      );
    }
    say(
      terminal
        ? '  Plain read-only commands run unasked; you decide every other one here, at the prompt ([a]pprove / [d]eny / [e]dit).'
        : '  No terminal to ask you at: the demo stops at the first command that needs approval and prints how to decide it.',
    );
  } else {
    const model: ModelServer = await startModelServer({
      script: path.join(PROJECT_ROOT, 'examples', 'demo-script.json'),
      logFile: path.join(dataDir(), 'demo-model-requests.jsonl'),
    });
    cleanup.push(() => model.close());
    say(`no ANTHROPIC_API_KEY: Claude's answers come from the SCRIPTED Messages API server at ${model.url}`);
    say('  (examples/demo-script.json; the SDK, Temporal, the worker and bash are all real). Set ANTHROPIC_API_KEY to use Claude.');
    workerEnv.ANTHROPIC_BASE_URL = model.url;
    workerEnv.ANTHROPIC_API_KEY = 'scripted-demo-key';
  }

  say(sandboxLine(workerEnv));

  // 4. A worker, a workspace, the run
  const logFile = path.join(dataDir(), 'demo-worker.log');
  mkdirSync(dataDir(), { recursive: true });
  const log = openSync(logFile, 'a');
  const jobs = await connect({ address });
  cleanup.push(() => jobs.close());
  const others = await jobs.pollers();
  if (others.length > 0) {
    // Any worker on the queue may take this run's workflow tasks: a teammate's, with other codec keys, fails them until ours does.
    const names = others.map((p) => p.identity || '(no identity)').join(', ');
    say(
      `${others.length} other worker(s) already poll the agent-jobs task queue on this server (${names}): they may take this run's tasks.` +
        ' If they are not yours, stop here (Ctrl-C) and use a server of your own (docs/development.md, "A machine shared with others").',
    );
  }
  const worker = spawn(process.execPath, [path.join(PROJECT_ROOT, 'dist', 'worker.js')], { env: workerEnv, stdio: ['ignore', log, log] });
  cleanup.push(async () => {
    if (worker.exitCode === null && worker.signalCode === null) {
      worker.kill('SIGTERM');
      await new Promise((r) => worker.once('exit', r));
    }
  });
  // A new worker shows up among the task queue's pollers a second or two after it starts.
  const exited = new Promise<false>((r) => worker.once('exit', () => r(false)));
  if (!(await Promise.race([jobs.waitForWorker(60_000), exited]))) {
    throw new CliError(
      `the worker did not start polling (${worker.exitCode !== null ? `it exited with code ${worker.exitCode}` : 'still silent after 60 s'})`,
      `see its log: ${path.relative(process.cwd(), logFile)}`,
    );
  }
  say(`worker started (pid ${worker.pid}; log in ${shown(logFile)})`);

  const workflowId = `demo-${new Date()
    .toISOString()
    .replace(/[-:.TZ]/g, '')
    .slice(0, 14)}`;
  const workspace = path.join(dataDir(), 'workspaces', workflowId);
  mkdirSync(workspace, { recursive: true });
  writeFileSync(path.join(workspace, 'numbers.txt'), `${Array.from({ length: 10 }, (_, i) => i + 1).join('\n')}\n`);
  say(`scratch workspace: ${path.relative(process.cwd(), workspace)} (numbers.txt holds 1..10)`);

  const cliEnv = { ...process.env, TEMPORAL_ADDRESS: address };
  const startOut = await run(
    process.execPath,
    [CLI, 'start', TASK, '--id', workflowId, '--workdir', workspace, '--approval', 'policy', '--max-turns', '12', '--json'],
    { env: cliEnv },
  );
  const { uiUrl } = JSON.parse(startOut.stdout) as { uiUrl: string | null };
  startedRun = workflowId;
  say(`$ agent-jobs start "${TASK}" --approval policy`);
  say(`run ${workflowId} started; following it live:\n`);

  // Scripted answers: approve each command that waits, through the CLI, as a person would, once the watcher has shown it.
  // A real key: the person decides at watch's prompt, or (no terminal) the demo leaves the run waiting for them.
  const final = await watchRun(jobs, workflowId, {
    json: false,
    intervalMs: 500,
    prompt: realKey && terminal,
    // --sha binds the approval to the command the watcher showed: without it, approve decides whatever waits when it runs.
    onPendingApproval: async (pending) => {
      const sha = shortHash(pending.commandSha256);
      if (realKey) {
        if (terminal) return;
        throw new LeftForHuman(
          `run ${workflowId} waits for your decision on the command above; nothing was approved for you, and the run stays open.\n` +
            `  a worker must run to decide and go on (this demo's stops now): ANTHROPIC_API_KEY=... npx agent-jobs worker &\n` +
            `  approve: npx agent-jobs approve ${workflowId} --sha ${sha}\n` +
            `  deny:    npx agent-jobs deny ${workflowId} --sha ${sha} --reason "..."\n` +
            `  follow:  npx agent-jobs watch ${workflowId}   (on a terminal it asks you at each command)\n` +
            `  end it:  npx agent-jobs cancel ${workflowId}`,
        );
      }
      say(`$ npx agent-jobs approve ${workflowId} --sha ${sha} --reason "demo: looks safe" --by demo`);
      const out = await run(process.execPath, [CLI, 'approve', workflowId, '--sha', sha, '--reason', 'demo: looks safe', '--by', 'demo'], {
        env: cliEnv,
      });
      say(out.stdout.trim());
    },
  });
  startedRun = null;
  // No signal was given, so only an ended run returns here.
  if (final === null) return;

  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  process.stdout.write('\n');
  const problem = final.status === 'completed' ? workspaceProblem(workspace) : `the run ended ${final.status}, not completed`;
  if (problem) {
    say(`FAILED: ${problem}; whatever the final answer says, the task was not done (demo wall time ${seconds} s)`);
    say(`  what the commands printed: npx agent-jobs transcript ${workflowId}; the worker's log: ${shown(logFile)}`);
    process.exitCode = 1;
  } else {
    say(`finished: completed in ${final.turns} turns, total.txt holds ${EXPECTED_TOTAL} (checked); demo wall time ${seconds} s`);
  }
  say(uiUrl !== null ? `see the run in the Temporal UI: ${uiUrl}` : 'the Temporal server serves no web UI (started --headless)');
  say(`workspace with the files the agent wrote: ${shown(workspace)}`);
  say(stopLine(startedServer));
}

/** `file` as the person can open it from where they ran the demo: relative when below, else absolute (AGENT_JOBS_DATA_DIR). */
function shown(file: string): string {
  const rel = path.relative(process.cwd(), file);
  return rel.startsWith('..') || path.isAbsolute(rel) ? file : rel;
}

/** Why the workspace does not show the task done (total.txt holds the sum), or null when it does. */
function workspaceProblem(workspace: string): string | null {
  let total: string;
  try {
    total = readFileSync(path.join(workspace, 'total.txt'), 'utf8').trim();
  } catch {
    return `the workspace has no total.txt (the commands that write it did not run)`;
  }
  return total === EXPECTED_TOTAL ? null : `total.txt holds ${JSON.stringify(total.slice(0, 40))}, not ${EXPECTED_TOTAL}`;
}

/** Where the Anthropic SDK sends requests when ANTHROPIC_BASE_URL is not set. */
const ANTHROPIC_API_URL = 'https://api.anthropic.com';

/** Whether an HTTP server answers at `url` within 10 s (any status: a 404 is an answer). Throws nothing. */
async function httpAnswers(url: string): Promise<boolean> {
  try {
    await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(10_000) });
    return true;
  } catch {
    return false;
  }
}

/** Whether the worker's bash will run in the sandbox, decided as the worker decides it (same environment, same probe). */
function sandboxLine(env: NodeJS.ProcessEnv): string {
  try {
    const { mode } = resolveSandbox(sandboxModeFromEnv(env));
    if (mode === 'bwrap') return 'sandbox: bwrap (bash writes only its workspace, reads the rest read-only, no network)';
    const filter = findSeccompLauncher().python ? 'the seccomp filter still on' : 'no seccomp filter either (no usable /usr/bin/python3)';
    return `sandbox: OFF (no working bwrap, or AGENT_JOBS_SANDBOX=none): bash sees whatever its user may read, ${filter}; see docs/security.md`;
  } catch (err) {
    return `sandbox: ${err instanceof Error ? err.message : String(err)}`;
  }
}

/** Where the dev server came from and how to stop it. */
function stopLine(startedHere: boolean): string {
  const stop = stopCommand(port, 'npx agent-jobs');
  if (startedHere)
    return `the dev server keeps running (pid file ${path.relative(process.cwd(), pidFile(port))}) so the link works; stop it with: ${stop}`;
  if (existsSync(pidFile(port)))
    return `the dev server was already running (started by an earlier demo or \`agent-jobs server\`); stop it with: ${stop}`;
  return `the Temporal server at ${address} was already running and is left as it was`;
}

const address = process.env.TEMPORAL_ADDRESS ?? `127.0.0.1:${DEV_SERVER_PORT}`;
const port = Number(/:(\d+)$/.exec(address)?.[1] ?? DEV_SERVER_PORT);
const cleanup: Array<() => Promise<unknown>> = [];
let startedServer = false;
let startedRun: string | null = null;

main()
  .catch(async (err: unknown) => {
    if (err instanceof LeftForHuman) {
      process.exitCode = 2;
      process.stdout.write(`\n`);
      say(err.message);
      say(stopLine(startedServer));
      return;
    }
    process.exitCode = 1;
    process.stderr.write(`demo failed: ${err instanceof Error ? err.message : String(err)}\n`);
    if (err instanceof CliError && err.hint) process.stderr.write(`  hint: ${err.hint}\n`);
    else
      process.stderr.write(
        `  hint: the worker's log is ${shown(path.join(dataDir(), 'demo-worker.log'))}; run \`npm run demo\` again once the cause is fixed\n`,
      );
    if (startedRun) {
      // Leave nothing waiting for a human: the run ends cancelled as soon as a worker runs it.
      const out = await run(process.execPath, [CLI, 'cancel', startedRun], { env: { ...process.env, TEMPORAL_ADDRESS: address } }).catch(
        () => null,
      );
      process.stderr.write(
        out
          ? `  the demo's run ${startedRun} was cancelled\n`
          : `  the demo's run ${startedRun} may still be open: npx agent-jobs cancel ${startedRun}\n`,
      );
    }
    process.stderr.write(`  ${stopLine(startedServer)}\n`);
  })
  .finally(async () => {
    for (const step of cleanup.reverse()) await step().catch(() => undefined);
  });
