/**
 * The README's first command, as a new user meets it: `npm run demo` runs
 * `node dist/dev/demo.js`, which here finds no Temporal server at its address,
 * starts one, starts a worker, runs the example task with the scripted model
 * server, approves through the CLI and leaves the server running. A fresh
 * server lists a new worker among its pollers only after a second or so; the
 * demo once failed on exactly that, every time it started the server itself.
 *
 * It claims a success only from the workspace: with commands
 * refused it exits 1 whatever the scripted answer says, and with a real key
 * (here: a key and a base URL of a scripted server, which the demo cannot
 * tell from Claude) it never approves Claude's commands unattended.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { freePort, serverAnswers } from '../../src/dev/devserver';
import { startModelServer } from '../../src/dev/model-server';

const ROOT = path.resolve(__dirname, '../..');
const CLI = path.join(ROOT, 'bin', 'agent-jobs.js');
const run = promisify(execFile);

interface Demo {
  address: string;
  port: number;
  data: string;
  env: NodeJS.ProcessEnv;
}

/**
 * A data folder for one demo and the Temporal address it is given; always removes the folder.
 * `server`: `'own'` (the default) gives a free port where nothing answers, and afterwards stops the
 * dev server the demo started there and checks it is gone; `'suite'` gives the dev server of the jest
 * worker (test/integration/environment.ts), which the demo uses as it found it: a case that is not about
 * starting a server does not wait for one to start.
 */
async function withDemo(
  body: (d: Demo) => Promise<void>,
  extraEnv: NodeJS.ProcessEnv = {},
  server: 'own' | 'suite' = 'own',
): Promise<void> {
  const suite = process.env.AGENT_JOBS_TEST_TEMPORAL_ADDRESS;
  if (server === 'suite' && !suite) throw new Error('AGENT_JOBS_TEST_TEMPORAL_ADDRESS is not set: run this file through jest');
  const address = server === 'suite' ? suite! : `127.0.0.1:${await freePort()}`;
  const port = Number(address.split(':').pop());
  const data = mkdtempSync(path.join(tmpdir(), 'agent-jobs-demo-'));
  const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, AGENT_JOBS_DATA_DIR: data };
  delete env.ANTHROPIC_API_KEY;
  delete env.ANTHROPIC_BASE_URL;
  delete env.AGENT_JOBS_CODEC_KEYS;
  Object.assign(env, extraEnv);
  try {
    await body({ address, port, data, env });
  } finally {
    if (server === 'own') await run(process.execPath, [CLI, 'server', '--stop', '--port', String(port)], { env }).catch(() => undefined);
    rmSync(data, { recursive: true, force: true });
  }
  if (server === 'own') expect(await serverAnswers(address)).toBe(false);
}

