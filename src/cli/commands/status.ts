/** `agent-jobs status <workflowId>`: where a run is. */
import type { Command } from 'commander';
import { shortHash } from '../../contract/display';
import { commandLines, printJson, printLines } from '../output';
import { withClient } from '../context';
import { readRun, statusJson } from '../runs';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description("show a run's status, turns, token usage, pending approval and result")
    .argument('<workflowId>')
    .option(
      '--json',
      'print {"workflowId","status","turns","pendingApproval","usage","result",...}; pendingApproval has the raw command, its escaped display, warnings and commandSha256',
    )
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async ({ client, uiUrl }) => {
        const view = await readRun(client, workflowId);
        if (opts.json) return printJson(statusJson(view));
        const p = view.pendingApproval;
        printLines(
          `${workflowId}: ${view.status}`,
          `  turns:  ${view.turns}`,
          `  tokens: ${view.usage.inputTokens} input, ${view.usage.outputTokens} output`,
          ...(view.details ? [`  now:    ${view.details}`] : []),
          ...(view.session
            ? [
                `  shell:  ${view.session.user ?? '?'} in sandbox ${view.session.sandbox ?? '?'}, ${view.session.cwd} on ${view.session.workerId}`,
              ]
            : []),
          ...(p
            ? [
                ...commandLines(p.command, { label: '  pending approval: ', suffix: `  [${p.toolUseId}, since ${p.requestedAt}]` }),
                `    agent-jobs approve ${workflowId} --sha ${shortHash(p.commandSha256)}   |   agent-jobs deny ${workflowId} --sha ${shortHash(p.commandSha256)} --reason "..."`,
              ]
            : []),
          ...(view.result?.text ? [`  answer: ${view.result.text}`] : []),
          ...(view.result?.error ? [`  reason: ${view.result.error}`] : []),
          `  UI:     ${uiUrl(workflowId, view.runId)}`,
        );
      });
    });
}
