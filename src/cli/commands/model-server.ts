/** `agent-jobs model-server`: the scripted Messages API server (DESIGN.md section 6). */
import type { Command } from 'commander';
import { runModelServerCommand } from '../../model-server';
import { port } from '../parse';

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
      await runModelServerCommand({
        script: opts.script,
        ...(opts.port ? { port: opts.port } : {}),
        ...(opts.host ? { host: opts.host } : {}),
        ...(opts.log ? { log: opts.log } : {}),
        json: opts.json === true,
      });
    });
}
