/**
 * The bash session: a persistent, scrubbed, resource-limited bash per agent
 * run, whose every command comes back with the truth about what happened.
 *
 * Public surface:
 * - {@link BashSession} (`start`, `run`, `restart`, `close`, `pid`, `id`, `cwd`)
 *   with {@link BashSessionOptions}, {@link RunOptions}, {@link CommandResult};
 * - {@link ResourceLimits} and {@link ProcessGuardMode};
 * - {@link buildSessionEnv} (the scrubbed environment every session gets),
 *   {@link redactSecrets}, {@link isSecretEnvName};
 * - output helpers ({@link sanitizeText}, {@link processOutput}) for callers
 *   that clean other command output the same way;
 * - {@link SessionHost}: what a process's sessions share (the process guard's
 *   watchdog, lookups made once); a worker makes one and passes it to each;
 * - {@link reapOrphanedSessions}: a worker calls it at start to kill what is
 *   left of sessions whose worker died;
 * - error classes, each documenting when it is thrown.
 *
 * How it works (protocol, background jobs, fork-bomb defence): see
 * `protocol.ts`, `capture.ts` and `guard.ts`, and README.md beside this file.
 */
export {
  BashSession,
  EXACT_VIEW_NOTE,
  ExactRefusedError,
  DEFAULT_KILL_GRACE_MS,
  DEFAULT_TIMEOUT_MS,
  START_TIMEOUT_MS,
  type BashSessionOptions,
  type CommandResult,
  type RunOptions,
  type RunExactOptions,
  type ShellExit,
} from './session';
export {
  performEdit,
  resolveEditPath,
  planEdit,
  viewFile,
  MAX_EDIT_FILE_BYTES,
  type EditGate,
  type EditOutcome,
  type ProposedEdit,
} from './edit';
export { unifiedDiff } from './edit-diff';
export { outsideWhy, resolveInView, resolveTrustedProgram, staysInside, TRUSTED_PATH, type ExactLauncher, type ViewCheck } from './exact';
export { DEFAULT_LIMITS, type ResourceLimits } from './limits';
export type { ProcessGuardMode } from './guard';
export {
  buildSessionEnv,
  isSecretEnvName,
  isSecretEnvValue,
  MIN_REDACTED_SECRET_LENGTH,
  NON_INTERACTIVE_ENV,
  redactSecrets,
  SECRET_NAME_PATTERNS,
  SECRET_VALUE_PATTERNS,
  type SecretValue,
  type SessionEnv,
  type SessionEnvOptions,
} from './env';
export { DEFAULT_MAX_OUTPUT_BYTES, processOutput, sanitizeText, stripAnsi, type CappedOutput } from './output';
export type { AuditLine } from './audit';
export { reapOrphanedSessions, type ReapResult } from './orphans';
export { SessionHost } from './host';
export { findSeccompLauncher, SECCOMP_LAUNCHER_PYTHONS, seccompLauncherNote, type SeccompLauncherLookup } from './seccomp-launch';
export {
  DEFAULT_SESSION_USER,
  ensureSessionUser,
  makeNonDumpable,
  MINIMAL_ENV,
  resolveIdentity,
  sessionUserName,
  workerIsRoot,
  type SessionIdentity,
} from './identity';
export {
  containerName,
  containerSandboxProblem,
  findBwrap,
  resolveSandbox,
  sandboxedSpawnArgs,
  sandboxModeFromEnv,
  type HostProbe,
  type SandboxMode,
  type SandboxOptions,
} from './sandbox';
export {
  InvalidCommandError,
  InvalidSessionOptionError,
  SessionClosedError,
  SessionCwdError,
  SessionError,
  SessionStartError,
} from './errors';
