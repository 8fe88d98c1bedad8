/** `agent-jobs status <workflowId>`: where a run is. */
import type { Command } from 'commander';
import { shortHash } from '../../contract/display';
import { commandLines, printJson, printLines } from '../output';
import { withClient } from '../context';
import { readRun, statusJson } from '../runs';
import { oneLineSummary } from '../../temporal';
import { ruleLines } from './steer';

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
          ...(view.pause
            ? [
                `  paused: ${view.pause.reason === 'human' ? `by ${view.pause.by ?? '?'}` : 'the approval wait ran out'} at ${view.pause.at}${view.status === 'paused' ? '' : ' (takes effect at the next safe point)'}; resume: agent-jobs resume ${workflowId}`,
              ]
            : []),
          ...(view.queuedMessages ?? []).map((m) => `  queued message from ${m.by} (${m.at}): ${oneLineSummary(m.text, 100)}`),
          ...((view.rules ?? []).length > 0 ? ['  approval rules:', ...ruleLines(view.rules ?? []).map((l) => `    ${l}`)] : []),
          ...(view.result?.text ? [`  answer: ${view.result.text}`] : []),
          ...(view.result?.error ? [`  reason: ${view.result.error}`] : []),
          `  UI:     ${uiUrl(workflowId, view.runId)}`,
        );
      });
    });
}
