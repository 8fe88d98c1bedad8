/**
 * BashSession: one long-lived bash per agent run, driven by the protocol in
 * `protocol.ts`. See `index.ts` for the public surface and `README.md` (this
 * folder) for the contract and the decisions behind it.
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { grantTree } from './acl-grant';
import { appendAuditLine, type AuditLine } from './audit';
import { buildSessionEnv, redactSecrets, type SecretValue } from './env';
import { InvalidCommandError, InvalidSessionOptionError, SessionClosedError, SessionCwdError, SessionStartError } from './errors';
import type { ProcessGuardMode } from './guard';
import { writeSeccompFilter } from './seccomp';
import { SLIRP_DNS } from './network';
import { limitedArgv, resolveLimits, ulimitArguments, type ResolvedLimits, type ResourceLimits } from './limits';
import { FifoCapture, FifoPool } from './capture';
import { DEFAULT_MAX_OUTPUT_BYTES, OutputCollector } from './output';
import { processStartTime, SESSION_DIR_PREFIX, writeOwner } from './orphans';
import { commandFileContent, commandSource, controlLine, EVAL_PREFIX_LINES, newCommandTokens, type CommandRecords } from './protocol';
import { findSetpriv, ShellProcess, type ShellExit } from './shell';
import type { EditRequest } from '../contract/text-editor';
import {
  EDIT_HELPER_SOURCE,
  MAX_EDIT_FILE_BYTES,
  MAX_VIEW_ENTRIES,
  performEdit,
  runEditHelper,
  type EditGate,
  type EditIo,
  type EditOutcome,
  type ProposedEdit,
  type ReadReply,
  type WriteReply,
} from './edit';
import {
  EXACT_RUN_HIDDEN,
  outsideWhy,
  resolveTrustedProgram,
  runExactProgram,
  staysInside,
  type ExactLauncher,
  type ViewCheck,
} from './exact';
import { resolveIdentity, workspaceIdentity, type SessionIdentity, type WorkspaceAccess } from './identity';
import { resolveSandbox, sandboxedSpawnArgs, sandboxView, unreachableAncestor, type SandboxMode, type SandboxOptions } from './sandbox';
import { raceTimeout } from './timing';

/** Default per-command timeout, ms. MAINTENANCE: keep equal to DEFAULT_COMMAND_TIMEOUT_MS in src/config.ts (test/unit/config.test.ts). */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Default time between SIGTERM and SIGKILL when a command is killed, ms. */
export const DEFAULT_KILL_GRACE_MS = 1000;
/** How long bash may take to start and report ready, ms. */
export const START_TIMEOUT_MS = 10_000;
/** How long to wait for a command's fence after its end record, ms (normally it is already there). */
const FENCE_WAIT_MS = 250;
/** After killing a command, how long to keep reading what it wrote before it died, ms. */
const KILLED_OUTPUT_WAIT_MS = 300;
/**
 * After a command's status record, how long its housekeeping record may
 * take, ms. bash prints both within microseconds of each other; one that
 * does not follow means the status record was forged while the command
 * still ran, or the shell's state stops our bookkeeping (protocol.ts).
 */
const HOUSEKEEPING_WAIT_MS = 2000;
/** After the housekeeping record, how long bash may take to be back reading its stdin, ms (normally microseconds). */
const IDLE_WAIT_MS = 3000;
/**
 * After bash exited during a command, how long to wait for what it printed on its own stderr before
 * exiting (its pipe may arrive after the exit event, and a background job may keep it open), ms.
 */
const EXIT_STDERR_WAIT_MS = 100;
/** setTimeout's largest delay; longer timeouts are clamped to it (about 24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

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

/**
 * Thrown by {@link BashSession.runExact} when it refuses to run: the
 * program is not on the trusted PATH, or a path leaves the workspace (a
 * symlink, or the shell's working directory is outside it). Nothing ran; the
 * caller asks a human instead.
 */
export class ExactRefusedError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'ExactRefusedError';
  }
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

/** What happened to one command. */
export interface CommandResult {
  /**
   * stdout and stderr interleaved as written, decoded as UTF-8 (invalid
   * bytes replaced by U+FFFD), escape sequences removed, `\r` overwrites
   * collapsed to what a terminal would show, secrets redacted, and capped
   * to `maxOutputBytes` (head + tail, with a `[... N bytes cut ...]` note).
   * Notes about the session (a deleted working directory, a process limit)
   * are appended as `[agent-jobs: ...]` lines.
   */
  output: string;
  /** Exit status (0..255); for `exit N` the shell's code N; null when timed out, cancelled, or the shell was killed by a signal. */
  exitCode: number | null;
  /** The command ran past its timeout and was killed. */
  timedOut: boolean;
  /** `output` was cut. */
  truncated: boolean;
  /**
   * The shell was restarted because of this command (timeout, cancel, shell
   * exit, process limit, lowered resource limits) or just before it (the
   * shell had died while idle): variables, functions, aliases and
   * background jobs are gone; the working directory was restored.
   */
  sessionRestarted: boolean;
  /**
   * Working directory after the command. After a restart: the directory the
   * new shell started in (the last known good one, or its nearest existing
   * parent).
   */
  cwd: string;
  /** Wall time from sending the command to its end, ms. */
  durationMs: number;
  /** Bytes the command wrote to stdout and stderr, before any processing. */
  outputBytes: number;
  /** Set when bash itself exited during the command (`exit 3`, `exec sh` ending, `kill -9 $$`, process limit). */
  shellExit?: ShellExit;
  /** The command was cancelled through `RunOptions.signal` (or the session was closed while it ran). */
  cancelled: boolean;
}

export type { ShellExit };

function note(text: string): string {
  return `[agent-jobs: ${text}]`;
}

/**
 * What to tell about an exact run that ran into one of the session's limits
 * (limits.ts limitedArgv), or undefined: the signal the kernel sends past
 * the CPU or file-size limit, SIGKILL (the OOM killer, or the pids cgroup),
 * or the program's own report that an allocation failed past the address-space limit.
 */
function exactLimitNote(
  run: { signal: string | null; exitCode: number | null; timedOut: boolean; cancelled: boolean },
  output: string,
  limits: ResolvedLimits,
): string | undefined {
  if (run.timedOut || run.cancelled) return undefined;
  // In the sandbox the program's death by signal N arrives as bwrap's exit code 128 + N, as a shell reports it.
  const signal = run.signal ?? ({ 137: 'SIGKILL', 152: 'SIGXCPU', 153: 'SIGXFSZ' } as Record<number, string>)[run.exitCode ?? -1] ?? null;
  if (signal === 'SIGXCPU') return `the program used up the session's CPU limit (${limits.maxCpuSeconds} s) and was killed`;
  if (signal === 'SIGXFSZ') return `the program wrote past the session's file size limit (${limits.maxFileSizeBytes} bytes) and was killed`;
  if (signal === 'SIGKILL') return "the program was killed (SIGKILL: out of memory, or the session's process limit)";
  if (run.exitCode !== 0 && /memory exhausted|cannot allocate memory|out of memory|MemoryError/i.test(output))
    return `the program ran out of memory under the session's memory limit (${limits.maxMemoryBytes} bytes of address space)`;
  return undefined;
}

