/**
 * Finding a free local port. Its own module, with nothing but `node:net`, so
 * that Jest's global setup can load it (`devserver.ts` pulls in execa, whose
 * ESM-only helpers a global setup cannot load).
 */
import { createServer } from 'node:net';

/** A TCP port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/** How many port choices a server start on a free port makes before it gives up. */
export const FREE_PORT_ATTEMPTS = 5;

/**
 * Whether a server's failed start met a port another process took after it was chosen (its
 * output says `bind: address already in use`): then a new choice may succeed.
 * @param output the error message or output of the failed start
 */
export function portWasTaken(output: string): boolean {
  return /address already in use/.test(output);
}
