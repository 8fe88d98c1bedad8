/** `agent-jobs approve` / `agent-jobs deny`: decide on the command a run waits on, through the `decide` Update. */
import { Option, type Command } from 'commander';
import type { DecideOptions as ClientDecideOptions, EditOutcome } from '../../client';
import { oneLineSummary, SHORT_HASH_CHARS } from '../../shared/display';
import { editDecisionLines, RULE_SCOPE } from '../render/run';
import { commandLines, oneLine, printJson, printShown } from '../render/text';
import { cliCommand } from '../invocation';
import { withClient } from '../context';
import { hexPrefix } from '../parse';

/** Options of `approve` / `deny` (the client's {@link ClientDecideOptions}, and `--json`). */
export interface DecideOptions extends Omit<ClientDecideOptions, 'requestId' | 'timeoutMs'> {
  json?: boolean;
}

/** What an approved edit then did, on one line: written, done (a `view`), refused and why, or not known yet (null). */
function editOutcomeLine(workflowId: string, outcome: EditOutcome | null): string {
  if (outcome === null)
    return oneLine`  what it did is not in the run yet (paused, or slow): ${cliCommand()} transcript ${workflowId} shows it once the turn is done`;
  if (outcome.isError) return oneLine`  but nothing was written: ${oneLineSummary(outcome.text, 400)}`;
  return outcome.applied ? '  written' : '  done';
}

function register(program: Command, name: 'approve' | 'deny'): void {
  const approved = name === 'approve';
  const cmd = program
    .command(name)
    .description(
      approved ? 'approve (or edit) the command a run is waiting on' : 'deny the command a run is waiting on; Claude gets the reason',
    )
    .argument('<workflowId>')
    .option('--tool-use-id <id>', 'the pending tool_use id (default: whatever is pending; given, it must match)')
    .option(
      '--sha <prefix>',
      `hex prefix of the sha256 of the command you reviewed (status and watch show ${SHORT_HASH_CHARS} digits); refuses when the pending command's hash does not start with it`,
      hexPrefix,
    )
    .option('--by <name>', 'who decides (default: your user name)')
    .option(
      '--json',
      'print the run\'s answer: {"applied":true,"toolUseId","decision","by","rule"?,"command","outcome"?} (outcome: what an approved edit did, {"applied","isError","text"} or null)',
    );
  if (approved) {
    cmd
      .option('--reason <text>', 'why (optional)')
      .addOption(
        new Option('--edit <command>', "run this command instead of Claude's; Claude is told it was edited and what ran").conflicts([
          'always',
          'alwaysPrefix',
        ]),
      )
      .addOption(
        new Option(
          '--always',
          'also approve the identical command for the rest of this run only (plain words only; a new run or a fork starts with no rules)',
        ).conflicts('alwaysPrefix'),
      )
      .option(
        '--always-prefix <words>',
        'also approve later commands of this run only that start with these literal words and are otherwise plain words',
      );
  } else cmd.requiredOption('--reason <text>', 'why; sent to Claude');
  cmd.action(async (workflowId: string, opts: DecideOptions) => {
    const { json, ...options } = opts;
    await withClient(async (jobs) => {
      const run = jobs.run(workflowId);
      const { answer, command, pending, paused } = await run.decide(approved, options);
      // An approved edit is written only if the file still gives the diff approved: read back what it did.
      const outcome = pending.edit && answer.decision !== 'denied' && !paused ? await run.editOutcome(answer.toolUseId) : undefined;
      if (outcome?.isError) process.exitCode = 1;
      if (json) return printJson(outcome === undefined ? answer : { ...answer, outcome });
      const rule = answer.rule ? ` (rule ${answer.rule.id}: ${answer.rule.kind} ${JSON.stringify(answer.rule.text)})` : '';
      const label = `${answer.decision} ${answer.toolUseId} in ${workflowId} by ${answer.by}${rule}: `;
      printShown(
        // A text editor change is a diff: shown line by line, as status shows it, not as one escaped command line.
        ...(pending.edit
          ? editDecisionLines(label, pending)
          : commandLines(command, {
              label,
              indent: '  ',
              alwaysHash: true,
            })),
        // How long the rule holds: nothing else says a new run starts without it.
        ...(answer.rule ? [`  rule ${answer.rule.id} approves its later matching commands ${RULE_SCOPE}`] : []),
        ...(answer.decision === 'edited' ? commandLines(answer.command, { label: '  runs instead: ', indent: '    ' }) : []),
        // What Claude is told: the person reads it back as it was sent (escaped on one line, as every field).
        ...(options.reason !== undefined ? [oneLine`  reason${approved ? '' : ', sent to Claude'}: ${options.reason}`] : []),
        ...(outcome !== undefined ? [editOutcomeLine(workflowId, outcome)] : []),
        ...(paused && answer.decision !== 'denied'
          ? [oneLine`  the run is paused: it runs after ${cliCommand()} resume ${workflowId}`]
          : []),
      );
    });
  });
}

export function registerDecide(program: Command): void {
  register(program, 'approve');
  register(program, 'deny');
}