/** Runs the demo to its end; its exit code (0 when it succeeded) with what it printed. */
async function demo(env: NodeJS.ProcessEnv): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [path.join(ROOT, 'dist', 'dev', 'demo.js')], { env, cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The one workspace the demo made under `data`. */
function workspaceOf(data: string): string {
  const root = path.join(data, 'workspaces');
  const [only] = readdirSync(root);
  return path.join(root, only!);
}

describe('npm run demo', () => {
  test('on an address where no server answers: starts one, completes the run with an approval, checks total.txt, says how to stop the server', async () => {
    await withDemo(async ({ address, port, data, env }) => {
      const { code, stdout, stderr } = await demo(env);
      expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
      expect(stdout).toContain(`starting a Temporal dev server at ${address}`);
      expect(stdout).not.toContain('other worker(s) already poll');
      expect(stdout).toMatch(/no ANTHROPIC_API_KEY: Claude's answers come from the SCRIPTED Messages API server/);
      expect(stdout).toContain('sandbox: bwrap (bash writes only its workspace, reads the rest read-only, no network)');
      expect(stdout).toMatch(
        /\$ npx agent-jobs approve demo-\d+ --sha [0-9a-f]{12} --reason "demo: looks safe" --by demo\ndemo: approved toolu_\w+ in demo-\d+/,
      );
      expect(stdout).toMatch(/demo: finished: completed in \d+ turns, total\.txt holds 55 \(checked\)/);
      // watch prints each decision once, also when the closed run's view (read from history) lists it again.
      const approvals = stdout.match(/✓ toolu_\w+ approved by demo/g) ?? [];
      expect(approvals.length).toBeGreaterThan(0);
      expect(new Set(approvals).size).toBe(approvals.length);
      expect(readFileSync(path.join(workspaceOf(data), 'total.txt'), 'utf8').trim()).toBe('55');
      // Encrypted by default: a key made once in the data folder; the server's history holds no plaintext of the run.
      expect(stdout).toMatch(/demo: made a payload encryption key: .*codec-keys/);
      expect(stdout).toMatch(/demo: payloads encrypted \(AES-256-GCM\) with key k\d{8}T\d{6}-[0-9a-f]{6}/);
      const workflowId = /run (demo-\d+) started/.exec(stdout)![1]!;
      const connection = await Connection.connect({ address });
      try {
        const history = await new Client({ connection }).workflow.getHandle(workflowId).fetchHistory();
        const bytes = Buffer.from(temporal.api.history.v1.History.encode(history).finish());
        expect(bytes.includes('numbers.txt')).toBe(false);
        expect(bytes.includes('binary/encrypted')).toBe(true);
      } finally {
        await connection.close();
      }
      expect(stdout).toMatch(/see the run in the Temporal UI: http:\/\/localhost:\d+\/namespaces\/default\/workflows\/demo-\d+\//);
      expect(stdout).toContain(`stop it with: npx agent-jobs server --stop --port ${port}`);
      expect(await serverAnswers(address)).toBe(true);
    });
  });

  // As root, bash runs as the session user, who cannot enter the 0700 data folder mkdtemp made; without the
  // sandbox nothing binds the workspace in, so every command is refused, while the script still "answers" 55.
  const asRoot = process.getuid?.() === 0 ? test : test.skip;
  asRoot('with every command refused (no sandbox, a workspace its user cannot reach): says FAILED and exits 1', async () => {
    await withDemo(
      async ({ data, env }) => {
        const { code, stdout } = await demo(env);
        expect(stdout).toContain('sandbox: OFF');
        expect(stdout).not.toMatch(/demo: finished: completed/);
        expect(stdout).toMatch(/demo: FAILED: the workspace has no total\.txt \(the commands that write it did not run\)/);
        expect(stdout).toMatch(/npx agent-jobs transcript demo-\d+/);
        expect(code).toBe(1);
        expect(existsSync(path.join(workspaceOf(data), 'total.txt'))).toBe(false);
      },
      { AGENT_JOBS_SANDBOX: 'none' },
      'suite',
    );
  });

  test('with a key and no terminal: approves nothing, stops at the first command that needs approval, leaves the run waiting, exits 2', async () => {
    const model = await startModelServer({ script: path.join(ROOT, 'examples', 'demo-script.json') });
    try {
      await withDemo(
        async ({ address, data, env }) => {
          // A teammate's worker on the same server: one poll of the shared task queue, under its own identity, ended after 3 s (the server refuses a shorter long poll).
          const teammate = await Connection.connect({ address });
          try {
            await teammate
              .withDeadline(Date.now() + 3_000, () =>
                teammate.workflowService.pollWorkflowTaskQueue({
                  namespace: 'default',
                  taskQueue: { name: 'agent-jobs', kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
                  identity: '4242@teammate-host',
                }),
              )
              .catch(() => undefined);
          } finally {
            await teammate.close();
          }
          const { code, stdout } = await demo(env);
          expect(stdout).toContain(`using the Temporal server already answering at ${address}, which this folder did not start`);
          expect(stdout).toMatch(
            /demo: \d+ other worker\(s\) already poll the agent-jobs task queue on this server \([^)]*4242@teammate-host/,
          );
          // The run it leaves waiting is ended whatever the checks find: on the suite's server a later file would list it.
          const workflowId = /run (demo-\d+) started/.exec(stdout)?.[1];
          const connection = await Connection.connect({ address });
          const handle = workflowId ? new Client({ connection }).workflow.getHandle(workflowId) : null;
          try {
            expect(workflowId).toMatch(/^demo-\d+$/);
            expect(stdout).toContain(`ANTHROPIC_API_KEY is set: this run talks to the Messages API at ${model.url} (ANTHROPIC_BASE_URL)`);
            expect(stdout).toContain('No terminal to ask you at');
            expect(stdout).toMatch(/nothing was approved for you, and the run stays open/);
            expect(stdout).toMatch(new RegExp(`approve: npx agent-jobs approve ${workflowId} --sha [0-9a-f]{12}`));
            expect(stdout).not.toMatch(/\$ (npx )?agent-jobs approve/);
            expect(code).toBe(2);
            // The read-only commands ran unasked under policy; the write waits, so total.txt does not exist.
            expect(existsSync(path.join(workspaceOf(data), 'total.txt'))).toBe(false);
            expect((await handle!.describe()).status.name).toBe('RUNNING');
          } finally {
            await handle?.terminate('test over').catch(() => undefined);
            await connection.close();
          }
        },
        { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: model.url },
        'suite',
      );
    } finally {
      await model.close();
    }
  });

  test('with a key and a base URL where nothing answers (a scripted server stopped, the tour left exported): fails at once and says which variables to unset', async () => {
    const closed = await freePort();
    await withDemo(
      async ({ env }) => {
        const started = Date.now();
        const { code, stdout, stderr } = await demo(env);
        expect(code).toBe(1);
        expect(stdout).toContain(`this run talks to the Messages API at http://127.0.0.1:${closed} (ANTHROPIC_BASE_URL)`);
        expect(stderr).toContain(`demo failed: nothing answers at http://127.0.0.1:${closed}`);
        expect(stderr).toContain('unset ANTHROPIC_BASE_URL ANTHROPIC_API_KEY');
        expect(stdout).not.toContain('worker started');
        // Before any model call: not the minutes of retries a run would spend.
        expect(Date.now() - started).toBeLessThan(90_000);
      },
      { ANTHROPIC_API_KEY: 'test-key', ANTHROPIC_BASE_URL: `http://127.0.0.1:${closed}` },
      'suite',
    );
  });
});
