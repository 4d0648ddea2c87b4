/**
 * The gRPC port's server: one TCP listener that serves HTTP/2 in cleartext (h2c, prior
 * knowledge: gRPC, Connect, gRPC-Web) and HTTP/1.1 (Connect unary JSON and binary, gRPC-Web,
 * plain GETs such as /health) on the same port. Each new connection is routed by its first
 * bytes: the HTTP/2 client preface (`PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`, RFC 9113 3.4) goes to
 * node:http2, anything else to node:http. The bytes read to decide are put back
 * (`socket.unshift`) and the socket is handed to the chosen server (its 'connection' event);
 * node:http2 takes over the socket's handle and first reads what was unshifted.
 *
 * node:http2 (nghttp2) does the protocol: flow control, HPACK, CONTINUATION, padding and
 * the RFC's errors. Node 20's nghttp2 (1.61) also carries the mitigations for "rapid reset"
 * (CVE-2023-44487: a session whose client resets streams faster than nghttp2's rate limit is
 * ended with ENHANCE_YOUR_CALM) and CONTINUATION floods (CVE-2024-28182: header blocks over
 * too many CONTINUATION frames end the session). The options below bound the rest.
 *
 * A connection that sends nothing, or a prefix of the preface and then nothing, is closed
 * after `prefaceTimeoutMs` (10 s by default), before either server sees it.
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import { answerClientError } from './http/wire-guards.js';

/** The largest message a method reads, decompressed included (RESOURCE_EXHAUSTED beyond; Connect's own default is 4 GiB). */
export const MAX_MESSAGE_BYTES = 1 << 20;

/**
 * Node's defaults, tightened where a default invites abuse (node's maxConcurrentStreams is
 * 2^32-1) and widened where our own traffic needs it (a tag move writes one message to each
 * Subscribe stream of a connection at once; gRPC answers are tens of KB).
 */
const H2C_OPTIONS: http2.ServerOptions = {
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
  // A session whose preface bytes were right but whose first SETTINGS never comes is closed
  // after 10 s (the front below already waited for the preface itself).
  unknownProtocolTimeout: 10_000,
};

/**
 * The HTTP/1.1 side's limits. Request bodies are bounded by the Connect router
 * (readMaxBytes = MAX_MESSAGE_BYTES); the headers by node's 16 KiB.
 */
const HTTP1_OPTIONS: http.ServerOptions = {
  // Headers within 10 s, the whole request within 30 s (node: 60 s and 300 s).
  headersTimeout: 10_000,
  requestTimeout: 30_000,
  keepAliveTimeout: 5_000,
  // How often node checks those two timeouts (its default is 30 s).
  connectionsCheckingInterval: 1_000,
};

/** The HTTP/2 client preface (RFC 9113 3.4). */
const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface PortServerOptions {
  /** Every HTTP/2 stream. */
  onStream: (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, rawHeaders: string[]) => void;
  /**
   * Stream errors (a client reset, a write after the peer left): node emits them on the
   * stream, and an 'error' without a listener would end the process.
   */
  onStreamError: (e: Error) => void;
  /** Every HTTP/1.1 request (absent: HTTP/1 connections are closed unanswered). */
  onHttp1Request?: (req: http.IncomingMessage, res: http.ServerResponse) => void;
  /** An HTTP/2 session with no frame in or out for this long is destroyed. */
  idleTimeoutMs: number;
  /** A connection that has not shown which protocol it speaks by then is closed (10 s). */
  prefaceTimeoutMs?: number;
  /** Overrides of the HTTP/1.1 server's timeouts (tests shorten them). */
  http1Timeouts?: Pick<http.ServerOptions, 'headersTimeout' | 'requestTimeout' | 'keepAliveTimeout' | 'connectionsCheckingInterval'>;
}

/** The listening server plus the HTTP/2 sessions and HTTP/1.1 connections it holds (for a graceful close). */
export interface H2cServer {
  /** The listening socket server (what accepts; tests count its connections). */
  server: net.Server;
  /**
   * Graceful: GOAWAY on every HTTP/2 session (new streams are refused, open ones finish,
   * then each closes); idle HTTP/1.1 connections are closed, busy ones after their answer.
   */
  closeSessions(): void;
  /** Ends every session and connection at once (open streams see CANCEL). */
  destroySessions(): void;
}

/**
 * The server of port 8002: HTTP/2 streams to `onStream`, HTTP/1.1 requests to
 * `onHttp1Request`, on one listener (see the top of this file).
 */
