/**
 * Session activities, built by a factory that closes over this worker
 * process's session registry (session affinity: docs/how-it-works.md).
 *
 * `openSession` runs on the shared queue: whichever worker takes it starts
 * the bash process and answers with its own session queue. `runCommand`,
 * `restartSession` and `closeSession` run on that queue only, so they reach
 * the process that holds the bash process.
 */
import { workspaceFolderName } from '../contract/subagent';
import { leavesRoot } from '../shared/paths';
import { checkWorktreeGit, createWorktree, type WorktreeGit } from '../session/worktree';
import { within } from '../session/workspace';
import { mkdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { OPEN_SESSION_FAILED_ATTEMPTS, ORPHAN_COMMAND_CLAIM_MS, SESSION_HEARTBEAT_INTERVAL_MS } from '../config';
import { BashSession, ExactRefusedError, SessionCwdError, type BashSessionOptions, type CommandResult } from '../session';
import { decideApproval, literalArgv, matchEditRule, matchRule } from '../policy';
import { BUILTINS, KEYWORDS } from '../policy/builtins';
import { TEXT_EDITOR_MAX_CHARACTERS, editRuleSubject, editRuleWords, type RunEditInput, type RunEditOutput } from '../contract/text-editor';
import type { EditGate, ProposedEdit } from '../session';
import { restoreCheckpoint, takeCheckpoint } from '../checkpoint/store';
import { reportedPrefix, type CheckpointRequest, type CheckpointResult, type RestoreReport } from '../contract/checkpoint';
import { sha256Hex } from '../session/edit';
import { gitDirOf } from '../session/git-audit';
import { auditGit, ownerOf } from '../session/worktree-git';
import {
  COMMAND_FAILED,
  SESSION_NOT_FOUND,
  WORKDIR_UNUSABLE,
  WORKER_FULL,
  WORKER_SHUTTING_DOWN,
  type CommandOutcomeInput,
  type CommandOutcomeOutput,
  type CloseSessionOutput,
  type CreateWorktreeInput,
  type CreateWorktreeOutput,
  type OpenSessionInput,
  type OpenSessionOutput,
  type RestartSessionOutput,
  type RunCommandInput,
  type RunCommandOutput,
  type SessionInput,
} from '../contract';

/**
 * What this worker knows of one dispatch of a command (see
 * {@link SessionRegistry.beginCommand}): running (with its end), done
 * (with its output), failed (with the error), or abandoned (asked for
 * before it started, so it never will).
 */
type CommandRecord =
  | { state: 'running'; ended: Promise<void>; claim(): void }
  | { state: 'done'; output: RunCommandOutput }
  | { state: 'failed'; message: string }
  | { state: 'abandoned' };

/** Dispatches whose records a session keeps: the run asks only about its latest command (the one before it may be a tombstone). */
const COMMAND_RECORDS_KEPT = 4;

/** The ledger key of a dispatch within its session. */
function commandKey(toolUseId: string, dispatch: number | undefined): string {
  return `${toolUseId}#${dispatch ?? 1}`;
}

/** A place for one session in a {@link SessionRegistry}, taken before the session starts (see {@link SessionRegistry.reserve}). */
export interface SessionSlot {
  /** Puts the started session in the slot: the registry holds it from now on. */
  fill(session: BashSession, workflowId: string): void;
  /** Gives the slot back (the session did not start). Does nothing after {@link fill} or a first release. */
  release(): void;
}

/**
 * The bash sessions this worker process holds, by session id, and its cap.
 * A session counts against the cap from the moment its slot is reserved
 * (before bash starts, which takes tens of ms and awaits), so many
 * `openSession` running at once cannot all pass the check and overshoot:
 * the check and the reservation are one synchronous step.
 */
export class SessionRegistry {
  private readonly sessions = new Map<string, { session: BashSession; workflowId: string }>();
  /** Slots reserved by `openSession` calls whose bash is still starting. */
  private reserved = 0;
  /** Commands running now, each with the controller that kills it when the shutdown grace runs out. */
  private readonly running = new Set<AbortController>();
  /** Called whenever a command ends (for {@link whenNoCommands}). */
  private readonly onCommandEnd = new Set<() => void>();
  /** Why this worker no longer takes sessions or commands (set by {@link startDraining}), or null while it does. */
  private drainReason: string | null = null;
  /** Per session, the records of its latest command dispatches (insertion order, at most {@link COMMAND_RECORDS_KEPT}). */
  private readonly commands = new Map<string, Map<string, CommandRecord>>();
  /** When each session whose processes may still write began (ms since the epoch): from its slot's reservation until it is closed. */
  private readonly writers = new Map<object, number>();
  /** Each session's key in {@link writers}. */
  private readonly writerOf = new WeakMap<BashSession, object>();

  /** @param capacity sessions held at most, reserved ones included (`AGENT_JOBS_MAX_SESSIONS`). @default Infinity */
  constructor(readonly capacity = Infinity) {}

  /** Sessions held plus slots reserved. */
  get count(): number {
    return this.sessions.size + this.reserved;
  }

  /** Whether the worker is shutting down (see {@link startDraining}). */
  get draining(): boolean {
    return this.drainReason !== null;
  }

  /** Commands running now. */
  get runningCommands(): number {
    return this.running.size;
  }

  /** Workflow ids of the runs that hold a session here, with the session's id. */
  holders(): { sessionId: string; workflowId: string }[] {
    return [...this.sessions].map(([sessionId, { workflowId }]) => ({ sessionId, workflowId }));
  }

  /**
   * From now on, `openSession`, `runCommand` and `restartSession` refuse
   * (`WorkerShuttingDown`); commands already running go on. Idempotent.
   * @param reason why, in words for Claude and the logs (`its worker was shut down (SIGTERM)`)
   */
  startDraining(reason: string): void {
    this.drainReason ??= reason;
  }

  /**
   * @throws ApplicationFailure type `WorkerShuttingDown` (retryable as `retryable` says) when the worker is draining
   */
  refuseWhenDraining(workerId: string, what: string, retryable: boolean): void {
    if (this.drainReason === null) return;
    throw ApplicationFailure.create({
      message: `worker ${workerId} is shutting down (${this.drainReason}): ${what}`,
      type: WORKER_SHUTTING_DOWN,
      nonRetryable: !retryable,
    });
  }

  /**
   * Counts a command as running until the returned `end` is called; its
   * `signal` aborts when {@link killRunning} is called (the grace ran out).
   */
  trackCommand(): { signal: AbortSignal; end(): void } {
    const controller = new AbortController();
    this.running.add(controller);
    return {
      signal: controller.signal,
      end: () => {
        if (!this.running.delete(controller)) return;
        for (const wake of [...this.onCommandEnd]) wake();
      },
    };
  }

  /** Resolves once no command runs (at once when none does). */
  whenNoCommands(): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (this.running.size > 0) return;
        this.onCommandEnd.delete(check);
        resolve();
      };
      this.onCommandEnd.add(check);
      check();
    });
  }

  /**
   * Kills every running command (their process groups; each answers with
   * what it printed and `killedAtShutdownMs`).
   * @param graceMs the grace that ran out, in ms, for what Claude is told
   */
  killRunning(graceMs: number): void {
    this.killedAtShutdownMs = graceMs;
    for (const controller of this.running) controller.abort(new Error('the shutdown grace ran out'));
  }

  /** The grace in ms after which {@link killRunning} killed the running commands, or undefined. */
  killedAtShutdownMs: number | undefined;

  /**
   * Reserves a slot for a session about to start.
   * @throws ApplicationFailure (retryable, type `WorkerShuttingDown`) when the worker is draining
   * @throws ApplicationFailure (retryable, type `WorkerFull`) when {@link count} has reached {@link capacity}
   */
  reserve(workerId: string): SessionSlot {
    this.refuseWhenDraining(workerId, 'the session is opened on another worker', true);
    if (this.count >= this.capacity) {
      throw ApplicationFailure.create({
        message: `worker ${workerId} holds ${this.count} of its ${this.capacity} bash sessions (AGENT_JOBS_MAX_SESSIONS); the open is retried, on any worker`,
        type: WORKER_FULL,
        nonRetryable: false,
      });
    }
    this.reserved++;
    const writer = {};
    this.writers.set(writer, Date.now());
    let open = true;
    const release = (): void => {
      if (open) this.reserved--;
      open = false;
    };
    return {
      fill: (session, workflowId) => {
        release();
        this.writerOf.set(session, writer);
        this.sessions.set(session.id, { session, workflowId });
      },
      release: () => {
        if (open) this.writers.delete(writer);
        release();
      },
    };
  }

  /**
   * Records that a dispatch of a command starts now (synchronously, before
   * anything runs), so each (session, tool_use, dispatch) runs at most
   * once and never after {@link claimCommand} gave it up.
   * @returns what to call with its output or error (the record keeps it for
   *   {@link claimCommand}), `release` when nothing ran (the policy sent it to a
   *   person: the same dispatch may come again once they decide), and `claimed`
   *   (resolved when a run asked for it), or null when this dispatch was seen
   *   before (then nothing may run)
   */
  beginCommand(
    sessionId: string,
    toolUseId: string,
    dispatch: number | undefined,
  ): { finish(output: RunCommandOutput): void; fail(err: unknown): void; release(): void; claimed: Promise<void> } | null {
    const key = commandKey(toolUseId, dispatch);
    let records = this.commands.get(sessionId);
    if (records?.has(key)) return null;
    if (!records) this.commands.set(sessionId, (records = new Map<string, CommandRecord>()));
    let end!: () => void;
    let claim!: () => void;
    const ended = new Promise<void>((resolve) => (end = resolve));
    const claimed = new Promise<void>((resolve) => (claim = resolve));
    records.set(key, { state: 'running', ended, claim });
    for (const old of records.keys()) if (records.size > COMMAND_RECORDS_KEPT && old !== key) records.delete(old);
    const settle = (record: CommandRecord): void => {
      // Only while it is still the record here (the session may have been closed meanwhile).
      if (this.commands.get(sessionId)?.get(key)?.state === 'running') this.commands.get(sessionId)!.set(key, record);
      end();
    };
    return {
      finish: (output) => settle({ state: 'done', output }),
      fail: (err) => settle({ state: 'failed', message: err instanceof Error ? err.message : String(err) }),
      // Nothing ran (the policy sent the command to a person): the same dispatch may come again once they decide.
      release: () => {
        if (this.commands.get(sessionId)?.get(key)?.state === 'running') this.commands.get(sessionId)!.delete(key);
        end();
      },
      claimed,
    };
  }

  /**
   * What became of a dispatch (a run asks after its activity timed out):
   * a dispatch this worker never saw is marked abandoned first, so it can
   * no longer start. A running one is marked claimed (its run still wants
   * its output: it is not killed as an orphan) and waited for.
   */
  async claimCommand(
    sessionId: string,
    toolUseId: string,
    dispatch: number | undefined,
  ): Promise<Exclude<CommandRecord, { state: 'running' }>> {
    const key = commandKey(toolUseId, dispatch);
    let records = this.commands.get(sessionId);
    if (!records) this.commands.set(sessionId, (records = new Map<string, CommandRecord>()));
    const record = records.get(key);
    if (!record) {
      records.set(key, { state: 'abandoned' });
      return { state: 'abandoned' };
    }
    if (record.state !== 'running') return record;
    record.claim();
    await record.ended;
    const now = this.commands.get(sessionId)?.get(key);
    return now && now.state !== 'running' ? now : { state: 'failed', message: 'its bash session was closed while it ran' };
  }

  /**
   * Takes out of the registry (without closing it) the session a run holds
   * here, if any. A run holds one session at a time, so when it opens
   * another, the old one is stale: a replacement after a command timed out
   * on a worker that is still alive, or a retried open whose first attempt
   * started bash here but never reported back.
   */
  takeRunSession(workflowId: string): BashSession | undefined {
    for (const [id, entry] of this.sessions) {
      if (entry.workflowId !== workflowId) continue;
      this.sessions.delete(id);
      this.commands.delete(id);
      return entry.session;
    }
    return undefined;
  }

  /**
   * @throws ApplicationFailure (non-retryable, type `SessionNotFound`) when this process holds no such session
   */
  require(sessionId: string, workerId: string): BashSession {
    const session = this.sessions.get(sessionId)?.session;
    if (!session) {
      throw ApplicationFailure.create({
        message: `worker ${workerId} holds no bash session ${sessionId} (it was closed, or the worker restarted)`,
        type: SESSION_NOT_FOUND,
        nonRetryable: true,
      });
    }
    return session;
  }

  /**
   * Closes a session and frees its slot (the slot is free at once, before bash is gone).
   * @returns false when it is not held here, else the session's note on what the git audit moved when it closed
   *   (src/session/git-audit.ts): `note` on one line ('' for nothing), `lines` a part and a finding a line
   *   (BashSession.gitLinesAtClose; empty for nothing)
   */
  async close(sessionId: string): Promise<{ note: string; lines: string[] } | false> {
    const entry = this.sessions.get(sessionId);
    if (!entry) return false;
    this.sessions.delete(sessionId);
    this.commands.delete(sessionId);
    await entry.session.close();
    this.closed(entry.session);
    return { note: entry.session.gitNoteAtClose ?? '', lines: entry.session.gitLinesAtClose ?? [] };
  }

  /** `session` was closed (its processes are gone): it no longer holds back {@link trustStatBefore}. */
  closed(session: BashSession): void {
    const writer = this.writerOf.get(session);
    if (writer) this.writers.delete(writer);
  }

  /**
   * ms since the epoch: the start (slot reservation) of the earliest session of this worker that is not closed yet,
   * or now when there is none. A file whose ctime is after it may have been written through a shared mapping by one
   * of them without any time changing since (adversary round 26): a checkpoint or restore trusts no such stat.
   */
  trustStatBefore(): number {
    return Math.min(Date.now(), ...this.writers.values());
  }

  /**
   * SIGKILLs every session's processes at once (see `BashSession.killNow`),
   * for a worker that exits now (its second shutdown signal).
   * @returns how many sessions were killed
   */
  killAllNow(): number {
    for (const { session } of this.sessions.values()) session.killNow();
    return this.sessions.size;
  }

  /** Closes every session (kills their process groups); used at worker shutdown. */
  async closeAll(): Promise<void> {
    const ids = [...this.sessions.keys()];
    await Promise.allSettled(ids.map((id) => this.close(id)));
  }
}

