/** `agent-jobs transcript <workflowId>`: the whole conversation. */
import type { Command } from 'commander';
import { printJson } from '../output';
import { withClient } from '../context';
import { queryTranscript } from '../runs';
import { describeMessage } from './watch';

export function registerTranscript(program: Command): void {
  program
    .command('transcript')
    .description('print the conversation of a run (messages as sent to Claude)')
    .argument('<workflowId>')
    .option('--json', 'print the messages as a JSON array')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async ({ client }) => {
        const t = await queryTranscript(client, workflowId, 0);
        if (opts.json) return printJson(t.messages);
        process.stdout.write(`${t.messages.flatMap((m, i) => describeMessage(m, i)).join('\n')}\n`);
      });
    });
}
