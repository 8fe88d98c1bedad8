/** `agent-jobs server`: a local Temporal dev server with this project's search attributes. */
import path from 'node:path';
import type { Command } from 'commander';
import { serverAnswers, startDevServer, stopDetachedServer, writePidFile } from '../../devserver';
import { dataDir } from '../../settings';
import { CliError } from '../errors';
import { printJson, printLines } from '../output';
import { port } from '../parse';

interface ServerOptions {
  port: number;
  uiPort?: number;
  db?: string;
  inMemory?: boolean;
  headless?: boolean;
  detach?: boolean;
  stop?: boolean;
  json?: boolean;
}

export function registerServer(program: Command): void {
  program
    .command('server')
    .description('run a local Temporal dev server (installs the pinned Temporal CLI when none is on the PATH)')
    .option('--port <port>', 'gRPC port', port, 7233)
    .option('--ui-port <port>', 'web UI port (default: port + 1000, i.e. 8233)', port)
    .option('--db <file>', 'SQLite file that keeps runs across restarts (default: data/temporal.db)')
    .option('--in-memory', 'keep no database file (runs are lost when the server stops)')
    .option('--headless', 'no web UI')
    .option('--detach', 'start it in the background and return (stop it with --stop)')
    .option('--stop', 'stop the background server started with --detach on this port')
    .option('--json', 'print {"address","uiUrl","pid"}')
    .action(async (opts: ServerOptions) => {
      if (opts.stop) {
        const stopped = await stopDetachedServer(opts.port);
        if (!stopped) throw new CliError(`no background dev server recorded for port ${opts.port}`, 'a server started in the foreground stops with Ctrl-C');
        return printLines(`stopped the dev server on port ${opts.port}`);
      }
      const address = `127.0.0.1:${opts.port}`;
      if (await serverAnswers(address, 1_000)) {
        throw new CliError(`a Temporal server already answers at ${address}`, `use it, or pick another --port`);
      }
      if (opts.inMemory && opts.db) throw new CliError('--in-memory and --db exclude each other', 'choose one');
      const dbFile = opts.inMemory ? null : path.resolve(opts.db ?? path.join(dataDir(), 'temporal.db'));
      const server = await startDevServer({
        port: opts.port,
        ...(opts.uiPort ? { uiPort: opts.uiPort } : {}),
        ...(dbFile ? { dbFile } : {}),
        headless: opts.headless === true,
        detached: opts.detach === true,
      });
      const info = { address: server.address, uiUrl: server.uiUrl, pid: server.pid, dbFile, logFile: server.logFile };
      if (opts.detach) {
        writePidFile(opts.port, server.pid);
        if (opts.json) return printJson(info);
        return printLines(
          `Temporal dev server running in the background at ${server.address} (pid ${server.pid})`,
          `  UI:   ${server.uiUrl}`,
          `  data: ${dbFile ?? 'in memory'}`,
          `  log:  ${server.logFile}`,
          `  stop: agent-jobs server --stop${opts.port !== 7233 ? ` --port ${opts.port}` : ''}`,
        );
      }
      if (opts.json) printJson(info);
      else printLines(`Temporal dev server at ${server.address}, UI ${server.uiUrl}, data ${dbFile ?? 'in memory'}, log ${server.logFile}. Ctrl-C stops it.`);
      await new Promise<void>((resolve) => {
        const stop = (): void => void server.stop().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
