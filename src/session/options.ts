/**
 * The options of a session and of its calls, their defaults and their checks.
 */
import type { AuditLine } from './audit';
import { InvalidSessionOptionError } from './errors';
import type { ExactLauncher } from './exact';
import type { ProcessGuardMode } from './guard';
import type { SessionHost } from './host';
import type { ResourceLimits } from './limits';
import type { SandboxMode } from './sandbox';
import type { WorktreeGit } from '../contract/subagent';

/** Default per-command timeout, ms. MAINTENANCE: keep equal to DEFAULT_COMMAND_TIMEOUT_MS in src/config.ts (test/unit/config.test.ts). */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Default time between SIGTERM and SIGKILL when a command is killed, ms. */
export const DEFAULT_KILL_GRACE_MS = 1000;
/** How long bash may take to start and report ready, ms. */
export const START_TIMEOUT_MS = 10_000;
/** setTimeout's largest delay; longer timeouts are clamped to it (about 24.8 days). */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** Options of {@link BashSession.start}. */
export interface BashSessionOptions {
  /** Working directory the shell starts in; must exist. @default process.cwd() */
  cwd?: string;
  /**
   * Extra environment variables, set over the scrubbed environment (see
   * `buildSessionEnv`: the worker's environment minus secrets, plus
   * non-interactive settings such as `PAGER=cat`).
   */
  env?: Record<string, string>;
  /** Per-command timeout in ms; `Infinity` for none. @default 120000 */
  timeoutMs?: number;
  /**
   * Cap of `CommandResult.output` in UTF-8 bytes: the first and last halves
   * are kept, with a note of how much was cut between them. @default 30000
   */
  maxOutputBytes?: number;
  /** Resource limits; see {@link ResourceLimits} for units and defaults. */
  limits?: ResourceLimits;
  /**
   * How `limits.maxProcesses` is enforced (see `guard.ts`). @default 'auto'
   * (a pids cgroup when one can be created, else the /proc watchdog)
   */
  processGuard?: ProcessGuardMode;
  /**
   * Path of a JSON-lines audit file; one line is appended per command (see
   * {@link AuditLine}). The directory must exist. @default no audit log
   */
  auditLog?: string;
  /** Run id written into audit lines, so each line names its run. */
  runId?: string;
  /** More environment variable names to remove and whose values are redacted from outputs. */
  secretEnvNames?: string[];
  /** Session id; names the audit lines and the cgroup. @default a random UUID */
  id?: string;
  /** Time between SIGTERM and SIGKILL when a command is killed (timeout, cancel, close), ms. @default 1000 */
  killGraceMs?: number;
  /** bash executable. @default 'bash' (looked up in PATH) */
  bashPath?: string;
  /**
   * User bash runs as (identity.ts). `null`: the worker's own user.
   * @default as root: `AGENT_JOBS_SESSION_USER` or `agent-jobs` (created when
   *   missing); otherwise the worker's own user
   */
  user?: string | null;
  /**
   * `bwrap` or `none` (sandbox.ts). A sandbox asked for that cannot be had
   * fails the start. @default `AGENT_JOBS_SANDBOX`, else `bwrap` when a
   * working bwrap is found, else `none`
   */
  sandbox?: SandboxMode;
  /** Keep the host's network in the sandbox (mode `bwrap`; `none` always has it). @default false */
  network?: boolean;
  /**
   * The directory the session may write: bound read-write in the sandbox.
   * As root, bash runs as its owner when that is not root (and `user` is
   * not given), so files stay the owner's and git sees its own repository;
   * otherwise the session user is granted it by ACL entries (`setfacl -R`,
   * access and default: rwX for that uid) and git's `safe.directory` for it.
   * No owner changes (identity.ts `workspaceIdentity`). Nothing else outside
   * the sandbox's private /tmp is writable.
   * It is also what {@link BashSession.runExact}'s paths must stay inside.
   * @default none (a cwd alone is not made writable; runExact then uses the starting cwd)
   */
  workspace?: string;
  /**
   * Paths the sandbox covers with an empty tmpfs (directories) or an empty
   * file, unless they are the workspace or lie above it (data dir, other
   * workspaces, the audit log). Always added: /root, the worker's home, the
   * temp directory (other sessions' FIFOs).
   */
  hidePaths?: string[];
  /** Wraps the program of {@link BashSession.runExact}. @default the session's own sandbox and identity (`sandboxedSpawnArgs`) */
  exactLauncher?: ExactLauncher;
  /**
   * A sub-agent's git worktree (docs/subagents.md, "Workspaces"), checked by the caller
   * (worktree.ts `checkWorktreeGit`): the sandbox shows `commonDir` read-only (config, hooks,
   * refs, info: nothing there can be planted for the parent's git to run) and binds read-write
   * only `<commonDir>/objects` (new objects) and `gitDir` (the worktree's HEAD, index, logs),
   * so git status, add, commit and log work on the worktree's detached HEAD. A session user
   * that is not their owner gets the same ACL entries on those two as on the workspace.
   * @default none
   */
  worktreeGit?: WorktreeGit;
  /**
   * What this process's sessions share: the process guard's watchdog (one timer for all) and
   * what is looked up once (setpriv, bwrap, session users); see host.ts. The worker passes one
   * for all its sessions. @default a host of this session's own
   */
  host?: SessionHost;
  /**
   * Gives the start up: when it aborts (the open's activity was abandoned: a heartbeat or start-to-close
   * timeout, a cancellation), the start stops at its next step (the ACL grant's next batch, the git
   * walk's end) and rejects with its reason, releasing what it held (descriptors, its directory).
   * @default never
   */
  startSignal?: AbortSignal;
}