function appendNotes(output: string, notes: string[]): string {
  if (notes.length === 0) return output;
  const sep = output === '' || output.endsWith('\n') ? '' : '\n';
  return output + sep + notes.join('\n');
}

function nearestExistingDir(dir: string): string {
  let d = path.resolve(dir);
  for (;;) {
    try {
      if (fs.statSync(d).isDirectory()) return d;
    } catch {
      /* go up */
    }
    const up = path.dirname(d);
    if (up === d) return '/';
    d = up;
  }
}

function checkTimeout(name: string, value: number | undefined): void {
  if (value === undefined) return;
  if (typeof value !== 'number' || Number.isNaN(value) || value <= 0)
    throw new InvalidSessionOptionError(name, `expected a number of ms > 0 (or Infinity), got ${String(value)}`);
}

type Outcome =
  | { kind: 'record' }
  | { kind: 'unconfirmed' }
  | { kind: 'exit'; exit: ShellExit }
  | { kind: 'timeout' }
  | { kind: 'abort' }
  | { kind: 'closed' };

/**
 * A persistent bash shell. Commands run one at a time (a `run` call waits
 * for the previous one) in the same shell, so the working directory,
 * variables, functions and aliases persist between them.
 *
 * @example
 * const session = await BashSession.start({ cwd: '/work/repo', timeoutMs: 60_000 });
 * try {
 *   const r = await session.run('npm test');
 *   console.log(r.exitCode, r.output);
 * } finally {
 *   await session.close();
 * }
 */
export class BashSession {
  /** Session id (`options.id` or a random UUID). */
  readonly id: string;
  private readonly options: Required<
    Pick<BashSessionOptions, 'timeoutMs' | 'maxOutputBytes' | 'killGraceMs' | 'bashPath' | 'processGuard'>
  > &
    Pick<BashSessionOptions, 'auditLog' | 'runId' | 'exactLauncher'> & { exactRoot: string };
  private readonly limits: ResolvedLimits;
  private readonly env: Record<string, string>;
  private readonly secrets: SecretValue[];
  private readonly tmpDir: string;
  /** The seccomp program's file (in {@link tmpDir}) for every sandboxed process of this session; see seccomp.ts. */
  private readonly seccompFilter: string | undefined;
  private readonly fifos: FifoPool;
  private readonly identity: SessionIdentity | null;
  /** How bash gets to write the workspace (identity.ts). */
  private readonly access: WorkspaceAccess;
  private readonly sandboxMode: { mode: SandboxMode; bwrap?: string };
  private readonly network: boolean;
  private readonly workspace: string | undefined;
  private readonly hide: string[];
  /** Output pipes not yet closed (running commands, and background jobs still holding one), closed by `close()`. */
  private readonly captures = new Set<FifoCapture>();
  private shell: ShellProcess | undefined;
  private generation = 0;
  private seq = 0;
  private lastCwd: string;
  /** Exit status of the last command, restored as `$?` for the next one. */
  private lastStatus = 0;
  /** Where the next command moves first: the last one deleted the working directory. */
  private pendingCd: string | undefined;
  private closed = false;
  private queue: Promise<unknown> = Promise.resolve();
  private wakeCurrent: ((o: Outcome) => void) | undefined;

  private constructor(
    options: BashSessionOptions,
    cwd: string,
    identity: SessionIdentity | null,
    sandbox: { mode: SandboxMode; bwrap?: string },
    access: WorkspaceAccess,
  ) {
    this.id = options.id ?? randomUUID();
    this.options = {
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      maxOutputBytes: options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES,
      killGraceMs: options.killGraceMs ?? DEFAULT_KILL_GRACE_MS,
      bashPath: options.bashPath ?? 'bash',
      processGuard: options.processGuard ?? 'auto',
      auditLog: options.auditLog,
      runId: options.runId,
      exactRoot: path.resolve(options.workspace ?? cwd),
      exactLauncher: options.exactLauncher,
    };
    this.limits = resolveLimits(options.limits);
    this.identity = identity;
    this.access = access;
    this.sandboxMode = sandbox;
    this.network = options.network ?? false;
    this.workspace = options.workspace !== undefined ? path.resolve(options.workspace) : undefined;
    // The owner's home holds its keys and tokens: bash as the owner sees none of it (but the workspace, when it lies there).
    const ownerPaths = access === 'owner' && identity ? ownerPrivatePaths(identity) : [];
    // Unix sockets of host services live under /run (a database's, D-Bus): a path socket is reachable from any network
    // namespace, so it is hidden unless the session shares the host's network anyway (a non-root worker's --network).
    const hostSockets = this.network && identity === null ? [] : [HOST_SOCKETS_DIR];
    this.hide = [...(options.hidePaths ?? []), ...defaultHiddenPaths(), ...ownerPaths, ...hostSockets];
    // Another user gets a HOME it can write (the sandbox's private /tmp) and its own name.
    const identityEnv: Record<string, string> = identity ? { HOME: '/tmp', USER: identity.user, LOGNAME: identity.user } : {};
    // The worker's TMPDIR is hidden in the sandbox (other sessions' directories) and not the session user's to write
    // without it: temporary files go to /tmp, the sandbox's private one (or the machine's world-writable one).
    if (sandbox.mode === 'bwrap' || identity) identityEnv.TMPDIR = '/tmp';
    // A workspace owned by another user: git refuses it ("dubious ownership") unless told it is safe. Command-scope
    // config (GIT_CONFIG_COUNT) is protected configuration, which git reads safe.directory from (git-config(1)).
    if (access === 'acl' && this.workspace)
      Object.assign(identityEnv, {
        GIT_CONFIG_COUNT: '1',
        GIT_CONFIG_KEY_0: 'safe.directory',
        GIT_CONFIG_VALUE_0: realDir(this.workspace),
      });
    const built = buildSessionEnv({ extra: { ...identityEnv, ...options.env }, secretEnvNames: options.secretEnvNames });
    this.env = built.env;
    this.secrets = built.secrets;
    this.lastCwd = cwd;
    this.tmpDir = fs.mkdtempSync(path.join(os.tmpdir(), SESSION_DIR_PREFIX));
    if (identity) {
      // Owned by root, searchable by the session's group only: bash opens the
      // FIFOs (its own) and reads command files, but cannot replace, add or
      // symlink entries the worker then opens as root.
      fs.chownSync(this.tmpDir, 0, identity.gid);
      fs.chmodSync(this.tmpDir, 0o710);
    }
    this.fifos = new FifoPool(this.tmpDir, identity ?? undefined);
    if (this.network) fs.writeFileSync(path.join(this.tmpDir, 'resolv.conf'), `nameserver ${SLIRP_DNS}\n`, { mode: 0o644 });
    this.seccompFilter = sandbox.mode === 'bwrap' ? writeSeccompFilter(path.join(this.tmpDir, 'seccomp.bpf')) : undefined;
  }

