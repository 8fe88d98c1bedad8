/**
 * The codec server: Temporal's Codec Server protocol over this product's
 * payload codec, so the Temporal UI and `temporal workflow show` show
 * decoded payloads to whoever holds the token
 * (https://docs.temporal.io/codec-server,
 * https://docs.temporal.io/production-deployment/data-encryption).
 *
 * - `POST /encode` and `POST /decode` (also under a namespace segment,
 *   `/{namespace}/decode`, for the CLI's `--codec-endpoint` templating):
 *   body and answer `{"payloads": [{"metadata": {k: base64}, "data": base64}]}`
 *   (proto3 JSON: every bytes field in base64). An unknown path is a 404, a
 *   known path with another method a 405, a body that is not that shape a
 *   400, a body over {@link MAX_BODY_BYTES} a 413, a payload the keys
 *   cannot decrypt a 422 naming the key id, a claim-check reference whose
 *   blob is missing or altered a 422 naming the key and the store.
 * - **Auth**: every request needs the token, as `Authorization: Bearer
 *   <token>` (the Temporal CLI's `--codec-auth`) or as the first path
 *   segment, `/t/<token>/decode` (for the Web UI, whose codec settings hold
 *   an endpoint URL only); compared in constant time; else 401.
 * - **CORS** for the UI's origins only: a preflight (`OPTIONS`) from an
 *   allowed origin gets 204 with `Access-Control-Allow-Origin` set to that
 *   origin, POST, the headers `Content-Type, X-Namespace, Authorization`
 *   and credentials allowed; any other origin gets no CORS headers (the
 *   browser then refuses the answer) and a 403.
 */
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { CodecDecodeError } from './codec';

/** The largest request body accepted, bytes (a workflow task's payloads stay far below). */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** How the codec server is set up. */
export interface CodecServerOptions {
  /** The product's codecs as one (`chainCodecs(productCodecs(...))`: decryption, and the claim check's references resolved), or the {@link EncryptionCodec} alone. */
  codec: PayloadCodec;
  /** The token every request must carry (see the module doc). At least 16 characters. */
  token: string;
  /** Origins the UI is served from, exactly as the browser sends `Origin` (`http://localhost:8233`). */
  corsOrigins: readonly string[];
  /** @default 0 (a free port) */
  port?: number;
  /** @default '127.0.0.1' */
  host?: string;
  /**
   * Called with one line for every request answered 4xx (`refused POST /decode: a valid token is
   * required (401)`), so whoever runs the server sees why a client got nothing (the Temporal CLI only
   * says "context deadline exceeded"). The line never holds the token: the path is named by its
   * operation only. @default none
   */
  onRefused?: (line: string) => void;
}

/** A running codec server. */
export interface CodecServer {
  /** `http://host:port`, without the token. */
  url: string;
  port: number;
  /** Stops listening and ends every open connection (kept-alive ones included); resolves once closed. */
  close(): Promise<void>;
}

/** The answer to a bad request: an HTTP status and one line. */
class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

type JsonPayload = { metadata?: Record<string, string>; data?: string };

function fromJson(p: unknown, index: number): Payload {
  const bad = (why: string): HttpError => new HttpError(400, `payloads[${index}]: ${why}`);
  if (typeof p !== 'object' || p === null || Array.isArray(p)) throw bad('not an object');
  const { metadata = {}, data = '' } = p as JsonPayload;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) throw bad('metadata is not an object');
  if (typeof data !== 'string') throw bad('data is not base64 text');
  const out: Record<string, Uint8Array> = {};
  for (const [k, v] of Object.entries(metadata)) {
    if (typeof v !== 'string') throw bad(`metadata.${k} is not base64 text`);
    out[k] = Buffer.from(v, 'base64');
  }
  return { metadata: out, data: Buffer.from(data, 'base64') };
}

function toJson(p: Payload): JsonPayload {
  const metadata: Record<string, string> = {};
  for (const [k, v] of Object.entries(p.metadata ?? {})) metadata[k] = Buffer.from(v).toString('base64');
  return { metadata, data: Buffer.from(p.data ?? new Uint8Array()).toString('base64') };
}