/** Options of one {@link BashSession.runExact} call. */
export interface RunExactOptions extends RunOptions {
  /**
   * Paths the program will read (absolute, or relative to the shell's
   * working directory). Each must stay inside the workspace once symlinks
   * are resolved, else nothing runs ({@link ExactRefusedError}).
   */
  paths?: readonly string[];
  /** The command text as the model wrote it, for the audit log. @default argv joined by spaces */
  command?: string;
  /** The working directory the command was judged in (see {@link BashSession.currentCwd}): refuse when the shell is elsewhere now. @default {@link BashSession.cwd} */
  cwd?: string;
}

/** Options of one {@link BashSession.run} call. */
export interface RunOptions {
  /** Timeout of this command in ms, instead of the session's. */
  timeoutMs?: number;
  /**
   * Cancels the command: its process group is killed (SIGTERM, then SIGKILL
   * after the grace period), the shell restarted, and `run` resolves with
   * `cancelled: true`. A signal already aborted when the command's turn
   * comes resolves at once without running it.
   */
  signal?: AbortSignal;
}

/**
 * Checks a timeout option `name`.
 * @throws InvalidSessionOptionError when `value` is set and not a number of ms > 0 (Infinity allowed)
 */
export function checkTimeout(name: string, value: number | undefined): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0)
    throw new InvalidSessionOptionError(name, `expected a number of ms > 0 (or Infinity), got ${String(value)}`);
}

/**
 * Checks the options of {@link BashSession.start} that have a range.
 * @throws InvalidSessionOptionError for an out-of-range `timeoutMs`, `killGraceMs`, `processGuard` or `maxOutputBytes`
 */
export function checkStartOptions(options: BashSessionOptions): void {
  checkTimeout('timeoutMs', options.timeoutMs);
  if (options.killGraceMs !== undefined && !(Number.isFinite(options.killGraceMs) && options.killGraceMs >= 0)) {
    throw new InvalidSessionOptionError('killGraceMs', `expected a number of ms >= 0, got ${String(options.killGraceMs)}`);
  }
  if (options.processGuard !== undefined && !['auto', 'cgroup', 'watchdog', 'none'].includes(options.processGuard)) {
    throw new InvalidSessionOptionError('processGuard', `expected auto, cgroup, watchdog or none, got ${String(options.processGuard)}`);
  }
  if (options.maxOutputBytes !== undefined && !(Number.isInteger(options.maxOutputBytes) && options.maxOutputBytes >= 256)) {
    throw new InvalidSessionOptionError('maxOutputBytes', `expected an integer >= 256, got ${String(options.maxOutputBytes)}`);
  }
}