  /**
   * Starts a session: spawns bash in `options.cwd` and waits until it is
   * ready (normally a few ms).
   * @throws InvalidSessionOptionError for an out-of-range option
   * @throws SessionStartError when `cwd` is missing or not a directory, bash cannot be spawned, the limits cannot be applied, or bash is not ready within 10 s
   * @throws SessionCwdError (a SessionStartError) when bash would not really be in `cwd` (the sandbox covers it: its private /tmp, a hidden path), or `cwd` is in the workspace and the session's user cannot write it (or the workspace); never a silent substitute
   */
  static async start(options: BashSessionOptions = {}): Promise<BashSession> {
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
    const cwd = path.resolve(options.cwd ?? process.cwd());
    let isDir = false;
    try {
      isDir = fs.statSync(cwd).isDirectory();
    } catch {
      /* reported below */
    }
    if (!isDir)
      throw new SessionStartError(`cannot start bash session: working directory ${cwd} does not exist or is not a directory`, {
        sessionId: options.id,
      });
    const sandbox = resolveSandbox(options.sandbox);
    let identity: SessionIdentity | null;
    let access: WorkspaceAccess = 'none';
    if (options.workspace !== undefined) {
      const real = realWorkspace(path.resolve(options.workspace), options.id);
      ({ identity, access } = workspaceIdentity(options.user, real, sandbox.mode === 'bwrap'));
      if (access === 'acl') grantWorkspace(real, identity!, options.id);
    } else {
      identity = resolveIdentity(options.user);
    }
    if (sandbox.mode === 'none') {
      const blocked = unreachableAncestor(cwd, identity);
      if (blocked) {
        throw new SessionStartError(
          `cannot start bash session as ${identity!.user}: it cannot enter ${blocked} on the way to ${cwd} (no sandbox to bind it); make it searchable or use the sandbox`,
          {
            sessionId: options.id,
          },
        );
      }
    }
    const session = new BashSession(options, cwd, identity, sandbox, access);
    const refused = session.cwdRefusal(cwd);
    if (refused) {
      fs.rmSync(session.tmpDir, { recursive: true, force: true });
      throw new SessionCwdError(`cannot start bash session in ${cwd}: ${refused}`, cwd, { sessionId: options.id });
    }
    try {
      await session.spawn(cwd);
    } catch (err) {
      fs.rmSync(session.tmpDir, { recursive: true, force: true });
      throw err;
    }
    // The backstop: bash is where it was asked to be (bwrap goes to $HOME or / when it cannot enter the cwd).
    const real = realDir(cwd);
    const actual = session.shell?.kernelCwd();
    if (actual && actual.path !== real) {
      await session.close();
      throw new SessionCwdError(`cannot start bash session in ${cwd}: bash started in ${actual.path} instead`, cwd, {
        sessionId: options.id,
      });
    }
    return session;
  }

  /**
   * Why `cwd` cannot be honoured as the shell's working directory, or
   * undefined: in the sandbox a mount covers it (its private /tmp, a hidden
   * path), so bash would start in another directory of that name or none;
   * or it lies in the workspace, which is asked to be writable, and the
   * session's user cannot write it (or the workspace itself).
   */
  private cwdRefusal(cwd: string): string | undefined {
    const workspace = this.workspace;
    if (this.sandboxMode.mode === 'bwrap') {
      const view = sandboxView(this.sandboxOptions, cwd);
      if (!view.real)
        return `it would not be the shell's working directory (${view.coveredBy}); use a directory ${workspace ? `inside the workspace ${workspace}` : 'outside /tmp and the hidden paths'}`;
    }
    if (workspace === undefined) return undefined;
    for (const dir of within(realDir(cwd), realDir(workspace)) ? [workspace, cwd] : [workspace]) {
      const why = notWritableBy(dir, this.identity, this.access === 'acl');
      if (why) return `the workspace must be writable, but ${this.user} cannot write ${dir} (${why})`;
    }
    return undefined;
  }

  /**
   * Pid of the process the worker spawned for the current shell (it changes
   * when the shell is restarted): bash itself, or in the sandbox the outer
   * bwrap (see {@link bashPid}); the process group and session id of
   * everything the shell starts. 0 once closed.
   */
  get pid(): number {
    return this.shell?.pid ?? 0;
  }

  /** The directory {@link runExact} paths must stay inside (absolute): `options.workspace`, else the starting cwd. */
  get exactRoot(): string {
    return this.options.exactRoot;
  }

  /**
   * Outer pid (as the worker sees it) of the current bash process itself:
   * inside a sandbox {@link pid} is bwrap's. 0 once closed.
   */
  get bashPid(): number {
    return this.shell?.bashPid ?? 0;
  }

  /** Name of the user bash runs as. */
  get user(): string {
    return this.identity?.user ?? os.userInfo().username;
  }

  /** The sandbox bash runs in: `bwrap` or `none`. */
  get sandbox(): SandboxMode {
    return this.sandboxMode.mode;
  }

  /**
   * The sandbox and identity of this session, for starting another process
   * under the same restrictions with `sandboxedSpawnArgs` (sandbox.ts).
   */
  get sandboxOptions(): SandboxOptions {
    return {
      mode: this.sandboxMode.mode,
      ...(this.sandboxMode.bwrap ? { bwrap: this.sandboxMode.bwrap } : {}),
      identity: this.identity,
      network: this.network,
      writable: this.workspace ? [this.workspace] : [],
      readable: [this.tmpDir],
      hide: this.hide,
      tmpfsBytes: Math.min(this.limits.maxFileSizeBytes, SANDBOX_TMPFS_BYTES),
      setpriv: findSetpriv(),
      ...(this.seccompFilter ? { seccompFilter: this.seccompFilter } : {}),
      ...(this.network ? { resolvConf: path.join(this.tmpDir, 'resolv.conf') } : {}),
    };
  }

  /** The shell's working directory as the kernel reports it now (a background job may have renamed it), else the last known one. */
  currentCwd(): string {
    const kernel = this.shell?.kernelCwd();
    return kernel && !kernel.deleted ? kernel.path : this.lastCwd;
  }

  /** Last known working directory of the shell. */
  get cwd(): string {
    return this.lastCwd;
  }

  /**
   * How `limits.maxProcesses` is enforced for the current shell: `cgroup`
   * (kernel pids limit), `watchdog` (/proc polling) or `none`; see `guard.ts`.
   */
  get guardKind(): 'cgroup' | 'watchdog' | 'none' {
    return this.shell?.guard.kind ?? 'none';
  }

