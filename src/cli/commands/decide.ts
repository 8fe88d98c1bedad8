/** `agent-jobs approve` / `agent-jobs deny`: decide on the command a run waits on. */
import { setTimeout as sleep } from 'node:timers/promises';
import { userInfo } from 'node:os';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { SHORT_HASH_CHARS, displayCommand, shortHash, type CommandDisplay } from '../../contract/display';
import { approveSignal } from '../../contract';
import { queryStatus, runHandle } from '../runs';
import type { AppliedDecision } from '../../contract';
import { CliError } from '../errors';
import { commandLines, printJson, printLines } from '../output';
import { withClient } from '../context';
import { hexPrefix } from '../parse';

interface DecideOptions {
  toolUseId?: string;
  /** Lowercase hex prefix of the sha256 of the command the person reviewed (`--sha`). */
  sha?: string;
  reason?: string;
  by?: string;
  json?: boolean;
}

/** What {@link decide} did: the decision as the run applied it, and the command as the CLI showed and hashed it. */
export interface Decided {
  applied: AppliedDecision;
  command: CommandDisplay;
}

/** How long `approve` / `deny` wait for the run to confirm the decision, in ms. */
const CONFIRM_MS = 10_000;

function whoami(): string {
  try {
    return userInfo().username;
  } catch {
    return 'cli';
  }
}

/**
 * Sends an approval decision for the pending command and waits until the
 * run reports it applied (in its `decisions`). The decision carries the
 * sha256 of the command as read here (`commandSha256`), so the run applies
 * it only to those exact bytes.
 * @returns the decision as the run applied it (it may be a timeout denial when the signal came too late) and the command shown
 * @throws CliError when nothing waits, the id does not match, `opts.sha` is not a prefix of the pending command's hash, or the run does not confirm within {@link CONFIRM_MS} (10 s)
 */
export async function decide(client: Client, workflowId: string, approved: boolean, opts: DecideOptions): Promise<Decided> {
  const handle = runHandle(client, workflowId);
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
  const toolUseId = pending.toolUseId;
  await handle.signal(approveSignal, {
    toolUseId,
    approved,
    by: opts.by ?? whoami(),
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
    commandSha256: command.sha256,
  });
  const deadline = Date.now() + CONFIRM_MS;
  while (Date.now() < deadline) {
    const now = await queryStatus(client, workflowId);
    const applied = [...now.decisions].reverse().find((d) => d.toolUseId === toolUseId);
    if (applied) return { applied, command };
    await sleep(200);
  }
  throw new CliError(
    `the decision was sent but ${workflowId} did not confirm it within ${CONFIRM_MS / 1000} s`,
    `check with \`agent-jobs status ${workflowId}\``,
  );
}

function register(program: Command, name: 'approve' | 'deny'): void {
  const approved = name === 'approve';
  const cmd = program
    .command(name)
    .description(approved ? 'approve the command a run is waiting on' : 'deny the command a run is waiting on; Claude gets the reason')
    .argument('<workflowId>')
    .option('--tool-use-id <id>', 'the pending tool_use id (default: whatever is pending; given, it must match)')
    .option(
      '--sha <prefix>',
      `hex prefix of the sha256 of the command you reviewed (status and watch show ${SHORT_HASH_CHARS} digits); refuses when the pending command's hash does not start with it`,
      hexPrefix,
    )
    .option('--by <name>', 'who decides (default: your user name)')
    .option('--json', 'print the applied decision as JSON');
  if (approved) cmd.option('--reason <text>', 'why (optional)');
  else cmd.requiredOption('--reason <text>', 'why; sent to Claude');
  cmd.action(async (workflowId: string, opts: DecideOptions) => {
    await withClient(async ({ client }) => {
      const { applied, command } = await decide(client, workflowId, approved, opts);
      if (opts.json) printJson(applied);
      if (applied.source === 'timeout') {
        throw new CliError(
          `too late: ${applied.toolUseId} was denied because its approval wait ran out`,
          `see \`agent-jobs status ${workflowId}\``,
        );
      }
      const verb = applied.approved ? 'approved' : 'denied';
      if (!opts.json)
        printLines(
          ...commandLines(command, {
            label: `${verb} ${applied.toolUseId} in ${workflowId}${applied.reason ? ` (${applied.reason})` : ''}: `,
            indent: '  ',
            alwaysHash: true,
          }),
        );
    });
  });
}

export function registerDecide(program: Command): void {
  register(program, 'approve');
  register(program, 'deny');
}
