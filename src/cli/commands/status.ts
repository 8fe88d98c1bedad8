/** `agent-jobs status <workflowId>`: where a run is. */
import type { Command } from 'commander';
import { oneLineSummary, shortHash } from '../../shared/display';
import { budgetPauseLine, editLines, gitAtCloseLines, limitsLine, ruleLines, statusJson } from '../render/run';
import { hanging } from '../render/messages';
import { commandLines, oneLine, printJson, printShown, terminalText } from '../render/text';
import { withClient } from '../context';
import { asTyped, cliCommand } from '../invocation';
import { normalizeUsage, type PauseState } from '../../contract';

/** The pause in words, with what ends it. */
function pauseLine(workflowId: string, view: { status: string; pause?: PauseState | null }): string {
  const p = view.pause!;
  if (p.reason === 'budget')
    return oneLine`  paused: ${budgetPauseLine(p)} at ${p.at}; go on: ${cliCommand()} extend ${workflowId} --${p.budget ?? 'turns'} ...; stop: ${cliCommand()} cancel ${workflowId}`;
  return (
    oneLine`  paused: ` +
    (p.reason === 'human' ? oneLine`by ${p.by ?? '?'}` : 'the approval wait ran out') +
    oneLine` at ${p.at}${view.status === 'paused' ? '' : ' (takes effect at the next safe point)'}; resume: ${cliCommand()} resume ${workflowId}`
  );
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .description("show a run's status, turns, token usage and cost, budgets, pending approval and result")
    .argument('<workflowId>')
    .option(
      '--json',
      'print {"workflowId","status","turns","pendingApproval","usage","costUsd","budget","result",...}; pendingApproval has the raw command, its escaped display, warnings and commandSha256',
    )
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async (jobs) => {
        // An open run: the status query (a worker answers). A closed one: its history, no worker needed.
        const view = await jobs.run(workflowId).status();
        if (opts.json) return printJson(statusJson(view));
        const ui = await jobs.servedUiUrl(workflowId, view.runId);
        const p = view.pendingApproval;
        const u = normalizeUsage(view.usage);
        // Every field on one line, escaped once (oneLine; multi-line text by hanging, under its label);
        // the details (escaped by the workflow), commandLines and editLines are already.
        const t = terminalText;
        printShown(
          oneLine`${workflowId}: ${view.status}`,
          `  turns:  ${view.turns}`,
          ...(view.subagentOf !== undefined ? [oneLine`  sub-agent of: ${view.subagentOf}`] : []),
          ...(view.subagentsRunning !== undefined ? [`  sub-agents running: ${view.subagentsRunning}`] : []),
          ...(view.model
            ? [
                oneLine`  model:  ${view.model}, window ${view.contextWindow ?? '?'} tokens, context kept by ${view.contextStrategy ?? 'clearing'}`,
              ]
            : []),
          `  tokens: ${u.inputTokens} input, ${u.outputTokens} output, ${u.cacheCreationInputTokens} cache write, ${u.cacheReadInputTokens} cache read`,
          `  cost:   ${typeof view.costUsd === 'number' ? `$${view.costUsd.toFixed(4)}` : 'unknown (no prices for this model)'}`,
          ...(view.budget
            ? [`  budget: ${limitsLine(view.budget.limits)} (when one is spent: ${view.budget.onBudget === 'pause' ? 'pause' : 'end'})`]
            : []),
          ...(view.details ? [`  now:    ${asTyped(view.details)}`] : []),
          ...(view.session
            ? [
                oneLine`  shell:  ${view.session.user ?? '?'} in sandbox ${view.session.sandbox ?? '?'}, ${view.session.cwd} on ${view.session.workerId}`,
              ]
            : []),
          // A closed run's session is gone, its files are not: where they are.
          // And the sandbox its sessions had: a worker falls to mode none by itself when bwrap is missing.
          ...(view.workspace
            ? [
                oneLine`  workspace: ${view.workspace.path} on ${view.workspace.workerId}` +
                  (view.workspace.sandboxes.length > 0 ? `, its sessions in sandbox ${view.workspace.sandboxes.join(' and ')}` : ''),
              ]
            : []),
          ...(p
            ? [
                ...(p.edit
                  ? editLines(p)
                  : commandLines(p.command, { label: '  pending approval: ', suffix: `  [${p.toolUseId}, since ${p.requestedAt}]` })),
                oneLine`    ${cliCommand()} approve ${workflowId} --sha ${shortHash(p.commandSha256)}   |   ${cliCommand()} deny ${workflowId} --sha ${shortHash(p.commandSha256)} --reason "..."`,
              ]
            : []),
          ...(view.pause ? [pauseLine(workflowId, view)] : []),
          ...(view.queuedMessages ?? []).map((m) => oneLine`  queued message from ${m.by} (${m.at}): ${oneLineSummary(m.text, 100)}`),
          ...((view.rules ?? []).length > 0 ? ['  approval rules:', ...ruleLines(view.rules ?? []).map((l) => `    ${l}`)] : []),
          ...(view.result?.text ? [t(hanging('  answer: ', view.result.text))] : []),
          ...(view.result?.error ? [t(hanging('  reason: ', view.result.error))] : []),
          // What the git audit moved to the quarantine or named when the session closed: no turn's note says it.
          ...gitAtCloseLines(view, '  '),
          // None for a server that serves no UI (a dev server started --headless).
          ...(ui !== null ? [oneLine`  UI:     ${ui}`] : []),
        );
      });
    });
}
