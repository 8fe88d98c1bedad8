/**
 * The codec server (src/codec/server.ts) through real HTTP, as the Temporal
 * UI and CLI call it and as an attacker would: no token, a wrong token, a
 * token of the right length, another origin, another method, bodies that
 * are not the protocol's shape, a payload under a key it lacks.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { EncryptionCodec, MAX_BODY_BYTES, readCodecKeys, startCodecServer, type CodecServer } from '../../../src/codec';

const TOKEN = 'tok_' + randomBytes(16).toString('hex');
const UI = 'http://localhost:8233';
let dir: string;
let codec: EncryptionCodec;
let server: CodecServer;
/** The lines `onRefused` gave, in order. */
const refused: string[] = [];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-codec-server-'));
  writeFileSync(path.join(dir, 'keys'), `k1 ${randomBytes(32).toString('base64')}\n`);
  codec = new EncryptionCodec(readCodecKeys(path.join(dir, 'keys')));
  server = await startCodecServer({
    codec,
    token: TOKEN,
    corsOrigins: [UI, 'http://127.0.0.1:8233'],
    onRefused: (line) => refused.push(line),
  });
});
afterAll(async () => {
  await server.close();
  rmSync(dir, { recursive: true, force: true });
});

const json = (p: Payload): { metadata: Record<string, string>; data: string } => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});
const fromJson = (p: { metadata: Record<string, string>; data: string }): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data, 'base64'),
});

