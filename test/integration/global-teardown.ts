/** Stops the suite's dev servers (`agent-jobs server --stop`), every one even when stopping another failed. */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { SUITE_SERVERS_ENV, type SuiteServer } from './environment';

export default function globalTeardown(): void {
  const dataDir = process.env.AGENT_JOBS_TEST_SUITE_DATA;
  const servers = JSON.parse(process.env[SUITE_SERVERS_ENV] ?? '[]') as SuiteServer[];
  if (!dataDir) return;
  let failure: Error | undefined;
  for (const { port } of servers) {
    try {
      execFileSync(process.execPath, [path.resolve(__dirname, '../../bin/agent-jobs.js'), 'server', '--stop', '--port', String(port)], {
        env: { ...process.env, AGENT_JOBS_DATA_DIR: dataDir },
        stdio: 'inherit',
      });
    } catch (err) {
      failure ??= err instanceof Error ? err : new Error(String(err));
    }
  }
  rmSync(dataDir, { recursive: true, force: true });
  if (failure) throw failure;
}
