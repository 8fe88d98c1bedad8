/**
 * `agent-jobs checkpoints | diff | rewind | fork` (docs/rewind.md). The listing and the diff
 * read the run's history (through the client) and the checkpoint store, which is on the machine
 * of the worker that took the checkpoints: run them there (the store is a bare git repository
 * under the worker's `AGENT_JOBS_CHECKPOINT_DIR`). They work for closed runs too.
 */
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import type { TimelineEntry } from '../../client';
import type { AgentRunInput, Message } from '../../contract';
import { changesBetween, currentTree, diffBetween, type FileChange } from '../../checkpoint/store';
import { safeText } from '../../shared/display';
import { withClient } from '../context';
import { CliError } from '../errors';
import { jsonText, oneLine, printJson, printLines, printShown, terminalText } from '../render/text';
import { asTyped } from '../invocation';
import { positiveInt } from '../parse';
import { REQUEST_ID_HELP, requestId, sendOptionsOf } from '../requests';

type CheckpointEntry = Extract<TimelineEntry, { kind: 'checkpoint' }>;

/** One listed turn: its checkpoint, and what changed from it to the next one (or to the workspace now, for the last). */
export interface TurnChanges {
  turn: number;
  checkpoint: string;
  toolUseId: string;
  at: string;
  /** What the turn's tools changed; null when unknown (undone by a rewind, or the store is not on this machine). */
  changes: FileChange[] | null;
  /** Why `changes` is null, or what it is compared with. */
  note?: string;
  /** Paths the checkpoint left out because git refuses to write them (how many, the first 20); absent when none. */
  leftOut?: { count: number; paths: string[] };
}

/** The first checkpoint of each turn, with the rewinds between, in history order. */
function turnsOf(timeline: TimelineEntry[]): Array<CheckpointEntry | Extract<TimelineEntry, { kind: 'rewind' }>> {
  const seen = new Set<number>();
  return timeline.filter((e) => e.kind === 'rewind' || (!seen.has(e.turn) && seen.add(e.turn)));
}

/** Where turn `i` of `entries` ends: the next checkpoint, the workspace now (the last one), or a rewind (unknown). */
async function endOf(entries: ReturnType<typeof turnsOf>, i: number): Promise<{ to: string; note: string } | { unknown: string }> {
  const cp = entries[i] as CheckpointEntry;
  const next = entries[i + 1];
  if (next?.kind === 'rewind') return { unknown: `undone by the rewind to turn ${next.toTurn} (${next.at})` };
  if (next) return { to: next.id, note: `until turn ${next.turn}'s checkpoint` };
  if (!existsSync(cp.workspace)) return { unknown: `the workspace ${cp.workspace} is not on this machine` };
  return { to: await currentTree(cp.store, cp.workspace), note: 'until the workspace as it is now' };
}

function requireStore(cp: CheckpointEntry): void {
  if (!existsSync(cp.store))
    throw new CliError(
      `the checkpoint store ${cp.store} is not on this machine`,
      "run this where the run's worker runs (the store is under its AGENT_JOBS_CHECKPOINT_DIR)",
    );
}

/** The listing's data: every turn with a checkpoint and what it changed. */
export async function turnChanges(timeline: TimelineEntry[]): Promise<Array<TurnChanges | Extract<TimelineEntry, { kind: 'rewind' }>>> {
  const entries = turnsOf(timeline);
  const out: Array<TurnChanges | Extract<TimelineEntry, { kind: 'rewind' }>> = [];
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i]!;
    if (e.kind === 'rewind') {
      out.push(e);
      continue;
    }
    const base = { turn: e.turn, checkpoint: e.id, toolUseId: e.toolUseId, at: e.at, ...(e.leftOut ? { leftOut: e.leftOut } : {}) };
    if (!existsSync(e.store)) {
      out.push({ ...base, changes: null, note: `the store ${e.store} is not on this machine` });
      continue;
    }
    const end = await endOf(entries, i);
    if ('unknown' in end) out.push({ ...base, changes: null, note: end.unknown });
    else out.push({ ...base, changes: await changesBetween(e.store, e.id, end.to), note: end.note });
  }
  return out;
}

/** The line naming what a checkpoint left out (git refuses to write those names, so a rewind cannot bring them back). */
function leftOutLine(leftOut: { count: number; paths: string[] }): string {
  const more = leftOut.count > leftOut.paths.length ? ` and ${leftOut.count - leftOut.paths.length} more` : '';
  const names = leftOut.paths.map((p) => safeText(p, false)).join(', ');
  return `    ! not recorded, git refuses to write these names (a rewind cannot bring them back): ${names}${more}`;
}

