/**
 * `agent-jobs model-server`: runs the scripted Messages API server in the
 * foreground until SIGINT / SIGTERM.
 */
import { startModelServer } from './server';

/** Options of {@link runModelServerCommand}, as the CLI parsed them. */
export interface ModelServerCommandOptions {
  /** Path of the script file (`{"responses": [...]}`). */
  script: string;
  /** TCP port. @default 0 (a free port; the printed URL tells which) */
  port?: number;
  /** Interface to listen on. @default '127.0.0.1' */
  host?: string;
  /** JSON-lines request log file (appended to). @default none */
  log?: string;
  /** Print `{"url","port","script","log"}` instead of the sentence. @default false */
  json?: boolean;
  /** Where the line goes. @default process.stdout */
  out?: NodeJS.WritableStream;
  /** Stops the server when aborted, besides SIGINT / SIGTERM (for tests and embedding). */
  signal?: AbortSignal;
}

/**
 * Starts the server, prints one line with its URL (e.g.
 * `Scripted Messages API server on http://127.0.0.1:41234 (script: demo.json, ...)`),
 * and resolves once SIGINT, SIGTERM or `signal` stopped it cleanly. The
 * signal handlers are removed again, so the caller decides the exit code.
 *
 * @throws {ModelScriptError} when the script is invalid (message names the file and the problem's path)
 * @throws Error when the port cannot be bound
 */
export async function runModelServerCommand(options: ModelServerCommandOptions): Promise<void> {
  const out = options.out ?? process.stdout;
  const server = await startModelServer({
    script: options.script,
    ...(options.port !== undefined ? { port: options.port } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.log !== undefined ? { logFile: options.log } : {}),
  });
  if (options.json) {
    out.write(`${JSON.stringify({ url: server.url, port: server.port, script: options.script, log: options.log ?? null })}\n`);
  } else {
    const log = options.log ? `log: ${options.log}` : 'no log file';
    out.write(
      `Scripted Messages API server on ${server.url} (script: ${options.script}; ${log}); ` +
        `use ANTHROPIC_BASE_URL=${server.url}; Ctrl-C stops it\n`,
    );
  }

  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      options.signal?.removeEventListener('abort', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
    if (options.signal?.aborted) stop();
    else options.signal?.addEventListener('abort', stop);
  });
  await server.close();
}