export function createH2cServer(opts: PortServerOptions): H2cServer {
  const { onStream, onStreamError, idleTimeoutMs } = opts;
  const prefaceTimeoutMs = opts.prefaceTimeoutMs ?? 10_000;
  // Set by closeSessions: what arrives after it is not served.
  let closing = false;
  const h2 = http2.createServer(H2C_OPTIONS);
  const sessions = new Set<http2.ServerHttp2Session>();
  h2.on('session', (session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    // A connection accepted before the port began closing and whose preface came after.
    if (closing) session.close();
    // A session with no frame in or out for idleTimeoutMs is destroyed. Besides idle clients,
    // this ends a flooding peer that left: once its unread ACKs fill our queue nghttp2 stops
    // reading the socket, so the peer's close is never seen and the session would stay.
    // Callers pass more than the Subscribe heartbeat, so an open stream is never idle.
    session.setTimeout(idleTimeoutMs, () => session.destroy());
    // Session errors (a peer's protocol error, a socket reset) end the session; node emits
    // them as 'sessionError' on the server, which has no need of a listener.
  });
  h2.on('stream', (stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, _flags: number, rawHeaders: string[]) => {
    stream.on('error', onStreamError);
    onStream(stream, headers, rawHeaders);
  });

  const h1Busy = new Set<http.ServerResponse>();
  const h1 = http.createServer({ ...HTTP1_OPTIONS, ...opts.http1Timeouts }, (req, res) => {
    // Once the port is closing, each answer ends its connection (no keep-alive).
    if (closing) res.shouldKeepAlive = false;
    h1Busy.add(res);
    res.once('close', () => h1Busy.delete(res));
    opts.onHttp1Request!(req, res);
  });
  // What node's parser refuses gets the error body, as on the other HTTP ports.
  h1.on('clientError', answerClientError);
  // node:http starts its connection tracking (headersTimeout and requestTimeout checks,
  // closeIdleConnections) when the server listens; this one never listens itself (the
  // front below does), so it is told it does. Its check interval is cleared by h1.close().
  h1.emit('listening');
  const h1Sockets = new Set<net.Socket>();
  // Connections that have not yet shown their protocol.
  const undecided = new Set<net.Socket>();

  const server = net.createServer({
    // Nagle off (node:http sets it, node:http2 does not): a call's HEADERS, DATA and trailers
    // leave in separate writes when they come from separate ticks (the Connect router's
    // path), and Nagle with the client's delayed ACKs held each answer back by up to 40 ms.
    noDelay: true,
  });
  server.on('connection', (socket) => {
    if (closing) {
      socket.destroy();
      return;
    }
    undecided.add(socket);
    let seen: Buffer = Buffer.alloc(0);
    const timer = setTimeout(() => socket.destroy(), prefaceTimeoutMs);
    const hand = (to: 'h2' | 'h1') => {
      clearTimeout(timer);
      undecided.delete(socket);
      socket.off('data', onData);
      socket.off('error', onError);
      socket.off('close', onClose);
      socket.pause();
      socket.unshift(seen);
      if (to === 'h2') {
        h2.emit('connection', socket);
      } else if (opts.onHttp1Request && !closing) {
        h1Sockets.add(socket);
        socket.once('close', () => h1Sockets.delete(socket));
        h1.emit('connection', socket);
        socket.resume();
      } else {
        socket.destroy();
      }
    };
    const onData = (chunk: Buffer) => {
      seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
      const n = Math.min(seen.length, PREFACE.length);
      if (!seen.subarray(0, n).equals(PREFACE.subarray(0, n))) hand('h1');
      else if (seen.length >= PREFACE.length) hand('h2');
      // else: a prefix of the preface so far; wait for more (or the timeout).
    };
    const onError = () => socket.destroy();
    const onClose = () => {
      clearTimeout(timer);
      undecided.delete(socket);
    };
    socket.on('data', onData);
    socket.on('error', onError);
    socket.once('close', onClose);
  });
  return {
    server,
    closeSessions: () => {
      closing = true;
      // A connection that has sent no request yet has nothing to finish.
      for (const s of undecided) s.destroy();
      for (const s of sessions) s.close();
      for (const res of h1Busy) if (!res.headersSent) res.shouldKeepAlive = false;
      // Closes the idle keep-alive connections and stops the timeout checks.
      h1.close();
    },
    destroySessions: () => {
      for (const s of sessions) s.destroy();
      h1.closeAllConnections();
      for (const s of h1Sockets) s.destroy();
    },
  };
}
