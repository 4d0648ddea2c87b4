/**
 * The gRPC port's HTTP/2 server: node:http2 in cleartext (h2c, prior knowledge), with the
 * limits it is given against abusive peers and the sessions it holds, for a graceful close.
 *
 * node:http2 (nghttp2) does the protocol: flow control, HPACK, CONTINUATION, padding and
 * the RFC's errors. Node 20's nghttp2 (1.61) also carries the mitigations for "rapid reset"
 * (CVE-2023-44487: a session whose client resets streams faster than nghttp2's rate limit is
 * ended with ENHANCE_YOUR_CALM) and CONTINUATION floods (CVE-2024-28182: header blocks over
 * too many CONTINUATION frames end the session). The options below bound the rest.
 *
 * An HTTP/1 client on this port: nghttp2 reads its request line as a bad client preface, and
 * node answers with its SETTINGS and a GOAWAY and closes the connection; node's own HTTP/1
 * client reports a parse error (HPE_INVALID_CONSTANT), never an HTTP status. (Node falls
 * back to HTTP/1 only on TLS servers, through ALPN; the lean server this replaced answered
 * 505.)
 */
import http2 from 'node:http2';
import type net from 'node:net';

/** The largest message a method reads, decompressed included (RESOURCE_EXHAUSTED beyond; Connect's own default is 4 GiB). */
export const MAX_MESSAGE_BYTES = 1 << 20;

/**
 * Node's defaults, tightened where a default invites abuse (node's maxConcurrentStreams is
 * 2^32-1) and widened where our own traffic needs it (a tag move writes one message to each
 * Subscribe stream of a connection at once; gRPC answers are tens of KB).
 */
const H2C_OPTIONS: http2.ServerOptions & net.ServerOpts = {
  // Nagle off (node:http sets it, node:http2 does not): a call's HEADERS, DATA and trailers
  // leave in separate writes when they come from separate ticks (the Connect router's
  // path), and Nagle with the client's delayed ACKs held each answer back by up to 40 ms.
  noDelay: true,
  settings: {
    maxConcurrentStreams: 10_000,
    maxHeaderListSize: 64 * 1024,
    // 1 MiB per stream so that one request message (at most MAX_MESSAGE_BYTES) needs no
    // window update round trip; nghttp2 replenishes it as the handler reads.
    initialWindowSize: 1 << 20,
    enablePush: false,
  },
  // MB of outbound queue, header tables, unacknowledged PINGs and SETTINGS a session may
  // hold before nghttp2 refuses new streams (ENHANCE_YOUR_CALM); node's default is 10.
  maxSessionMemory: 32,
  // Header fields per block (node's default); a gRPC call carries about ten.
  maxHeaderListPairs: 128,
  // A PING or SETTINGS flood whose ACKs the peer does not read fills our outbound queue;
  // nghttp2 stops reading once 10 / 32 ACKs wait (node's defaults, kept on purpose).
  maxOutstandingPings: 10,
  maxSettings: 32,
  // Protocol-violating frames and refused streams a session may send before it is ended.
  maxSessionInvalidFrames: 1000,
  maxSessionRejectedStreams: 100,
  // A connection that never completes the preface is closed after 10 s.
  unknownProtocolTimeout: 10_000,
};

/** A node:http2 server plus the sessions it holds (for a graceful close). */
export interface H2cServer {
  server: http2.Http2Server;
  /** GOAWAY on every session: new streams are refused, open ones finish, then each closes. */
  closeSessions(): void;
  /** Ends every session at once (open streams see CANCEL). */
  destroySessions(): void;
}

/**
 * A cleartext HTTP/2 server handing every stream to `onStream`. Stream errors (a client
 * reset, a write after the peer left) are passed to `onStreamError`: node emits them on the
 * stream, and an 'error' without a listener would end the process.
 */
export function createH2cServer(
  onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, rawHeaders: string[]) => void,
  onStreamError: (e: Error) => void,
  idleTimeoutMs: number,
): H2cServer {
  const server = http2.createServer(H2C_OPTIONS);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    // A session with no frame in or out for idleTimeoutMs is destroyed. Besides idle clients,
    // this ends a flooding peer that left: once its unread ACKs fill our queue nghttp2 stops
    // reading the socket, so the peer's close is never seen and the session would stay.
    // Callers pass more than the Subscribe heartbeat, so an open stream is never idle.
    session.setTimeout(idleTimeoutMs, () => session.destroy());
    // Session errors (a peer's protocol error, a socket reset) end the session; node emits
    // them as 'sessionError' on the server, which has no need of a listener.
  });
  server.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
    stream.on('error', onStreamError);
    onStream(stream, headers, rawHeaders);
  });
  return {
    server,
    closeSessions: () => {
      for (const s of sessions) s.close();
    },
    destroySessions: () => {
      for (const s of sessions) s.destroy();
    },
  };
}
