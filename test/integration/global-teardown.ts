/** Stops the suite's dev server (`agent-jobs server --stop`). */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import path from 'node:path';

export default function globalTeardown(): void {
  const port = process.env.AGENT_JOBS_TEST_SUITE_PORT;
  const dataDir = process.env.AGENT_JOBS_TEST_SUITE_DATA;
  if (!port || !dataDir) return;
  execFileSync(process.execPath, [path.resolve(__dirname, '../../bin/agent-jobs.js'), 'server', '--stop', '--port', port], {
    env: { ...process.env, AGENT_JOBS_DATA_DIR: dataDir },
    stdio: 'inherit',
  });
  rmSync(dataDir, { recursive: true, force: true });
}