  /**
   * Runs one command and resolves when it has ended, with the truth about
   * what happened. Never rejects because of what the command did (failure,
   * timeout, killing the shell, cancellation): see {@link CommandResult}.
   * Calls are serialized: a second call waits for the first.
   * @throws InvalidCommandError when the command is not a string or contains NUL (nothing is run)
   * @throws InvalidSessionOptionError for a non-positive `timeoutMs`
   * @throws SessionClosedError when the session is closed (before or while waiting its turn)
   * @throws SessionStartError when the shell had to be restarted and could not be
   */
  run(command: string, options: RunOptions = {}): Promise<CommandResult> {
    if (typeof command !== 'string')
      return Promise.reject(new InvalidCommandError('command must be a string', command, { sessionId: this.id }));
    if (command.includes('\0')) {
      return Promise.reject(
        new InvalidCommandError('command contains a NUL character, which bash cannot represent; nothing was run', command, {
          sessionId: this.id,
        }),
      );
    }
    try {
      checkTimeout('timeoutMs', options.timeoutMs);
    } catch (err) {
      return Promise.reject(err);
    }
    if (this.closed) return Promise.reject(this.closedError());
    return this.enqueue(() => this.runNow(command, options));
  }

  /**
   * Runs one program exactly: `argv[0]` looked up on the trusted PATH
   * (`/usr/bin`, `/bin`) only, `argv` passed as is (no shell parses it), in
   * the shell's current working directory (as the kernel reports it), with
   * the session's scrubbed starting environment, stdin `/dev/null`. Nothing
   * the shell holds (functions, aliases, `PATH`, exported variables, traps)
   * can change what runs. Output is processed like {@link run}'s; the shell
   * is untouched. Calls are serialized with {@link run}.
   * @throws ExactRefusedError (nothing ran) when the program is not on the trusted PATH, or the working directory or one of `options.paths` resolves outside the workspace
   * @throws SessionClosedError when the session is closed
   */
  runExact(argv: readonly string[], options: RunExactOptions = {}): Promise<CommandResult> {
    if (!Array.isArray(argv) || argv.length === 0 || argv.some((a) => typeof a !== 'string' || a.includes('\0'))) {
      return Promise.reject(
        new InvalidCommandError('argv must be a non-empty array of strings without NUL', String(argv), { sessionId: this.id }),
      );
    }
    if (this.closed) return Promise.reject(this.closedError());
    return this.enqueue(() => this.runExactNow(argv, options));
  }

  private async runExactNow(argv: readonly string[], options: RunExactOptions): Promise<CommandResult> {
    const started = Date.now();
    const command = options.command ?? argv.join(' ');
    const file = resolveTrustedProgram(argv[0]!);
    if (!file) throw new ExactRefusedError(`${argv[0]} is not a program in ${'/usr/bin or /bin'}`);
    const cwd = this.currentCwd();
    // Paths were judged against a cwd (by default the one this session last reported); a background job may have moved it since.
    const judgedIn = options.cwd ?? this.lastCwd;
    if (judgedIn !== cwd)
      throw new ExactRefusedError(`the shell's working directory moved (${judgedIn} -> ${cwd}) since the command was judged`);
    const exactSandbox = this.exactSandbox();
    const view = this.options.exactLauncher ? undefined : viewCheck(exactSandbox);
    const cwdWhy = outsideWhy(cwd, this.options.exactRoot, view);
    if (cwdWhy) throw new ExactRefusedError(`the working directory ${cwd} is outside the workspace ${this.options.exactRoot}: ${cwdWhy}`);
    for (const p of options.paths ?? []) {
      const abs = path.resolve(cwd, p);
      const why = outsideWhy(abs, this.options.exactRoot, view);
      if (why) throw new ExactRefusedError(`${p} resolves outside the workspace ${this.options.exactRoot} (a symlink, or .. ): ${why}`);
      let st: fs.Stats | undefined;
      try {
        st = fs.statSync(abs);
      } catch {
        /* missing: the program says so */
      }
      // A FIFO, socket or device would block or stream forever.
      if (st && !st.isFile() && !st.isDirectory())
        throw new ExactRefusedError(`${p} is not a regular file or directory (a FIFO, socket or device)`);
    }
    if (options.signal?.aborted) {
      return this.finish(command, started, {
        output: note('cancelled before it started; nothing was run'),
        exitCode: null,
        cancelled: true,
        outputBytes: 0,
        truncated: false,
      });
    }
    // The same sandbox and identity as the shell (a fresh bwrap, the session user), unless the caller wraps it itself.
    // The shell's own limits (ulimit values, OOM score) and its pids cgroup: an auto-approved program
    // is as bounded as any command, and a runaway is this command's failure.
    let limited: string[];
    try {
      limited = limitedArgv(this.limits, [file, ...argv.slice(1)]);
    } catch (err) {
      throw new ExactRefusedError((err as Error).message);
    }
    let launch = this.options.exactLauncher
      ? this.options.exactLauncher(limited[0]!, limited.slice(1), cwd)
      : sandboxedSpawnArgs(exactSandbox, limited, cwd);
    const cgroup = this.shell?.guard.cgroup?.dir;
    if (cgroup) {
      // Joins before anything is exec'd (so before any fork), as the worker's user, then becomes the launch.
      launch = {
        file: '/bin/sh',
        args: [
          '-c',
          'echo $$ >"$1" || exit 126; shift; exec "$@"',
          'agent-jobs-exact',
          path.join(cgroup, 'cgroup.procs'),
          launch.file,
          ...launch.args,
        ],
      };
    }
    const collector = new OutputCollector(this.options.maxOutputBytes);
    const timeoutMs = Math.min(options.timeoutMs ?? this.options.timeoutMs, MAX_TIMER_MS);
    const run = await runExactProgram(launch, cwd, this.env, timeoutMs, (chunk) => collector.push(chunk), options.signal);
    const captured = collector.finish(this.secrets);
    const notes: string[] = [];
    if (run.timedOut) notes.push(note(`timed out after ${timeoutMs} ms; the program was killed`));
    const limitNote = exactLimitNote(run, captured.text, this.limits);
    if (limitNote) notes.push(note(limitNote));
    return this.finish(command, started, {
      exactArgv: [...argv],
      output: appendNotes(captured.text, notes),
      exitCode: run.timedOut || run.cancelled ? null : run.exitCode,
      timedOut: run.timedOut,
      truncated: captured.truncated,
      outputBytes: captured.outputBytes,
      cancelled: run.cancelled,
      durationMs: run.durationMs,
    });
  }

