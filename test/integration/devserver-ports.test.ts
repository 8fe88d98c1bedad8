/**
 * A port chosen free can be taken before the server binds it (test runs side by side on one
 * machine met this). The retry on a free port (`startDevServerOnFreePort`, the suite's global
 * setup) chooses again only when the failure says so: these tests take the port for real and
 * check that what the server and the CLI then say is what `portWasTaken` recognises.
 */
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type AddressInfo, type Server } from 'node:net';
import path from 'node:path';
import { startDevServer, startDevServerOnFreePort } from '../../src/dev/devserver';
import { portWasTaken } from '../../src/dev/ports';

const CLI = path.resolve(__dirname, '../../bin/agent-jobs.js');

/** A port held by a listening socket of this process until `close()`. */
async function heldPort(): Promise<{ port: number; holder: Server }> {
  const holder = createServer().listen(0, '127.0.0.1');
  await once(holder, 'listening');
  return { port: (holder.address() as AddressInfo).port, holder };
}

describe('a dev server whose port another process took', () => {
  test('startDevServer fails with an error that portWasTaken recognises', async () => {
    const { port, holder } = await heldPort();
    try {
      const err = await startDevServer({ port, headless: true }).then(
        () => null,
        (e: Error) => e,
      );
      expect(err).not.toBeNull();
      expect(portWasTaken(err!.message)).toBe(true);
    } finally {
      holder.close();
    }
  });

  test('`agent-jobs server --detach` says so on stderr and exits 1', async () => {
    const { port, holder } = await heldPort();
    try {
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          [CLI, 'server', '--port', String(port), '--in-memory', '--headless', '--detach', '--json'],
          (error, _out, err) => resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stderr: err }),
        );
        child.stdin?.end();
      });
      expect(code).toBe(1);
      expect(portWasTaken(stderr)).toBe(true);
      // Headless: the server has no UI port to blame.
      expect(stderr).toContain(`its gRPC port ${port}, or the HTTP API port`);
    } finally {
      holder.close();
    }
  });

  test('another failure is not taken for a taken port, and a free port starts', async () => {
    expect(portWasTaken('the Temporal dev server did not start on 127.0.0.1:1: timed out')).toBe(false);
    const server = await startDevServerOnFreePort({ headless: true });
    try {
      expect(server.address).toBe(`127.0.0.1:${server.port}`);
    } finally {
      await server.stop();
    }
  });
});
