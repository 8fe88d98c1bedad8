/**
 * Session activities, built by a factory that closes over this worker
 * process's session registry (session affinity: README, "How it works").
 *
 * `openSession` runs on the shared queue: whichever worker takes it starts
 * the bash process and answers with its own session queue. `runCommand`,
 * `restartSession` and `closeSession` run on that queue only, so they reach
 * the process that holds the bash process.
 */
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { SESSION_HEARTBEAT_INTERVAL_MS } from '../config';
import { BashSession, ExactRefusedError, type BashSessionOptions, type CommandResult } from '../session';
import { decideApproval, matchRule } from '../policy';
import {
  SESSION_NOT_FOUND,
  type OpenSessionInput,
  type OpenSessionOutput,
  type RestartSessionOutput,
  type RunCommandInput,
  type RunCommandOutput,
  type SessionInput,
} from '../contract';

/** The bash sessions this worker process holds, by session id. */
export class SessionRegistry {
  private readonly sessions = new Map<string, BashSession>();

  add(session: BashSession): void {
    this.sessions.set(session.id, session);
  }

  /**
   * @throws ApplicationFailure (non-retryable, type `SessionNotFound`) when this process holds no such session
   */
  require(sessionId: string, workerId: string): BashSession {
    const session = this.sessions.get(sessionId);
    if (!session) {
      throw ApplicationFailure.create({
        message: `worker ${workerId} holds no bash session ${sessionId} (it was closed, or the worker restarted)`,
        type: SESSION_NOT_FOUND,
        nonRetryable: true,
      });
    }
    return session;
  }

