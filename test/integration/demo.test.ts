/**
 * The README's first command, as a new user meets it: `npm run demo` runs
 * `node dist/demo.js`, which here finds no Temporal server at its address,
 * starts one, starts a worker, runs the example task with the scripted model
 * server, approves through the CLI and leaves the server running. A fresh
 * server lists a new worker among its pollers only after a second or so; the
 * demo once failed on exactly that, every time it started the server itself.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort, serverAnswers } from '../../src/devserver';

const ROOT = path.resolve(__dirname, '../..');
const run = promisify(execFile);

describe('npm run demo', () => {
  test('on an address where no server answers: starts one, completes the run with an approval, says how to stop the server', async () => {
    const port = await freePort();
    const address = `127.0.0.1:${port}`;
    const data = mkdtempSync(path.join(tmpdir(), 'agent-jobs-demo-'));
    const env: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: address, AGENT_JOBS_DATA_DIR: data };
    delete env.ANTHROPIC_API_KEY;
    delete env.ANTHROPIC_BASE_URL;
    try {
      const { stdout } = await run(process.execPath, [path.join(ROOT, 'dist', 'demo.js')], { env, cwd: ROOT });
      expect(stdout).toContain(`starting a Temporal dev server at ${address}`);
      expect(stdout).toMatch(/no ANTHROPIC_API_KEY: Claude's answers come from the SCRIPTED Messages API server/);
      expect(stdout).toMatch(
        /\$ agent-jobs approve demo-\d+ --sha [0-9a-f]{12} --reason "demo: looks safe" --by demo\ndemo: approved toolu_\w+ in demo-\d+/,
      );
      expect(stdout).toMatch(/demo: finished: completed in \d+ turns/);
      expect(stdout).toMatch(/see the run in the Temporal UI: http:\/\/localhost:\d+\/namespaces\/default\/workflows\/demo-\d+\//);
      expect(stdout).toContain(`stop it with: npx agent-jobs server --stop --port ${port}`);
      expect(await serverAnswers(address)).toBe(true);
    } finally {
      await run(process.execPath, [path.join(ROOT, 'bin', 'agent-jobs.js'), 'server', '--stop', '--port', String(port)], { env }).catch(
        () => undefined,
      );
      rmSync(data, { recursive: true, force: true });
    }
    expect(await serverAnswers(address)).toBe(false);
  });
});
