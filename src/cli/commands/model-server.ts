/** `agent-jobs model-server`: the scripted Messages API server (docs/scripted-server.md). */
import { cliCommand } from '../invocation';
import type { Command } from 'commander';
import { ModelScriptError, runModelServerCommand, type ModelServerCommandOptions } from '../../dev/model-server';
import { CliError } from '../errors';
import { port } from '../parse';

/**
 * The error of a model server that could not start, with a hint for the
 * person at the terminal: a port in use or not allowed, a `--host` that is
 * not this machine's, a log file that cannot be written, a script that
 * cannot be read or is invalid.
 * @param err what {@link runModelServerCommand} threw
 * @param opts the options it was given (`--port`, `--host`, `--log` are named in hints)
 * @returns a CliError with `err`'s message and a hint
 */
export function modelServerError(err: unknown, opts: Pick<ModelServerCommandOptions, 'port' | 'host' | 'log'>): CliError {
  if (err instanceof CliError) return err;
  // Node's own errors can come from another realm (tests), so no `instanceof Error`.
  const ownMessage = (err as { message?: unknown } | null)?.message;
  const message = typeof ownMessage === 'string' ? ownMessage : String(err);
  if (err instanceof ModelScriptError) {
    return new CliError(message, 'fix the script file; its format is in README.md, "The scripted Messages API server"');
  }
  const { code, syscall } = (err ?? {}) as { code?: unknown; syscall?: unknown };
  const freePort = 'or leave --port out for a free one';
  let hint = `see \`${cliCommand()} model-server --help\``;
  if (code === 'EADDRINUSE') hint = `another process listens on port ${opts.port ?? '?'}: choose another --port, ${freePort}`;
  else if (code === 'EACCES' && syscall === 'listen') hint = `ports below 1024 need root: choose another --port, ${freePort}`;
  else if (code === 'EADDRNOTAVAIL' || syscall === 'getaddrinfo')
    hint = `--host ${opts.host ?? ''} is not an address of this machine: use 127.0.0.1, or 0.0.0.0 for every interface`;
  else if (opts.log && typeof syscall === 'string' && ['open', 'mkdir', 'write'].includes(syscall))
    hint = `cannot write the --log file ${opts.log}: choose a writable path`;
  return new CliError(message, hint);
}

export function registerModelServer(program: Command): void {
  program
    .command('model-server')
    .description('serve POST /v1/messages from a script file, for runs without a Claude API key (point ANTHROPIC_BASE_URL at it)')
    .requiredOption('--script <file>', 'script file: {"responses": [ENTRY, ...]}')
    .option('--port <port>', 'TCP port (default: a free one; the printed URL says which)', port)
    .option('--host <address>', 'interface to listen on (default 127.0.0.1; 0.0.0.0 inside a container)')
    .option('--log <file>', 'append every request received to this JSON-lines file')
    .option('--json', 'print {"url","port","script","log"}')
    .action(async (opts: { script: string; port?: number; host?: string; log?: string; json?: boolean }) => {
      try {
        await runModelServerCommand({
          script: opts.script,
          ...(opts.port ? { port: opts.port } : {}),
          ...(opts.host ? { host: opts.host } : {}),
          ...(opts.log ? { log: opts.log } : {}),
          json: opts.json === true,
        });
      } catch (err) {
        throw modelServerError(err, opts);
      }
    });
}
