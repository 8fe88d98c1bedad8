/** `agent-jobs status <workflowId>`: where a run is. */
import type { Command } from 'commander';
import { printJson, printLines } from '../output';
import { withClient } from '../context';
import { readRun, statusJson } from '../runs';

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description('show a run\'s status, turns, token usage, pending approval and result')
    .argument('<workflowId>')
    .option('--json', 'print {"workflowId","status","turns","pendingApproval","usage","result",...}')
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
          ...(view.session ? [`  shell:  ${view.session.user ?? '?'} in sandbox ${view.session.sandbox ?? '?'}, ${view.session.cwd} on ${view.session.workerId}`] : []),
          ...(p ? [`  pending approval: ${p.command}  [${p.toolUseId}, since ${p.requestedAt}]`, `    agent-jobs approve ${workflowId}   |   agent-jobs deny ${workflowId} --reason "..."`] : []),
          ...(view.result?.text ? [`  answer: ${view.result.text}`] : []),
          ...(view.result?.error ? [`  reason: ${view.result.error}`] : []),
          `  UI:     ${uiUrl(workflowId, view.runId)}`,
        );
      });
    });
}
