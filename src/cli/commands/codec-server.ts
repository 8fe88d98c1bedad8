/**
 * `agent-jobs codec-server`: Temporal's Codec Server protocol over the
 * product's payload codec (src/codec/server.ts), so the Temporal UI and
 * `temporal workflow show` decode runs for whoever holds the token
 * (docs/security.md, "Encryption").
 */
import { cliCommand } from '../invocation';
import { randomBytes } from 'node:crypto';
import type { Command } from 'commander';
import {
  CodecKeyError,
  EncryptionCodec,
  chainCodecs,
  claimCheckFromEnv,
  codecDisabled,
  createdKeysMessage,
  loadCodecKeys,
  startCodecServer,
} from '../../codec';
import { DEFAULT_TEMPORAL_ADDRESS, dataDir, temporalUiUrl } from '../../settings';
import { CliError } from '../errors';
import { port } from '../parse';

/** The port the codec server listens on by default (the one Temporal's samples use). */
export const DEFAULT_CODEC_SERVER_PORT = 8081;

/** The local dev server UI's origin (`http://localhost:8233`), for the hints. */
const LOCAL_UI = temporalUiUrl(DEFAULT_TEMPORAL_ADDRESS, {});

/** `--cors-origin` values collected; a value must be an origin (`scheme://host[:port]`, no path). */
function origin(value: string, previous: string[] = []): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new CliError(`--cors-origin ${value} is not a URL`, `give the UI origin, e.g. ${LOCAL_UI}`);
  }
  if (url.origin !== value.replace(/\/$/, ''))
    throw new CliError(`--cors-origin ${value} is not an origin (scheme://host[:port] only)`, `e.g. ${LOCAL_UI}`);
  return [...previous, url.origin];
}

/** The UI's origins when none is given: TEMPORAL_UI_URL's, or the local dev server UI's as localhost and as 127.0.0.1. */
function defaultOrigins(env: NodeJS.ProcessEnv): string[] {
  const ui = new URL(temporalUiUrl(env.TEMPORAL_ADDRESS ?? DEFAULT_TEMPORAL_ADDRESS, env));
  if (ui.hostname !== 'localhost') return [ui.origin];
  return [ui.origin, `${ui.protocol}//127.0.0.1${ui.port ? `:${ui.port}` : ''}`];
}

export function registerCodecServer(program: Command): void {
  program
    .command('codec-server')
    .description(
      "decode the product's encrypted payloads for the Temporal UI and CLI (Temporal's codec server protocol), for whoever holds the token",
    )
    .option('--port <port>', `TCP port (default ${DEFAULT_CODEC_SERVER_PORT})`, port)
    .option('--host <address>', 'interface to listen on (default 127.0.0.1)')
    .option(
      '--cors-origin <origin>',
      "an origin the UI is served from, repeatable (default: TEMPORAL_UI_URL's, or the local dev server UI's)",
      origin,
    )
    .option('--json', 'print {"url","uiEndpoint","token","tokenFrom","keys","corsOrigins"} as one line')
    .action(async (opts: { port?: number; host?: string; corsOrigin?: string[]; json?: boolean }) => {
      if (codecDisabled())
        throw new CliError(
          'encryption is off (AGENT_JOBS_CODEC_KEYS=none): there is nothing to decode',
          'set AGENT_JOBS_CODEC_KEYS to the keys the workers use',
        );
      let keys;
      try {
        keys = loadCodecKeys(process.env, dataDir(), (file) => process.stderr.write(`agent-jobs: ${createdKeysMessage(file)}\n`));
      } catch (err) {
        if (err instanceof CodecKeyError)
          throw new CliError(err.message, 'AGENT_JOBS_CODEC_KEYS names the keys every worker and CLI use (docs/security.md)');
        throw err;
      }
      const fromEnv = process.env.AGENT_JOBS_CODEC_TOKEN;
      if (fromEnv !== undefined && fromEnv.length < 16)
        throw new CliError('AGENT_JOBS_CODEC_TOKEN is shorter than 16 characters', 'use a long random token');
      const token = fromEnv ?? randomBytes(24).toString('base64url');
      const corsOrigins = opts.corsOrigin ?? defaultOrigins(process.env);
      let claimCheck;
      try {
        claimCheck = claimCheckFromEnv();
      } catch (err) {
        throw new CliError((err as Error).message, 'see docs/configuration.md (AGENT_JOBS_BLOB_STORE, AGENT_JOBS_BLOB_THRESHOLD)');
      }
      // References in history are resolved from the same blob store the workers write to, so the UI shows the payloads.
      const codecs = claimCheck ? [new EncryptionCodec(keys), claimCheck] : [new EncryptionCodec(keys)];
      const server = await startCodecServer({
        codec: chainCodecs(codecs),
        token,
        corsOrigins,
        port: opts.port ?? DEFAULT_CODEC_SERVER_PORT,
        host: opts.host ?? '127.0.0.1',
        // A client refused (a wrong token, an origin not allowed) learns little: the Temporal CLI says only
        // "context deadline exceeded". The reason goes to stderr here.
        onRefused: (line) => process.stderr.write(`codec server: ${line}\n`),
      }).catch((err: unknown) => {
        const code = (err as { code?: string }).code;
        throw new CliError(
          `the codec server cannot listen: ${(err as Error).message}`,
          code === 'EADDRINUSE' ? 'another process holds the port: choose another --port' : 'see `agent-jobs codec-server --help`',
        );
      });
      const uiEndpoint = `${server.url}/t/${token}`;
      const tokenFrom = fromEnv !== undefined ? 'AGENT_JOBS_CODEC_TOKEN' : 'generated';
      if (opts.json) {
        process.stdout.write(`${JSON.stringify({ url: server.url, uiEndpoint, token, tokenFrom, keys: keys.source, corsOrigins })}\n`);
      } else {
        process.stdout.write(
          [
            `codec server on ${server.url} (keys ${keys.source}, encrypting with ${keys.current.id}; blobs ${claimCheck?.options.store.description ?? 'none'}; CORS for ${corsOrigins.join(', ')})`,
            `token (${tokenFrom === 'generated' ? 'made now; set AGENT_JOBS_CODEC_TOKEN to keep one' : 'from AGENT_JOBS_CODEC_TOKEN'}): ${token}`,
            `  Temporal UI: codec endpoint ${uiEndpoint}   (or: ${cliCommand()} server --ui-codec-endpoint ${uiEndpoint})`,
            `  Temporal CLI: temporal workflow show -w <id> --codec-endpoint ${server.url} --codec-auth "Bearer ${token}"`,
            '',
          ].join('\n'),
        );
      }
      await new Promise<void>((resolve) => {
        for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolve());
      });
      await server.close();
    });
}
