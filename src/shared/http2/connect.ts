/**
 * The Connect router on the lean HTTP/2 server: what connectNodeAdapter does for node:http2
 * (find the method's universal handler by path, hand it the request as a
 * UniversalServerRequest, write its UniversalServerResponse back), for the calls the hot
 * paths leave to Connect: the Connect protocol, gRPC-Web, JSON codecs, compressed requests.
 */
import { Code, ConnectError, createConnectRouter, type ConnectRouter, type ConnectRouterOptions } from '@connectrpc/connect';
import type { UniversalServerRequest, UniversalServerResponse } from '@connectrpc/connect/protocol';
import { compressionBrotli, compressionGzip } from '@connectrpc/connect-node';
import { encodeHeaders } from './hpack.js';
import type { H2Stream } from './server.js';

/** Connection-specific headers, which HTTP/2 forbids (RFC 9113 8.2.2). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);
const NOT_FOUND = encodeHeaders([':status', '404']);
/** The largest message a method reads, decompressed included (RESOURCE_EXHAUSTED beyond; Connect's own default is 4 GiB). */
export const MAX_MESSAGE_BYTES = 1 << 20;

export interface ConnectH2Options extends ConnectRouterOptions {
  routes(router: ConnectRouter): void;
  /** A handler failed other than by the client going away. */
  onError(e: unknown, method: string): void;
}

/** A stream handler serving the router's methods; unknown paths answer 404. */
export function connectH2Handler(options: ConnectH2Options): (stream: H2Stream) => void {
  const router = createConnectRouter({ acceptCompression: [compressionGzip, compressionBrotli], readMaxBytes: MAX_MESSAGE_BYTES, ...options });
  options.routes(router);
  const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
  return (stream) => {
    const handler = handlers.get(stream.path.split('?', 1)[0]!);
    if (!handler) return stream.respond(NOT_FOUND, true);
    const header = new Headers();
    const f = stream.fields;
    for (let i = 0; i < f.length; i += 2) header.append(f[i]!, f[i + 1]!);
    const abort = new AbortController();
    stream.onClose(() => abort.abort(stream.resetCode !== null ? new ConnectError('the client reset the stream', Code.Canceled) : undefined));
    const req: UniversalServerRequest = {
      httpVersion: '2.0',
      method: stream.method,
      url: `http://${stream.authority || stream.header('host') || 'localhost'}${stream.path}`,
      header,
      body: stream.body(),
      signal: abort.signal,
    };
    handler(req)
      .then((res) => writeResponse(stream, res))
      .catch((e: unknown) => {
        if (!stream.isClosed) stream.reset();
        if (ConnectError.from(e).code !== Code.Aborted && ConnectError.from(e).code !== Code.Canceled) options.onError(e, `${handler.service.typeName}/${handler.method.name}`);
      });
  };
}

function headerList(status: number | null, h: Headers | undefined): Buffer {
  const list: string[] = status === null ? [] : [':status', String(status)];
  h?.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) list.push(name, value);
  });
  return encodeHeaders(list);
}

async function writeResponse(stream: H2Stream, res: UniversalServerResponse): Promise<void> {
  const it = res.body?.[Symbol.asyncIterator]();
  let trailers: Buffer | null = null;
  try {
    if (it) {
      // The first chunk before the headers: the implementation may still set headers.
      let chunk = await it.next();
      stream.respond(headerList(res.status, res.header));
      for (; chunk.done !== true; chunk = await it.next()) {
        if (!stream.write(chunk.value)) await stream.drain();
        if (stream.isClosed) return;
      }
    }
    let hasTrailers = false;
    res.trailer?.forEach(() => (hasTrailers = true));
    if (hasTrailers) trailers = headerList(null, res.trailer);
    if (!stream.responded) {
      if (!trailers) return stream.respond(headerList(res.status, res.header), true);
      stream.respond(headerList(res.status, res.header));
    }
    stream.end(trailers);
  } finally {
    await it?.return?.().catch(() => {});
  }
}
