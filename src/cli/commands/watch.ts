/** `agent-jobs watch <workflowId>`: follows a run live until it ends. */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { isText, isToolResult, isToolUse } from '../../contract';
import type { ContentBlock, Message, PendingApproval } from '../../contract';
import { shortHash } from '../../contract/display';
import { commandLines, indent, jsonText, terminalText } from '../output';
import { withClient } from '../context';
import { queryTranscript, readRun, runHandle, statusJson, stillRunning, type RunView } from '../runs';

/** Human-readable lines for one transcript message. */
export function describeMessage(message: Message, index: number): string[] {
  const blocks: ContentBlock[] = typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
  const lines: string[] = [];
  for (const b of blocks) {
    if (isText(b)) lines.push(index === 0 ? `task: ${b.text}` : `${message.role === 'assistant' ? 'claude' : 'user'}: ${b.text}`);
    else if (isToolUse(b)) {
      const input = (b.input ?? {}) as { command?: unknown; restart?: unknown };
      const suffix = `    [${b.id}]`;
      if (input.restart !== true && typeof input.command === 'string')
        lines.push(...commandLines(input.command, { label: 'claude asks to run: ', suffix }));
      else lines.push(`claude asks to run: ${input.restart === true ? '(restart the session)' : jsonText(b.input)}${suffix}`);
    } else if (isToolResult(b)) {
      lines.push(`${b.is_error ? '! ' : '→ '}result for ${b.tool_use_id}${b.is_error ? ' (error)' : ''}:`, indent(b.content));
    } else lines.push(`[${b.type} block]`);
  }
  // Claude's words and command outputs may hold escape sequences too: nothing reaches the terminal raw.
  return lines.map(terminalText);
}

/** Exit code for a run that ended: 0 when it completed, 1 for any other end (failed, cancelled, budgets, refusal). */
export function exitCodeOf(view: RunView): number {
  return view.status === 'completed' ? 0 : 1;
}

/** Options of {@link watchRun}. */
export interface WatchOptions {
  /** JSON lines instead of text. */
  json: boolean;
  /** Time between polls, in ms. @default 1000 */
  intervalMs?: number;
  /** Called once per pending approval, after it was printed; the watch goes on when it resolves (the demo approves from here). */
  onPendingApproval?: (pending: PendingApproval) => Promise<void>;
}

/**
 * Prints a run's new messages, approvals and final result as they happen
 * (text, or JSON lines with `json`), polling every `intervalMs`.
 * @returns the final view once the run has ended
 */
export async function watchRun(client: Client, workflowId: string, opts: WatchOptions): Promise<RunView> {
  const emit = (event: Record<string, unknown>, text: string[]): void => {
    process.stdout.write(opts.json ? `${jsonText(event)}\n` : `${terminalText(text.join('\n'))}\n`);
  };
  let next = 0;
  let announced: string | null = null;
  for (;;) {
    const view = await readRun(client, workflowId);
    const open = view.executionStatus === 'RUNNING';
    // A run that ends while it is asked is read again on the next round; a closed one without an answer (no worker) shows its result.
    const t = await queryTranscript(client, workflowId, next).catch(async (err: unknown) => {
      if (open && (await stillRunning(runHandle(client, workflowId)))) throw err;
      return null;
    });
    if (open && !t) continue;
    if (t) {
      t.messages.forEach((m, i) => emit({ event: 'message', index: t.from + i, message: m }, describeMessage(m, t.from + i)));
      next = t.from + t.messages.length;
    } else if (next === 0) {
      emit({ event: 'note', text: 'no worker is running: the transcript of a finished run needs one' }, [
        '(no worker is running, so only the result is shown; start one with `agent-jobs worker` to see the transcript)',
      ]);
    }
    const pending = view.pendingApproval;
    if (pending && pending.toolUseId !== announced) {
      announced = pending.toolUseId;
      const sha = shortHash(pending.commandSha256);
      emit({ event: 'pending_approval', ...pending }, [
        ...commandLines(pending.command, { label: '⏸ waiting for approval: ', suffix: `    [${pending.toolUseId}]` }),
        `  approve: agent-jobs approve ${workflowId} --sha ${sha}    deny: agent-jobs deny ${workflowId} --sha ${sha} --reason "..."`,
      ]);
      await opts.onPendingApproval?.(pending);
    }
    if (!open) {
      const r = view.result;
      emit({ event: 'result', ...statusJson(view) }, [
        `run ${workflowId} ended: ${view.status} after ${view.turns} turns (${view.usage.inputTokens} input / ${view.usage.outputTokens} output tokens)`,
        ...(r?.text ? [`final answer: ${r.text}`] : []),
        ...(r?.error ? [`reason: ${r.error}`] : []),
      ]);
      return view;
    }
    await sleep(opts.intervalMs ?? 1_000);
  }
}

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('follow a run live (messages, commands, outputs, approvals) until it ends')
    .argument('<workflowId>')
    .option('--json', 'print one JSON object per event')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      const view = await withClient(({ client }) => watchRun(client, workflowId, { json: opts.json === true }));
      process.exitCode = exitCodeOf(view);
    });
}
