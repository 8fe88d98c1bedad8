/**
 * The audit log: one JSON line per command, appended to a file, so an
 * operator can see what every session ran, where and with what outcome,
 * whether or not the workflow history is still around.
 */
import { appendFile } from 'node:fs/promises';
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
