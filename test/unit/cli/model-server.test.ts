/** `agent-jobs model-server` failures come with a one-line hint, like every CLI error. */
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { modelServerError } from '../../../src/cli/commands/model-server';
import { CliError } from '../../../src/cli/errors';
import { runModelServerCommand, type ModelServerCommandOptions } from '../../../src/dev/model-server';

const SCRIPT = join(__dirname, '../../fixtures/scripts/two-tool-uses.json');
const quiet = new Writable({ write: (_chunk, _enc, done) => done() });

/** What the command reports when the server cannot start with `opts`. */
async function failure(opts: Omit<ModelServerCommandOptions, 'out'>): Promise<CliError> {
  try {
    const abort = new AbortController();
    abort.abort();
    await runModelServerCommand({ ...opts, out: quiet, signal: abort.signal });
  } catch (err) {
    return modelServerError(err, opts);
  }
  throw new Error('the model server started');
}

describe('model-server errors', () => {
  let busy: Server | undefined;
  afterEach(async () => {
    await new Promise((r) => (busy ? busy.close(r) : r(undefined)));
    busy = undefined;
  });

  test('a port in use: the listen error and a hint to choose another --port', async () => {
    busy = createServer();
    await new Promise<void>((r) => busy!.listen(0, '127.0.0.1', r));
    const port = (busy.address() as { port: number }).port;
    const e = await failure({ script: SCRIPT, port });
    expect(e.message).toBe(`listen EADDRINUSE: address already in use 127.0.0.1:${port}`);
    expect(e.hint).toBe(`another process listens on port ${port}: choose another --port, or leave --port out for a free one`);
  });

  test("a --host that is not this machine's", async () => {
    const e = await failure({ script: SCRIPT, host: '192.0.2.1' });
    expect(e.message).toMatch(/EADDRNOTAVAIL/);
    expect(e.hint).toMatch(/^--host 192\.0\.2\.1 is not an address of this machine/);
  });

  test('a missing script file', async () => {
    const e = await failure({ script: '/nonexistent/script.json' });
    expect(e.message).toMatch(/^Cannot read model-server script \/nonexistent\/script\.json: ENOENT/);
    expect(e.hint).toMatch(/fix the script file/);
  });

  test('anything else still gets a hint', () => {
    expect(modelServerError(new Error('boom'), {}).hint).toBe('see `agent-jobs model-server --help`');
  });
});
