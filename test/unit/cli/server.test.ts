/** `agent-jobs server`: its default port, the dynamic config every dev server carries, and `--stop`, which signals only the dev server it recorded. */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultServerPort } from '../../../src/cli/commands/server';
import { CliError } from '../../../src/cli/errors';
import { buildProgram } from '../../../src/cli/program';
import {
  DEV_SERVER_DYNAMIC_CONFIG,
  devServerArgs,
  freePort,
  isDevServerCommandLine,
  pidFile,
  recordedDevServer,
  stopDetachedServer,
} from '../../../src/dev/devserver';

describe('defaultServerPort', () => {
  test.each([
    [undefined, 7233],
    ['', 7233],
    ['127.0.0.1:7300', 7300],
    ['localhost:17233', 17233],
    ['LOCALHOST:9000', 9000],
    ['127.0.0.2:1', 1],
    ['0.0.0.0:7444', 7444],
    ['[::1]:7555', 7555],
    ['localhost', 7233],
    ['temporal.example.com:7300', 7233],
    ['my-ns.a1b2c.tmprl.cloud:7233', 7233],
    ['10.0.0.5:7300', 7233],
    ['127.0.0.1:99999', 7233],
  ])('TEMPORAL_ADDRESS=%j gives port %d', (address, expected) => {
    expect(defaultServerPort(address === undefined ? {} : { TEMPORAL_ADDRESS: address })).toBe(expected);
  });
});

describe('devServerArgs: the dynamic config of every dev server the project starts', () => {
  /** The `KEY=VALUE` after each `--dynamic-config-value`. */
  const dynamicConfig = (args: string[]): string[] => args.flatMap((a, i) => (args[i - 1] === '--dynamic-config-value' ? [a] : []));

  test("lifts the per-shard transfer-queue read limit above Temporal's 20 per second", () => {
    expect(DEV_SERVER_DYNAMIC_CONFIG).toEqual({ 'history.transferProcessorMaxPollRPS': 1000 });
    expect(dynamicConfig(devServerArgs({}))).toEqual(['history.transferProcessorMaxPollRPS=1000']);
    expect(dynamicConfig(devServerArgs({ port: 7300, headless: true, dbFile: '/tmp/x.db' }))).toEqual([
      'history.transferProcessorMaxPollRPS=1000',
    ]);
  });

  test("a caller's keys are added, and one of the project's keys given by the caller takes the caller's value", () => {
    expect(dynamicConfig(devServerArgs({ dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 } }))).toEqual([
      'history.transferProcessorMaxPollRPS=1000',
      'limit.historyCount.suggestContinueAsNew=60',
    ]);
    expect(dynamicConfig(devServerArgs({ dynamicConfig: { 'history.transferProcessorMaxPollRPS': 50 } }))).toEqual([
      'history.transferProcessorMaxPollRPS=50',
    ]);
  });

  test("serverDefaults leaves the project's keys out (the benchmark's baseline), not the caller's", () => {
    expect(dynamicConfig(devServerArgs({ serverDefaults: true }))).toEqual([]);
    expect(
      dynamicConfig(devServerArgs({ serverDefaults: true, dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 60 } })),
    ).toEqual(['limit.historyCount.suggestContinueAsNew=60']);
  });
});

