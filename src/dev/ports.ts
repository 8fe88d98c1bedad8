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