function post(pathname: string, body: unknown, headers: Record<string, string> = { Authorization: `Bearer ${TOKEN}` }): Promise<Response> {
  return fetch(`${server.url}${pathname}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
}

test('decode through HTTP gives what the codec gives; encode gives payloads the codec decodes', async () => {
  const [enc] = await codec.encode([defaultPayloadConverter.toPayload({ task: 'add up the numbers' })]);
  const res = await post('/decode', { payloads: [json(enc!)] });
  expect(res.status).toBe(200);
  const { payloads } = (await res.json()) as { payloads: Array<{ metadata: Record<string, string>; data: string }> };
  expect(defaultPayloadConverter.fromPayload(fromJson(payloads[0]!))).toEqual({ task: 'add up the numbers' });

  const encRes = await post('/encode', { payloads: [json(defaultPayloadConverter.toPayload('hello'))] });
  const encoded = ((await encRes.json()) as { payloads: Array<{ metadata: Record<string, string>; data: string }> }).payloads;
  expect(Buffer.from(encoded[0]!.metadata['encoding']!, 'base64').toString()).toBe('binary/encrypted');
  expect(defaultPayloadConverter.fromPayload((await codec.decode([fromJson(encoded[0]!)]))[0]!)).toBe('hello');
});

test('the routes: a namespace segment and the token as a path segment (for the UI) work too', async () => {
  const [enc] = await codec.encode([defaultPayloadConverter.toPayload(42)]);
  for (const route of ['/default/decode', `/t/${TOKEN}/decode`, `/t/${TOKEN}/default/decode`]) {
    const res = await post(route, { payloads: [json(enc!)] }, route.startsWith('/t/') ? {} : undefined);
    expect({ route, status: res.status }).toEqual({ route, status: 200 });
  }
});

test.each([
  ['no token', {}],
  ['a wrong token of the same length', { Authorization: `Bearer ${TOKEN.slice(0, -1)}${TOKEN.endsWith('a') ? 'b' : 'a'}` }],
  ['the token as Basic auth', { Authorization: `Basic ${TOKEN}` }],
  ['a prefix of the token', { Authorization: `Bearer ${TOKEN.slice(0, 8)}` }],
  ['the token with a suffix', { Authorization: `Bearer ${TOKEN}x` }],
])('%s: 401, nothing decoded', async (_what, headers) => {
  const [enc] = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
  const res = await post('/decode', { payloads: [json(enc!)] }, headers);
  expect(res.status).toBe(401);
  expect(await res.text()).not.toContain('secret');
});

test('a wrong token in the path: 401', async () => {
  expect((await post(`/t/${'x'.repeat(TOKEN.length)}/decode`, { payloads: [] }, {})).status).toBe(401);
});

test("CORS: the UI's origin gets its preflight and its answer; another origin gets 403 and no CORS header", async () => {
  const pre = await fetch(`${server.url}/decode`, {
    method: 'OPTIONS',
    headers: {
      Origin: UI,
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type,x-namespace,authorization',
    },
  });
  expect(pre.status).toBe(204);
  expect(pre.headers.get('access-control-allow-origin')).toBe(UI);
  expect(pre.headers.get('access-control-allow-headers')).toBe('Content-Type, X-Namespace, Authorization');
  expect(pre.headers.get('access-control-allow-methods')).toBe('POST');
  expect(pre.headers.get('access-control-allow-credentials')).toBe('true');
  const ok = await post('/decode', { payloads: [] }, { Origin: UI, Authorization: `Bearer ${TOKEN}` });
  expect(ok.headers.get('access-control-allow-origin')).toBe(UI);

  for (const origin of ['http://evil.example', 'http://localhost:8234', 'null', `${UI}.evil.example`]) {
    const res = await post('/decode', { payloads: [] }, { Origin: origin, Authorization: `Bearer ${TOKEN}` });
    expect({ origin, status: res.status, acao: res.headers.get('access-control-allow-origin') }).toEqual({
      origin,
      status: 403,
      acao: null,
    });
  }
});

test('unknown paths 404, other methods 405, bad bodies 400, a payload under an unknown key 422 naming it', async () => {
  expect((await post('/decrypt', { payloads: [] })).status).toBe(404);
  expect((await post('/a/b/decode', { payloads: [] })).status).toBe(404);
  expect((await fetch(`${server.url}/decode`, { headers: { Authorization: `Bearer ${TOKEN}` } })).status).toBe(405);
  expect((await post('/decode', 'not json')).status).toBe(400);
  expect((await post('/decode', { nope: [] })).status).toBe(400);
  expect((await post('/decode', { payloads: [{ metadata: { encoding: 5 } }] })).status).toBe(400);
  const other = path.join(dir, 'other');
  writeFileSync(other, `k2 ${randomBytes(32).toString('base64')}\n`);
  const [enc] = await new EncryptionCodec(readCodecKeys(other)).encode([defaultPayloadConverter.toPayload('x')]);
  const res = await post('/decode', { payloads: [json(enc!)] });
  expect(res.status).toBe(422);
  expect(((await res.json()) as { error: string }).error).toContain('encrypted with key "k2"');
});

// These send 32 MiB through HTTP: on a machine loaded by other work that takes more than jest's 5 s default.
test('a body over the limit: 413, refused on its declared length', async () => {
  const res = await post('/decode', `{"payloads":["${'a'.repeat(MAX_BODY_BYTES)}"]}`);
  expect(res.status).toBe(413);
});

test('a chunked body over the limit (no declared length): 413 once the limit is passed', async () => {
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent > MAX_BODY_BYTES) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  const res = await fetch(`${server.url}/decode`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${TOKEN}` },
    body,
    duplex: 'half',
  });
  expect(res.status).toBe(413);
});

test('a short token is refused at start', async () => {
  await expect(startCodecServer({ codec, token: 'short', corsOrigins: [] })).rejects.toThrow(RangeError);
});

test('a refused request is reported in one line that names the reason and never a token, given or right', async () => {
  refused.length = 0;
  const nearly = TOKEN.slice(0, -1) + (TOKEN.endsWith('a') ? 'b' : 'a');
  expect((await post('/decode', { payloads: [] }, { Authorization: `Bearer ${nearly}` })).status).toBe(401);
  expect((await post(`/t/${nearly}/decode`, { payloads: [] }, {})).status).toBe(401);
  expect((await post(`/t/${TOKEN}/encode`, { nothing: 1 }, {})).status).toBe(400);
  expect((await post('/decode', { payloads: [] }, { Authorization: `Bearer ${TOKEN}`, Origin: 'http://evil.example' })).status).toBe(403);
  expect((await post('/decode', { payloads: [] })).status).toBe(200);
  expect(refused).toEqual([
    'refused POST /decode: a valid token is required (401)',
    'refused POST /decode: a valid token is required (401)',
    'refused POST /encode: the body has no "payloads" array (400)',
    'refused POST /decode: origin http://evil.example is not allowed (codec-server --cors-origin) (403)',
  ]);
  expect(refused.join('\n')).not.toContain(TOKEN.slice(4, 20));
});