  async close(sessionId: string): Promise<boolean> {
    const session = this.sessions.get(sessionId);
    if (!session) return false;
    this.sessions.delete(sessionId);
    await session.close();
    return true;
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
  /** Options every new session gets (audit log, limits, secret names, output cap). */
  sessionOptions: Omit<BashSessionOptions, 'cwd' | 'id'>;
}

/** Folder name for a workflow id: anything outside `[A-Za-z0-9._-]` becomes `_`. */
export function workspaceFolderName(workflowId: string): string {
  const safe = workflowId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_');
  return safe.length > 0 ? safe : '_';
}

async function isDirectory(dir: string): Promise<boolean> {
  try {
    return (await stat(dir)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * `mkdir -p`, one level at a time. Node's `mkdir(dir, {recursive: true})`
 * never settles for a path under /proc (it retries forever on the ENOENT
 * that procfs answers), spinning the worker's CPU.
 * @throws Error naming `dir` and the first mkdir error other than EEXIST, or
 *   saying that `dir` exists but is not a directory
 */
export async function makeDirectory(dir: string): Promise<void> {
  let current = path.parse(path.resolve(dir)).root;
  for (const part of path.resolve(dir).split(path.sep).filter(Boolean)) {
    current = path.join(current, part);
    try {
      await mkdir(current);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new Error(`cannot create the working directory ${dir}: ${(err as Error).message}`, { cause: err });
    }
  }
  if (!(await isDirectory(dir))) throw new Error(`cannot use ${dir} as the working directory: it exists but is not a directory`);
}

/** The answer of `runCommand` when the policy wants a human: nothing ran. */
function notRun(session: BashSession, reason: string): RunCommandOutput {
  return {
    output: '',
    exitCode: null,
    timedOut: false,
    truncated: false,
    outputBytes: 0,
    sessionRestarted: false,
    shellExit: null,
    cwd: session.cwd,
    durationMs: 0,
    needsApproval: reason,
  };
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

/** Heartbeats every second until the returned function is called. */
function startHeartbeat(details?: unknown): () => void {
  const ctx = Context.current();
  ctx.heartbeat(details);
  const timer = setInterval(() => ctx.heartbeat(details), SESSION_HEARTBEAT_INTERVAL_MS);
  return () => clearInterval(timer);
}

/** Builds the session activities over this process's registry. */
export function createSessionActivities(deps: SessionActivityDeps) {
  const { registry, workerId, taskQueue } = deps;

  return {
    /**
     * Starts a bash session in this process, in `workdir` (created when
     * missing; default `<workspace root>/<workflowId>`), or in `restoreCwd`
     * when that still exists.
     */
    openSession: async (input: OpenSessionInput): Promise<OpenSessionOutput> => {
      const workdir = input.workdir
        ? path.resolve(deps.workspaceRoot, input.workdir)
        : path.join(deps.workspaceRoot, workspaceFolderName(input.workflowId));
      await makeDirectory(workdir);
      const cwd = input.restoreCwd && (await isDirectory(input.restoreCwd)) ? input.restoreCwd : workdir;
      const stop = startHeartbeat();
      let session: BashSession;
      try {
        session = await BashSession.start({
          ...deps.sessionOptions,
          cwd,
          // The run's directory is the agent's: writable in the sandbox, owned by the session user.
          workspace: workdir,
          // Audit lines name their run.
          runId: input.workflowId,
          network: input.network ?? false,
          env: { ...deps.sessionOptions.env, AGENT_JOBS_WORKFLOW_ID: input.workflowId },
        });
      } finally {
        stop();
      }
      registry.add(session);
      log.info('bash session opened', {
        sessionId: session.id,
        pid: session.pid,
        cwd,
        workerId,
        user: session.user,
        sandbox: session.sandbox,
      });
      return { sessionId: session.id, taskQueue, workerId, cwd: session.cwd, user: session.user, sandbox: session.sandbox };
    },

    /**
     * Runs one command in the session. Heartbeats every second; on
     * cancellation the session kills the command's process group (and
     * restarts bash) before the cancellation is rethrown.
     * @throws ApplicationFailure `SessionNotFound` when this process holds no such session
     */
    runCommand: async (input: RunCommandInput): Promise<RunCommandOutput> => {
      const session = registry.require(input.sessionId, workerId);
      const ctx = Context.current();
      const stop = startHeartbeat({ toolUseId: input.toolUseId });
      try {
        const how = input.autoApprove === undefined ? { shell: true as const } : judge(input, session);
        if ('needsApproval' in how) return notRun(session, how.needsApproval);
        const approvedByRule = 'rule' in how ? how.rule : undefined;
        let result: CommandResult;
        if ('exact' in how) {
          try {
            result = await session.runExact(how.exact.argv, {
              paths: how.exact.paths,
              cwd: how.exact.cwd,
              command: input.command,
              timeoutMs: input.timeoutMs,
              signal: ctx.cancellationSignal,
            });
          } catch (err) {
            if (err instanceof ExactRefusedError) return notRun(session, err.reason);
            throw err;
          }
          log.info('command auto-approved by the policy and run exactly', { toolUseId: input.toolUseId, argv: how.exact.argv });
        } else {
          if (approvedByRule !== undefined)
            log.info('command approved by an approval rule', { toolUseId: input.toolUseId, rule: approvedByRule });
          result = await session.run(input.command, { timeoutMs: input.timeoutMs, signal: ctx.cancellationSignal });
        }
        if (result.cancelled) {
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
          ...(approvedByRule !== undefined ? { approvedByRule } : {}),
        };
      } finally {
        stop();
      }
    },

    /** Restarts the session's bash (new process, same working directory when it still exists). */
    restartSession: async (input: SessionInput): Promise<RestartSessionOutput> => {
      const session = registry.require(input.sessionId, workerId);
      const stop = startHeartbeat();
      try {
        await session.restart();
        return { cwd: session.cwd };
      } finally {
        stop();
      }
    },

    /** Closes the session and kills its process group. Closing an unknown session is not an error. */
    closeSession: async (input: SessionInput): Promise<void> => {
      const stop = startHeartbeat();
      const closed = await registry.close(input.sessionId).finally(stop);
      log.info(closed ? 'bash session closed' : 'bash session already gone', { sessionId: input.sessionId });
    },
  };
}

export type SessionActivities = ReturnType<typeof createSessionActivities>;
