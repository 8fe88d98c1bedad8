/**
 * What arrives on the wire of a Claude call, below the SDK: every chunk of a
 * response body, `ping` events included. The SDK's stream drops `event: ping`
 * before any listener sees it (`@anthropic-ai/sdk` core/streaming.js,
 * `fromSSEResponse`), and the API sends pings while the model works on a long
 * answer ("Event streams may also include any number of ping events",
 * https://platform.claude.com/docs/en/build-with-claude/streaming): with the
 * thinking omitted (`display: "omitted"`, the default on Opus 5.5) a healthy
 * stream may carry nothing else for minutes. The idle watchdog of `callClaude`
 * counts these bytes, so a pinging stream stays alive while a silent
 * connection is still aborted.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** Called with the byte count of each body chunk (and with 0 when the response headers arrive). */
export type WireListener = (bytes: number) => void;

/** The listener of the call whose code runs now (set by {@link onWire}, read by the fetch wrapper when the request starts). */
const current = new AsyncLocalStorage<WireListener>();

/**
 * Runs `start` (which makes the HTTP request, e.g. `anthropic.messages.stream(...)`)
 * so that the response of every request it starts reports to `listener`: the
 * fetch of {@link observingFetch} captures the listener when it is called, so it
 * keeps reporting while the body streams, after `start` returned.
 */
export function onWire<T>(listener: WireListener, start: () => T): T {
  return current.run(listener, start);
}

/**
 * A `fetch` for the Anthropic client that reports each response's headers and
 * body chunks to the listener of the {@link onWire} call that started it (none
 * outside one: the response is returned as it came). The body is passed on
 * unchanged, chunk for chunk.
 */
export function observingFetch(inner: typeof fetch = globalThis.fetch): typeof fetch {
  return async (input, init) => {
    const listener = current.getStore();
    const response = await inner(input, init);
    if (listener === undefined || response.body === null) return response;
    listener(0);
    const counted = response.body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk, controller) {
          listener(chunk.byteLength);
          controller.enqueue(chunk);
        },
      }),
    );
    const observed = new Response(counted, { status: response.status, statusText: response.statusText, headers: response.headers });
    // The SDK logs the URL; a new Response has none of its own.
    Object.defineProperty(observed, 'url', { value: response.url });
    return observed;
  };
}
