/**
 * `agent-jobs say | pause | resume | end | rules`: steering a running agent
 * through its Updates (src/contract/steering.ts). Each waits for the run's
 * answer; a rejected request prints the run's reason and exits 1.
 */
import type { Command } from 'commander';
import { ruleLines } from '../render/run';
import { oneLine, printJson, printLines, printShown } from '../render/text';
import { withClient } from '../context';
import { positiveInt } from '../parse';
import { REQUEST_ID_HELP, requestId, sendOptionsOf } from '../requests';

interface ByOptions {
  by?: string;
  requestId?: string;
  json?: boolean;
}

function registerSay(program: Command): void {
  program
    .command('say')
    .description("queue a message for a running agent: Claude reads it at the next turn boundary (or a --chat run's next turn)")
    .argument('<workflowId>')
    .argument('<text...>', 'the message (words are joined with spaces)')
    .option('--by <name>', 'who says it (default: your user name)')
    .option('--request-id <id>', REQUEST_ID_HELP, requestId)
    .option('--json', 'print {"queued":true,"queuedMessages","at"}')
    .action(async (workflowId: string, words: string[], opts: ByOptions) => {
      await withClient(async (jobs) => {
        const answer = await jobs.run(workflowId).say(words.join(' '), sendOptionsOf(opts));
        if (opts.json) return printJson(answer);
        printLines(`queued for ${workflowId} (${answer.queuedMessages} waiting); Claude reads it at the next turn boundary`);
      });
    });
}

function registerPauseResumeEnd(program: Command): void {
  const verbs = [
    ['pause', 'stop the run at the next safe point (before the next model call or command; never mid-command)'],
    ['resume', 'let a paused run go on'],
    ['end', 'complete a --chat run with its last answer as the result'],
  ] as const;
  for (const [name, description] of verbs) {
    program
      .command(name)
      .description(description)
      .argument('<workflowId>')
      .option('--by <name>', 'who asks (default: your user name)')
      .option('--request-id <id>', REQUEST_ID_HELP, requestId)
      .option('--json', 'print {"status","by","at"}: the status right after')
      .action(async (workflowId: string, opts: ByOptions) => {
        await withClient(async (jobs) => {
          const answer = await jobs.run(workflowId)[name](sendOptionsOf(opts));
          if (opts.json) return printJson(answer);
          const now =
            name === 'pause' && answer.status !== 'paused'
              ? 'it pauses at the next safe point'
              : name === 'end' && answer.status !== 'completed'
                ? 'it completes when Claude next ends its turn'
                : `status ${answer.status}`;
          printShown(oneLine`${name} ${workflowId} by ${answer.by}: ${now}`);
        });
      });
  }
}

function registerRules(program: Command): void {
  program
    .command('rules')
    .description('list the approval rules of a run (added by the rule options of approve), or remove one')
    .argument('<workflowId>')
    .option('--remove <n>', 'remove rule n', positiveInt)
    .option('--by <name>', 'who removes it (default: your user name)')
    .option('--request-id <id>', REQUEST_ID_HELP, requestId)
    .option('--json', 'print the rules as a JSON array')
    .action(async (workflowId: string, opts: ByOptions & { remove?: number }) => {
      await withClient(async (jobs) => {
        const run = jobs.run(workflowId);
        const rules = opts.remove !== undefined ? await run.removeRule(opts.remove, sendOptionsOf(opts)) : await run.rules();
        if (opts.json) return printJson(rules);
        printShown(...(opts.remove !== undefined ? [`removed rule ${opts.remove}; rules now:`] : []), ...ruleLines(rules));
      });
    });
}

export function registerSteer(program: Command): void {
  registerSay(program);
  registerPauseResumeEnd(program);
  registerRules(program);
}
