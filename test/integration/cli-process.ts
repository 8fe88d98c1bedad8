/** The CLI as a person runs it: a child process of bin/agent-jobs.js against a given Temporal address. */
import { execFile } from 'node:child_process';
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
  try {
    const r = await run(process.execPath, [CLI, ...args], { env: { ...process.env, TEMPORAL_ADDRESS: address } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}
