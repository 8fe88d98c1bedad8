/** `agent-jobs approve` / `agent-jobs deny`: decide on the command a run waits on. */
import { setTimeout as sleep } from 'node:timers/promises';
import { userInfo } from 'node:os';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { approveSignal } from '../../workflows/messages';
import { queryStatus, runHandle } from '../runs';
import type { AppliedDecision } from '../../workflows/types';
import { CliError } from '../errors';
import { printJson, printLines } from '../output';
import { withClient } from '../context';

interface DecideOptions {
  toolUseId?: string;
  reason?: string;
  by?: string;
  json?: boolean;
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
 * run reports it applied (in its `decisions`).
 * @returns the decision as the run applied it (it may be a timeout denial when the signal came too late)
 * @throws CliError when nothing waits, the id does not match, or the run does not confirm within {@link CONFIRM_MS} (10 s)
 */
export async function decide(client: Client, workflowId: string, approved: boolean, opts: DecideOptions): Promise<AppliedDecision> {
  const handle = runHandle(client, workflowId);
  const status = await queryStatus(client, workflowId);
  const pending = status.pendingApproval;
  if (!pending) {
    throw new CliError(`nothing in ${workflowId} is awaiting approval (status: ${status.status})`, `see what it is doing with \`agent-jobs status ${workflowId}\``);
  }
  if (opts.toolUseId && opts.toolUseId !== pending.toolUseId) {
    throw new CliError(`tool_use ${opts.toolUseId} is not awaiting approval; ${pending.toolUseId} is (${pending.command})`, 'leave out --tool-use-id to decide on the pending command');
  }
  const toolUseId = pending.toolUseId;
  await handle.signal(approveSignal, {
    toolUseId,
    approved,
    by: opts.by ?? whoami(),
    ...(opts.reason !== undefined ? { reason: opts.reason } : {}),
  });
  const deadline = Date.now() + CONFIRM_MS;
  while (Date.now() < deadline) {
    const now = await queryStatus(client, workflowId);
    const applied = [...now.decisions].reverse().find((d) => d.toolUseId === toolUseId);
    if (applied) return applied;
    await sleep(200);
  }
  throw new CliError(`the decision was sent but ${workflowId} did not confirm it within ${CONFIRM_MS / 1000} s`, `check with \`agent-jobs status ${workflowId}\``);
}

function register(program: Command, name: 'approve' | 'deny'): void {
  const approved = name === 'approve';
  const cmd = program
    .command(name)
    .description(approved ? 'approve the command a run is waiting on' : 'deny the command a run is waiting on; Claude gets the reason')
    .argument('<workflowId>')
    .option('--tool-use-id <id>', 'the pending tool_use id (default: whatever is pending; given, it must match)')
    .option('--by <name>', 'who decides (default: your user name)')
    .option('--json', 'print the applied decision as JSON');
  if (approved) cmd.option('--reason <text>', 'why (optional)');
  else cmd.requiredOption('--reason <text>', 'why; sent to Claude');
  cmd.action(async (workflowId: string, opts: DecideOptions) => {
    await withClient(async ({ client }) => {
      const applied = await decide(client, workflowId, approved, opts);
      if (opts.json) printJson(applied);
      if (applied.source === 'timeout') {
        throw new CliError(`too late: ${applied.toolUseId} was denied because its approval wait ran out`, `see \`agent-jobs status ${workflowId}\``);
      }
      if (!opts.json) printLines(`${applied.approved ? 'approved' : 'denied'} ${applied.toolUseId} in ${workflowId}${applied.reason ? ` (${applied.reason})` : ''}`);
    });
  });
}

export function registerDecide(program: Command): void {
  register(program, 'approve');
  register(program, 'deny');
}