describe('server --stop checks the recorded pid before it signals anything', () => {
  const children: ChildProcess[] = [];
  let dir: string;
  let before: string | undefined;
  beforeAll(() => {
    before = process.env.AGENT_JOBS_DATA_DIR;
    dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-stop-'));
    process.env.AGENT_JOBS_DATA_DIR = dir;
  });
  afterAll(() => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    if (before === undefined) delete process.env.AGENT_JOBS_DATA_DIR;
    else process.env.AGENT_JOBS_DATA_DIR = before;
    rmSync(dir, { recursive: true, force: true });
  });

  /** A child in its own process group (as the detached dev server is). */
  function spawnLeader(cmd: string, args: string[]): ChildProcess {
    const child = spawn(cmd, args, { detached: true, stdio: 'ignore' });
    children.push(child);
    return child;
  }
  const alive = (pid: number): boolean => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  /** `agent-jobs server --stop --port <port>` in this process: the CliError it ends with. */
  async function stopFails(port: number): Promise<CliError> {
    try {
      await buildProgram().parseAsync(['server', '--stop', '--port', String(port)], { from: 'user' });
    } catch (err) {
      if (err instanceof CliError) return err;
      throw err;
    }
    throw new Error('server --stop succeeded');
  }

  test('a pid file naming a live unrelated process (sleep 60): not killed, the stale record removed, and the CLI says so', async () => {
    const sleeper = spawnLeader('sleep', ['60']);
    const port = 47001;
    writeFileSync(pidFile(port), `${sleeper.pid}\n`);
    const e = await stopFails(port);
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(sleeper.pid!)).toBe(true);
    expect(existsSync(pidFile(port))).toBe(false);
    expect(e.message).toBe(
      `the record of the dev server on port ${port} was stale (pid ${sleeper.pid} is not the Temporal dev server on port ${port}: it runs sleep 60); removed ${pidFile(port)}, signalled nothing`,
    );
    expect(e.hint).toMatch(/^if a server still answers on port 47001/);
    expect(e.exitCode).toBe(1);
  });

  test('a pid file naming a dead pid is cleaned up with a clear message', async () => {
    const gone = spawnLeader('true', []);
    await new Promise((r) => gone.once('exit', r));
    const port = 47002;
    writeFileSync(pidFile(port), `${gone.pid}\n`);
    const e = await stopFails(port);
    expect(existsSync(pidFile(port))).toBe(false);
    expect(e.message).toBe(
      `the record of the dev server on port ${port} was stale (pid ${gone.pid} is not running); removed ${pidFile(port)}, signalled nothing`,
    );
    expect(await stopDetachedServer(port)).toEqual({ kind: 'none', file: pidFile(port) });
  });

  test('a dev server on another port is not the one recorded for this port: not killed', async () => {
    const other = spawnLeader(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', 'server', 'start-dev', '--port', '47999']);
    const port = 47003;
    writeFileSync(pidFile(port), `${other.pid}\n`);
    expect(await stopDetachedServer(port)).toMatchObject({
      kind: 'stale',
      pid: other.pid,
      why: expect.stringContaining(`is not the Temporal dev server on port ${port}`),
    });
    await new Promise((r) => setTimeout(r, 300));
    expect(alive(other.pid!)).toBe(true);
  });

  test('garbage in the pid file is removed, nothing signalled', async () => {
    const port = 47004;
    writeFileSync(pidFile(port), '-1\n');
    expect(await stopDetachedServer(port)).toEqual({ kind: 'stale', pid: null, why: 'it holds "-1", not a pid', file: pidFile(port) });
    expect(existsSync(pidFile(port))).toBe(false);
  });

  test('the dev server recorded for the port (its command line says server start-dev --port P) is stopped', async () => {
    const port = 47005;
    // The command line the launcher itself builds, so the check and the launcher cannot drift apart.
    const server = spawnLeader(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', ...devServerArgs({ port })]);
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(pidFile(port), `${server.pid}\n`);
    expect(await stopDetachedServer(port)).toEqual({ kind: 'stopped', pid: server.pid, file: pidFile(port) });
    expect(alive(server.pid!)).toBe(false);
    expect(existsSync(pidFile(port))).toBe(false);
  });

  test('recordedDevServer (the demo: "the dev server this folder started"): only a live dev server on that port counts', async () => {
    const port = 47007;
    expect(recordedDevServer(port)).toBeNull(); // no record
    const sleeper = spawnLeader('sleep', ['60']);
    writeFileSync(pidFile(port), `${sleeper.pid}\n`);
    expect(recordedDevServer(port)).toBeNull(); // a live pid that is not a dev server
    const other = spawnLeader(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', ...devServerArgs({ port: port + 1 })]);
    writeFileSync(pidFile(port), `${other.pid}\n`);
    expect(recordedDevServer(port)).toBeNull(); // a dev server on another port
    writeFileSync(pidFile(port), 'not a pid\n');
    expect(recordedDevServer(port)).toBeNull();
    const server = spawnLeader(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', ...devServerArgs({ port })]);
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(pidFile(port), `${server.pid}\n`);
    expect(recordedDevServer(port)).toBe(server.pid);
    expect(existsSync(pidFile(port))).toBe(true); // it only reads: the record is left as it was
    server.kill('SIGKILL');
    await new Promise((r) => server.once('exit', r));
    expect(recordedDevServer(port)).toBeNull(); // dead now
  });

  test('--stop --json prints {"stopped","port","pid"} on stdout', async () => {
    const port = 47006;
    const server = spawnLeader(process.execPath, ['-e', 'setTimeout(() => {}, 60000)', 'server', 'start-dev', '--port', String(port)]);
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(pidFile(port), `${server.pid}\n`);
    const out: string[] = [];
    const write = jest.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => out.push(String(chunk)) > 0);
    try {
      await buildProgram().parseAsync(['server', '--stop', '--port', String(port), '--json'], { from: 'user' });
    } finally {
      write.mockRestore();
    }
    expect(JSON.parse(out.join(''))).toEqual({ stopped: true, port, pid: server.pid });
    expect(alive(server.pid!)).toBe(false);
  });

  test.each([
    [['temporal', 'server', 'start-dev', '--port', '7300', '--ip', '127.0.0.1'], 7300, true],
    [['/usr/bin/python3', '/x/bin/temporal', 'server', 'start-dev', '--port', '7300'], 7300, true],
    [['temporal', 'server', 'start-dev', '--port', '7301'], 7300, false],
    [['temporal', 'server', 'start-dev'], 7233, false],
    [['sleep', '60'], 7233, false],
    [[], 7233, false],
  ])('isDevServerCommandLine(%j, %d) is %s', (argv, port, expected) => {
    expect(isDevServerCommandLine(argv, port)).toBe(expected);
  });
});

describe('server without a Temporal CLI', () => {
  const saved = process.env.AGENT_JOBS_TEMPORAL_CLI;
  afterEach(() => {
    if (saved === undefined) delete process.env.AGENT_JOBS_TEMPORAL_CLI;
    else process.env.AGENT_JOBS_TEMPORAL_CLI = saved;
  });

  test('a Temporal CLI that is not there ends the command with a CliError that names it and says how to install one', async () => {
    const missing = path.join(tmpdir(), 'agent-jobs-no-such-temporal-cli');
    process.env.AGENT_JOBS_TEMPORAL_CLI = missing;
    const port = await freePort();
    const failure = await buildProgram()
      .parseAsync(['server', '--port', String(port), '--headless', '--in-memory'], { from: 'user' })
      .then(
        () => new Error('server started'),
        (err: unknown) => err,
      );
    expect(failure).toBeInstanceOf(CliError);
    expect((failure as CliError).message).toContain(`(AGENT_JOBS_TEMPORAL_CLI=${missing} does not exist); install the Temporal CLI`);
  });
});