  /**
   * Runs one text editor command (src/session/edit.ts) in this session's workspace, serialized
   * with commands: paths relative to the shell's working directory (as the kernel reports it),
   * every file operation by a helper process with the session's identity in a sandbox like the
   * shell's (`sandboxedSpawnArgs`, exact-run hidden paths covered). `gate` decides, before
   * anything is shown or written, whether the `view` or the change (with its unified diff) may
   * go ahead. Appends one audit line.
   * @param options.maxCharacters the tool's `max_characters` (characters a `view` shows at most)
   * @throws SessionClosedError when the session is closed
   * @throws Error when the helper gives no answer (nothing is known to be written only when it crashed before writing)
   */
  edit(
    edit: EditRequest,
    gate: (p: ProposedEdit) => EditGate,
    options: { maxCharacters: number; ruleSubject: (command: EditRequest['command'], abs: string) => string; signal?: AbortSignal },
  ): Promise<EditOutcome> {
    if (this.closed) return Promise.reject(this.closedError());
    return this.enqueue(async () => {
      const started = Date.now();
      const cwd = this.currentCwd();
      const io = this.editIo(cwd, options.signal);
      const outcome = await performEdit(
        edit,
        { cwd, workspace: this.options.exactRoot, maxCharacters: options.maxCharacters },
        io,
        gate,
        options.ruleSubject,
      );
      if (this.options.auditLog) {
        await appendAuditLine(this.options.auditLog, {
          time: new Date().toISOString(),
          sessionId: this.id,
          ...(this.options.runId ? { runId: this.options.runId } : {}),
          command: redactSecrets(options.ruleSubject(edit.command, outcome.abs ?? edit.path), this.secrets),
          exitCode: null,
          durationMs: Date.now() - started,
          outputBytes: 0,
          truncated: false,
          timedOut: false,
          cancelled: false,
          sessionRestarted: false,
          cwd,
          edit: {
            applied: outcome.applied,
            ...(outcome.reviewSha256 ? { diffSha256: outcome.reviewSha256 } : {}),
            ...(outcome.needsApproval ? { needsApproval: true } : {}),
            ...(outcome.isError ? { error: redactSecrets(outcome.text.slice(0, 500), this.secrets) } : {}),
          },
        });
      }
      return outcome;
    });
  }

  /**
   * The sandbox of an exact run: the shell's, with {@link EXACT_RUN_HIDDEN} covered too and not the
   * session's private directory (command files, FIFOs), which the program needs nothing of.
   */
  private exactSandbox(): SandboxOptions {
    const sandbox = this.sandboxOptions;
    return { ...sandbox, hide: [...sandbox.hide, ...EXACT_RUN_HIDDEN], readable: [] };
  }

  /** The helper's file operations, each a fresh sandboxed process as the session user. */
  private editIo(cwd: string, signal: AbortSignal | undefined): EditIo {
    const sandbox = this.sandboxOptions;
    const hide = [...sandbox.hide, ...EXACT_RUN_HIDDEN];
    // The helper is this worker's Node; bind it read-only when it lies in a hidden directory.
    const node = process.execPath;
    const readable = hide.some((h) => node.startsWith(`${h}/`)) ? [...sandbox.readable, node] : sandbox.readable;
    const launch = sandboxedSpawnArgs({ ...sandbox, hide, readable }, [node, '-e', EDIT_HELPER_SOURCE], cwd);
    const root = this.options.exactRoot;
    return {
      staysInside: (abs) => staysInside(abs, root, viewCheck({ ...sandbox, hide, readable })),
      viaSymlink: (abs) => symlinkOnTheWay(root, abs),
      read: (abs) =>
        runEditHelper<ReadReply>(
          launch,
          cwd,
          { op: 'read', path: abs, root, maxBytes: MAX_EDIT_FILE_BYTES, maxEntries: MAX_VIEW_ENTRIES },
          signal,
        ),
      write: (abs, content, expectSha256) =>
        runEditHelper<WriteReply>(
          launch,
          cwd,
          {
            op: 'write',
            path: abs,
            root,
            data: Buffer.from(content, 'utf8').toString('base64'),
            expectSha256,
            maxBytes: MAX_EDIT_FILE_BYTES,
          },
          signal,
        ),
    };
  }

  /**
   * Kills the shell and everything it started (background jobs included) and
   * starts a fresh one in the last known working directory (or its nearest
   * existing parent). Waits for a running command to finish first.
   * @throws SessionClosedError when the session is closed
   * @throws SessionStartError when the new shell cannot be started
   */
  restart(): Promise<void> {
    if (this.closed) return Promise.reject(this.closedError());
    return this.enqueue(async () => {
      await this.replaceShell();
    });
  }

  /**
   * Closes the session: kills the shell and everything it started (SIGTERM,
   * then SIGKILL after the grace period), removes its temporary files and
   * cgroup. A running command resolves with `cancelled: true`; queued and
   * later calls reject with {@link SessionClosedError}. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.closed) {
      this.closed = true;
      this.wakeCurrent?.({ kind: 'closed' });
      if (this.shell) await this.shell.kill(this.options.killGraceMs);
    }
    await this.queue;
    // A restart that was under way may have started a new shell meanwhile.
    if (this.shell) await this.shell.kill(this.options.killGraceMs);
    this.shell = undefined;
    for (const c of [...this.captures]) c.destroy();
    fs.rmSync(this.tmpDir, { recursive: true, force: true });
  }

  /**
   * SIGKILLs the shell and everything it started at once, synchronously,
   * for a worker about to exit (its second shutdown signal); nothing is
   * awaited or cleaned up (the next worker's orphan reaper removes the
   * temporary files). Use {@link close} otherwise.
   */
  killNow(): void {
    this.closed = true;
    this.shell?.killNow();
  }

  private closedError(): SessionClosedError {
    return new SessionClosedError(`bash session ${this.id} is closed`, { sessionId: this.id });
  }

