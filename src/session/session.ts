/**
 * BashSession: one long-lived bash per agent run, driven by the protocol in
 * `protocol.ts`. See `index.ts` for the public surface and `README.md` (this
 * folder) for the contract and the decisions behind it. The steps around it
 * live apart: options and their checks (`options.ts`), the setup before the
 * first shell (`setup.ts`), what the process's sessions share (`host.ts`),
 * how a command ended (`ending.ts`), its result (`result.ts`), its audit line
 * (`audit.ts`), the workspace and sandbox paths (`workspace.ts`), exact runs
 * (`exact-run.ts`) and the editor's file operations (`edit-io.ts`).
 */
import { randomUUID } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { appendAuditLine, commandAuditLine, editAuditLine, type AuditSource } from './audit';
import { drainCutText, FifoCapture, FifoPool } from './capture';
import type { EditRequest } from '../contract/text-editor';
import { performEdit, type EditGate, type EditOutcome, type ProposedEdit } from './edit';
import { editIo } from './edit-io';
import { judgeRecords, notEnded, type Ending, type Outcome } from './ending';
import { buildSessionEnv, redactSecrets, sessionSearchPath, type SecretValue } from './env';
import { InvalidCommandError, SessionClosedError, SessionCwdError, SessionStartError } from './errors';
import { EXACT_MAX_OUTPUT_BYTES, EXACT_RUN_HIDDEN, exactStopNotes, exactStopped, runExactProgram } from './exact';
import { checkExactRun, exactLaunch } from './exact-run';
import { SessionHost } from './host';
import type { SessionIdentity, WorkspaceAccess } from './identity';
import { hiddenPaths, identityEnv, makeSessionDir, resolveWho, startDirectory, type Who } from './setup';
import { resolveLimits, ulimitArguments, type ResolvedLimits } from './limits';
import { SLIRP_DNS } from './network';
import {
  checkStartOptions,
  checkTimeout,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_TIMEOUT_MS,
  MAX_TIMER_MS,
  START_TIMEOUT_MS,
  type BashSessionOptions,
  type RunExactOptions,
  type RunOptions,
} from './options';
import { processStartTime, writeOwner } from './orphans';
import { DEFAULT_MAX_OUTPUT_BYTES, OutputCollector } from './output';
import {
  commandFileContent,
  commandSource,
  controlLine,
  EVAL_PREFIX_LINES,
  newCommandTokens,
  type CommandRecords,
  type CommandSource,
  type CommandTokens,
} from './protocol';
import {
  appendNotes,
  cancelledBeforeStart,
  commandResult,
  describeExit,
  exactLimitNote,
  note,
  renumberShellErrors,
  type CommandResult,
  type FinishedCommand,
} from './result';
import { emptyGuard, GitGuardRefusal, guardedGit, type GuardedGit } from './git-guard';
import { walkGit, type GitWalk } from './git-walk';
import { noteJoin, noteLines, type NoteLayout } from './git-finding';
import type { ProcessGuard } from './guard';
import {
  auditGit,
  gitAuditNote,
  gitDirOf,
  prepareQuarantine,
  recordGit,
  watchMissing,
  type GitBaseline,
  type GitFinding,
} from './git-audit';
import {
  checkHeldGit,
  heldGitNote,
  holdGitEntries,
  isHeldFinding,
  releaseHeldGit,
  revokeGitWrite,
  watchHeldGit,
  type HeldGit,
} from './git-held';
import { holdBinds, releaseHeldBinds, type HeldBinds } from './held-binds';
import { closePins, pinGit, type GitPins, type PinnedDir } from './pins';
import { sandboxView, type SandboxMode, type SandboxOptions } from './sandbox';
import { writeSeccompFilter } from './seccomp';
import { filterSha256 } from './seccomp-launch';
import { ShellProcess, type ShellExit } from './shell';
import {
  changeableLookup,
  changedVariables,
  configEntries,
  configFolders,
  configRefusal,
  notSystemProgram,
  parseProbe,
  probeCommand,
  searchRefusal,
  type ProbeAnswer,
} from './rule-probe';
import { raceTimeout } from './timing';
import { nearestExistingDir, notWritableBy, realDir, removeQuietly, SANDBOX_TMPFS_BYTES, viewCheck, within } from './workspace';

export {
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_TIMEOUT_MS,
  START_TIMEOUT_MS,
  type BashSessionOptions,
  type RunExactOptions,
  type RunOptions,
} from './options';
export { EXACT_VIEW_NOTE, ExactRefusedError } from './exact-run';
export type { CommandResult } from './result';
export type { ShellExit };

/** How long to wait to read a command's fence once the worker wrote it, ms (normally at once). */
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

/** Whether the command's first output (if any) came after bash had read its whole line. */
function readFirst(sent: Sent): boolean {
  if (sent.readAtFirstOutput === null || sent.readBefore === undefined) return true; // no output, or nothing to compare with
  if (sent.readAtFirstOutput === undefined) return false; // bash was gone by then: nothing proves it
  return sent.readAtFirstOutput - sent.readBefore >= Buffer.byteLength(sent.line);
}

/** `$?` in the new shell after a command whose exit status is unknown (timed out, cancelled, its end not proven). */
const UNKNOWN_STATUS = 1;

/** How long the probe of a rule's program may take (ms) before the rule does not apply (rule-probe.ts). */
const PROBE_TIMEOUT_MS = 10_000;

/** One command on its way to the shell: its file (when long), tokens, FIFO and output collector. */
interface PreparedCommand {
  commandFile: string;
  source: CommandSource;
  tokens: CommandTokens;
  collector: OutputCollector;
  capture: FifoCapture;
}