/** What the session activities need from their worker process. */
export interface SessionActivityDeps {
  registry: SessionRegistry;
  workerId: string;
  /** This process's session task queue. */
  taskQueue: string;
  /** Root of the default per-run working directories. */
  workspaceRoot: string;
  /** Root of the checkpoint stores (`AGENT_JOBS_CHECKPOINT_DIR`). */
  checkpointRoot: string;
  /** Options every new session gets (audit log, limits, secret names, output cap). */
  sessionOptions: Omit<BashSessionOptions, 'cwd' | 'id'>;
}

/** Folder name for a workflow id (src/contract/subagent.ts, shared with the workflow). */
export { workspaceFolderName };

async function isDirectory(dir: string): Promise<boolean> {
  try {
    return (await stat(dir)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The run's working directory: its `workdir` (absolute, or relative to `root`, the worker's workspace root), else its
 * own folder under `root`.
 * @throws ApplicationFailure of type {@link WORKDIR_UNUSABLE} (non-retryable) for a relative `workdir` that leaves
 *   `root` (`..`): docs/cli.md puts a relative path under the root
 */
function workdirOf(root: string, input: Pick<OpenSessionInput, 'workdir' | 'workflowId'>): string {
  if (!input.workdir) return path.join(root, workspaceFolderName(input.workflowId));
  if (!path.isAbsolute(input.workdir) && leavesRoot(input.workdir))
    throw ApplicationFailure.create({
      message: `the working directory ${input.workdir} leaves the workspace root ${root}: a relative path is under it`,
      type: WORKDIR_UNUSABLE,
      nonRetryable: true,
    });
  return path.resolve(root, input.workdir);
}

/**
 * `p` (absolute) with symlinks resolved, also when it does not exist yet: its nearest existing ancestor resolved, then
 * the rest as written (where {@link makeDirectory}, which makes one level at a time through those symlinks, puts it).
 */
async function resolvedPath(p: string): Promise<string> {
  const rest: string[] = [];
  for (let at = path.resolve(p); ; at = path.dirname(at)) {
    const real = await realpath(at).catch(() => null);
    if (real !== null) return path.join(real, ...rest);
    if (at === path.dirname(at)) return path.resolve(p);
    rest.unshift(path.basename(at));
  }
}

/**
 * Refuses a working directory that is, or lies inside, one of the folders the sandbox hides from every session
 * (`hidden`, the worker's `hidePaths`: the workspace root, the data dir, the checkpoint store, the product's own code,
 * `AGENT_JOBS_SANDBOX_HIDE`), and the workspace root itself. The workspace is bound whole into the sandbox, writable,
 * and the sandbox hides only what lies inside it: made the workspace, such a folder (or a folder of it: the checkpoint
 * store's `objects`, the product's `dist/`) would let the run read and write other runs' folders, the product's data
 * or the code the worker runs. One exception: a folder strictly inside the workspace root (a run's own folder) when
 * the hidden folder holds the root (the root itself, the data dir above it, the product's code in a dev checkout),
 * unless a hidden folder inside the root holds the folder too. A folder above a hidden one is fine: the sandbox hides
 * that one inside it. Compared with symlinks resolved (a missing folder as {@link makeDirectory} would make it): the
 * caller checks before making the folder (nothing made in a hidden folder) and again after (the folder bash gets).
 * @throws ApplicationFailure of type {@link WORKDIR_UNUSABLE} (non-retryable) naming the folder and why
 */
export async function refuseProductDir(workdir: string, root: string, hidden: readonly string[]): Promise<void> {
  const dir = await resolvedPath(workdir);
  const realRoot = await resolvedPath(root);
  if (dir === realRoot)
    throw ApplicationFailure.create({
      message: `the working directory ${workdir} is the workspace root ${root} itself, which holds every run's folder: name a folder of its own (a relative path is one under that root)`,
      type: WORKDIR_UNUSABLE,
      nonRetryable: true,
    });
  const inRoot = within(dir, realRoot);
  let holder: { h: string; folder: string } | undefined;
  for (const h of hidden) {
    const folder = await resolvedPath(h);
    if (!within(dir, folder) || (inRoot && within(realRoot, folder))) continue;
    // The innermost one is named: the checkpoint store rather than the data dir that holds it.
    if (!holder || folder.length > holder.folder.length) holder = { h, folder };
  }
  if (holder)
    throw ApplicationFailure.create({
      message: `the working directory ${workdir} ${dir === holder.folder ? 'is' : 'is inside'} ${holder.h}, a folder the sandbox hides from every session (the product's data or code), which bound whole into the sandbox it would show: name a folder outside it (or one under the workspace root ${root})`,
      type: WORKDIR_UNUSABLE,
      nonRetryable: true,
    });
}

/**
 * `mkdir -p`, one level at a time. Node's `mkdir(dir, {recursive: true})`
 * never settles for a path under /proc (it retries forever on the ENOENT
 * that procfs answers), spinning the worker's CPU.
 * @throws ApplicationFailure of type {@link WORKDIR_UNUSABLE} (non-retryable) naming `dir` and the first
 *   mkdir error other than EEXIST, or saying that `dir` exists but is not a directory
 */
export async function makeDirectory(dir: string): Promise<void> {
  let current = path.parse(path.resolve(dir)).root;
  for (const part of path.resolve(dir).split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    try {
      await mkdir(current);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw ApplicationFailure.create({
          message: `cannot create the working directory ${dir}: ${(err as Error).message}`,
          type: WORKDIR_UNUSABLE,
          nonRetryable: true,
          cause: err as Error,
        });
    }
  }
  if (!(await isDirectory(dir)))
    throw ApplicationFailure.nonRetryable(`cannot use ${dir} as the working directory: it exists but is not a directory`, WORKDIR_UNUSABLE);
}

/** An answer of `runCommand` for a command that did not start, in `cwd`, with `more` (why). */
function nothingRan(cwd: string, more: Pick<RunCommandOutput, 'needsApproval' | 'notes'>): RunCommandOutput {
  return {
    output: '',
    exitCode: null,
    timedOut: false,
    truncated: false,
    outputBytes: 0,
    sessionRestarted: false,
    shellExit: null,
    cwd,
    durationMs: 0,
    ...more,
  };
}

/** The answer of `runCommand` when the policy wants a human: nothing ran. */
function notRun(session: BashSession, reason: string): RunCommandOutput {
  return nothingRan(session.cwd, { needsApproval: reason });
}

/** How {@link judge} lets a command run: exactly (the read-only policy), in the shell by a rule, or not without a human. */
type Judged = { exact: { argv: string[]; paths: string[]; cwd: string } } | { shell: true; rule: number } | { needsApproval: string };

/**
 * Judges a command asked with `autoApprove`, right before it would run: the
 * read-only policy on what bash would run and the workspace's real paths
 * (under `policy`), then the run's approval rules (src/policy `matchRule`).
 */
function judge(input: RunCommandInput, session: BashSession): Judged {
  const cwd = session.currentCwd();
  const decision =
    input.autoApprove === 'policy'
      ? decideApproval(input.command, 'policy', { workspace: session.exactRoot, cwd })
      : { action: 'ask' as const, reason: 'approval mode is always' };
  if (decision.action === 'run') return { exact: { argv: decision.argv, paths: decision.paths, cwd } };
  const rules = input.rules ?? [];
  const rule = matchRule(input.command, rules);
  if ('id' in rule) return { shell: true, rule: rule.id };
  return { needsApproval: rules.length > 0 ? `${decision.reason}; ${rule.reason}` : decision.reason };
}

/**
 * A rule matched `command`: it runs by rule `rule` only when its first word names, in the shell now, a bash
 * builtin or keyword of the fixed table (src/policy/builtins.ts) or a program of the system the session cannot
 * replace (BashSession `resolveForRule`); else it waits for a person, the reason saying what the word resolves to.
 */
export async function ruleHolds(command: string, rule: number, session: BashSession): Promise<Judged> {
  const words = literalArgv(command);
  const word = words.ok ? words.argv[0] : undefined;
  if (word === undefined) return { needsApproval: `rule ${rule} matches, but the command has no plain first word` };
  const r = await session.resolveForRule(word);
  const known = 'builtin' in r && (r.builtin === 'keyword' ? KEYWORDS.includes(word) : word in BUILTINS);
  if ('program' in r || known) return { shell: true, rule };
  const why = 'refuse' in r ? r.refuse : `${word} is a ${r.builtin} bash does not list`;
  return { needsApproval: `rule ${rule} matches, but ${why}: the rule does not apply; a person decides` };
}

/**
 * The gate of one `runEdit` (see {@link RunEditInput}): an approved edit applies only when the
 * diff made now is the one approved (its SHA-256); under `policy` a `view` runs unasked; a
 * change (and under `rules` a view too) runs when a rule matches, else a person decides.
 */
export function editGate(input: RunEditInput): (p: ProposedEdit) => EditGate {
  return (p) => {
    if (input.approvedSha256 !== undefined) {
      if (sha256Hex(p.review) === input.approvedSha256) return { apply: true };
      return {
        refuse: `Error: ${p.abs} changed since the edit was shown for approval: the change it would make now is not the one a person approved (sha256 ${input.approvedSha256.slice(0, 12)}), so nothing was written. View the file again and retry.`,
      };
    }
    if (input.autoApprove === undefined) return { apply: true };
    if (input.autoApprove === 'policy' && p.command === 'view') return { apply: true };
    // A rule names a path; through a symlink the edit would change another file than the rule names.
    if (p.viaSymlink) return { ask: `${p.abs} goes through a symlink, so no approval rule applies to it; a person decides` };
    const rule = matchEditRule({ words: editRuleWords(p.command, p.abs), text: p.ruleSubject }, input.rules ?? []);
    if ('id' in rule) return { apply: true, rule: rule.id };
    const why =
      input.autoApprove === 'policy' ? 'the policy lets views run unasked; every change waits for a person' : 'approval mode is always';
    return { ask: `${why}; ${rule.reason}` };
  };
}

/**
 * Heartbeats every second, the first a second in, until the returned function is called: the 5 s
 * heartbeat timeout runs from the activity's start either way, and most commands end inside the
 * first second (why none at the start: docs/performance.md, "What was cut").
 */
function startHeartbeat(details?: unknown): () => void {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(details), SESSION_HEARTBEAT_INTERVAL_MS);
  return () => clearInterval(timer);
}

/**
 * A failure of `openSession` other than `WorkerFull`, as Temporal should see
 * it: retryable (as thrown) before attempt `OPEN_SESSION_FAILED_ATTEMPTS`,
 * non-retryable from it on (the retry policy itself has no attempt limit,
 * for the sake of `WorkerFull`; see `OPEN_SESSION_RETRY_POLICY`).
 */
function lastAttemptIsFinal(err: unknown): unknown {
  if (Context.current().info.attempt < OPEN_SESSION_FAILED_ATTEMPTS) return err;
  if (err instanceof ApplicationFailure && err.nonRetryable) return err;
  const e = err instanceof Error ? err : new Error(String(err));
  const type = e instanceof ApplicationFailure ? (e.type ?? undefined) : e.name;
  return ApplicationFailure.create({ message: e.message, type, nonRetryable: true, cause: e });
}

/**
 * Runs one command of `runCommand` (judged first when `autoApprove` is asked)
 * and builds its answer.
 * @throws the cancellation's reason when `signal` aborted the command (its process group is killed by then)
 */
async function runIn(
  registry: SessionRegistry,
  session: BashSession,
  input: RunCommandInput,
  signal: AbortSignal,
  checkpointRoot: string,
): Promise<RunCommandOutput> {
  const ctx = Context.current();
  const judged = input.autoApprove === undefined ? { shell: true as const } : judge(input, session);
  const probedAt = Date.now();
  const how: Judged | { shell: true } = 'rule' in judged ? await ruleHolds(input.command, judged.rule, session) : judged;
  if ('rule' in judged)
    log.info('rule program probed', { toolUseId: input.toolUseId, rule: judged.rule, ms: Date.now() - probedAt, ...how });
  if ('needsApproval' in how) return notRun(session, how.needsApproval);
  const approvedByRule = 'rule' in how && typeof how.rule === 'number' ? how.rule : undefined;
  // A command the read-only policy runs exactly cannot write; any other one may.
  const checkpoint =
    input.checkpoint && !('exact' in how) && !readOnly(input.command, session)
      ? await checkpointInTime(checkpointRoot, session, input.checkpoint, input, registry.trustStatBefore())
      : undefined;
  if (checkpoint && 'late' in checkpoint) return checkpointLate(session, checkpoint.late);
  let result: CommandResult;
  if ('exact' in how) {
    try {
      result = await session.runExact(how.exact.argv, {
        paths: how.exact.paths,
        cwd: how.exact.cwd,
        command: input.command,
        timeoutMs: input.timeoutMs,
        signal,
      });
    } catch (err) {
      if (err instanceof ExactRefusedError) return notRun(session, err.reason);
      throw err;
    }
    log.info('command auto-approved by the policy and run exactly', { toolUseId: input.toolUseId, argv: how.exact.argv });
  } else {
    if (approvedByRule !== undefined)
      log.info('command approved by an approval rule', { toolUseId: input.toolUseId, rule: approvedByRule });
    result = await session.run(input.command, { timeoutMs: input.timeoutMs, signal });
  }
  const killedAtShutdownMs = result.cancelled && !ctx.cancellationSignal.aborted ? registry.killedAtShutdownMs : undefined;
  if (killedAtShutdownMs !== undefined)
    log.warn('command killed: the shutdown grace ran out', { toolUseId: input.toolUseId, graceMs: killedAtShutdownMs });
  else if (result.cancelled) {
    log.info('command cancelled; process group killed', { toolUseId: input.toolUseId });
    throw ctx.cancellationSignal.reason ?? new Error('cancelled');
  }
  return {
    output: result.output,
    exitCode: result.exitCode,
    timedOut: result.timedOut,
    truncated: result.truncated,
    outputBytes: result.outputBytes,
    sessionRestarted: result.sessionRestarted,
    shellExit: result.shellExit ?? null,
    cwd: result.cwd,
    durationMs: result.durationMs,
    notes: result.notes,
    ...(approvedByRule !== undefined ? { approvedByRule } : {}),
    ...(registry.draining ? { workerClosing: true as const } : {}),
    ...(killedAtShutdownMs !== undefined ? { killedAtShutdownMs } : {}),
    ...(checkpoint ? { checkpoint } : {}),
  };
}

/** Margin between giving up on a checkpoint and the activity's start-to-close timeout, ms: time to answer. */
const CHECKPOINT_ANSWER_MARGIN_MS = 10_000;

/** Each workspace's checkpoint under way (by its root): the next one starts when it ends, never beside it. */
const checkpointsUnderWay = new Map<string, Promise<unknown>>();

/**
 * {@link checkpointBefore}, waited for only until {@link CHECKPOINT_ANSWER_MARGIN_MS} before the activity's
 * start-to-close timeout: past that, `{late: ms waited}`, and the checkpoint goes on (the next one of the
 * workspace waits for it), so the activity answers that the command did not run and why rather than time
 * out as if its worker were gone. A checkpoint of this workspace still under way is waited for first.
 */
async function checkpointInTime(
  root: string,
  session: BashSession,
  req: CheckpointRequest,
  call: { workflowId: string; toolUseId: string },
  trustStatBefore: number,
): Promise<CheckpointResult | { late: number }> {
  const started = Date.now();
  // An activity of at most the margin has no limit here: none of the worker's is (a command's is its timeout plus 30 s).
  const budget = Context.current().info.startToCloseTimeoutMs - CHECKPOINT_ANSWER_MARGIN_MS;
  const before = checkpointsUnderWay.get(session.exactRoot) ?? Promise.resolve();
  const taking = before.then(() => checkpointBefore(root, session, req, call, trustStatBefore));
  const chained = taking.finally(() => {
    if (checkpointsUnderWay.get(session.exactRoot) === chained) checkpointsUnderWay.delete(session.exactRoot);
  });
  checkpointsUnderWay.set(session.exactRoot, chained);
  if (budget <= 0) return taking;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<{ late: number }>((resolve) => {
    timer = setTimeout(() => resolve({ late: Date.now() - started }), budget);
  });
  try {
    return await Promise.race([taking, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The answer of a command whose checkpoint outlived its time ({@link checkpointInTime}): not run, and why. */
function checkpointLate(session: BashSession, waitedMs: number): RunCommandOutput {
  log.warn('command not run: its checkpoint is still being taken', { waitedMs });
  const why =
    `command not run: the workspace's checkpoint (its record for rewind, taken before a command that may write) was still ` +
    `being taken after ${Math.round(waitedMs / 1000)} s, so the command did not start. A checkpoint reads every file ` +
    `of the workspace, git-ignored trees like node_modules included (a run started with --checkpoint-exclude node_modules ` +
    `skips them). It goes on in the background; running the command again waits for it first`;
  return nothingRan(session.currentCwd(), { notes: [`[agent-jobs: ${why}]`] });
}

/** Whether the read-only policy would run `command` unasked (then it cannot write, and needs no checkpoint), whatever the run's approval mode. */
function readOnly(command: string, session: BashSession): boolean {
  return decideApproval(command, 'policy', { workspace: session.exactRoot, cwd: session.currentCwd() }).action === 'run';
}

/**
 * Records the session's workspace before a tool call that may write (src/checkpoint). A failure
 * does not stop the tool call: the answer says no checkpoint was taken, and why. `trustStatBefore`
 * (ms since the epoch, `SessionRegistry.trustStatBefore`): files changed since are read whatever their stat.
 */
async function checkpointBefore(
  root: string,
  session: BashSession,
  req: CheckpointRequest,
  call: { workflowId: string; toolUseId: string },
  trustStatBefore: number,
): Promise<CheckpointResult> {
  const started = Date.now();
  try {
    const taken = await takeCheckpoint(
      root,
      session.exactRoot,
      { maxBytes: req.maxBytes, exclude: req.exclude, trustStatBefore },
      `${call.workflowId} turn ${req.turn} before ${call.toolUseId}`,
    );
    if ('skipped' in taken) {
      log.warn('no checkpoint', { toolUseId: call.toolUseId, reason: taken.skipped });
      return { turn: req.turn, skipped: taken.skipped };
    }
    log.info('checkpoint taken', {
      toolUseId: call.toolUseId,
      id: taken.id,
      files: taken.files,
      ms: Date.now() - started,
      ...(taken.leftOut ? { leftOut: taken.leftOut } : {}),
    });
    return { turn: req.turn, ...taken };
  } catch (err) {
    log.warn('checkpoint failed', { toolUseId: call.toolUseId, error: (err as Error).message });
    return { turn: req.turn, skipped: `the checkpoint failed: ${(err as Error).message.split('\n')[0]}` };
  }
}

/**
 * The signal that kills a running command: the activity's cancellation,
 * except when the server forgot the activity (it timed out while this
 * worker was slow: `notFound` / `timedOut`). Then the command goes on, so
 * the run can collect its output with `commandOutcome`, unless no run
 * claims it within {@link ORPHAN_COMMAND_CLAIM_MS} (its run ended, or gave
 * the session up): then it is killed as before. Logs through `ctx.log`:
 * the module `log` needs the activity's async context, which an abort
 * listener or a timer does not have (it throws there, and the throw ends
 * the worker process).
 */
function commandCancellation(ctx: Context, claimed: Promise<void>, toolUseId: string): AbortSignal {
  const cancel = new AbortController();
  const source = ctx.cancellationSignal;
  const onAbort = (): void => {
    const details = ctx.cancellationDetails;
    if (!details?.cancelRequested && (details?.notFound || details?.timedOut)) {
      ctx.log.warn(
        "the server no longer knows this command's activity (it timed out while the worker was slow): it goes on for its run to collect",
        {
          toolUseId,
        },
      );
      const timer = setTimeout(() => {
        ctx.log.warn('command not claimed by its run: killing it', { toolUseId, afterMs: ORPHAN_COMMAND_CLAIM_MS });
        cancel.abort(source.reason);
      }, ORPHAN_COMMAND_CLAIM_MS);
      void claimed.then(() => clearTimeout(timer));
      return;
    }
    cancel.abort(source.reason);
  };
  if (source.aborted) onAbort();
  else source.addEventListener('abort', onAbort, { once: true });
  return cancel.signal;
}

/**
 * A sub-agent's {@link WorktreeGit} once this worker checked it (`checkWorktreeGit`), or
 * undefined (logged) when the check fails: the session then opens without git's binds, as a
 * child whose worktree is not to be trusted with them (it rewrote its gitdir's files) should.
 */
async function checkedWorktreeGit(workdir: string, claim: WorktreeGit): Promise<WorktreeGit | undefined> {
  const checked = await checkWorktreeGit(workdir, claim);
  if ('git' in checked) return checked.git;
  log.warn("sub-agent worktree: git's directories not bound", { workdir, reason: checked.error });
  return undefined;
}

/**
 * What an `openSession` attempt heartbeats: how many attempts of this open have begun the work (got a
 * slot on a worker), this one included. Temporal hands the last attempt's details to the next one
 * (`Context.info.heartbeatDetails`), so an attempt abandoned on a heartbeat or start-to-close timeout
 * (its worker stalled, or gone) is counted though it never threw.
 */
interface OpenAttemptDetails {
  openAttempts: number;
}

/** The attempts begun before this one, from the last heartbeat's `details` (0 when none: the first attempt, or only `WorkerFull` ones). */
function openAttemptsBefore(details: unknown): number {
  const n = (details as Partial<OpenAttemptDetails> | undefined)?.openAttempts;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

/**
 * The failure of an `openSession` attempt that comes after {@link OPEN_SESSION_FAILED_ATTEMPTS} attempts
 * began the open and none finished it: non-retryable, so the run hears why (workflows/session.ts tells Claude
 * "no bash session could be started (...)") rather than retrying forever (CASES C11).
 */
function openAbandoned(begun: number): ApplicationFailure {
  return ApplicationFailure.create({
    message:
      `${begun} attempts to open it were abandoned before bash started (each outlived its heartbeat or ` +
      `start-to-close timeout: the worker was too busy, e.g. granting or reading a very big workspace, or it stopped), ` +
      `so it is not tried again`,
    type: OPEN_ABANDONED,
    nonRetryable: true,
  });
}

/** The type of {@link openAbandoned}'s failure. */
export const OPEN_ABANDONED = 'OpenSessionAbandoned';

/**
 * This worker's opens under way, by run: a later attempt of a run's open aborts the earlier one still
 * running here (its activity timed out, so nobody waits for it), which then releases its descriptors and
 * children at its next step (`BashSessionOptions.startSignal`) instead of finishing a session nobody holds.
 */
class OpensUnderWay {
  private readonly byRun = new Map<string, AbortController>();

  /** Aborts the run's earlier open here, if any, and registers this one; call the returned function when it ends. */
  begin(workflowId: string): { signal: AbortController['signal']; end: () => void } {
    this.byRun.get(workflowId)?.abort(new Error('a later attempt of this open started'));
    const mine = new AbortController();
    this.byRun.set(workflowId, mine);
    return {
      signal: mine.signal,
      end: () => {
        if (this.byRun.get(workflowId) === mine) this.byRun.delete(workflowId);
      },
    };
  }
}

/** Builds the session activities over this process's registry. */
export function createSessionActivities(deps: SessionActivityDeps) {
  const { registry, workerId, taskQueue } = deps;
  const opens = new OpensUnderWay();

  return {
    /**
     * Starts a bash session in this process, in `workdir` (created when
     * missing; default `<workspace root>/<workflowId>`), or in `restoreCwd`
     * when that still exists and the session can honour it (bash would
     * really be there: see `SessionCwdError`). A session the run already holds here is
     * closed first (it is stale: see {@link SessionRegistry.takeRunSession}).
     * @throws ApplicationFailure `WorkerFull` (retryable) when this worker holds as many sessions as its cap
     * @throws ApplicationFailure `WorkerShuttingDown` (retryable) when this worker is draining (checked again once bash started)
     * @throws ApplicationFailure non-retryable, with the error's message and name as type, when bash cannot start
     *   and this is attempt `OPEN_SESSION_FAILED_ATTEMPTS` (3) or later; the error itself (retryable) before that
     * @throws ApplicationFailure `OpenSessionAbandoned` (non-retryable, at once) when `OPEN_SESSION_FAILED_ATTEMPTS` (3)
     *   attempts already began the open and none finished it (timed out: their heartbeat details count them)
     * @throws the cancellation's reason when this attempt was cancelled or a later one of the same run started here
     */
    openSession: async (input: OpenSessionInput): Promise<OpenSessionOutput> => {
      // Synchronous, before any await: the stale session's slot is free and ours reserved in one step.
      const stale = registry.takeRunSession(input.workflowId);
      const slot = registry.reserve(workerId);
      const ctx = Context.current();
      const begun = openAttemptsBefore(ctx.info.heartbeatDetails) + 1;
      if (begun > OPEN_SESSION_FAILED_ATTEMPTS) {
        slot.release();
        throw openAbandoned(begun - 1);
      }
      // At once, not a second in: an attempt whose worker stalls from here on is counted by the next one.
      const details: OpenAttemptDetails = { openAttempts: begun };
      ctx.heartbeat(details);
      const underWay = opens.begin(input.workflowId);
      const startSignal = AbortSignal.any([underWay.signal, ctx.cancellationSignal]);
      let session: BashSession;
      let cwd: string;
      let restored: RestoreReport | undefined;
      try {
        if (stale) {
          log.info('closing the bash session this run held here before', { sessionId: stale.id });
          await stale.close();
          registry.closed(stale);
        }
        const workdir = workdirOf(deps.workspaceRoot, input);
        const hidden = deps.sessionOptions.hidePaths ?? [];
        // Before making it (nothing is made in a hidden folder), and again once it exists (what bash is bound to).
        await refuseProductDir(workdir, deps.workspaceRoot, hidden);
        await makeDirectory(workdir);
        await refuseProductDir(workdir, deps.workspaceRoot, hidden);
        if (input.restore) {
          // Rewind / fork: the workspace goes back to the checkpoint before bash starts there.
          const report = await restoreCheckpoint(input.restore.store, workdir, input.restore.id, input.restore.exclude, {
            trustStatBefore: registry.trustStatBefore(),
          });
          log.info('workspace restored to a checkpoint', {
            id: input.restore.id,
            before: report.before,
            changes: report.changes.length,
            // Paths git refuses to write, kept or not written (store.ts restoreCheckpoint).
            ...(report.left.length > 0 ? { left: report.left.slice(0, 20), leftCount: report.left.length } : {}),
          });
          // In the answer (so in the history): the rewind names the record and what it changed and left as it was.
          const nested = reportedPrefix(report.notRestored.nested, (p) => p);
          const refused = reportedPrefix(report.left, (l) => l.path);
          restored = {
            before: report.before,
            changes: reportedPrefix(report.changes, (c) => c.path),
            changeCount: report.changes.length,
            notRestored: {
              ...report.notRestored,
              nested,
              ...(nested.length < report.notRestored.nested.length ? { nestedCount: report.notRestored.nested.length } : {}),
              ...(refused.length > 0 ? { refused: refused.map((l) => `${l.path} (${l.why})`) } : {}),
              ...(refused.length < report.left.length ? { refusedCount: report.left.length } : {}),
            },
            gitHead: await headCommitOf(workdir),
          };
        }
        cwd = !input.restore && input.restoreCwd && (await isDirectory(input.restoreCwd)) ? input.restoreCwd : workdir;
        const worktreeGit = input.worktreeGit ? await checkedWorktreeGit(workdir, input.worktreeGit) : undefined;
        const stop = startHeartbeat(details);
        const start = (at: string): Promise<BashSession> =>
          BashSession.start({
            ...deps.sessionOptions,
            startSignal,
            cwd: at,
            // The run's directory: writable in the sandbox; bash acts on it as its owner (never chowned; identity.ts).
            workspace: workdir,
            // Audit lines name their run.
            runId: input.workflowId,
            network: input.network ?? false,
            env: { ...deps.sessionOptions.env, AGENT_JOBS_WORKFLOW_ID: input.workflowId },
            ...(worktreeGit ? { worktreeGit } : {}),
          });
        try {
          try {
            session = await start(cwd);
          } catch (err) {
            // The old cwd cannot be bash's here (e.g. it was in the sandbox's private /tmp): start in the workdir,
            // which the answer's `cwd` names (Claude is told where the new session is).
            if (!(err instanceof SessionCwdError) || cwd === workdir) throw err;
            log.info('the old working directory cannot be restored; starting in the run directory', { cwd, reason: err.message });
            cwd = workdir;
            session = await start(workdir);
          }
        } finally {
          stop();
        }
      } catch (err) {
        slot.release();
        underWay.end();
        throw lastAttemptIsFinal(err);
      }
      underWay.end();
      // The worker began shutting down while bash started: this session would only be closed again.
      if (registry.draining) {
        slot.release();
        await session.close();
        registry.refuseWhenDraining(workerId, 'the session is opened on another worker', true);
      }
      // This attempt timed out meanwhile (a worker starved under load): its retry may already hold
      // the run's session, so this one would be held by nobody, its slot taken until the worker stops.
      if (startSignal.aborted) {
        slot.release();
        await session.close();
        throw startSignal.reason ?? new Error('openSession was cancelled');
      }
      slot.fill(session, input.workflowId);
      // A swap in the parent's .git since the check: the child runs without git's binds, as after a failed check.
      if (session.worktreeGitRefused)
        log.warn("sub-agent worktree: git's directories not bound", { workdir: input.workdir, reason: session.worktreeGitRefused });
      log.info('bash session opened', {
        sessionId: session.id,
        pid: session.pid,
        cwd,
        workerId,
        user: session.user,
        sandbox: session.sandbox,
        sessions: registry.count,
        maxSessions: registry.capacity,
      });
      const ref = { sessionId: session.id, taskQueue, workerId, cwd: session.cwd, user: session.user, sandbox: session.sandbox };
      return restored ? { ...ref, restored } : ref;
    },

    /**
     * Runs one command in the session. Heartbeats every second; on
     * cancellation the session kills the command's process group (and
     * restarts bash) before the cancellation is rethrown. A command still
     * running when the worker's shutdown grace runs out is killed the same
     * way and answers with what it printed and `killedAtShutdownMs`; every
     * answer given while the worker drains carries `workerClosing`.
     * @throws ApplicationFailure `SessionNotFound` when this process holds no such session
     * @throws ApplicationFailure `WorkerShuttingDown` (non-retryable, nothing ran) when the worker is draining
     */
    runCommand: async (input: RunCommandInput): Promise<RunCommandOutput> => {
      const session = registry.require(input.sessionId, workerId);
      registry.refuseWhenDraining(workerId, 'the command was not run', false);
      // Synchronously, before anything runs: at most once per dispatch, never after `commandOutcome` gave it up.
      const record = registry.beginCommand(input.sessionId, input.toolUseId, input.dispatch);
      if (!record) {
        log.warn('command not run: this dispatch was given up (or seen) before it started', {
          toolUseId: input.toolUseId,
          dispatch: input.dispatch ?? 1,
        });
        throw ApplicationFailure.create({
          message: `worker ${workerId} did not run dispatch ${input.dispatch ?? 1} of ${input.toolUseId}: it was given up before it started`,
          type: COMMAND_FAILED,
          nonRetryable: true,
        });
      }
      const ctx = Context.current();
      const stop = startHeartbeat({ toolUseId: input.toolUseId });
      // Cancelled by the workflow, or killed when the shutdown grace runs out, or an orphan nobody claimed.
      const tracked = registry.trackCommand();
      const signal = AbortSignal.any([commandCancellation(ctx, record.claimed, input.toolUseId), tracked.signal]);
      try {
        const output = await runIn(registry, session, input, signal, deps.checkpointRoot);
        if (output.needsApproval !== undefined) record.release();
        else record.finish(output);
        return output;
      } catch (err) {
        record.fail(err);
        throw err;
      } finally {
        tracked.end();
        stop();
      }
    },

    /**
     * Runs one text editor command in the session (`BashSession.edit`: as the session user, in
     * its sandbox, serialized with commands) through {@link editGate}. Heartbeats every second.
     * Never retried (the session activities' retry policy): an edit whose answer is lost is
     * reported as possibly applied, never applied again.
     * @throws ApplicationFailure `SessionNotFound` when this process holds no such session
     * @throws ApplicationFailure `WorkerShuttingDown` (non-retryable, nothing was done) when the worker is draining
     */
    runEdit: async (input: RunEditInput): Promise<RunEditOutput> => {
      const session = registry.require(input.sessionId, workerId);
      registry.refuseWhenDraining(workerId, 'the edit was not made', false);
      const ctx = Context.current();
      const stop = startHeartbeat({ toolUseId: input.toolUseId });
      const tracked = registry.trackCommand();
      const started = Date.now();
      try {
        // Taken once the gate lets the change be written, as a command's once approved: none while a person decides, so a
        // request nobody approved costs no checkpoint (adversary round 24).
        let checkpoint: CheckpointResult | undefined;
        const ask = input.edit.command !== 'view' ? input.checkpoint : undefined;
        const out = await session.edit(input.edit, editGate(input), {
          maxCharacters: TEXT_EDITOR_MAX_CHARACTERS,
          ruleSubject: editRuleSubject,
          signal: AbortSignal.any([ctx.cancellationSignal, tracked.signal]),
          ...(ask
            ? {
                beforeWrite: async () => {
                  checkpoint = await checkpointBefore(deps.checkpointRoot, session, ask, input, registry.trustStatBefore());
                },
              }
            : {}),
        });
        if (out.approvedByRule !== undefined)
          log.info('edit approved by an approval rule', { toolUseId: input.toolUseId, rule: out.approvedByRule });
        return {
          text: out.text,
          isError: out.isError,
          applied: out.applied,
          durationMs: Date.now() - started,
          ...(out.notes !== undefined ? { notes: out.notes } : {}),
          ...(out.needsApproval ? { needsApproval: out.needsApproval } : {}),
          ...(out.approvedByRule !== undefined ? { approvedByRule: out.approvedByRule } : {}),
          ...(checkpoint ? { checkpoint } : {}),
        };
      } finally {
        tracked.end();
        stop();
      }
    },

    /**
     * What became of one dispatch of a command whose `runCommand` timed out
     * (the worker was slow): its output (waiting for it while it still runs,
     * heartbeating), or `not-started`, after which that dispatch never
     * starts here. At-most-once: the run dispatches again only on
     * `not-started`.
     * @throws ApplicationFailure `SessionNotFound` when this process holds no such session (it may have run in a process before)
     * @throws ApplicationFailure `CommandFailed` (non-retryable) when the command failed here; the message says why
     */
    commandOutcome: async (input: CommandOutcomeInput): Promise<CommandOutcomeOutput> => {
      registry.require(input.sessionId, workerId);
      const stop = startHeartbeat({ toolUseId: input.toolUseId });
      try {
        const record = await registry.claimCommand(input.sessionId, input.toolUseId, input.dispatch);
        log.info('command outcome asked for after a timeout', {
          toolUseId: input.toolUseId,
          dispatch: input.dispatch ?? 1,
          state: record.state,
        });
        if (record.state === 'done') return { state: 'done', output: record.output };
        if (record.state === 'abandoned') return { state: 'not-started' };
        throw ApplicationFailure.create({ message: record.message, type: COMMAND_FAILED, nonRetryable: true });
      } finally {
        stop();
      }
    },

    /**
     * Restarts the session's bash (new process, same working directory when it still exists).
     * @throws ApplicationFailure `WorkerShuttingDown` (non-retryable) when the worker is draining
     */
    restartSession: async (input: SessionInput): Promise<RestartSessionOutput> => {
      const session = registry.require(input.sessionId, workerId);
      registry.refuseWhenDraining(workerId, 'the session was not restarted here', false);
      const stop = startHeartbeat();
      try {
        await session.restart();
        return { cwd: session.cwd };
      } finally {
        stop();
      }
    },

    /**
     * Makes (or finds, on a retry) a sub-agent's git worktree of the run's workspace
     * (src/session/worktree.ts), on the worker that holds the run's session; heartbeats.
     * @returns the child's workdir, or one line saying why there is none (no git repository, git failed)
     */
    createWorktree: async (input: CreateWorktreeInput): Promise<CreateWorktreeOutput> => {
      const workspace = input.workdir
        ? path.resolve(deps.workspaceRoot, input.workdir)
        : path.join(deps.workspaceRoot, workspaceFolderName(input.workflowId));
      const stop = startHeartbeat();
      try {
        const out = await createWorktree(deps.workspaceRoot, workspace, workspaceFolderName(input.childWorkflowId));
        log.info('sub-agent worktree', { child: input.childWorkflowId, ...out });
        return out;
      } finally {
        stop();
      }
    },

    /**
     * Closes the session and kills its process group. Closing an unknown session is not an error.
     * @returns what the git audit moved or named at close ({@link CloseSessionOutput}), for the run's history
     */
    closeSession: async (input: SessionInput): Promise<CloseSessionOutput> => {
      const stop = startHeartbeat();
      const closed = await registry.close(input.sessionId).finally(stop);
      // What a job of the session left after its last command: the result of no command carries it, the worker's log does.
      if (closed && closed.note) log.warn(closed.note, { sessionId: input.sessionId });
      log.info(closed !== false ? 'bash session closed' : 'bash session already gone', {
        sessionId: input.sessionId,
        sessions: registry.count,
        maxSessions: registry.capacity,
      });
      return closed && closed.note ? { gitAtClose: closed.note, gitAtCloseLines: closed.lines } : {};
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;

/**
 * The commit HEAD of `workdir`'s own repository names (`git rev-parse --verify HEAD^{commit}`, run as the git audits
 * run it: as the workspace's owner, no config of the system or the user, no hook: worktree-git.ts `auditGit`), or null
 * when `.git` is no folder of the workspace (git-audit.ts `gitDirOf`) or HEAD names no commit (an empty repository).
 */
async function headCommitOf(workdir: string): Promise<string | null> {
  const gitDir = gitDirOf(workdir);
  if (gitDir === undefined) return null;
  try {
    const out = (
      await auditGit(gitDir, ['rev-parse', '--verify', '-q', 'HEAD^{commit}'], { runner: await ownerOf(workdir), timeoutMs: 5_000 })
    ).trim();
    return /^[0-9a-f]{40}(?:[0-9a-f]{24})?$/.test(out) ? out : null;
  } catch {
    return null;
  }
}
