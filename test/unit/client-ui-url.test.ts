/**
 * The UI link `start` and `status` print (AgentJobsClient.servedUiUrl): none for a local server whose UI port takes no
 * connection (a dev server started `--headless`), the link when something serves there, and `TEMPORAL_UI_URL` as set.
 */
import { createServer, type Server } from 'node:net';
import { Connection } from '@temporalio/client';
import { AgentJobsClient } from '../../src/client';

/** A TCP listener on a free port of 127.0.0.1, and that port. */
async function listener(): Promise<{ server: Server; port: number }> {
  const server = createServer((s) => s.destroy());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as { port: number }).port };
}

const clientAt = (grpcPort: number): AgentJobsClient =>
  new AgentJobsClient(Connection.lazy({ address: `127.0.0.1:${grpcPort}` }), { address: `127.0.0.1:${grpcPort}`, namespace: 'default' });

const saved = process.env.TEMPORAL_UI_URL;
afterEach(() => {
  if (saved === undefined) delete process.env.TEMPORAL_UI_URL;
  else process.env.TEMPORAL_UI_URL = saved;
});

test('a local server with nothing on its UI port (--headless) gets no UI link; one that serves it gets the link', async () => {
  delete process.env.TEMPORAL_UI_URL;
  const ui = await listener();
  try {
    const served = clientAt(ui.port - 1000);
    expect(await served.servedUiUrl('wf-1', 'r1')).toBe(`http://localhost:${ui.port}/namespaces/default/workflows/wf-1/r1/history`);
    const closed = await listener();
    const port = closed.port;
    await new Promise<void>((resolve) => closed.server.close(() => resolve()));
    // Nothing listens on `port` now: the server that would be at port - 1000 serves no UI.
    expect(await clientAt(port - 1000).servedUiUrl('wf-1')).toBeNull();
    expect(clientAt(port - 1000).uiUrl('wf-1')).toBe(`http://localhost:${port}/namespaces/default/workflows/wf-1`);
  } finally {
    await new Promise<void>((resolve) => ui.server.close(() => resolve()));
  }
});

test('TEMPORAL_UI_URL is given as it is, unprobed', async () => {
  process.env.TEMPORAL_UI_URL = 'https://ui.example.com/';
  expect(await clientAt(1).servedUiUrl('wf-1')).toBe('https://ui.example.com/namespaces/default/workflows/wf-1');
});
