/**
 * Attacks on the codec server's token check and routes (src/codec/server.ts) not covered by
 * test/unit/codec/server.test.ts: a path token beside a wrong Bearer, the token percent-encoded,
 * malformed percent-encoding, extra segments, `null` and look-alike origins, a POST with an
 * allowed origin but no token. All held.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { EncryptionCodec, readCodecKeys, startCodecServer, type CodecServer } from '../../../src/codec';

const TOKEN = 'tok_' + randomBytes(16).toString('hex');
const UI = 'http://localhost:8233';
let dir: string;
let server: CodecServer;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-codec-attack-'));
  writeFileSync(path.join(dir, 'keys'), `k1 ${randomBytes(32).toString('base64')}\n`);
  server = await startCodecServer({ codec: new EncryptionCodec(readCodecKeys(path.join(dir, 'keys'))), token: TOKEN, corsOrigins: [UI] });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const body = JSON.stringify({ payloads: [{ metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: '' }] });
const post = (p: string, headers: Record<string, string> = {}): Promise<Response> =>
  fetch(server.url + p, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body });

test('without the exact token nothing is encoded or decoded, whatever the route', async () => {
  const cases: Array<[string, Record<string, string>]> = [
    [`/t/${TOKEN}/decode`, { Authorization: 'Bearer wrong-token-wrong-token' }],
    [`/t/${TOKEN.slice(0, -1)}/decode`, {}],
    [`/t/${TOKEN}x/encode`, {}],
    [`/t/${encodeURIComponent(TOKEN + '\0')}/decode`, {}],
    ['/t/%E0%A4%A/decode', {}],
    [`/x/t/${TOKEN}/decode`, {}],
    ['/decode', { Authorization: `bearer ${TOKEN}` }],
    ['/decode', { Authorization: `Bearer  ${TOKEN}` }],
    ['/decode', { Authorization: `Basic ${Buffer.from(`:${TOKEN}`).toString('base64')}` }],
    ['/decode', { Origin: UI }],
    ['/decode', { Cookie: `token=${TOKEN}` }],
    [`/decode?token=${TOKEN}`, {}],
  ];
  for (const [p, h] of cases) {
    const r = await post(p, h);
    expect({ p, h, status: r.status }).toEqual({ p, h, status: expect.any(Number) });
    expect({ p, h, ok: r.ok }).toEqual({ p, h, ok: false });
  }
  // The encoded form of the real token in the path is the token: accepted (the UI URL-encodes nothing else).
  expect((await post(`/t/${encodeURIComponent(TOKEN)}/encode`)).status).toBe(200);
});

test('origins are compared exactly: null, a suffix, another scheme or port get no CORS and a 403, token or not', async () => {
  for (const origin of ['null', `${UI}.evil.com`, 'https://localhost:8233', 'http://localhost:82330', 'http://LOCALHOST:8233', `${UI}/`]) {
    const r = await post('/encode', { Origin: origin, Authorization: `Bearer ${TOKEN}` });
    expect({ origin, status: r.status, acao: r.headers.get('access-control-allow-origin') }).toEqual({ origin, status: 403, acao: null });
  }
});
