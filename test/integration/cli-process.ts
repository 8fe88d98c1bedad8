/** The CLI as a person runs it: a child process of bin/agent-jobs.js against a given Temporal address. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { constants as osConstants } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const CLI = path.resolve(__dirname, '../../bin/agent-jobs.js');
const run = promisify(execFile);

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `agent-jobs <args>` with TEMPORAL_ADDRESS set to `address`; never throws for a non-zero exit. */
export async function cli(address: string, ...args: string[]): Promise<CliResult> {
  return cliWith(address, {}, ...args);
}

/** {@link cli} with more environment (`AGENT_JOBS_UPDATE_TIMEOUT`, ...). */
export async function cliWith(address: string, env: Record<string, string>, ...args: string[]): Promise<CliResult> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { env: { ...process.env, TEMPORAL_ADDRESS: address, ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

/**
 * How long a CLI process that connects and answers at once takes here, now: `agent-jobs list`
 * against `address`, in ms. Tests that say "answers without waiting" compare against it,
 * measured in the same run, rather than a quiet machine's wall clock (a CLI process alone takes
 * 5 s and more on a machine whose cores are all busy).
 */
export async function cliFloorMs(address: string): Promise<number> {
  const started = Date.now();
  const r = await cli(address, 'list', '--json');
  if (r.code !== 0) throw new Error(`agent-jobs list failed (exit ${r.code}): ${r.stderr.trim()}`);
  return Date.now() - started;
}

/** A CLI process still running: what it printed so far, and how it ended. */
export interface CliProcess {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** Resolves once it exited, with its exit code (128 + n for a signal n it did not handle). */
  exited: Promise<number>;
}

/** Starts `agent-jobs <args>` with TEMPORAL_ADDRESS set to `address` (and `env` on top) and returns at once. */
export function spawnCli(address: string, args: string[], env: Record<string, string> = {}): CliProcess {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...process.env, TEMPORAL_ADDRESS: address, ...env } });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number>((resolve) =>
    child.once('close', (code, signal) => resolve(code ?? 128 + (signal ? osConstants.signals[signal] : 0))),
  );
  return { child, stdout: () => out, stderr: () => err, exited };
}