function changeLines(changes: FileChange[]): string[] {
  if (changes.length === 0) return ['    (no file changed)'];
  const sign = { A: '+', M: '~', D: '-', T: '~' } as const;
  return changes.map((c) => `    ${sign[c.status]} ${safeText(c.path, false)}${c.status === 'T' ? ' (type changed)' : ''}`);
}

export function registerRewind(program: Command): void {
  program
    .command('checkpoints')
    .description(
      'list the turns of a run that have a checkpoint, with the files each changed (+ added, ~ changed, - deleted), and its rewinds',
    )
    .argument('<workflowId>')
    .option('--json', 'print the list as JSON')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async (jobs) => {
        const list = await turnChanges(await jobs.run(workflowId).timeline());
        if (opts.json) return printJson(list);
        if (list.length === 0) return printLines(`no checkpoints in ${workflowId} (no tool call that may write has run yet)`);
        const lines: string[] = [];
        for (const e of list) {
          if ('kind' in e) {
            lines.push(
              `rewound to turn ${e.toTurn} by ${safeText(e.by, false)} at ${e.at} (${e.droppedMessages} messages dropped)${e.text ? `: ${jsonText(e.text)}` : ''}`,
            );
            continue;
          }
          lines.push(
            terminalText(
              `turn ${e.turn}  checkpoint ${e.checkpoint.slice(0, 12)}  before ${e.toolUseId}  ${e.at}${e.note ? `  (${e.note})` : ''}`,
            ),
          );
          if (e.leftOut) lines.push(leftOutLine(e.leftOut));
          if (e.changes) lines.push(...changeLines(e.changes));
        }
        printShown(...lines);
      });
    });

  program
    .command('diff')
    .description(
      "print the unified diff of what a turn's tools changed in the workspace (from its checkpoint to the next one, or to the workspace now)",
    )
    .argument('<workflowId>')
    .requiredOption('--turn <n>', 'the turn (as `status` and `checkpoints` number them)', positiveInt)
    .option('--json', 'print {"turn","checkpoint","to","changes","diff"}')
    .action(async (workflowId: string, opts: { turn: number; json?: boolean }) => {
      await withClient(async (jobs) => {
        const entries = turnsOf(await jobs.run(workflowId).timeline());
        const i = entries.findIndex((e) => e.kind === 'checkpoint' && e.turn === opts.turn);
        if (i < 0)
          throw new CliError(`turn ${opts.turn} of ${workflowId} has no checkpoint`, `list them: agent-jobs checkpoints ${workflowId}`);
        const cp = entries[i] as CheckpointEntry;
        requireStore(cp);
        const end = await endOf(entries, i);
        if ('unknown' in end) throw new CliError(`the changes of turn ${opts.turn} are not known: ${end.unknown}`);
        const diff = await diffBetween(cp.store, cp.id, end.to);
        if (opts.json)
          return printJson({ turn: cp.turn, checkpoint: cp.id, to: end.to, changes: await changesBetween(cp.store, cp.id, end.to), diff });
        process.stdout.write(diffText(diff));
      });
    });

  program
    .command('rewind')
    .description(
      "go back to just before a turn's model call: the workspace is restored to its checkpoint, the conversation cut there, Claude told",
    )
    .argument('<workflowId>')
    .requiredOption('--to-turn <n>', 'the turn to go back to (see `agent-jobs checkpoints`)', positiveInt)
    .option('--say <text>', 'what Claude is told along with the rewind')
    .option('--by <name>', 'who decides it (default: your user name)')
    .option('--request-id <id>', REQUEST_ID_HELP, requestId)
    .option('--json', 'print the answer as JSON')
    .action(async (workflowId: string, opts: { toTurn: number; say?: string; by?: string; requestId?: string; json?: boolean }) => {
      await withClient(async (jobs) => {
        const answer = await jobs.run(workflowId).rewind(opts.toTurn, opts.say, sendOptionsOf(opts));
        if (opts.json) return printJson(answer);
        printShown(
          oneLine`rewound ${workflowId} to just before turn ${answer.toTurn} by ${answer.by}: workspace restored to checkpoint ${answer.checkpoint.slice(0, 12)}, ${answer.droppedMessages} messages dropped (still in the history)`,
        );
      });
    });

  program
    .command('fork')
    .description(
      "start a new run from a turn of another: the conversation before that turn's model call, a copy of its checkpoint as the workspace",
    )
    .argument('<workflowId>')
    .requiredOption('--at-turn <n>', 'the turn to fork at (see `agent-jobs checkpoints`)', positiveInt)
    .option('--id <newId>', 'workflow id of the new run (default: <workflowId>-fork-<turn>-<random>)')
    .option('--workdir <dir>', "the new run's workspace: absent or empty (default: its own folder under the workspace root)")
    .option('--say <text>', 'what Claude is told at the start of the fork')
    .option('--by <name>', 'who forks it (default: your user name)')
    .option('--json', 'print {"workflowId","fromWorkflowId","atTurn","checkpoint"}')
    .action(
      async (workflowId: string, opts: { atTurn: number; id?: string; workdir?: string; say?: string; by?: string; json?: boolean }) => {
        await withClient(async (jobs) => {
          const source = jobs.run(workflowId);
          const cp = turnsOf(await source.timeline()).find((e): e is CheckpointEntry => e.kind === 'checkpoint' && e.turn === opts.atTurn);
          if (!cp)
            throw new CliError(`turn ${opts.atTurn} of ${workflowId} has no checkpoint`, `list them: agent-jobs checkpoints ${workflowId}`);
          if (opts.workdir !== undefined) {
            const dir = path.resolve(opts.workdir);
            if (existsSync(dir) && readdirSync(dir).length > 0)
              throw new CliError(
                `--workdir ${dir} is not empty`,
                'a fork restores the checkpoint into its workspace: give an absent or empty folder',
              );
          }
          const { messages, input } = await source.conversationAt(opts.atTurn);
          if (!input) throw new CliError(`the input of ${workflowId} is not in its history`);
          const by = opts.by ?? (await import('node:os')).userInfo().username;
          const note = `[forked by ${by}] This is a new run, forked from ${workflowId} just before turn ${opts.atTurn}: the workspace is a copy of the files as they were then, and the bash session is new (working directory, variables and background jobs are gone).${opts.say ? ` ${by} says: ${opts.say}` : ''}`;
          const forkMessages = withNote(messages, note);
          const { fork: _old, ...rest } = input as AgentRunInput & { fork?: unknown };
          void _old;
          const next: AgentRunInput = {
            ...rest,
            ...(opts.workdir !== undefined ? { workdir: path.resolve(opts.workdir) } : { workdir: undefined }),
            fork: {
              fromWorkflowId: workflowId,
              atTurn: opts.atTurn,
              messages: forkMessages,
              checkpoint: { store: cp.store, id: cp.id, exclude: input.checkpoints?.exclude ?? [] },
            },
          };
          if (next.workdir === undefined) delete next.workdir;
          const newId = opts.id ?? `${workflowId}-fork-${opts.atTurn}-${Math.random().toString(36).slice(2, 8)}`;
          const started = await jobs.start(next, { workflowId: newId });
          const out = { workflowId: started.workflowId, fromWorkflowId: workflowId, atTurn: opts.atTurn, checkpoint: cp.id };
          if (opts.json) return printJson(out);
          printLines(
            `started ${started.workflowId}: a fork of ${workflowId} at turn ${opts.atTurn} (checkpoint ${cp.id.slice(0, 12)}); ${workflowId} itself is not changed`,
            asTyped(`watch it: \`agent-jobs watch ${started.workflowId}\``),
          );
        });
      },
    );
}

/**
 * A checkpoint diff as a person's terminal shows it: the files' bytes are the model's, so every
 * escape sequence, control (a carriage return or backspace over an added line), bidi and
 * invisible character comes out escaped ({@link terminalText}); line breaks and tabs stay. A
 * backslash of a file that would read as an escape is doubled, so a real ESC (`\x1b`) is told
 * from the four characters of a string literal (`\\x1b`).
 */
export function diffText(diff: string): string {
  return terminalText(diff);
}

/** The messages with `note` at the end of the last user message (a new user message after an assistant one). */
function withNote(messages: Message[], note: string): Message[] {
  const out = messages.map((m) => ({ ...m }));
  const last = out.at(-1);
  const block = { type: 'text' as const, text: note };
  if (last?.role === 'user')
    last.content = [...(typeof last.content === 'string' ? [{ type: 'text' as const, text: last.content }] : last.content), block];
  else out.push({ role: 'user', content: [block] });
  return out;
}
