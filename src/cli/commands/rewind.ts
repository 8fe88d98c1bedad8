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
import { changesBetween, currentTree, diffBetween, fileAt, nestedRepositories, type FileChange } from '../../checkpoint/store';
import { notRestoredText, type NotRestored, type RestoreReport } from '../../contract/checkpoint';
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

/**
 * Where turn `i` of `entries` ends: the next checkpoint, the record a rewind took of the workspace
 * just before it restored (unknown for a rewind from before the record was in its answer), or the
 * workspace now (the last one). `note` says what the comparison holds besides the turn's own tools.
 */
async function endOf(entries: ReturnType<typeof turnsOf>, i: number): Promise<{ to: string; note: string } | { unknown: string }> {
  const cp = entries[i] as CheckpointEntry;
  const next = entries[i + 1];
  if (next?.kind === 'rewind') {
    if (!next.restore) return { unknown: `undone by the rewind to turn ${next.toTurn} (${next.at})` };
    return {
      to: next.restore.before,
      note: `until the rewind to turn ${next.toTurn} undid it: compared with the workspace as the rewind found it (record ${next.restore.before.slice(0, 12)}), others' changes meanwhile included`,
    };
  }
  if (next) return { to: next.id, note: `until turn ${next.turn}'s checkpoint; changes others made meanwhile included` };
  if (!existsSync(cp.workspace)) return { unknown: `the workspace ${cp.workspace} is not on this machine` };
  return {
    to: await currentTree(cp.store, cp.workspace),
    note: `until the workspace as it is now, ${new Date().toISOString()}: changes made since the turn by a person, another run or this run's later turns are included`,
  };
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

/** The listing's first line: what each entry compares (its checkpoint is the workspace before the turn's tools, not only their work). */
const LISTING_HEADER =
  "each turn: what changed from its checkpoint (the workspace before the turn's tools wrote) to the point in brackets: the turn's tools' changes and any others made meanwhile (a person's, another run's)";

/** Changes shown in a rewind's text answer (`--json` and `checkpoints --json` hold all the report has). */
const SHOWN_CHANGES = 20;

/**
 * What a rewind's restore did, as lines for a person (escaped: {@link printShown}): the paths it
 * changed (a person's own edits since the checkpoint among them), the record of the workspace
 * before it, how to get a file back from that record, and what it left as it is.
 */
function restoreLines(workflowId: string, r: RestoreReport): string[] {
  const before = r.before.slice(0, 12);
  const lines = [
    oneLine`the rewind changed ${r.changeCount} path${r.changeCount === 1 ? '' : 's'} (the workspace before it is recorded as ${before}):`,
    ...changeLines(r.changes.slice(0, SHOWN_CHANGES)),
  ];
  if (r.changeCount > SHOWN_CHANGES)
    lines.push(
      shownLine(
        asTyped(
          `    and ${r.changeCount - SHOWN_CHANGES} more (agent-jobs checkpoints ${workflowId} --json lists up to ${r.changes.length})`,
        ),
      ),
    );
  lines.push(shownLine(asTyped(`get a file back as it was before the rewind: agent-jobs file ${workflowId} ${before} PATH > PATH`)));
  const left = notRestoredText(r.notRestored, 'left as it is now');
  if (left) lines.push(shownLine(left));
  const head = gitHeadLine(r.gitHead);
  if (head) lines.push(shownLine(head));
  return lines;
}

/**
 * Which commit the workspace's files match after a restore (RestoreReport `gitHead`), in words: the repository's HEAD,
 * which the restore does not move, or that the workspace is no repository; undefined for a worker that did not say.
 */
function gitHeadLine(gitHead: string | null | undefined): string | undefined {
  if (gitHead === undefined) return undefined;
  if (gitHead === null) return "the workspace's files match no commit: it is no git repository of its own (or its HEAD names no commit)";
  return `the workspace's git HEAD is ${gitHead} (\`git rev-parse HEAD\` there): the rewind leaves .git as it is, so the files match that commit only where the checkpoint's did; \`git status\` there shows what differs`;
}

/** Text of ours (with run fields in it) as one escaped line. */
function shownLine(text: string): string {
  return safeText(text, false);
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
        const lines: string[] = [LISTING_HEADER];
        for (const e of list) {
          if ('kind' in e) {
            lines.push(
              `rewound to turn ${e.toTurn} by ${safeText(e.by, false)} at ${e.at} (${e.droppedMessages} messages dropped)${e.text ? `: ${jsonText(e.text)}` : ''}`,
            );
            if (e.restore) lines.push(...restoreLines(workflowId, e.restore).map((l) => `    ${l}`));
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
    .option('--json', 'print {"turn","checkpoint","to","comparedWith","changes","diff"}')
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
        const comparedWith = `turn ${cp.turn}'s checkpoint ${cp.id.slice(0, 12)} (before its tools wrote), ${end.note}`;
        if (opts.json)
          return printJson({
            turn: cp.turn,
            checkpoint: cp.id,
            to: end.to,
            comparedWith,
            changes: await changesBetween(cp.store, cp.id, end.to),
            diff,
          });
        // A line before the first `diff --git` header: git apply and patch skip it.
        process.stdout.write(`${terminalText(`# from ${comparedWith}`)}\n${diffText(diff)}`);
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
          ...(answer.restore ? restoreLines(workflowId, answer.restore) : []),
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
    .option('--json', 'print {"workflowId","fromWorkflowId","atTurn","checkpoint","notCopied"}')
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
          const notCopied = await notCopiedBy(cp, input.checkpoints?.exclude ?? []);
          const left = notRestoredText(notCopied, 'not copied');
          const note = `[forked by ${by}] This is a new run, forked from ${workflowId} just before turn ${opts.atTurn}: the workspace is a copy of the files as they were then, and the bash session is new (working directory, variables and background jobs are gone).${left ? ` ${left}` : ''}${opts.say ? ` ${by} says: ${opts.say}` : ''}`;
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
          const out = { workflowId: started.workflowId, fromWorkflowId: workflowId, atTurn: opts.atTurn, checkpoint: cp.id, notCopied };
          if (opts.json) return printJson(out);
          printLines(
            `started ${started.workflowId}: a fork of ${workflowId} at turn ${opts.atTurn} (checkpoint ${cp.id.slice(0, 12)}); ${workflowId} itself is not changed`,
            ...(left ? [left] : []),
            // Seen by a person reviewing the fork's first command: the folder they would look in is not there yet.
            asTyped(
              `its workspace${opts.workdir !== undefined ? ` ${path.resolve(opts.workdir)}` : ''} is made from the checkpoint when its bash session opens, at its first command (after your approval, if it asks for one); until then read the checkpoint's files with \`agent-jobs file ${workflowId} ${cp.id.slice(0, 12)} PATH\``,
            ),
            asTyped(`watch it: \`agent-jobs watch ${started.workflowId}\``),
          );
        });
      },
    );

  program
    .command('file')
    .description(
      "print a file as a checkpoint of a run holds it, or a rewind's record of the workspace before it (to get it back: `> PATH`)",
    )
    .argument('<workflowId>')
    .argument('<checkpoint>', 'a checkpoint id of the run, or the record a rewind names (at least 7 hex digits)')
    .argument('<path>', 'the file, relative to the workspace')
    .option('--json', 'print {"checkpoint","path","size","base64"}')
    .action(async (workflowId: string, id: string, file: string, opts: { json?: boolean }) => {
      await withClient(async (jobs) => {
        const { store, full } = recordOf(workflowId, await jobs.run(workflowId).timeline(), id);
        let bytes: Buffer;
        try {
          bytes = await fileAt(store, full, file);
        } catch (err) {
          throw new CliError((err as Error).message, `the files it changed: agent-jobs checkpoints ${workflowId}`);
        }
        if (opts.json) return printJson({ checkpoint: full, path: file, size: bytes.length, base64: bytes.toString('base64') });
        // A terminal gets the bytes escaped (a file's escape sequences are the model's); a pipe or a file gets them as they are.
        process.stdout.write(process.stdout.isTTY ? terminalText(bytes.toString('utf8')) : bytes);
      });
    });
}

