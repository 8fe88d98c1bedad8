/** `agent-jobs transcript <workflowId>`: the whole conversation. */
import type { Command } from 'commander';
import type { Message } from '../../contract';
import { describeMessage, type PublishedCommands } from '../render/messages';
import { SHOWN_OUTPUT_LINES, printJson, printShown } from '../render/text';
import { gitAtCloseLines } from '../render/run';
import { withClient } from '../context';

/**
 * The text form of a transcript: the lines `watch` prints for each message.
 * Command outputs are cut after {@link SHOWN_OUTPUT_LINES} lines with a
 * note, unless `full`; what the run published about each command
 * (`published`, by `tool_use` id: its run time, exit code and notes) is shown
 * as `watch` shows it, the notes whole after its output.
 */
export function transcriptText(messages: Message[], full: boolean, published: PublishedCommands = {}, workflowId?: string): string {
  const maxOutputLines = full ? Infinity : SHOWN_OUTPUT_LINES;
  return `${messages.flatMap((m, i) => describeMessage(m, i, published, maxOutputLines, workflowId)).join('\n')}\n`;
}

export function registerTranscript(program: Command): void {
  program
    .command('transcript')
    .description('print the conversation of a run (messages as sent to Claude)')
    .argument('<workflowId>')
    .option('--full', `print command outputs whole (the text form cuts each after ${SHOWN_OUTPUT_LINES} lines)`)
    .option('--json', 'print the messages as a JSON array (outputs whole)')
    .option(
      '--all',
      'also print what rewinds dropped (from the history), after the conversation as it stands (--json: {"messages","rewound":[{"from","messages"}],"notes","gitAtClose"})',
    )
    .action(async (workflowId: string, opts: { full?: boolean; json?: boolean; all?: boolean }) => {
      await withClient(async (jobs) => {
        // An open run: the transcript query (a worker answers). A closed one: rebuilt from its history, no worker needed.
        const t = await jobs.run(workflowId).transcript(0);
        if (t.incomplete) process.stderr.write(`agent-jobs: note: ${t.incomplete}\n`);
        const rewound = opts.all ? await jobs.run(workflowId).rewoundBranches() : [];
        if (opts.json)
          return printJson(opts.all ? { messages: t.messages, rewound, notes: t.notes ?? {}, gitAtClose: t.gitAtClose ?? [] } : t.messages);
        process.stdout.write(transcriptText(t.messages, opts.full === true, t, workflowId));
        // What the git audit moved or named when the session closed, after the last turn (no turn's note says it).
        const atClose = gitAtCloseLines(t);
        if (atClose.length > 0) printShown(...atClose);
        for (const b of rewound) {
          process.stdout.write(`\n── dropped by a rewind: messages ${b.from}–${b.from + b.messages.length - 1} as they were ──\n`);
          process.stdout.write(transcriptText(b.messages, opts.full === true, {}, workflowId));
        }
      });
    });
}
