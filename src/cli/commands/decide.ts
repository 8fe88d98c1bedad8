/** `agent-jobs approve` / `agent-jobs deny`: decide on the command a run waits on, through the `decide` Update. */
import type { Client } from '@temporalio/client';
import { Option, type Command } from 'commander';
import { SHORT_HASH_CHARS, displayCommand, shortHash, type CommandDisplay } from '../../contract/display';
import { decideUpdate, type DecideAnswer, type DecideRequest } from '../../contract';
import { queryStatus } from '../runs';
import { CliError } from '../errors';
import { commandLines, printJson, printLines } from '../output';
import { withClient } from '../context';
import { hexPrefix } from '../parse';
import { sendUpdate, whoami } from '../updates';

/** Options of {@link decide}. */
export interface DecideOptions {
  toolUseId?: string;
  /** Lowercase hex prefix of the sha256 of the command the person reviewed (`--sha`). */
  sha?: string;
  reason?: string;
  by?: string;
  /** Run this command instead (approve only). */
  edit?: string;
  /** Also approve the identical command for the rest of the run. */
  always?: boolean;
  /** Also approve later commands starting with these literal words. */
  alwaysPrefix?: string;
  json?: boolean;
}

/** What {@link decide} did: the run's answer, and the pending command as the CLI showed and hashed it. */
export interface Decided {
  answer: DecideAnswer;
  command: CommandDisplay;
}

/**
 * Reads the pending command, checks it is the one the person means
 * (`toolUseId`, `sha`), and sends the `decide` Update carrying its sha256
 * (so the run applies it only to those exact bytes). Returns once the run
 * applied it; no polling.
 * @throws CliError when nothing waits, the id or `sha` prefix does not match,
 *   or the run rejects the decision (already decided, timed out meanwhile,
 *   an edit with a denial, a rule that could never match, …), with its reason
 */
export async function decide(client: Client, workflowId: string, approved: boolean, opts: DecideOptions): Promise<Decided> {
  const status = await queryStatus(client, workflowId);
  const pending = status.pendingApproval;
  if (!pending) {
    throw new CliError(
      `nothing in ${workflowId} is awaiting approval (status: ${status.status})`,
      `see what it is doing with \`agent-jobs status ${workflowId}\``,
    );
  }
  const command = displayCommand(pending.command);
  if (opts.toolUseId && opts.toolUseId !== pending.toolUseId) {
    throw new CliError(
      `tool_use ${opts.toolUseId} is not awaiting approval; ${pending.toolUseId} is (${command.text})`,
      'leave out --tool-use-id to decide on the pending command',
    );
  }
  if (opts.sha !== undefined && !command.sha256.startsWith(opts.sha)) {
    throw new CliError(
      `the pending command (${pending.toolUseId}, sha256 ${shortHash(command.sha256)}) is not the one you reviewed (sha256 ${opts.sha}…); nothing was ${approved ? 'approved' : 'denied'}`,
      `review it with \`agent-jobs status ${workflowId}\` and pass the hash it shows`,
    );
  }
  const request: DecideRequest = {
    toolUseId: pending.toolUseId,
    approved,
    by: whoami(opts.by),
    commandSha256: command.sha256,
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    ...(opts.edit !== undefined ? { edit: opts.edit } : {}),
    ...(opts.always ? { always: true } : {}),
    ...(opts.alwaysPrefix !== undefined ? { alwaysPrefix: opts.alwaysPrefix } : {}),
  };
  const answer = await sendUpdate(client, workflowId, decideUpdate, request, `the decision on ${pending.toolUseId}`);
  return { answer, command };
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
    .option('--json', 'print the run\'s answer: {"applied":true,"toolUseId","decision","by","rule"?,"command"}');
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
        new Option('--always', 'also approve the identical command for the rest of the run (plain words only)').conflicts('alwaysPrefix'),
      )
      .option('--always-prefix <words>', 'also approve later commands that start with these literal words and are otherwise plain words');
  } else cmd.requiredOption('--reason <text>', 'why; sent to Claude');
  cmd.action(async (workflowId: string, opts: DecideOptions) => {
    await withClient(async ({ client }) => {
      const { answer, command } = await decide(client, workflowId, approved, opts);
      if (opts.json) return printJson(answer);
      const rule = answer.rule ? ` (rule ${answer.rule.id}: ${answer.rule.kind} ${JSON.stringify(answer.rule.text)})` : '';
      printLines(
        ...commandLines(command, {
          label: `${answer.decision} ${answer.toolUseId} in ${workflowId} by ${answer.by}${rule}: `,
          indent: '  ',
          alwaysHash: true,
        }),
        ...(answer.decision === 'edited' ? commandLines(answer.command, { label: '  runs instead: ', indent: '    ' }) : []),
      );
    });
  });
}

export function registerDecide(program: Command): void {
  register(program, 'approve');
  register(program, 'deny');
}