/**
 * The store and full id of `id` (a prefix of at least 7 hex digits) among the run's checkpoints and
 * its rewinds' records of the workspace before them: only those of this run are read.
 * @throws CliError when none or more than one matches, or the store is not on this machine
 */
function recordOf(workflowId: string, timeline: TimelineEntry[], id: string): { store: string; full: string } {
  if (!/^[0-9a-f]{7,40}$/.test(id)) throw new CliError(`${safeText(id, false)} is not a checkpoint id (7 to 40 hex digits)`);
  const known = new Map<string, string>();
  for (const e of timeline) {
    if (e.kind === 'checkpoint') known.set(e.id, e.store);
    else if (e.restore) {
      const store = timeline.find((c): c is CheckpointEntry => c.kind === 'checkpoint' && c.id === e.checkpoint)?.store;
      if (store) known.set(e.restore.before, store);
    }
  }
  const found = [...known].filter(([full]) => full.startsWith(id));
  if (found.length !== 1)
    throw new CliError(
      `${found.length === 0 ? 'no' : 'more than one'} checkpoint or rewind record of ${workflowId} starts with ${id}`,
      `list them: agent-jobs checkpoints ${workflowId}`,
    );
  const [full, store] = found[0]!;
  if (!existsSync(store))
    throw new CliError(`the checkpoint store ${store} is not on this machine`, "run this where the run's worker runs");
  return { store, full };
}

/**
 * What a fork of checkpoint `cp` does not copy: every `.git` (the fork is no repository; said
 * when the original's workspace has one, or cannot be looked at from here), the nested repositories
 * the checkpoint records (empty folders in the copy; none named when its store is not on this
 * machine), and the run's excludes.
 */
async function notCopiedBy(cp: CheckpointEntry, exclude: string[]): Promise<NotRestored> {
  const here = existsSync(cp.store) && existsSync(cp.workspace);
  return {
    nested: existsSync(cp.store) ? await nestedRepositories(cp.store, cp.id) : [],
    git: here ? existsSync(path.join(cp.workspace, '.git')) : true,
    excluded: exclude,
  };
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