/** What the session knows once the wait for a command is over. */
interface Sent {
  outcome: Outcome;
  /** The control line sent, and bash's input line number of it. */
  line: string;
  lineNo: number;
  /** Bytes bash had read from its stdin, and written on its stderr, before the line was sent (/proc; undefined: not known). */
  readBefore: number | undefined;
  stderrBefore: number;
  /** Wall time from sending the line to the end of the wait, ms. */
  durationMs: number;
  /** Bytes bash had read when the command's first output reached the worker: null when none came, undefined when /proc did not tell (bash gone). */
  readAtFirstOutput: number | null | undefined;
  records: CommandRecords;
}

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
  /** Mode `none`: the python3 that loads {@link seccompFilter} and the program's SHA-256 (seccomp-launch.ts); undefined otherwise. */
  private readonly seccompLauncher: { python: string; sha256: string } | undefined;
  private readonly fifos: FifoPool;
  private readonly identity: SessionIdentity | null;
  /** How bash gets to write the workspace (identity.ts). */
  private readonly access: WorkspaceAccess;
  private readonly sandboxMode: { mode: SandboxMode; bwrap?: string };
  private readonly network: boolean;
  private readonly workspace: string | undefined;
  /**
   * What git needs of a sub-agent's worktree besides the worktree itself (see
   * {@link BashSessionOptions.worktreeGit}), opened when the session started and bound by descriptor (pins.ts).
   */
  private readonly gitPins: PinnedDir[];
  /** What of the workspace's own repository the sandbox binds so that the session cannot plant code in it (git-guard.ts). */
  private readonly git: GuardedGit;
  /**
   * What the workspace's git metadata held at start, audited after each command, edit and at close (git-audit.ts);
   * undefined: not audited. Recorded by {@link start} before bash starts (a walk off the event loop).
   */
  private gitBaseline: GitBaseline | undefined;
  /** What the watch of the missing paths moved since the last audit (git-audit.ts `watchMissing`), reported with the next one. */
  private watchedFindings: GitFinding[] = [];
  /** Stops that watch; set once the baseline is recorded. */
  private stopWatch: (() => void) | undefined;
  /** The tag of this session's quarantined entries (git-audit.ts), and the quarantine's path (bound read-only) when there is one. */
  private readonly gitTag: string;
  private readonly quarantine: string | undefined;
  /** `dev:ino` of each of {@link git}'s read-only paths as the current shell's sandbox bound them (a rename on the host drops the bind). */
  private boundGit = new Map<string, string>();
  /**
   * {@link git}'s paths, opened when the session started without following a symlink and bound from those descriptors
   * at every launch (held-binds.ts), as a sibling session on the workspace can swap one for a symlink at any time;
   * released by {@link close}.
   */
  private readonly heldGit: HeldBinds;
  /** The note of {@link rebindGit}'s failed relaunch after the last command, if any. */
  private relaunchFailure: string | undefined;
  /** What the audit found when the session closed (git-audit.ts): the last word on what the session left in the workspace's git metadata. */
  gitFindingsAtClose: readonly GitFinding[] = [];
  /** {@link gitFindingsAtClose} as one line for a log, or undefined when there are none. */
  get gitNoteAtClose(): string | undefined {
    return this.gitBaseline ? this.gitNote(this.gitFindingsAtClose) : undefined;
  }
  /**
   * {@link gitFindingsAtClose} for the person who reads the closed run (`closeSession`'s answer), line by line: each
   * part a line, each finding one under it indented by two spaces (git-finding.ts `NoteLayout` `lines`; a line may hold
   * a path's line break: print it escaped); undefined when there are none.
   */
  get gitLinesAtClose(): string[] | undefined {
    const note = this.gitBaseline ? this.gitNote(this.gitFindingsAtClose, 'lines') : undefined;
    return note === undefined ? undefined : noteLines(note);
  }
  /**
   * Why the sub-agent's git directories are not bound (one line: which could not be opened without a
   * symlink on the way), or undefined when they are or none were asked for: the session then runs without them.
   */
  readonly worktreeGitRefused: string | undefined;
  private readonly hide: string[];
  /** Output pipes not yet closed (running commands, and background jobs still holding one), closed by `close()`. */
  private readonly captures = new Set<FifoCapture>();
  /** Notes for the next command's result: outputs the worker closed because background jobs kept writing to them (capture.ts). */
  private readonly cutNotes: string[] = [];
  /** Without the sandbox, the git entries held by descriptor in place of its binds (git-held.ts), and their sweep's stop. */
  private readonly heldNone: { guard: GuardedGit; held: HeldGit } | undefined;
  private stopHeld: (() => void) | undefined;
  private shell: ShellProcess | undefined;
  private generation = 0;
  /** The shell's configuration entries when it started (rule-probe.ts `configEntries`), for `resolveForRule`. */
  private configAtStart: string[] = [];
  private seq = 0;
  private lastCwd: string;
  /** Exit status of the last command, restored as `$?` for the next one. */
  private lastStatus = 0;
  /** Where the next command moves first: the last one deleted the working directory. */
  private pendingCd: string | undefined;
  private closed = false;
  /** What this process's sessions share (host.ts): the guard's watchdog, setpriv, bwrap, users. */
  private readonly host: SessionHost;
  private queue: Promise<unknown> = Promise.resolve();
  private wakeCurrent: ((o: Outcome) => void) | undefined;

  private constructor(options: BashSessionOptions, cwd: string, who: Who, host: SessionHost, git: GitPins, walk?: GitWalk) {
    const { identity, sandbox, access } = who;
    this.id = options.id ?? randomUUID();
    this.host = host;
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
    this.gitPins = git.pins;
    this.worktreeGitRefused = git.refused;
    this.hide = hiddenPaths(options.hidePaths ?? [], who, this.network);
    // Once, at start: from then on `.git` is a mount point in every sandbox of the session, which no process of it can move.
    this.git = this.workspace && sandbox.mode === 'bwrap' ? guardGit(realDir(this.workspace), this.id, walk) : emptyGuard();
    this.gitTag = this.id.replace(/[^A-Za-z0-9-]/g, '_').slice(0, 40);
    // Made before any sandbox and bound read-only in each: the session can neither block it nor take back what was moved.
    this.quarantine = this.workspace && audited(sandbox, access) ? prepareQuarantine(realDir(this.workspace), this.gitTag) : undefined;
    if (this.quarantine) this.git.readonly.push(this.quarantine);
    // Without the sandbox: the same paths, made unwritable by ACL and held by descriptor instead of bound (git-held.ts).
    this.heldNone =
      this.workspace && audited(sandbox, access) && sandbox.mode === 'none'
        ? holdNone(realDir(this.workspace), this.id, this.gitTag, walk, identity!.uid, this.quarantine)
        : undefined;
    const built = buildSessionEnv({
      extra: { ...identityEnv(who, this.workspace, (this.heldNone?.guard ?? this.git).nestedTops), ...options.env },
      secretEnvNames: options.secretEnvNames,
    });
    this.env = built.env;
    // Only absolute entries outside what the session can write: a rule's program must be the system's, not a workspace file.
    this.env.PATH = sessionSearchPath(this.env.PATH, [
      ...(this.workspace ? [this.workspace, realDir(this.workspace)] : []),
      '/tmp',
      '/var/tmp',
      '/dev/shm',
    ]);
    this.secrets = built.secrets;
    this.lastCwd = cwd;
    this.tmpDir = makeSessionDir(identity);
    this.fifos = new FifoPool(this.tmpDir, identity ?? undefined);
    if (this.network) fs.writeFileSync(path.join(this.tmpDir, 'resolv.conf'), `nameserver ${SLIRP_DNS}\n`, { mode: 0o644 });
    // Without bwrap, the python3 launcher loads the same filter (seccomp-launch.ts); without one, the session runs unfiltered (said once by the host).
    const python = sandbox.mode === 'none' ? host.seccompLauncher().python : null;
    this.seccompFilter = sandbox.mode === 'bwrap' || python ? writeSeccompFilter(path.join(this.tmpDir, 'seccomp.bpf')) : undefined;
    this.seccompLauncher = python && this.seccompFilter ? { python, sha256: filterSha256()! } : undefined;
    // Last, so that nothing after it throws with descriptors open; the start releases them when it fails later.
    try {
      this.heldGit = holdBinds(this.workspace ? realDir(this.workspace) : '/', this.git.writable, this.git.readonly);
    } catch (err) {
      fs.rmSync(this.tmpDir, { recursive: true, force: true });
      throw err;
    }
  }

  /**
   * Starts a session: spawns bash in `options.cwd` and waits until it is
   * ready (normally a few ms).
   * @throws InvalidSessionOptionError for an out-of-range option
   * @throws SessionStartError when `cwd` is missing or not a directory, bash cannot be spawned, the limits cannot be applied, bash is not ready within 10 s, or the git guard refuses the workspace (a git config of the person that it cannot read safely: git-guard.ts `GitGuardRefusal`)
   * @throws SessionCwdError (a SessionStartError) when bash would not really be in `cwd` (the sandbox covers it: its private /tmp, a hidden path), or `cwd` is in the workspace and the session's user cannot write it (or the workspace); never a silent substitute
   */
  static async start(options: BashSessionOptions = {}): Promise<BashSession> {
    checkStartOptions(options);
    const cwd = startDirectory(options);
    const host = options.host ?? new SessionHost();
    // Before anything is granted or bound: by descriptor from here on, whatever the paths hold later.
    const git = pinGit(options.worktreeGit);
    let session: BashSession;
    try {
      const who = await resolveWho(options, cwd, host, git.pins);
      // The repositories below the workspace's root, read off the event loop before the guard binds them as the root's.
      const walk =
        options.workspace && audited(who.sandbox, who.access)
          ? await walkGit(realDir(options.workspace), path.join(realDir(options.workspace), '.git'))
          : undefined;
      // An abandoned open (its activity timed out) takes no descriptors from here on (the guard's holds).
      options.startSignal?.throwIfAborted();
      session = new BashSession(options, cwd, who, host, git, walk);
    } catch (err) {
      closePins(git.pins);
      throw err;
    }
    const refused = session.cwdRefusal(cwd);
    if (refused) {
      closePins(git.pins);
      if (session.heldNone) releaseHeldGit(session.heldNone.held);
      releaseHeldBinds(session.heldGit);
      fs.rmSync(session.tmpDir, { recursive: true, force: true });
      throw new SessionCwdError(`cannot start bash session in ${cwd}: ${refused}`, cwd, { sessionId: options.id });
    }
    try {
      // What the workspace's git metadata holds before anything of the session runs (read off the event loop).
      if (session.workspace && audited(session.sandboxMode, session.access)) {
        const g = session.heldNone?.guard ?? session.git;
        session.gitBaseline = await recordGit(
          realDir(session.workspace),
          session.gitTag,
          g.named,
          g.missing,
          g.anywhere,
          g.completed,
          g.anywhereStems,
          g,
        );
        // From before the first command to close: a background job's file at a missing path is moved at once, not at the next audit.
        if (session.gitBaseline) session.stopWatch = watchMissing(session.gitBaseline, (found) => pushEach(session.watchedFindings, found));
        const held = session.heldNone?.held;
        if (held) session.stopHeld = watchHeldGit(held, (found) => pushEach(session.watchedFindings, found));
      }
      options.startSignal?.throwIfAborted();
      await session.spawn(cwd);
    } catch (err) {
      session.stopWatch?.();
      session.stopHeld?.();
      if (session.heldNone) releaseHeldGit(session.heldNone.held);
      closePins(git.pins);
      releaseHeldBinds(session.heldGit);
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
      ...(this.heldGit.binds.length > 0 ? { held: this.heldGit } : {}),
      ...(this.gitPins.length > 0 ? { pinned: this.gitPins } : {}),
      hide: this.hide,
      tmpfsBytes: Math.min(this.limits.maxFileSizeBytes, SANDBOX_TMPFS_BYTES),
      setpriv: this.host.setpriv(),
      ...(this.seccompFilter ? { seccompFilter: this.seccompFilter } : {}),
      ...(this.seccompLauncher ? { seccompLauncher: this.seccompLauncher } : {}),
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
   * Why an approval rule may not run a command whose first word is `word`, asked of the shell now
   * (rule-probe.ts): a function or alias; a file that is not a program of the system ({@link notSystemProgram}),
   * that bash finds through a hashed path other than its search of `PATH`, or through a `PATH` entry (or one
   * searched before it) the session could change ({@link searchRefusal}); or, for a file, an exported variable
   * added or changed since the shell's start ({@link changedVariables}) or an exported function. Undefined when
   * the word names a builtin or keyword (for the caller to check against its list: `{ builtin }`) or a system
   * program. One round trip through the control protocol; the shell's `$?` and the command count are left as they
   * were. A reason names paths and variable names, never a value, and is redacted of the session's secrets.
   * @returns `{ refuse }` with the reason, or `{ builtin: kind }`, or `{ program: path }`
   * @throws SessionClosedError when the session is closed
   */
  resolveForRule(word: string): Promise<{ refuse: string } | { builtin: string } | { program: string }> {
    if (this.closed) return Promise.reject(this.closedError());
    return this.enqueue(async () => {
      const answer = await this.probeNow(word);
      if (!answer) return { refuse: `the shell did not say what ${word} resolves to` };
      const r = this.judgeProbe(word, answer);
      return 'refuse' in r ? { refuse: redactSecrets(r.refuse, this.secrets) } : r;
    });
  }

  /** {@link resolveForRule}'s verdict on the probe's `answer` for `word` (its reasons not yet redacted). */
  private judgeProbe(word: string, answer: ProbeAnswer): { refuse: string } | { builtin: string } | { program: string } {
    if (answer.function || answer.kinds.includes('function')) return { refuse: `${word} is a shell function of the session` };
    if (answer.kinds.includes('alias')) return { refuse: `${word} is an alias of the session` };
    // The bookkeeping after every command turns xtrace off; on here, something kept it on, and PS4 runs code.
    if (answer.flags.includes('x')) return { refuse: 'the shell traces commands (set -x), and its PS4 can run code with every command' };
    const first = answer.kinds[0] ?? (answer.path !== undefined ? 'file' : 'none');
    if (first === 'builtin' || first === 'keyword') return { builtin: first };
    const found = answer.path;
    if (first !== 'file' || found === undefined) return { refuse: `${word} is not found` };
    if (found !== answer.searched)
      return { refuse: `${word} is hashed to ${found}, not to what a search of PATH finds (${answer.searched ?? 'nothing'})` };
    // Paths are judged as bash reads them: under its own root, in the sandbox's mounts (rule-probe.ts lookUp).
    if (this.bashPid <= 0) return { refuse: `the shell's process is not known, so ${found} cannot be judged as bash reads it` };
    const root = `/proc/${this.bashPid}/root`;
    const why = notSystemProgram(found, this.currentCwd(), this.env.PATH ?? '', this.options.exactRoot, root);
    if (why) return { refuse: `${word} resolves to ${why}` };
    const where = word.includes('/')
      ? changeableLookup(path.resolve(this.currentCwd(), found), this.options.exactRoot, root)
      : searchRefusal(word, found, answer.searchPath, this.options.exactRoot, root);
    if (where) return { refuse: `${word} resolves to ${found} now, but ${where}, so another file could run by the command` };
    const changed = changedVariables(answer.exported, this.env);
    if (changed.length > 0)
      return {
        refuse: `the session exports ${changed.join(', ')}, added or changed since it started, which can make a program run other code`,
      };
    if (answer.exportedFunctions.length > 0)
      return {
        refuse: `the session exports the function ${answer.exportedFunctions.join(', ')}, which a program that is a shell script runs`,
      };
    const config = configRefusal(configEntries(root, configFolders(this.env)), this.configAtStart);
    if (config) return { refuse: `in the session's HOME, ${config}` };
    return { program: found };
  }

  /**
   * Sends the probe of `word` as a command (rule-probe.ts) and reads its framed answer: undefined when the
   * command did not end as proven (the shell is then replaced, its notes told with the next command). Runs no
   * audit and keeps the shell's `$?`.
   */
  private async probeNow(word: string): Promise<ProbeAnswer | undefined> {
    if (!this.shell || this.shell.exit) return undefined;
    const shell = this.shell;
    const status = this.lastStatus;
    const { text, nonce } = probeCommand(word);
    const prepared = this.prepareCommand(text);
    const sent = await this.sendAndWait(shell, prepared, PROBE_TIMEOUT_MS, undefined);
    const ending = await this.settle(shell, sent);
    shell.cancelExpect();
    await this.drain(shell, prepared.capture, sent.outcome, ending.ended);
    // Not redacted: the exported values are compared with the starting ones (judgeProbe); no value leaves the worker.
    const captured = prepared.collector.finish([]);
    if ('file' in prepared.source) removeQuietly(prepared.commandFile);
    this.lastStatus = status;
    if (ending.restartAfter && !this.closed) {
      this.cutNotes.push(...ending.notes);
      const failed = await this.replaceAfterCommand();
      if (failed) this.cutNotes.push(failed);
      return undefined;
    }
    return ending.ended && !captured.truncated ? parseProbe(captured.text, nonce) : undefined;
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
    const cwd = this.currentCwd();
    const sandbox = this.exactSandbox();
    const root = this.options.exactRoot;
    const view = this.options.exactLauncher ? undefined : viewCheck(sandbox);
    const file = checkExactRun(argv, options.paths ?? [], { cwd, judgedIn: options.cwd ?? this.lastCwd, root, view });
    if (options.signal?.aborted) return this.finish(command, started, cancelledBeforeStart());
    const launch = exactLaunch(file, argv, cwd, {
      limits: this.limits,
      sandbox,
      launcher: this.options.exactLauncher,
      cgroups: this.shell?.guard.joinFiles() ?? [],
    });
    const collector = new OutputCollector(this.options.maxOutputBytes);
    const timeoutMs = Math.min(options.timeoutMs ?? this.options.timeoutMs, MAX_TIMER_MS);
    const run = await runExactProgram(launch, cwd, this.env, timeoutMs, (chunk) => collector.push(chunk), options.signal);
    const captured = collector.finish(this.secrets);
    const notes: string[] = [];
    if (run.timedOut) notes.push(note(`timed out after ${timeoutMs} ms; the program was killed`));
    if (run.stoppedOnFifo)
      notes.push(
        note(
          `stopped: ${run.stoppedOnFifo}; a program run unasked never reads a FIFO nor waits on a file lease (something put one at a path after the check), so it was killed`,
        ),
      );
    if (run.stoppedOnOutput !== undefined)
      notes.push(
        note(
          `stopped: it printed more than ${EXACT_MAX_OUTPUT_BYTES} bytes, all a program run unasked may print (a sparse file, or a device swapped in for a path after the check); what is shown is from what it printed until then`,
        ),
      );
    notes.push(...exactStopNotes(run).map(note));
    const limitNote = exactLimitNote(run, captured.text, this.limits);
    if (limitNote) notes.push(note(limitNote));
    const memory = this.memoryKillNote();
    if (memory) notes.push(memory);
    return this.finish(command, started, {
      exactArgv: [...argv],
      output: appendNotes(captured.text, notes),
      notes,
      exitCode: run.timedOut || run.cancelled || run.stoppedOnFifo || exactStopped(run) ? null : run.exitCode,
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
   * shell's (`sandboxedSpawnArgs`, exact-run hidden paths covered), bounded as an exact run (the
   * shell's ulimits, OOM score, pids and memory cgroups: edit-io.ts). `gate` decides, before
   * anything is shown or written, whether the `view` or the change (with its unified diff) may
   * go ahead. Appends one audit line. The git audit runs whatever the edit comes to, a thrown error included (its
   * findings then come with the next result).
   * @param options.maxCharacters the tool's `max_characters` (characters a `view` shows at most)
   * @param options.beforeWrite awaited once `gate` said apply, just before the change is written (in the session's turn:
   *   no command runs meanwhile); not for a `view`, an edit that waits for a person or one answered without writing
   * @throws SessionClosedError when the session is closed
   * @throws Error when the helper gives no answer to a write (nothing is known to be written only when it crashed before
   *   writing); a read without an answer (the helper killed at a limit) is an `is_error` outcome instead
   * @throws ExactRefusedError when the session's limits cannot be applied to the helper (prlimit missing): nothing ran
   */
  edit(
    edit: EditRequest,
    gate: (p: ProposedEdit) => EditGate,
    options: {
      maxCharacters: number;
      ruleSubject: (command: EditRequest['command'], abs: string) => string;
      signal?: AbortSignal;
      beforeWrite?: () => Promise<void>;
    },
  ): Promise<EditOutcome> {
    if (this.closed) return Promise.reject(this.closedError());
    return this.enqueue(async () => {
      const started = Date.now();
      const cwd = this.currentCwd();
      const io = editIo(this.sandboxOptions, cwd, this.options.exactRoot, options.signal, {
        limits: this.limits,
        cgroups: this.shell?.guard.joinFiles() ?? [],
      });
      let outcome: EditOutcome | undefined;
      try {
        outcome = await performEdit(
          edit,
          { cwd, workspace: this.options.exactRoot, maxCharacters: options.maxCharacters },
          io,
          gate,
          options.ruleSubject,
          options.beforeWrite,
        );
      } finally {
        // No outcome (the edit threw: a write without an answer, a failure of the diff): the audit still moves what it
        // finds now; its findings, and a memory kill (not taken here), are told with the next result.
        if (outcome === undefined && this.gitBaseline) pushEach(this.watchedFindings, await this.auditAll(false));
      }
      if (outcome.needsApproval) {
        // Nothing was done, and the answer's text is never shown: the audit still moves what it finds now, and its
        // findings (and a memory kill) are told with the next result.
        if (this.gitBaseline) pushEach(this.watchedFindings, await this.auditAll(false));
      } else {
        // The helper runs in the session's memory cgroup: a kill there (the helper's or a job's) is said here as for a command.
        const notes = [this.memoryKillNote(), await this.auditGitNote()].filter((n): n is string => n !== undefined);
        outcome.text = appendNotes(outcome.text, notes);
        outcome.notes = notes;
      }
      if (this.options.auditLog) {
        const command = options.ruleSubject(edit.command, outcome.abs ?? edit.path);
        await appendAuditLine(this.options.auditLog, editAuditLine(this.auditSource, command, Date.now() - started, cwd, outcome));
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
    // No process of the session is left: the audit's last word, with nothing racing it.
    this.stopWatch?.();
    this.stopHeld?.();
    if (this.gitBaseline) this.gitFindingsAtClose = [...this.watchedFindings.splice(0), ...(await this.auditAll(true))];
    if (this.heldNone) releaseHeldGit(this.heldNone.held);
    // Every launch is over (the queue ran out); one that comes later finds them closed (fds.ts launchStdio).
    closePins(this.gitPins);
    releaseHeldBinds(this.heldGit);
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
    // A bind needs its source: the person may have removed the quarantine on the host since the last shell. One that
    // cannot be made again is not bound (moves then fall back to renames in place, git-audit.ts), rather than no shell.
    const quarantine = this.quarantine;
    if (quarantine && this.workspace && !prepareQuarantine(realDir(this.workspace), this.gitTag)) {
      const at = this.git.readonly.indexOf(quarantine);
      if (at >= 0) this.git.readonly.splice(at, 1);
    }
    const shell = await ShellProcess.start({
      sessionId: this.id,
      name: `${this.id}-${process.pid}-${this.generation}`,
      cwd,
      env: this.env,
      bashPath: this.options.bashPath,
      ulimitArgs: ulimitArguments(this.limits),
      oomScoreAdj: this.limits.oomScoreAdj,
      maxProcesses: this.limits.maxProcesses,
      maxSessionMemoryBytes: this.limits.maxSessionMemoryBytes,
      guardMode: this.options.processGuard,
      watchdog: this.host.watchdog,
      setpriv: this.host.setpriv(),
      startTimeoutMs: START_TIMEOUT_MS,
      sandbox: (({ setpriv: _, ...rest }) => rest)(this.sandboxOptions),
      exitFifos: this.exitFifos(),
    });
    this.shell = shell;
    // Before any command of the session ran: what a rule's program may read as its configuration (rule-probe.ts).
    this.configAtStart = configEntries(`/proc/${shell.bashPid}/root`, configFolders(this.env));
    this.boundGit = inodesOf(this.git.readonly);
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
      ...(shell.guard.socketCgroup ? { socketCgroup: shell.guard.socketCgroup } : {}),
      ...(this.identity ? { uid: this.identity.uid } : {}),
    });
  }

  /**
   * Two FIFOs for a new shell's exit record (shell.ts `exitFifos`): bash writes the first, and reads
   * the second, so the second is readable by the session's group (mode 0640; the worker's alone writes).
   */
  private exitFifos(): { record: string; ack: string } {
    const record = this.fifos.take();
    const ack = this.fifos.take();
    fs.chmodSync(ack, this.identity ? 0o640 : 0o600);
    return { record, ack };
  }

  /** Kills the current shell (if any) and starts a new one in the last known good cwd. */
  private async replaceShell(graceMs = this.options.killGraceMs): Promise<void> {
    const old = this.shell;
    this.shell = undefined;
    if (old) await old.kill(graceMs);
    if (this.closed) throw this.closedError();
    await this.spawn(nearestExistingDir(this.lastCwd));
  }

  /**
   * One command through the shell, the protocol's story: restart a shell that died while idle,
   * write the command (a file when long) and its FIFO, send the control line and wait for what
   * ends it, judge how it ended, drain or kill, then build the result (restarting the shell
   * when the command left it unusable).
   */
  private async runNow(command: string, options: RunOptions): Promise<CommandResult> {
    const started = Date.now();
    if (options.signal?.aborted) return this.finish(command, started, cancelledBeforeStart());
    const revived = (await this.reviveShell()) ?? (await this.rebindGit('before'));
    const shell = this.shell!;
    const prepared = this.prepareCommand(command);
    const timeoutMs = Math.min(options.timeoutMs ?? this.options.timeoutMs, MAX_TIMER_MS);
    const sent = await this.sendAndWait(shell, prepared, timeoutMs, options.signal);
    const ending = await this.settle(shell, sent);
    shell.cancelExpect();
    if (revived) ending.notes.unshift(revived);
    await this.drain(shell, prepared.capture, sent.outcome, ending.ended);
    const captured = prepared.collector.finish(this.secrets);
    if ('file' in prepared.source) removeQuietly(prepared.commandFile);
    const rebound = ending.restartAfter || this.closed ? this.gitBindsLost('during') : await this.rebindGit('during');
    if (rebound) ending.notes.push(rebound);
    const relaunch = rebound && !ending.restartAfter ? this.relaunchFailure : undefined;
    if (relaunch) ending.notes.push(relaunch);
    const audit = await this.auditGitNote();
    if (audit) ending.notes.push(audit);
    ending.notes.push(...this.cutNotes.splice(0));
    const memory = this.memoryKillNote();
    if (memory) ending.notes.push(memory);
    if (ending.restartAfter && !this.closed) {
      const failed = await this.replaceAfterCommand();
      if (failed) ending.notes.push(failed);
      // The new shell's `$?` is the command's status; an unknown one is not success.
      else this.lastStatus = ending.exitCode ?? UNKNOWN_STATUS;
    }
    const firstLine = sent.lineNo > 0 ? sent.lineNo + EVAL_PREFIX_LINES : 0;
    return this.finish(command, started, {
      output: appendNotes(ending.withheld ? '' : renumberShellErrors(captured.text, firstLine, command.split('\n').length), ending.notes),
      notes: ending.notes,
      exitCode: ending.exitCode,
      timedOut: ending.timedOut,
      truncated: captured.truncated,
      sessionRestarted: revived !== undefined || rebound !== undefined || (ending.restartAfter && !this.closed),
      outputBytes: captured.outputBytes,
      shellExit: ending.shellExit,
      cancelled: ending.cancelled,
      durationMs: sent.durationMs,
    });
  }

  /**
   * When the shell died while idle (or was never restarted after a failed restart), starts a new
   * one before the command runs.
   * @returns the note saying so, or undefined when the shell is alive
   */
  private async reviveShell(): Promise<string | undefined> {
    if (this.shell && !this.shell.exit) return undefined;
    const exit = this.shell?.exit;
    const why = this.shell?.guard.exceeded
      ? this.shell.guard.exceededBy === 'sockets'
        ? `its sockets held more kernel memory than the session's socket budget (${this.shell.guard.socketBytes} bytes) and its processes were killed`
        : `its processes exceeded the process limit (${this.limits.maxProcesses}) and were killed`
      : exit
        ? describeExit(exit)
        : 'not running';
    const revived = note(
      `the shell had exited since the last command (${why}); it was restarted: variables, functions and background jobs are gone, working directory restored`,
    );
    await this.replaceShell(0);
    return revived;
  }

  /**
   * The note for the guarded git files whose bind the current shell's sandbox lost (the person's git on the host replaced
   * them: a rename over a mount point in another namespace drops the mount), or undefined when every bind holds.
   */
  private gitBindsLost(when: 'before' | 'during'): string | undefined {
    const now = inodesOf(this.git.readonly);
    const lost = [...this.boundGit].filter(([p, id]) => now.get(p) !== id).map(([p]) => p);
    if (lost.length === 0) return undefined;
    return note(
      `${lost.join(', ')} ${lost.length === 1 ? 'was' : 'were'} replaced on the host ${when === 'before' ? 'since the last command' : 'during this command'} (the person's git), which drops the sandbox's read-only bind: the session could write ${lost.length === 1 ? 'it' : 'them'} meanwhile, check ${lost.length === 1 ? 'it' : 'them'}; the shell was restarted to bind ${lost.length === 1 ? 'it' : 'them'} again (variables, functions and background jobs are gone)`,
    );
  }

  /**
   * {@link gitBindsLost}, and then a new shell, whose sandbox binds the files as they are now. After the command
   * (`during`), a new shell that cannot be started leaves its note in {@link relaunchFailure} (the command ran).
   */
  private async rebindGit(when: 'before' | 'during'): Promise<string | undefined> {
    const lost = this.gitBindsLost(when);
    this.relaunchFailure = undefined;
    if (lost && !this.closed) {
      if (when === 'before') await this.replaceShell(0);
      else this.relaunchFailure = await this.replaceAfterCommand();
    }
    return lost;
  }

  /**
   * {@link replaceShell} after a command ran: when no new shell can be started (its sandbox refused: a held guard path
   * changed, held-binds.ts; bwrap or bash failed), the command's result still comes back, with this note saying why
   * and that the session has no shell until the next command starts one ({@link reviveShell}, which fails the same
   * way, with the cause, while it lasts).
   * @returns the note, or undefined when the new shell started
   * @throws what {@link replaceShell} throws for a closed session
   */
  private async replaceAfterCommand(): Promise<string | undefined> {
    try {
      await this.replaceShell(0);
      return undefined;
    } catch (err) {
      if (this.closed || !(err instanceof SessionStartError)) throw err;
      return note(
        `the shell could not be started again after this command: ${err.message}; the session has no shell now, and the next command tries to start one`,
      );
    }
  }

  /**
   * The git audit (git-audit.ts `auditGit`), after, without the sandbox, the check of the entries its binds would hold
   * (git-held.ts): what the session renamed into their place is taken back first, so that the audit reads the originals.
   */
  private async auditAll(final: boolean): Promise<GitFinding[]> {
    const held = this.heldNone ? checkHeldGit(this.heldNone.held) : [];
    return [...held, ...(await auditGit(this.gitBaseline!, final))];
  }

  /** Audits the workspace's git metadata (git-audit.ts) and returns the note for a result, or undefined when nothing was found. */
  private async auditGitNote(): Promise<string | undefined> {
    if (!this.gitBaseline) return undefined;
    const found = await this.auditAll(false);
    const text = this.gitNote([...this.watchedFindings.splice(0), ...found]);
    return text === undefined ? undefined : note(text);
  }

  /** The text for the git audit's findings (git-audit.ts `gitAuditNote`), after that of the held entries' (git-held.ts), or undefined for none. */
  private gitNote(findings: readonly GitFinding[], layout: NoteLayout = 'line'): string | undefined {
    const held = heldGitNote(findings.filter(isHeldFinding), this.gitBaseline!.workspace, layout);
    const audit = gitAuditNote(
      findings.filter((f) => !isHeldFinding(f)),
      this.gitBaseline!,
      layout,
    );
    return held && audit ? `${held}${noteJoin(layout)}${audit}` : (held ?? audit);
  }

  /** The command's file (above 2 KiB), its tokens, and its output FIFO with the collector behind it. */
  private prepareCommand(command: string): PreparedCommand {
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
    capture.onCut = (dropped) => this.cutNotes.push(note(drainCutText(dropped)));
    return { commandFile, source, tokens, collector, capture };
  }

  /**
   * Sends the control line and waits for the first of: the records (or a status record whose
   * housekeeping record does not follow), the shell's exit, the timeout, the caller's abort,
   * `close()`. Then stops waiting for all of them and takes the records that came.
   */
  private async sendAndWait(shell: ShellProcess, cmd: PreparedCommand, timeoutMs: number, signal: AbortSignal | undefined): Promise<Sent> {
    let timer: NodeJS.Timeout | undefined;
    let housekeepingTimer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const sent = {
      line: '',
      lineNo: 0,
      readBefore: undefined as number | undefined,
      stderrBefore: 0,
      readAtFirstOutput: null as number | null | undefined,
    };
    // Only bash's redirection, after it read the whole line, opens the FIFO for the command: output that
    // comes while bash's read count does not cover the line was written by another process.
    cmd.capture.onFirstData = () => (sent.readAtFirstOutput = shell.bytesRead());
    const sendAt = Date.now();
    const outcome = await new Promise<Outcome>((resolve) => {
      this.wakeCurrent = resolve;
      shell.watchCommand(
        cmd.tokens,
        () => (housekeepingTimer = setTimeout(() => resolve({ kind: 'unconfirmed' }), HOUSEKEEPING_WAIT_MS)),
        () => resolve({ kind: 'record' }),
      );
      // `exited` only ever resolves (shell.ts), so there is no rejection to handle.
      void shell.exited.then((exit) => resolve({ kind: 'exit', exit }));
      if (Number.isFinite(timeoutMs)) timer = setTimeout(() => resolve({ kind: 'timeout' }), timeoutMs);
      if (signal) {
        onAbort = () => resolve({ kind: 'abort' });
        signal.addEventListener('abort', onAbort, { once: true });
      }
      sent.line = controlLine(cmd.source, cmd.capture.fifo, cmd.tokens, this.lastStatus, this.pendingCd);
      sent.readBefore = shell.bytesRead();
      sent.stderrBefore = shell.stderrBytes();
      sent.lineNo = shell.send(sent.line);
      this.pendingCd = undefined;
    });
    const durationMs = Date.now() - sendAt;
    this.wakeCurrent = undefined;
    clearTimeout(timer);
    clearTimeout(housekeepingTimer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
    // Still watched (the scanner keeps adding to these records) until the command is judged: see settleRecords.
    const records = shell.commandRecords();
    return { ...sent, outcome, durationMs, records };
  }

  /** How the command ended, by what ended the wait ({@link Outcome}). */
  private async settle(shell: ShellProcess, sent: Sent): Promise<Ending> {
    const outcome = sent.outcome;
    switch (outcome.kind) {
      case 'record':
      case 'unconfirmed':
        return this.settleRecords(shell, sent, outcome.kind === 'record');
      case 'exit':
        return this.settleExit(shell, sent, outcome.exit);
      case 'timeout':
        return this.neverRead(shell, sent, { ...notEnded(), timedOut: true, restartAfter: true });
      case 'abort':
      case 'closed':
        return this.neverRead(shell, sent, { ...notEnded(), cancelled: true, restartAfter: outcome.kind === 'abort' });
    }
  }

  /**
   * A command stopped by its timeout or cancelled: when bash's own read count shows that bash had not
   * read its line (a background job holding bash's saved stdin took it, or bash was slow), nothing of the
   * command ran, so what the FIFO holds was written by another process: withheld, and said.
   */
  private neverRead(shell: ShellProcess, sent: Sent, ending: Ending): Ending {
    const readAfter = shell.bytesRead();
    if (sent.readBefore === undefined || readAfter === undefined || readAfter - sent.readBefore >= Buffer.byteLength(sent.line))
      return ending;
    ending.withheld = true;
    ending.notes.push(
      note(
        'the shell had not read this command when it was stopped (another process may have taken it from the control pipe): it may not have run, and anything in its output was written by another process, so its output was withheld',
      ),
    );
    return ending;
  }

  /**
   * The command's records came (or its status record without the housekeeping one): judged with
   * the kernel's facts (bash itself read the control line, and is back waiting for the next one).
   * A proven end gives the exit status and the working directory (a deleted one is left at the
   * next command); anything else restarts the shell with the status unknown.
   */
  private async settleRecords(shell: ShellProcess, sent: Sent, housekeepingCame: boolean): Promise<Ending> {
    const ending = notEnded();
    const readAfter = shell.bytesRead();
    const readLine =
      sent.readBefore === undefined || readAfter === undefined ? undefined : readAfter - sent.readBefore >= Buffer.byteLength(sent.line);
    const idle = housekeepingCame ? await shell.waitIdle(IDLE_WAIT_MS) : undefined;
    // Judged on what bash printed up to its reader: records written by another process before bash's own ones
    // (a job that learned the tokens) are followed by bash's, and any second status record is a forgery.
    if (idle) await shell.recordsSettled();
    const verdict = judgeRecords(sent.records, housekeepingCame, shell.controlPipesIntact(), { readLine, idle });
    if (verdict.kind !== 'ok') {
      ending.notes.push(note(verdict.note));
      ending.restartAfter = true;
      ending.withheld = verdict.kind === 'tampered' && verdict.foreignOutput === true;
      return ending;
    }
    ending.ended = true;
    ending.exitCode = verdict.status;
    this.lastStatus = verdict.status;
    this.followCwd(shell, ending.notes);
    if (sent.records.housekeeping!.flags.includes('l')) {
      ending.notes.push(
        note(
          "the command lowered the shell's resource limits (ulimit) below the session's, which cannot be undone; the shell was restarted",
        ),
      );
      ending.restartAfter = true;
    }
    return ending;
  }

  /** The note for processes the kernel killed at the session's memory limit since the last command, or undefined. */
  private memoryKillNote(): string | undefined {
    const kills = this.shell?.guard.takeMemoryKills() ?? 0;
    if (kills === 0) return undefined;
    return note(
      `the session reached its memory limit (${this.limits.maxSessionMemoryBytes} bytes, kernel memory included) and the kernel killed ${kills === 1 ? 'one of its processes' : `${kills} of its processes`} (SIGKILL)`,
    );
  }

  /** Takes the shell's working directory from the kernel; a deleted one is left for its nearest existing parent at the next command. */
  private followCwd(shell: ShellProcess, notes: string[]): void {
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
  }

  /**
   * bash exited during the command: the exit is the command's (`exit 5`) only with the proof a record
   * needs, that bash itself read the line that was sent: its exit record (protocol.ts `exitTrapText`,
   * written by its EXIT trap before it was reaped) with its own read count covering the line and the
   * status it exited with, and nothing on its own stderr (a line a job took bytes of is a syntax error
   * there). A background job holding bash's saved stdin can take the whole line and shut the socket
   * down, and bash exits at end of file with the status of the line before, having run nothing: its
   * read count then falls short, so the status is unknown and the command's output, which only another
   * process can have written, is withheld. Without an exit record (bash replaced by `exec`, a death by
   * a signal bash cannot catch) nothing proves bash read the line either: a status by code is then
   * unknown and the output withheld too; a death by a signal claims no status and keeps the output.
   */
  private async settleExit(shell: ShellProcess, sent: Sent, exit: ShellExit): Promise<Ending> {
    const ending: Ending = { ...notEnded(), shellExit: exit, restartAfter: true };
    await raceTimeout(shell.stderrEnded, EXIT_STDERR_WAIT_MS);
    const record = shell.exitRecord;
    const readLine =
      record !== undefined && (sent.readBefore === undefined || record.rchar - sent.readBefore >= Buffer.byteLength(sent.line));
    const restarted = 'the shell was restarted (variables, functions and background jobs are gone)';
    // The guard that killed the shell (a process limit passed) is said whatever is known of the command's end.
    const guarded = (): Ending => {
      if (shell.guard.exceeded) ending.notes.push(note(guardNote(shell.guard, this.limits)));
      return ending;
    };
    const unknown = (why: string, withheld: boolean): Ending => {
      ending.exitCode = null;
      ending.withheld = withheld;
      ending.notes.push(
        note(
          `the end of this command could not be confirmed (${why}; the shell exited, ${describeExit(exit)}): its exit status is unknown and it may not have run; ${restarted}${withheld ? '; its output was withheld, since another process may have written it' : ''}`,
        ),
      );
      return guarded();
    };
    if (shell.stderrBytes() !== sent.stderrBefore)
      return unknown(
        'the shell could not parse the line the session sent: another process read part of it from the control pipe',
        !readLine,
      );
    if (record !== undefined && !readLine)
      return unknown('the shell never read the command: another process read it from the control pipe and ended its input', true);
    if (record === undefined && exit.signal !== null && !readFirst(sent))
      return unknown(
        'the shell was killed by a signal before it could prove that it read the command, and its output came while it had not',
        true,
      );
    if (exit.signal === null) {
      if (record === undefined)
        return unknown(
          'the shell left no exit record, which proves it read the command (it was replaced by `exec`, or it could not write the record)',
          true,
        );
      if (record.status !== exit.code) return unknown(`the shell's exit record says status ${record.status}`, true);
    }
    ending.exitCode = exit.code;
    return guarded();
  }

  /**
   * Reads the rest of the command's output. After a proven end: writes the fence (everything the
   * command wrote is in the pipe before it) and reads up to it (a moment: what is before it may
   * still be on its way through the read handle; without it, a pipe kept full by background writers
   * refused the fence, and what was read is all there is). Otherwise kills what is left (for a timeout, cancel or an unconfirmed end
   * the command itself, for a shell exit its background jobs), then reads what is still in the pipe.
   */
  private async drain(shell: ShellProcess, capture: FifoCapture, outcome: Outcome, ended: boolean): Promise<void> {
    if (ended) {
      await capture.writeFence();
      await raceTimeout(capture.fenced, FENCE_WAIT_MS);
      await capture.detach(0);
      return;
    }
    await shell.kill(outcome.kind === 'exit' || outcome.kind === 'record' || outcome.kind === 'unconfirmed' ? 0 : this.options.killGraceMs);
    await capture.detach(KILLED_OUTPUT_WAIT_MS);
  }

  /** Who writes this session's audit lines (audit.ts). */
  private get auditSource(): AuditSource {
    return { sessionId: this.id, runId: this.options.runId, secrets: this.secrets };
  }

  /** The command's {@link CommandResult} (result.ts), after its audit line when there is an audit log. */
  private async finish(command: string, started: number, r: FinishedCommand): Promise<CommandResult> {
    const result = commandResult(r, this.lastCwd, started);
    if (this.options.auditLog)
      await appendAuditLine(this.options.auditLog, commandAuditLine(this.auditSource, command, result, r.exactArgv));
    return result;
  }
}

/** Appends every item of `items` to `target`, one at a time (a spread into `push` overflows the stack past about 120,000 items). */
function pushEach<T>(target: T[], items: readonly T[]): void {
  for (const item of items) target.push(item);
}

/** `dev:ino` of each of `paths` that exists (symlinks not followed). */
function inodesOf(paths: readonly string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const p of paths) {
    try {
      const st = fs.lstatSync(p);
      out.set(p, `${st.dev}:${st.ino}`);
    } catch {
      /* missing: its bind failed or it went away; nothing to compare */
    }
  }
  return out;
}

/**
 * {@link guardedGit} for the workspace `workspace` (absolute, symlinks resolved) of session `sessionId`, with the
 * repositories `walk` found below its root at start (git-walk.ts; none without one). A walk that stopped early is named
 * in `unguarded`, since repositories past where it stopped are not guarded.
 * @throws SessionStartError when the guard refuses (git-guard.ts `GitGuardRefusal`: a git config the
 *   person's git reads could not be read safely), its message saying which file and why
 */
function guardGit(workspace: string, sessionId: string, walk: GitWalk | undefined): GuardedGit {
  try {
    const guarded = guardedGit(workspace, undefined, walk?.found ?? []);
    // Not found, so not guarded: said in every command's result as the repositories past the bound are (git-audit.ts).
    if (walk?.unfinished !== undefined) guarded.unguarded.push(`any below what the walk at start read (it stopped: ${walk.unfinished})`);
    return guarded;
  } catch (err) {
    if (err instanceof GitGuardRefusal)
      throw new SessionStartError(`cannot start bash session on ${workspace}: ${err.message}`, { sessionId, cause: err });
    throw err;
  }
}

/** Whether the workspace's git is audited: in the sandbox, or without it when the session user writes the workspace by ACL entries. */
function audited(sandbox: Who['sandbox'], access: WorkspaceAccess): boolean {
  return sandbox.mode === 'bwrap' || access === 'acl';
}

/**
 * Without the sandbox: the paths it would bind for the workspace's git ({@link guardGit}, and the quarantine), with the
 * session user's write taken off them and each held by a descriptor (git-held.ts).
 * @param uid the session user's uid
 */
function holdNone(
  workspace: string,
  sessionId: string,
  tag: string,
  walk: GitWalk | undefined,
  uid: number,
  quarantine: string | undefined,
): { guard: GuardedGit; held: HeldGit } {
  const guard = guardGit(workspace, sessionId, walk);
  if (quarantine) guard.readonly.push(quarantine);
  const root = gitDirOf(workspace);
  revokeGitWrite(workspace, uid, guard, [...(root ? [root] : []), ...guard.nestedGitDirs]);
  return { guard, held: holdGitEntries(workspace, uid, guard, tag) };
}

/** The note for a shell the guard killed: the process limit, or its sockets' kernel memory past the socket budget (guard.ts). */
function guardNote(guard: ProcessGuard, limits: ResolvedLimits): string {
  if (guard.exceededBy === 'sockets') {
    return `the session's sockets held more kernel memory than its socket budget (${guard.socketBytes} bytes of its ${limits.maxSessionMemoryBytes}: TCP and UDP buffers, netlink messages nobody read); all its processes were killed and the shell restarted`;
  }
  return `the session exceeded its process limit (${limits.maxProcesses} processes/threads); all its processes were killed and the shell restarted`;
}