async function readBody(req: IncomingMessage): Promise<string> {
  // A declared length over the limit is refused before a byte is buffered; a chunked body is counted as it comes.
  const declared = Number(req.headers['content-length'] ?? 0);
  if (declared > MAX_BODY_BYTES) throw new HttpError(413, `the body is over ${MAX_BODY_BYTES} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `the body is over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sameToken(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The request's path as a refusal line may show it: `/encode` or `/decode`, never a token in it. */
function refusedPath(url: string | undefined): string {
  try {
    const { op } = route(new URL(url ?? '/', 'http://codec').pathname);
    return op ? `/${op}` : 'an unknown path';
  } catch {
    return 'an unknown path';
  }
}

/**
 * The route of a request path: `encode` or `decode`, after an optional
 * `/t/<token>` and an optional namespace segment; the token given in the path.
 */
function route(pathname: string): { op?: 'encode' | 'decode'; pathToken?: string } {
  const parts = pathname.split('/').filter(Boolean);
  let pathToken: string | undefined;
  if (parts[0] === 't' && parts.length >= 2) {
    pathToken = decodeURIComponent(parts[1]!);
    parts.splice(0, 2);
  }
  const last = parts[parts.length - 1];
  if (parts.length > 2 || (last !== 'encode' && last !== 'decode')) return { pathToken };
  return { op: last, pathToken };
}

/**
 * Starts the codec server (see the module doc).
 * @throws RangeError when the token is shorter than 16 characters
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  if (options.token.length < 16) throw new RangeError('the codec server token must be at least 16 characters');
  const allowed = new Set(options.corsOrigins);

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const origin = req.headers.origin;
    if (origin !== undefined) {
      if (!allowed.has(origin)) throw new HttpError(403, `origin ${origin} is not allowed (codec-server --cors-origin)`);
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
    }
    const { op, pathToken } = route(new URL(req.url ?? '/', 'http://codec').pathname);
    if (!op) throw new HttpError(404, 'not found: POST /encode or /decode');
    if (req.method === 'OPTIONS') {
      res.setHeader('Access-Control-Allow-Methods', 'POST');
      res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
      res.setHeader('Access-Control-Max-Age', '600');
      res.writeHead(204).end();
      return;
    }
    if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      throw new HttpError(405, `${req.method} is not allowed: POST only`);
    }
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const given = bearer ?? pathToken;
    if (given === undefined || !sameToken(given, options.token)) throw new HttpError(401, 'a valid token is required');
    let body: unknown;
    try {
      body = JSON.parse(await readBody(req));
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw new HttpError(400, 'the body is not JSON');
    }
    const list = (body as { payloads?: unknown } | null)?.payloads;
    if (!Array.isArray(list)) throw new HttpError(400, 'the body has no "payloads" array');
    const payloads = list.map(fromJson);
    let out: Payload[];
    try {
      out = op === 'encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
    } catch (err) {
      if (err instanceof CodecDecodeError) throw new HttpError(422, err.message);
      throw err;
    }
    res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify({ payloads: out.map(toJson) }));
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : 500;
      const message = err instanceof HttpError ? err.message : 'internal error';
      if (status < 500) options.onRefused?.(`refused ${req.method ?? '?'} ${refusedPath(req.url)}: ${message} (${status})`);
      // A body left unread makes Node close the connection after this answer; saying so keeps a client
      // (undici, the UI's fetch) from sending its next request on it and getting ECONNRESET.
      if (!res.headersSent) res.writeHead(status, { 'Content-Type': 'application/json', ...(req.complete ? {} : { Connection: 'close' }) });
      res.end(JSON.stringify({ error: message }));
      req.resume();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
  });
  const { port, address } = server.address() as AddressInfo;
  return {
    url: `http://${address.includes(':') ? `[${address}]` : address}:${port}`,
    port,
    // Kept-alive connections (the UI's, or a client still sending a refused body) would hold close() open: ended too.
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
