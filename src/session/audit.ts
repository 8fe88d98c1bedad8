/**
 * The audit log: one JSON line per command, appended to a file, so an
 * operator can see what every session ran, where and with what outcome,
 * whether or not the workflow history is still around.
 */
import { appendFile } from 'node:fs/promises';
import type { EditOutcome } from './edit';
import { redactSecrets, type SecretValue } from './env';
import type { CommandResult } from './result';
import type { ShellExit } from './shell';

/** One line of the audit log (JSON, newline-terminated). */
export interface AuditLine {
  /** When the command ended, ISO 8601 UTC. */
  time: string;
  sessionId: string;
  /** `BashSessionOptions.runId`, when given. */
  runId?: string;
  /** The command as given, with known secret values redacted. */
  command: string;
  exitCode: number | null;
  /** Wall time of the command, ms. */
  durationMs: number;
  /** Bytes the command wrote (stdout + stderr), before capping. */
  outputBytes: number;
  truncated: boolean;
  timedOut: boolean;
  cancelled: boolean;
  sessionRestarted: boolean;
  /** Working directory after the command. */
  cwd: string;
  shellExit?: ShellExit;
  /** Set when the command ran through `BashSession.runExact` (auto-approved by the policy): the exact argv. */
  exactArgv?: string[];
  /**
   * Set for a text editor command (`BashSession.edit`; `command` is then its rule words,
   * `str_replace_based_edit_tool <command> <path>`): whether a file was written, the SHA-256
   * of the diff (the hash a person approved), whether it waited for a person, the error text.
   */
  edit?: { applied: boolean; diffSha256?: string; needsApproval?: boolean; error?: string };
}

/**
 * Appends one line. A failure to write (missing directory, full disk) does
 * not fail the command: it is reported with `process.emitWarning`
 * (type `AgentJobsAuditWarning`) and the command's result is returned as usual.
 */
export async function appendAuditLine(file: string, line: AuditLine): Promise<void> {
  try {
    await appendFile(file, JSON.stringify(line) + '\n', { mode: 0o600 });
  } catch (err) {
    process.emitWarning(`cannot append to audit log ${file}: ${(err as Error).message}`, { type: 'AgentJobsAuditWarning' });
  }
}

/** Who writes an audit line: the session, its run, and the secret values redacted from the line. */
export interface AuditSource {
  sessionId: string;
  /** `BashSessionOptions.runId`, when given. */
  runId?: string | undefined;
  secrets: SecretValue[];
}

/** The fields every line starts with, in this order: time (now), session, run. */
function lineHead(source: AuditSource): Pick<AuditLine, 'time' | 'sessionId' | 'runId'> {
  return {
    time: new Date().toISOString(),
    sessionId: source.sessionId,
    ...(source.runId ? { runId: source.runId } : {}),
  };
}

/**
 * The line of a command (`BashSession.run`, or `runExact` with its `exactArgv`): its text and
 * argv with secrets redacted, and the fields of its result.
 */
export function commandAuditLine(source: AuditSource, command: string, result: CommandResult, exactArgv?: string[]): AuditLine {
  return {
    ...lineHead(source),
    command: redactSecrets(command, source.secrets),
    exitCode: result.exitCode,
    durationMs: result.durationMs,
    outputBytes: result.outputBytes,
    truncated: result.truncated,
    timedOut: result.timedOut,
    cancelled: result.cancelled,
    sessionRestarted: result.sessionRestarted,
    cwd: result.cwd,
    ...(result.shellExit ? { shellExit: result.shellExit } : {}),
    ...(exactArgv ? { exactArgv: exactArgv.map((a) => redactSecrets(a, source.secrets)) } : {}),
  };
}

/**
 * The line of a text editor command (`BashSession.edit`): `command` its rule words, what it did
 * (the first 500 characters of an error), no exit code or output.
 * @param durationMs wall time of the edit, ms
 * @param cwd the working directory its paths were relative to
 */
export function editAuditLine(source: AuditSource, command: string, durationMs: number, cwd: string, outcome: EditOutcome): AuditLine {
  return {
    ...lineHead(source),
    command: redactSecrets(command, source.secrets),
    exitCode: null,
    durationMs,
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
      ...(outcome.isError ? { error: redactSecrets(outcome.text.slice(0, 500), source.secrets) } : {}),
    },
  };
}