  private enqueue<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(() => {
      if (this.closed) throw this.closedError();
      return fn();
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  private async spawn(cwd: string): Promise<void> {
    ++this.generation;
    const shell = await ShellProcess.start({
      sessionId: this.id,
      name: `${this.id}-${process.pid}-${this.generation}`,
      cwd,
      env: this.env,
      bashPath: this.options.bashPath,
      ulimitArgs: ulimitArguments(this.limits),
      oomScoreAdj: this.limits.oomScoreAdj,
      maxProcesses: this.limits.maxProcesses,
      guardMode: this.options.processGuard,
      startTimeoutMs: START_TIMEOUT_MS,
      sandbox: (({ setpriv: _, ...rest }) => rest)(this.sandboxOptions),
    });
    this.shell = shell;
    this.lastCwd = cwd;
    this.lastStatus = 0;
    this.pendingCd = undefined;
    writeOwner(this.tmpDir, {
      sessionId: this.id,
      workerPid: process.pid,
      workerStart: processStartTime(process.pid) ?? '',
      shellPid: shell.pid,
      shellStart: processStartTime(shell.pid) ?? '',
      ...(shell.guard.cgroup ? { cgroup: shell.guard.cgroup.dir } : {}),
      ...(this.identity ? { uid: this.identity.uid } : {}),
    });
  }

  /** Kills the current shell (if any) and starts a new one in the last known good cwd. */
  private async replaceShell(graceMs = this.options.killGraceMs): Promise<void> {
    const old = this.shell;
    this.shell = undefined;
    if (old) await old.kill(graceMs);
    if (this.closed) throw this.closedError();
    await this.spawn(nearestExistingDir(this.lastCwd));
  }

  private async runNow(command: string, options: RunOptions): Promise<CommandResult> {
    const started = Date.now();
    const notes: string[] = [];
    let restartedBefore = false;
    if (options.signal?.aborted) {
      return this.finish(command, started, {
        output: note('cancelled before it started; nothing was run'),
        exitCode: null,
        cancelled: true,
        outputBytes: 0,
        truncated: false,
      });
    }
    if (!this.shell || this.shell.exit) {
      const exit = this.shell?.exit;
      const why = this.shell?.guard.exceeded
        ? `its processes exceeded the process limit (${this.limits.maxProcesses}) and were killed`
        : exit
          ? describeExit(exit)
          : 'not running';
      notes.push(
        note(
          `the shell had exited since the last command (${why}); it was restarted: variables, functions and background jobs are gone, working directory restored`,
        ),
      );
      await this.replaceShell(0);
      restartedBefore = true;
    }
    const shell = this.shell!;
    const seq = ++this.seq;
    const commandFile = path.join(this.tmpDir, `cmd.${seq}`);
    const source = commandSource(command, commandFile);
    if ('file' in source) {
      fs.mkdirSync(this.tmpDir, { recursive: true, mode: 0o700 });
      // The worker's, read-only, readable by the session's group: bash reads it, nothing of the session can rewrite it
      // before bash does (the directory is the worker's too, so it cannot be replaced either).
      fs.writeFileSync(commandFile, commandFileContent(command), { mode: this.identity ? 0o440 : 0o400 });
      if (this.identity) fs.chownSync(commandFile, process.getuid?.() ?? 0, this.identity.gid);
    }
    const tokens = newCommandTokens();
    const collector = new OutputCollector(this.options.maxOutputBytes);
    const capture = new FifoCapture(this.fifos.take(), tokens.fence, collector, this.fifos);
    this.captures.add(capture);
    capture.onClosed = () => this.captures.delete(capture);
    const timeoutMs = Math.min(options.timeoutMs ?? this.options.timeoutMs, MAX_TIMER_MS);

    let timer: NodeJS.Timeout | undefined;
    let housekeepingTimer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    let lineNo = 0;
    let line = '';
    let readBefore: number | undefined;
    let stderrBefore = 0;
    const sendAt = Date.now();
    const outcome = await new Promise<Outcome>((resolve) => {
      this.wakeCurrent = resolve;
      shell.watchCommand(
        tokens,
        () => (housekeepingTimer = setTimeout(() => resolve({ kind: 'unconfirmed' }), HOUSEKEEPING_WAIT_MS)),
        () => resolve({ kind: 'record' }),
      );
      // `exited` only ever resolves (shell.ts), so there is no rejection to handle.
      void shell.exited.then((exit) => resolve({ kind: 'exit', exit }));
      if (Number.isFinite(timeoutMs)) timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
      if (options.signal) {
        onAbort = () => resolve({ kind: 'abort' });
        options.signal.addEventListener('abort', onAbort, { once: true });
      }
      line = controlLine(source, capture.fifo, tokens, this.lastStatus, this.pendingCd);
      readBefore = shell.bytesRead();
      stderrBefore = shell.stderrBytes();
      lineNo = shell.send(line);
      this.pendingCd = undefined;
    });
    const durationMs = Date.now() - sendAt;
    this.wakeCurrent = undefined;
    clearTimeout(timer);
    clearTimeout(housekeepingTimer);
    if (onAbort) options.signal?.removeEventListener('abort', onAbort);
    const records = shell.commandRecords();
    shell.cancelExpect();

    let exitCode: number | null = null;
    let shellExit: ShellExit | undefined;
    let restartAfter = false;
    let cancelled = false;
    let timedOut = false;
    let ended = false;
    let withheld = false;
    switch (outcome.kind) {
      case 'record':
      case 'unconfirmed': {
        // Kernel facts: bash read the control line itself, and is back waiting for the next one.
        const readAfter = shell.bytesRead();
        const readLine =
          readBefore === undefined || readAfter === undefined ? undefined : readAfter - readBefore >= Buffer.byteLength(line);
        const idle = outcome.kind === 'record' ? await shell.waitIdle(IDLE_WAIT_MS) : undefined;
        const verdict = judgeRecords(records, outcome.kind === 'record', shell.controlPipesIntact(), { readLine, idle });
        if (verdict.kind !== 'ok') {
          notes.push(note(verdict.note));
          restartAfter = true;
          withheld = verdict.kind === 'tampered' && verdict.foreignOutput === true;
          break;
        }
        ended = true;
        exitCode = verdict.status;
        this.lastStatus = verdict.status;
        const hk = records.housekeeping!;
        const kernel = shell.kernelCwd();
        if (kernel?.deleted) {
          const target = nearestExistingDir(kernel.path);
          this.pendingCd = target;
          this.lastCwd = target;
          notes.push(
            target === kernel.path
              ? note(`the working directory ${kernel.path} was deleted and created again; the shell moved into the new one`)
              : note(`the working directory ${kernel.path} no longer exists; the shell moved to ${target}`),
          );
        } else if (kernel) this.lastCwd = kernel.path;
        if (hk.flags.includes('l')) {
          notes.push(
            note(
              "the command lowered the shell's resource limits (ulimit) below the session's, which cannot be undone; the shell was restarted",
            ),
          );
          restartAfter = true;
        }
        break;
      }
      case 'exit':
        shellExit = outcome.exit;
        restartAfter = true;
        // The exit is the command's (`exit 5`) only if bash parsed the line that was sent. A background job
        // reading bash's saved stdin can take bytes of it; bash then reports a syntax error on its own stderr
        // (never the command's, which goes to its FIFO) and exits with 2 before running any of it.
        await raceTimeout(shell.stderrEnded, EXIT_STDERR_WAIT_MS);
        if (shell.stderrBytes() !== stderrBefore) {
          notes.push(
            note(
              `the end of this command could not be confirmed (the shell could not parse the line the session sent: another process read part of it from the control pipe; the shell exited, ${describeExit(outcome.exit)}): its exit status is unknown and it may not have run; the shell was restarted (variables, functions and background jobs are gone)`,
            ),
          );
          break;
        }
        exitCode = outcome.exit.code;
        if (shell.guard.exceeded) {
          notes.push(
            note(
              `the session exceeded its process limit (${this.limits.maxProcesses} processes/threads); all its processes were killed and the shell restarted`,
            ),
          );
        }
        break;
      case 'timeout':
        timedOut = true;
        restartAfter = true;
        break;
      case 'abort':
      case 'closed':
        cancelled = true;
        restartAfter = outcome.kind === 'abort';
        break;
    }
    if (ended) {
      // The status record and the fence travel on different pipes: give the
      // fence a moment (it is normally there already). Without it (the
      // command deleted the session's directory, so the fence went nowhere)
      // what was read is all there is.
      await raceTimeout(capture.fenced, FENCE_WAIT_MS);
      await capture.detach(0);
    } else {
      // Kill what is left: for a timeout, cancel or an unconfirmed end the
      // command itself, for a shell exit its background jobs. Then read what
      // is still in the pipe.
      await shell.kill(
        outcome.kind === 'exit' || outcome.kind === 'record' || outcome.kind === 'unconfirmed' ? 0 : this.options.killGraceMs,
      );
      await capture.detach(KILLED_OUTPUT_WAIT_MS);
    }
    const captured = collector.finish(this.secrets);
    if ('file' in source) removeQuietly(commandFile);
    if (restartAfter && !this.closed) await this.replaceShell(0);
    return this.finish(command, started, {
      output: appendNotes(
        withheld ? '' : renumberShellErrors(captured.text, lineNo > 0 ? lineNo + EVAL_PREFIX_LINES : 0, command.split('\n').length),
        notes,
      ),
      exitCode,
      timedOut,
      truncated: captured.truncated,
      sessionRestarted: restartedBefore || (restartAfter && !this.closed),
      outputBytes: captured.outputBytes,
      shellExit,
      cancelled,
      durationMs,
    });
  }

  private async finish(
    command: string,
    started: number,
    r: Partial<CommandResult> &
      Pick<CommandResult, 'output' | 'exitCode' | 'cancelled' | 'outputBytes' | 'truncated'> & { exactArgv?: string[] },
  ): Promise<CommandResult> {
    const result: CommandResult = {
      output: r.output,
      exitCode: r.exitCode,
      timedOut: r.timedOut ?? false,
      truncated: r.truncated,
      sessionRestarted: r.sessionRestarted ?? false,
      cwd: this.lastCwd,
      durationMs: r.durationMs ?? Date.now() - started,
      outputBytes: r.outputBytes,
      cancelled: r.cancelled,
    };
    if (r.shellExit) result.shellExit = r.shellExit;
    if (this.options.auditLog) {
      const line: AuditLine = {
        time: new Date().toISOString(),
        sessionId: this.id,
        ...(this.options.runId ? { runId: this.options.runId } : {}),
        command: redactSecrets(command, this.secrets),
        exitCode: result.exitCode,
        durationMs: result.durationMs,
        outputBytes: result.outputBytes,
        truncated: result.truncated,
        timedOut: result.timedOut,
        cancelled: result.cancelled,
        sessionRestarted: result.sessionRestarted,
        cwd: result.cwd,
        ...(result.shellExit ? { shellExit: result.shellExit } : {}),
        ...(r.exactArgv ? { exactArgv: r.exactArgv.map((a) => redactSecrets(a, this.secrets)) } : {}),
      };
      await appendAuditLine(this.options.auditLog, line);
    }
    return result;
  }
}

/**
 * bash numbers the lines of eval'd code from the control line's position in
 * its input, which grows with every command ("bash: eval: line 4711: syntax
 * error ...", "bash: line 25: nosuchcmd: command not found"; assigning
 * LINENO does not reset it). Renumbers the shell's own messages from the
 * command's first line, as if the command were a script: "bash: line 2: ...",
 * and the start line in "here-document at line N delimited by end-of-file".
 *
 * Runtime errors are renumbered only when the line falls inside the command
 * (1..`commandLines`), so a `bash -c` the command started, whose messages
 * look alike but count from 1, is left alone. Errors inside functions
 * (bash prefixes those `main:` and counts from the input line where the
 * function was defined) are left as they are.
 * @param controlLineNo bash's input line number of the command's control line (0: unknown, nothing renumbered)
 * @param commandLines lines of the command text (newlines + 1)
 */
export function renumberShellErrors(text: string, controlLineNo: number, commandLines: number): string {
  if (controlLineNo <= 0 || !text.includes('line ')) return text;
  const own = (n: string): number => Number(n) - controlLineNo + 1;
  return text.replace(
    /^([^\s:]*bash): (eval: )?line (\d+):(.*)$/gm,
    (whole, shell: string, evalPrefix: string | undefined, n: string, rest: string) => {
      const line = own(n);
      // Syntax errors (eval: line N) can name the line after the last one (unexpected end of file).
      if (line < 1 || (!evalPrefix && line > commandLines)) return whole;
      const body = rest.replace(/^( warning: here-document at line )(\d+)( delimited)/, (w, a: string, m: string, b: string) => {
        const start = own(m);
        return start >= 1 && start <= line ? `${a}${start}${b}` : w;
      });
      return `${shell}: line ${line}:${body}`;
    },
  );
}

/** What the records of one command prove: its exit status, or why they prove nothing. */
export type RecordVerdict =
  | { kind: 'ok'; status: number }
  /** `foreignOutput`: the shell never read the command, so what its FIFO holds was written by another process. */
  | { kind: 'not-run' | 'tampered'; note: string; foreignOutput?: boolean };

/**
 * Judges one command's records (protocol.ts): exactly one status record,
 * followed by the housekeeping record, with bash's control pipes intact.
 * Anything else means the shell's state kept the command from running
 * safely, or something forged a record, and the exit status is unknown.
 * @param housekeepingCame whether the housekeeping record followed in time
 * @param pipesIntact whether bash's stdin/stdout are still the pipes it started with
 * @param kernel from /proc: `readLine`, bash itself read at least the control line's bytes; `idle`, bash is back reading its stdin (undefined: not known)
 */
export function judgeRecords(
  records: CommandRecords,
  housekeepingCame: boolean,
  pipesIntact: boolean,
  kernel: { readLine?: boolean | undefined; idle?: boolean | undefined } = {},
): RecordVerdict {
  const [first, ...more] = records.statuses;
  if (first === 'noposix') {
    return {
      kind: 'not-run',
      note: 'the command was NOT run: an earlier command made POSIXLY_CORRECT read-only or a reference, which stops the session from running commands safely; the shell was restarted (variables, functions and background jobs are gone), run it again',
    };
  }
  const status = first !== undefined && /^\d{1,3}$/.test(first) ? Number(first) : NaN;
  const problems: string[] = [];
  if (Number.isNaN(status) || status > 255) problems.push('no valid end-of-command record came');
  if (more.length > 0) problems.push(`${more.length + 1} end-of-command records came where one was due (one was forged)`);
  if (!housekeepingCame)
    problems.push(
      'the shell did not finish its bookkeeping after the command (it was still busy, or a function named like a builtin intercepted it)',
    );
  if (!pipesIntact) problems.push("the shell's own control pipes were replaced");
  if (kernel.readLine === false) problems.push('the shell never read the command (another process read it from the control pipe)');
  if (housekeepingCame && kernel.idle === false) problems.push('the shell was still busy (or stopped) after its end-of-command records');
  if (problems.length > 0) {
    const foreignOutput = kernel.readLine === false;
    return {
      kind: 'tampered',
      note: `the end of this command could not be confirmed (${problems.join('; ')}): its exit status is unknown, it may still have been running; the shell was killed and restarted (variables, functions and background jobs are gone)${foreignOutput ? '; its output was withheld, since another process wrote it' : ''}`,
      ...(foreignOutput ? { foreignOutput } : {}),
    };
  }
  return { kind: 'ok', status };
}

/** Paths every sandbox hides: root's home, the worker's home, the temp directory (other sessions' FIFO directories). */
/**
 * Size of the sandbox's private `/tmp` and `/dev/shm`, each, in bytes: 1 GiB, or the session's
 * `maxFileSizeBytes` when lower. They are memory that no ulimit counts.
 */
export const SANDBOX_TMPFS_BYTES = 1024 ** 3;

/** Where host services put their unix sockets (`/var/run` is a link to it on Debian and most others). */
const HOST_SOCKETS_DIR = '/run';

function defaultHiddenPaths(): string[] {
  const out = ['/root'];
  const home = os.homedir();
  if (home && home !== '/') out.push(home);
  const tmp = path.resolve(os.tmpdir());
  if (tmp !== '/tmp' && tmp !== '/') out.push(tmp);
  return out;
}

/**
 * What is the workspace owner's alone, hidden when bash runs as the owner: its home (keys,
 * tokens, shell history) and its runtime directory (`/run/user/<uid>`: D-Bus, gpg and ssh
 * agents, a rootless container socket), which would trust bash as the owner.
 */
function ownerPrivatePaths(identity: SessionIdentity): string[] {
  return [...(identity.ownerHome ? [identity.ownerHome] : []), `/run/user/${identity.uid}`];
}

/**
 * The workspace with symlinks resolved.
 * @throws SessionStartError when it is missing or not a directory
 */
function realWorkspace(dir: string, sessionId: string | undefined): string {
  try {
    const real = fs.realpathSync(dir);
    if (!fs.statSync(real).isDirectory()) throw new Error('not a directory');
    return real;
  } catch (err) {
    throw new SessionStartError(`cannot start bash session: workspace ${dir} is not a directory: ${(err as Error).message}`, { sessionId });
  }
}

/**
 * Lets the session user write a workspace it does not own (a root-owned
 * one, or a `user` named): ACL entries `u:<uid>:rwX` and the same default
 * entry on directories, so files others add later are writable too
 * (walked by descriptor, symlinks never followed: acl-grant.ts). Owners and mode bits stay as
 * they are; files the agent creates are the session user's, which the
 * owner (root) edits and deletes as any. Idempotent.
 * @throws SessionStartError when it is `/`, setfacl is missing (package `acl`), or the filesystem refuses ACLs
 */
function grantWorkspace(real: string, identity: SessionIdentity, sessionId: string | undefined): void {
  if (real === '/') throw new SessionStartError('cannot start bash session: the workspace must not be /', { sessionId });
  // Its owner made it read-only: the session refuses it as the owner's own write would be (notWritableBy).
  if ((fs.statSync(real).mode & 0o200) === 0) return;
  const entry = `u:${identity.uid}:rwX`;
  // A non-root owner (the no-sandbox case): what the session user creates stays editable by the owner.
  const owner = fs.statSync(real).uid;
  const ownerEntry = owner !== 0 && owner !== identity.uid ? `,d:u:${owner}:rwX` : '';
  try {
    // By descriptor, not setfacl -R: another session's job may swap a directory for a symlink meanwhile (acl-grant.ts).
    grantTree(real, { dirs: `${entry},d:${entry}${ownerEntry}`, files: entry }, 120_000);
  } catch (err) {
    const missing = (err as NodeJS.ErrnoException).code === 'ENOENT';
    const stderr = String((err as { stderr?: Buffer }).stderr ?? '').trim();
    throw new SessionStartError(
      `cannot let ${identity.user} write the workspace ${real} (owned by uid ${fs.statSync(real).uid}): ${
        missing ? 'setfacl is not installed (install the acl package)' : stderr || (err as Error).message
      }; or give the workspace to a user other than root, whom bash then runs as`,
      { sessionId, cause: err },
    );
  }
}

/**
 * How a process in the sandbox of `o` sees a path, for resolving one (exact.ts `resolveInView`):
 * covered (its private /tmp, a hidden directory) unless it is the real one, or a directory on
 * the way to one of its binds (which the sandbox shows as a directory leading to the bind).
 * None without a sandbox: the machine's view is the program's.
 */
function viewCheck(o: SandboxOptions): ViewCheck | undefined {
  if (o.mode !== 'bwrap') return undefined;
  const binds = [...o.writable, ...o.readable].map(realDir);
  return (abs) => {
    if (binds.some((b) => within(b, abs))) return undefined;
    const v = sandboxView(o, abs);
    return v.real ? undefined : v.coveredBy;
  };
}

/** `dir` with symlinks resolved (as given when it cannot be). */
function realDir(dir: string): string {
  try {
    return fs.realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

/** Whether `p` is `dir` or inside it (both absolute, resolved). */
function within(p: string, dir: string): boolean {
  return p === dir || dir === '/' || p.startsWith(`${dir}/`);
}

/**
 * Why the session's user cannot write `dir`, or undefined when it can: the
 * kernel's answer for this process (a read-only filesystem, or this user's
 * own permissions), and for another user the mode bits that apply to it.
 */
function notWritableBy(dir: string, identity: SessionIdentity | null, aclGranted = false): string | undefined {
  try {
    fs.accessSync(dir, fs.constants.W_OK);
  } catch (err) {
    return (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  if (!identity) return undefined;
  const st = fs.statSync(dir);
  // An ACL entry for the user was set where the owner may write (the group bits are then the ACL's mask, not the group's).
  if (aclGranted)
    return st.mode & 0o200 ? undefined : `mode ${(st.mode & 0o777).toString(8)}: its owner, uid ${st.uid}, cannot write it either`;
  const bit = st.uid === identity.uid ? 0o200 : st.gid === identity.gid ? 0o020 : 0o002;
  return st.mode & bit ? undefined : `mode ${(st.mode & 0o777).toString(8)}, owner uid ${st.uid}`;
}

function describeExit(exit: ShellExit): string {
  return exit.signal ? `killed by ${exit.signal}` : `exit code ${exit.code}`;
}

function removeQuietly(file: string): void {
  try {
    fs.unlinkSync(file);
  } catch {
    /* already gone */
  }
}

/**
 * Whether a component of `abs` under `workspace` (the file itself included) is a symlink now.
 * Missing components are not: a create makes a plain file there.
 */
function symlinkOnTheWay(workspace: string, abs: string): boolean {
  const rel = path.relative(workspace, abs);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return false;
  let at = workspace;
  for (const part of rel.split(path.sep)) {
    at = path.join(at, part);
    try {
      if (fs.lstatSync(at).isSymbolicLink()) return true;
    } catch {
      return false;
    }
  }
  return false;
}
