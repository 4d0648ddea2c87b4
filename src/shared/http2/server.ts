/**
 * A lean HTTP/2 server (RFC 9113, cleartext with prior knowledge) for the gRPC port.
 *
 * Why not node:http2: on a bare server answering the same 41 KB gRPC message, node:http2
 * costs about 40 µs of CPU per call, against about 26 µs for node:http's HTTP/1.1 and
 * about 18 µs for this server (measured with h2load and wrk on this 2-core machine). Node's
 * HTTP/2 wraps every stream in C++ and JS objects, a Duplex and several ticks; a gRPC call
 * needs none of that: one HEADERS and one DATA in, HEADERS, DATA and trailers out. Here the
 * frames of every call that completes in the same turn of the event loop (audit records are
 * committed in groups) go to the socket in one vectored write.
 *
 * What it does: the connection preface, SETTINGS, PING, GOAWAY, RST_STREAM, WINDOW_UPDATE,
 * HEADERS with CONTINUATION and padding, DATA with padding; flow control both ways (the
 * peer's stream and connection windows and SETTINGS_INITIAL_WINDOW_SIZE changes; our windows
 * are replenished as the handler consumes); the limits it advertises (concurrent streams,
 * header list size, frame size) are enforced; protocol errors end the stream or the
 * connection with the RFC's error code; a client that resets streams in a flood is sent
 * away (ENHANCE_YOUR_CALM). Server push and priorities are not used (PRIORITY is ignored).
 * HPACK is hpack.ts: a full decoder, and literals without indexing when encoding.
 *
 * Streams are handed to one callback (`onStream`) with their request headers; see H2Stream
 * for reading the body and answering.
 */
import net from 'node:net';
import { HpackDecoder, encodeHeaders } from './hpack.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

// Frame types.
const DATA = 0;
const HEADERS = 1;
const PRIORITY = 2;
const RST_STREAM = 3;
const SETTINGS = 4;
const PUSH_PROMISE = 5;
const PING = 6;
const GOAWAY = 7;
const WINDOW_UPDATE = 8;
const CONTINUATION = 9;

// Flags.
const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY_FLAG = 0x20;

/** Error codes (RFC 9113 7). */
export const H2Error = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

const MAX_WINDOW = 2 ** 31 - 1;
const DEFAULT_WINDOW = 65535;
/** Our SETTINGS_MAX_FRAME_SIZE: the default, so it is not sent. */
const MAX_FRAME = 16384;
/** Our receive window per stream (SETTINGS_INITIAL_WINDOW_SIZE) and per connection. */
const STREAM_WINDOW = 1 << 20;
const CONNECTION_WINDOW = 16 << 20;
/** SETTINGS_MAX_HEADER_LIST_SIZE, and the most a header block may take on the wire. */
const MAX_HEADER_LIST = 64 * 1024;
/** Frames one header block may span (a 64 KiB block needs 5 at the default frame size). */
const MAX_CONTINUATIONS = 32;
/** Stream data is held back while the socket has this much unsent. */
const SOCKET_HIGH_WATER = 1 << 20;
/**
 * A peer that sends and does not read (PING or SETTINGS floods, requests it never reads
 * the answers of) makes our answers pile up in the socket: past this much unsent, the
 * connection is ended with ENHANCE_YOUR_CALM (stream data alone stops at SOCKET_HIGH_WATER).
 */
const MAX_WRITE_BACKLOG = 8 << 20;
/** H2Stream.write answers false once this much is queued on the stream. */
const STREAM_HIGH_WATER = 64 * 1024;
/** Chunks under this size are joined into one buffer before the socket write. */
const SMALL = 1024;
/** Resets by the client tolerated per connection and second (a "rapid reset" flood). */
const MAX_RESETS_PER_SECOND = 2000;
const PREFACE_TIMEOUT_MS = 10_000;

export interface H2ServerOptions {
  /** SETTINGS_MAX_CONCURRENT_STREAMS (default 10,000). */
  maxConcurrentStreams?: number;
  /**
   * Request body bytes a connection may hold at once, received but not yet taken by the
   * handlers (default 64 MiB). A DATA frame that would pass it resets its stream
   * (ENHANCE_YOUR_CALM): flow control alone would let 10,000 streams hold 1 MiB each.
   */
  maxBufferedBytes?: number;
  /** Called with each new stream. A throw resets the stream (INTERNAL_ERROR). */
  onStream(stream: H2Stream): void;
  /** Called with errors of a handler that threw. */
  onError?(e: unknown): void;
}

/** A lean HTTP/2 server: a net.Server plus the sessions it holds (for a graceful close). */
export interface H2Server {
  server: net.Server;
  /** Sends GOAWAY on every connection; each closes once its streams are done. */
  closeSessions(): void;
  /** Closes every connection at once. */
  destroySessions(): void;
}

export function createH2Server(opts: H2ServerOptions): H2Server {
  const sessions = new Set<Session>();
  const server = net.createServer({ noDelay: true }, (sock) => {
    const s = new Session(sock, opts);
    sessions.add(s);
    sock.once('close', () => sessions.delete(s));
  });
  return {
    server,
    closeSessions: () => {
      for (const s of sessions) s.shutdown();
    },
    destroySessions: () => {
      for (const s of sessions) s.sock.destroy();
    },
  };
}

/** The 9-byte frame header. */
function frameHeader(len: number, type: number, flags: number, id: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b[0] = len >>> 16;
  b[1] = (len >>> 8) & 0xff;
  b[2] = len & 0xff;
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(id, 5);
  return b;
}

function frame(type: number, flags: number, id: number, payload: Buffer): Buffer {
  const b = Buffer.allocUnsafe(9 + payload.length);
  b[0] = payload.length >>> 16;
  b[1] = (payload.length >>> 8) & 0xff;
  b[2] = payload.length & 0xff;
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(id, 5);
  payload.copy(b, 9);
  return b;
}

function u32(...values: number[]): Buffer {
  const b = Buffer.allocUnsafe(4 * values.length);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, 4 * i));
  return b;
}

/** A stream- or connection-level protocol error, thrown inside frame handling. */
class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

class Session {
  private readonly decoder = new HpackDecoder(4096, MAX_HEADER_LIST);
  private readonly streams = new Map<number, H2Stream>();
  private readonly maxStreams: number;
  private readonly maxBuffered: number;
  /** Request body bytes received and not yet taken by the handlers (see H2Stream.hold). */
  buffered = 0;
  private pending: Buffer | null = null;
  private prefaceDone = false;
  private prefaceTimer: NodeJS.Timeout | null;
  private serverPreface: Buffer | null;
  /** Highest stream id the client opened. */
  private lastStreamId = 0;
  /** A header block waiting for its CONTINUATION frames. */
  private block: { id: number; endStream: boolean; chunks: Buffer[]; size: number } | null = null;
  // What the peer allows us to send.
  peerInitialWindow = DEFAULT_WINDOW;
  peerMaxFrame = 16384;
  connSendWindow = DEFAULT_WINDOW;
  // What we allow the peer to send.
  private connRecvWindow = CONNECTION_WINDOW;
  private connRecvUnacked = 0;
  /** Streams with data waiting for window or for the socket. */
  private readonly waiting = new Set<H2Stream>();
  private out: Buffer[] = [];
  private outBytes = 0;
  private flushScheduled = false;
  private goingAway = false;
  private dead = false;
  private resets = 0;
  private resetsSince = 0;

  constructor(
    readonly sock: net.Socket,
    private readonly opts: H2ServerOptions,
  ) {
    this.maxStreams = opts.maxConcurrentStreams ?? 10_000;
    this.maxBuffered = opts.maxBufferedBytes ?? 64 << 20;
    sock.setNoDelay(true);
    sock.on('data', (d: Buffer) => this.onData(d));
    sock.on('drain', () => this.pumpWaiting());
    sock.on('error', () => {});
    sock.once('close', () => this.onClose());
    this.prefaceTimer = setTimeout(() => sock.destroy(), PREFACE_TIMEOUT_MS);
    this.prefaceTimer.unref();
    // Our SETTINGS, then open the connection window beyond the initial 64 KiB.
    const settings = Buffer.allocUnsafe(18);
    settings.writeUInt16BE(3, 0); // MAX_CONCURRENT_STREAMS
    settings.writeUInt32BE(this.maxStreams, 2);
    settings.writeUInt16BE(4, 6); // INITIAL_WINDOW_SIZE
    settings.writeUInt32BE(STREAM_WINDOW, 8);
    settings.writeUInt16BE(6, 12); // MAX_HEADER_LIST_SIZE
    settings.writeUInt32BE(MAX_HEADER_LIST, 14);
    // Sent once the client's preface is in, so that an HTTP/1 client reads its 505 first.
    this.serverPreface = Buffer.concat([frame(SETTINGS, 0, 0, settings), frame(WINDOW_UPDATE, 0, 0, u32(CONNECTION_WINDOW - DEFAULT_WINDOW))]);
  }

  // ---- reading ----

  private onData(d: Buffer): void {
    if (this.dead) return;
    if (this.sock.writableLength + this.outBytes > MAX_WRITE_BACKLOG) {
      // Nothing more is read from it, nor kept for it: its GOAWAY would wait behind the backlog.
      this.fail(H2Error.ENHANCE_YOUR_CALM);
      this.sock.destroy();
      return;
    }
    let buf = this.pending ? Buffer.concat([this.pending, d]) : d;
    this.pending = null;
    let o = 0;
    if (!this.prefaceDone) {
      const n = Math.min(buf.length, PREFACE.length);
      if (buf.compare(PREFACE, 0, n, 0, n) !== 0) return this.notHttp2(buf);
      if (buf.length < PREFACE.length) {
        this.pending = buf;
        return;
      }
      this.prefaceDone = true;
      clearTimeout(this.prefaceTimer!);
      this.prefaceTimer = null;
      this.push(this.serverPreface!);
      this.serverPreface = null;
      o = PREFACE.length;
    }
    try {
      while (buf.length - o >= 9) {
        const len = (buf[o]! << 16) | (buf[o + 1]! << 8) | buf[o + 2]!;
        if (len > MAX_FRAME) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'frame larger than SETTINGS_MAX_FRAME_SIZE');
        if (buf.length - o < 9 + len) break;
        const type = buf[o + 3]!;
        const flags = buf[o + 4]!;
        const id = buf.readUInt32BE(o + 5) & 0x7fffffff;
        const p = o + 9;
        o = p + len;
        this.onFrame(type, flags, id, buf.subarray(p, p + len));
        if (this.dead) return;
      }
    } catch (e) {
      if (e instanceof ConnectionError) return this.fail(e.code);
      this.opts.onError?.(e);
      return this.fail(H2Error.INTERNAL_ERROR);
    }
    if (o < buf.length) this.pending = buf.subarray(o);
  }

  /** Not an HTTP/2 client: an HTTP/1 request is told so, anything else is closed. */
  private notHttp2(buf: Buffer): void {
    this.dead = true;
    if (/^[A-Z]{3,7} /.test(buf.subarray(0, 8).toString('latin1'))) {
      const body = 'this port speaks HTTP/2 only (gRPC, Connect and gRPC-Web over h2c)\n';
      this.sock.end(`HTTP/1.1 505 HTTP Version Not Supported\r\ncontent-type: text/plain\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n${body}`);
    } else {
      this.sock.destroy();
    }
  }

  private onFrame(type: number, flags: number, id: number, payload: Buffer): void {
    if (this.block && (type !== CONTINUATION || id !== this.block.id)) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'expected CONTINUATION');
    switch (type) {
      case DATA:
        return this.onDataFrame(flags, id, payload);
      case HEADERS:
        return this.onHeaders(flags, id, payload);
      case PRIORITY:
        if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) this.resetStream(id, H2Error.FRAME_SIZE_ERROR);
        return;
      case RST_STREAM:
        return this.onReset(id, payload);
      case SETTINGS:
        return this.onSettings(flags, id, payload);
      case PUSH_PROMISE:
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'a client may not push');
      case PING:
        if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'PING on a stream');
        if (payload.length !== 8) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'PING of the wrong size');
        if (!(flags & ACK)) this.push(frame(PING, ACK, 0, payload));
        return;
      case GOAWAY:
        if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'GOAWAY on a stream');
        this.goingAway = true;
        this.closeIfIdle();
        return;
      case WINDOW_UPDATE:
        return this.onWindowUpdate(id, payload);
      case CONTINUATION:
        return this.onContinuation(flags, id, payload);
      default:
        return; // unknown frame types are ignored (RFC 9113 5.5)
    }
  }

  private onHeaders(flags: number, id: number, payload: Buffer): void {
    if (id === 0 || id % 2 === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS on a stream the client may not open');
    let start = 0;
    let end = payload.length;
    if (flags & PADDED) {
      if (payload.length < 1) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad padding');
      start = 1;
      end -= payload[0]!;
    }
    if (flags & PRIORITY_FLAG) start += 5;
    if (end < start) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad padding');
    const fragment = payload.subarray(start, end);
    if (flags & END_HEADERS) return this.onHeaderBlock(id, (flags & END_STREAM) !== 0, fragment);
    this.block = { id, endStream: (flags & END_STREAM) !== 0, chunks: [fragment], size: fragment.length };
  }

  private onContinuation(flags: number, id: number, payload: Buffer): void {
    const b = this.block;
    if (!b) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'CONTINUATION without HEADERS');
    b.chunks.push(payload);
    b.size += payload.length;
    if (b.size > MAX_HEADER_LIST) throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'header block too large');
    // Empty or tiny CONTINUATION frames without end would be kept forever (CVE-2024-27316's flood).
    if (b.chunks.length > MAX_CONTINUATIONS) throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'too many CONTINUATION frames');
    if (!(flags & END_HEADERS)) return;
    this.block = null;
    this.onHeaderBlock(id, b.endStream, Buffer.concat(b.chunks, b.size));
  }

  private onHeaderBlock(id: number, endStream: boolean, block: Buffer): void {
    let fields: string[];
    try {
      fields = this.decoder.decode(block);
    } catch {
      throw new ConnectionError(H2Error.COMPRESSION_ERROR, 'bad header block');
    }
    const existing = this.streams.get(id);
    if (existing) {
      // Trailers of the request: they must end it.
      if (existing.remoteEnded) return existing.reset(H2Error.STREAM_CLOSED);
      if (!endStream) return existing.reset(H2Error.PROTOCOL_ERROR);
      existing.remoteEnd();
      return;
    }
    if (id <= this.lastStreamId) return this.resetStream(id, H2Error.STREAM_CLOSED);
    this.lastStreamId = id;
    if (this.goingAway || this.streams.size >= this.maxStreams) return this.resetStream(id, H2Error.REFUSED_STREAM);
    const stream = H2Stream.fromFields(this, id, fields);
    if (!stream) return this.resetStream(id, H2Error.PROTOCOL_ERROR);
    this.streams.set(id, stream);
    if (endStream) stream.remoteEnded = true;
    try {
      this.opts.onStream(stream);
    } catch (e) {
      this.opts.onError?.(e);
      stream.reset(H2Error.INTERNAL_ERROR);
    }
  }

  private onDataFrame(flags: number, id: number, payload: Buffer): void {
    // Even ids are server streams, and this server never opens one: idle (RFC 9113 5.1).
    if (id === 0 || id % 2 === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on stream 0 or an idle stream');
    // Flow control counts the whole payload, padding included.
    this.connRecvWindow -= payload.length;
    if (this.connRecvWindow < 0) throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'connection window exceeded');
    this.connRecvUnacked += payload.length;
    if (this.connRecvUnacked >= CONNECTION_WINDOW / 2) {
      this.push(frame(WINDOW_UPDATE, 0, 0, u32(this.connRecvUnacked)));
      this.connRecvWindow += this.connRecvUnacked;
      this.connRecvUnacked = 0;
    }
    let data = payload;
    if (flags & PADDED) {
      if (payload.length < 1 || payload[0]! >= payload.length) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad padding');
      data = payload.subarray(1, payload.length - payload[0]!);
    }
    const s = this.streams.get(id);
    if (!s) {
      if (id > this.lastStreamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on an idle stream');
      return this.resetStream(id, H2Error.STREAM_CLOSED);
    }
    if (s.remoteEnded) return s.reset(H2Error.STREAM_CLOSED);
    s.recvWindow -= payload.length;
    if (s.recvWindow < 0) return s.reset(H2Error.FLOW_CONTROL_ERROR);
    if (this.buffered + data.length > this.maxBuffered) return s.reset(H2Error.ENHANCE_YOUR_CALM);
    if (data.length) s.remoteData(data);
    // Padding is flow-controlled but never read: its window goes back at once.
    if (payload.length > data.length) s.consumed(payload.length - data.length);
    if (flags & END_STREAM) s.remoteEnd();
  }

  private onReset(id: number, payload: Buffer): void {
    if (id === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
    if (id > this.lastStreamId || id % 2 === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const now = Date.now();
    if (now - this.resetsSince > 1000) {
      this.resetsSince = now;
      this.resets = 0;
    }
    if (++this.resets > MAX_RESETS_PER_SECOND) throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'too many stream resets');
    this.streams.get(id)?.closed(payload.readUInt32BE(0));
  }

  private onSettings(flags: number, id: number, payload: Buffer): void {
    if (id !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & ACK) {
      if (payload.length !== 0) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6 !== 0) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    for (let i = 0; i < payload.length; i += 6) {
      const key = payload.readUInt16BE(i);
      const value = payload.readUInt32BE(i + 2);
      if (key === 2 && value > 1) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad SETTINGS_ENABLE_PUSH');
      if (key === 4) {
        if (value > MAX_WINDOW) throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'bad SETTINGS_INITIAL_WINDOW_SIZE');
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const s of this.streams.values()) {
          s.sendWindow += delta;
          if (s.sendWindow > MAX_WINDOW) throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'stream window overflow');
        }
      }
      if (key === 5) {
        if (value < 16384 || value > 16777215) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad SETTINGS_MAX_FRAME_SIZE');
        this.peerMaxFrame = value;
      }
      // HEADER_TABLE_SIZE: our encoder never indexes. MAX_CONCURRENT_STREAMS: we never push.
    }
    this.push(frame(SETTINGS, ACK, 0, Buffer.alloc(0)));
    this.pumpWaiting();
  }

  private onWindowUpdate(id: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'WINDOW_UPDATE of the wrong size');
    const inc = payload.readUInt32BE(0) & 0x7fffffff;
    if (id === 0) {
      if (inc === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
      this.connSendWindow += inc;
      if (this.connSendWindow > MAX_WINDOW) throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'connection window overflow');
      this.pumpWaiting();
      return;
    }
    const s = this.streams.get(id);
    if (!s) {
      if (id > this.lastStreamId || id % 2 === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      return;
    }
    if (inc === 0) return s.reset(H2Error.PROTOCOL_ERROR);
    s.sendWindow += inc;
    if (s.sendWindow > MAX_WINDOW) return s.reset(H2Error.FLOW_CONTROL_ERROR);
    this.pump(s);
  }

  // ---- writing ----

  /** Queues bytes for the socket; they leave together once the current turn is done. */
  push(b: Buffer): void {
    this.out.push(b);
    this.outBytes += b.length;
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      process.nextTick(() => this.flush());
    }
  }

  private flush(): void {
    this.flushScheduled = false;
    const out = this.out;
    this.out = [];
    this.outBytes = 0;
    if (this.sock.destroyed || out.length === 0) return;
    if (out.length === 1) {
      this.sock.write(out[0]!);
      return;
    }
    this.sock.cork();
    let small: Buffer[] = [];
    let smallLen = 0;
    for (const b of out) {
      if (b.length < SMALL) {
        small.push(b);
        smallLen += b.length;
        continue;
      }
      if (small.length) {
        this.sock.write(small.length === 1 ? small[0]! : Buffer.concat(small, smallLen));
        small = [];
        smallLen = 0;
      }
      this.sock.write(b);
    }
    if (small.length) this.sock.write(small.length === 1 ? small[0]! : Buffer.concat(small, smallLen));
    this.sock.uncork();
  }

  private socketFull(): boolean {
    return this.sock.writableLength + this.outBytes > SOCKET_HIGH_WATER;
  }

  /** Sends what the windows and the socket allow of a stream's queued data (then its end). */
  pump(s: H2Stream): void {
    if (this.dead) return;
    while (s.queuedBytes > 0) {
      const avail = Math.min(s.sendWindow, this.connSendWindow, this.peerMaxFrame);
      if (avail <= 0 || this.socketFull()) {
        this.waiting.add(s);
        return;
      }
      const n = Math.min(avail, s.queuedBytes);
      this.push(frameHeader(n, DATA, 0, s.id));
      let left = n;
      while (left > 0) {
        const c = s.queue[0]!;
        if (c.length <= left) {
          this.push(c);
          s.queue.shift();
          left -= c.length;
        } else {
          this.push(c.subarray(0, left));
          s.queue[0] = c.subarray(left);
          left = 0;
        }
      }
      s.queuedBytes -= n;
      s.sendWindow -= n;
      this.connSendWindow -= n;
    }
    this.waiting.delete(s);
    s.drained();
  }

  private pumpWaiting(): void {
    for (const s of this.waiting) {
      this.pump(s);
      if (this.waiting.has(s)) {
        // Blocked on its own window: try the others; on the connection or socket: stop.
        if (this.connSendWindow <= 0 || this.socketFull()) return;
      }
    }
  }

  /** HEADERS (and CONTINUATION when the block is larger than a frame). */
  writeHeaders(id: number, block: Buffer, endStream: boolean): void {
    const es = endStream ? END_STREAM : 0;
    if (block.length <= this.peerMaxFrame) {
      this.push(frameHeader(block.length, HEADERS, END_HEADERS | es, id));
      this.push(block);
      return;
    }
    for (let o = 0; o < block.length; o += this.peerMaxFrame) {
      const part = block.subarray(o, o + this.peerMaxFrame);
      const last = o + this.peerMaxFrame >= block.length;
      this.push(frameHeader(part.length, o === 0 ? HEADERS : CONTINUATION, (last ? END_HEADERS : 0) | (o === 0 ? es : 0), id));
      this.push(part);
    }
  }

  writeEmptyEnd(id: number): void {
    this.push(frameHeader(0, DATA, END_STREAM, id));
  }

  windowUpdate(id: number, n: number): void {
    this.push(frame(WINDOW_UPDATE, 0, id, u32(n)));
  }

  resetStream(id: number, code: number): void {
    this.push(frame(RST_STREAM, 0, id, u32(code)));
  }

  // ---- lifecycle ----

  forget(s: H2Stream): void {
    this.streams.delete(s.id);
    this.waiting.delete(s);
    this.closeIfIdle();
  }

  private closeIfIdle(): void {
    if (this.goingAway && this.streams.size === 0 && !this.dead) this.endSocket();
  }

  /** Sends what is queued and ends our side; a peer that never closes its own does not hold the socket. */
  private endSocket(): void {
    this.dead = true;
    this.flush();
    this.sock.end();
    setTimeout(() => this.sock.destroy(), 1000).unref();
  }

  /** Graceful: no new streams; the connection ends when its streams are done. */
  shutdown(): void {
    if (this.dead || this.goingAway) return;
    this.goingAway = true;
    this.push(frame(GOAWAY, 0, 0, u32(this.lastStreamId, H2Error.NO_ERROR)));
    this.closeIfIdle();
  }

  /** A connection error: GOAWAY with the code, then close. */
  private fail(code: number): void {
    if (this.dead) return;
    this.push(frame(GOAWAY, 0, 0, u32(this.lastStreamId, code)));
    this.endSocket();
    for (const s of [...this.streams.values()]) s.closed(H2Error.CANCEL);
  }

  private onClose(): void {
    this.dead = true;
    if (this.prefaceTimer) clearTimeout(this.prefaceTimer);
    for (const s of [...this.streams.values()]) s.closed(H2Error.CANCEL);
    this.waiting.clear();
    this.out = [];
  }
}

/** Request headers of a stream, decoded: the pseudo-headers apart. */
export class H2Stream {
  // Inbound.
  remoteEnded = false;
  recvWindow = STREAM_WINDOW;
  private recvConsumed = 0;
  private inbound: Buffer[] = [];
  /** Bytes of the request held by us (queued, or kept by readAll), counted in the session's `buffered`. */
  private held = 0;
  private wake: (() => void) | null = null;
  // Outbound.
  sendWindow: number;
  queue: Buffer[] = [];
  queuedBytes = 0;
  private headersSent = false;
  /** Our end is queued (trailers block, or null for an empty DATA with END_STREAM). */
  private ending: { trailers: Buffer | null } | null = null;
  private localEnded = false;
  private onDrain: (() => void) | null = null;
  // Both.
  /** Set once the stream is over: done both ways, reset by either side, or its connection gone. */
  isClosed = false;
  /** The peer's RST_STREAM code, or CANCEL when the connection went away. */
  resetCode: number | null = null;
  private closeListeners: (() => void)[] | null = null;
  private abort: AbortController | null = null;

  private constructor(
    private readonly session: Session,
    readonly id: number,
    readonly method: string,
    readonly path: string,
    readonly authority: string,
    /** Regular headers as [name, value, ...] (names lowercase, as HTTP/2 requires). */
    readonly fields: string[],
  ) {
    this.sendWindow = session.peerInitialWindow;
  }

  static fromFields(session: Session, id: number, all: string[]): H2Stream | null {
    let method = '';
    let path = '';
    let authority = '';
    const fields: string[] = [];
    for (let i = 0; i < all.length; i += 2) {
      const name = all[i]!;
      if (name.charCodeAt(0) === 58 /* : */) {
        if (fields.length) return null; // pseudo-headers come first
        if (name === ':method') method = all[i + 1]!;
        else if (name === ':path') path = all[i + 1]!;
        else if (name === ':authority') authority = all[i + 1]!;
        else if (name !== ':scheme') return null;
      } else {
        fields.push(name, all[i + 1]!);
      }
    }
    if (!method || !path) return null;
    return new H2Stream(session, id, method, path, authority, fields);
  }

  /** The first value of a request header (name in lowercase). */
  header(name: string): string | undefined {
    const f = this.fields;
    for (let i = 0; i < f.length; i += 2) if (f[i] === name) return f[i + 1];
    return undefined;
  }

  // ---- reading ----

  remoteData(b: Buffer): void {
    this.inbound.push(b);
    this.hold(b.length);
    this.wake?.();
  }

  private hold(n: number): void {
    this.held += n;
    this.session.buffered += n;
  }

  private release(n: number): void {
    this.held -= n;
    this.session.buffered -= n;
  }

  remoteEnd(): void {
    this.remoteEnded = true;
    this.wake?.();
    if (this.localEnded) this.finish();
  }

  /** Counts bytes the handler took (or padding), and gives the window back when half is used. */
  consumed(n: number): void {
    this.recvConsumed += n;
    if (this.recvConsumed >= STREAM_WINDOW / 2 && !this.remoteEnded && !this.isClosed) {
      this.session.windowUpdate(this.id, this.recvConsumed);
      this.recvWindow += this.recvConsumed;
      this.recvConsumed = 0;
    }
  }

  /**
   * The request body to its end: resolves with the bytes (kept up to `maxBytes`) and the
   * full size; rejects with the reset code when the stream ends first.
   */
  readAll(maxBytes: number): Promise<{ body: Buffer; size: number }> {
    return new Promise((resolve, reject) => {
      const kept: Buffer[] = [];
      let size = 0;
      let keptSize = 0;
      const step = () => {
        for (const c of this.inbound) {
          size += c.length;
          let take = 0;
          if (keptSize < maxBytes) {
            take = Math.min(c.length, maxBytes - keptSize);
            kept.push(take === c.length ? c : c.subarray(0, take));
            keptSize += take;
          }
          if (take < c.length) this.release(c.length - take); // read on, not kept
          this.consumed(c.length);
        }
        this.inbound.length = 0;
        if (this.remoteEnded) {
          this.wake = null;
          this.release(keptSize); // the handler's now
          resolve({ body: kept.length === 1 ? kept[0]! : Buffer.concat(kept, keptSize), size });
        } else if (this.isClosed) {
          this.wake = null;
          reject(new StreamResetError(this.resetCode ?? H2Error.CANCEL));
        }
      };
      this.wake = step;
      step();
    });
  }

  /** The request body as it arrives (for the Connect router). */
  async *body(): AsyncGenerator<Uint8Array> {
    for (;;) {
      while (this.inbound.length) {
        const c = this.inbound.shift()!;
        this.release(c.length);
        this.consumed(c.length);
        yield c;
      }
      if (this.remoteEnded) return;
      if (this.isClosed) throw new StreamResetError(this.resetCode ?? H2Error.CANCEL);
      await new Promise<void>((resolve) => {
        this.wake = resolve;
      });
      this.wake = null;
    }
  }

  // ---- writing ----

  /** Sends the response headers (an HPACK block, see encodeHeaders); `endStream` for a headers-only answer. */
  respond(block: Buffer, endStream = false): void {
    if (this.isClosed || this.headersSent) return;
    this.headersSent = true;
    this.session.writeHeaders(this.id, block, endStream);
    if (endStream) this.localEnd();
  }

  get responded(): boolean {
    return this.headersSent;
  }

  /** Queues body bytes (not copied). False once the stream holds much unsent: wait for `drain()`. */
  write(chunk: Uint8Array): boolean {
    if (this.isClosed || this.ending || chunk.length === 0) return !this.isClosed;
    const b = Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    this.queue.push(b);
    this.queuedBytes += b.length;
    this.session.pump(this);
    return this.queuedBytes < STREAM_HIGH_WATER;
  }

  /** Resolves when the queued body has gone to the socket, or the stream is over. */
  drain(): Promise<void> {
    if (this.queuedBytes === 0 || this.isClosed) return Promise.resolve();
    return new Promise((resolve) => {
      this.onDrain = resolve;
    });
  }

  /** Ends the response after the queued body: with trailers (an HPACK block), or without. */
  end(trailers: Buffer | null = null): void {
    if (this.isClosed || this.ending || this.localEnded) return;
    this.ending = { trailers };
    if (this.queuedBytes === 0) this.drained();
  }

  /** Called by the session when the queue is empty. */
  drained(): void {
    const d = this.onDrain;
    this.onDrain = null;
    d?.();
    if (this.ending && !this.localEnded && this.queuedBytes === 0) {
      const { trailers } = this.ending;
      if (trailers) this.session.writeHeaders(this.id, trailers, true);
      else this.session.writeEmptyEnd(this.id);
      this.localEnd();
    }
  }

  private localEnd(): void {
    this.localEnded = true;
    if (this.remoteEnded) return this.finish();
    // The answer is complete: the client need not send the rest of its request.
    this.session.resetStream(this.id, H2Error.NO_ERROR);
    this.finish();
  }

  /** Abandons the stream: RST_STREAM with `code`. */
  reset(code: number = H2Error.CANCEL): void {
    if (this.isClosed) return;
    this.session.resetStream(this.id, code);
    this.closed(code);
  }

  // ---- closing ----

  private finish(): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.session.forget(this);
    // A reader still waiting for the request's end learns the stream is over.
    this.wake?.();
    this.dropInbound();
    this.notifyClosed();
  }

  /** Reset by the peer (or the connection gone): the stream is over without its end. */
  closed(code: number): void {
    if (this.isClosed) return;
    this.isClosed = true;
    this.resetCode = code;
    this.queue = [];
    this.queuedBytes = 0;
    this.session.forget(this);
    this.wake?.();
    this.dropInbound();
    this.notifyClosed();
  }

  /** The stream is over: what it held of its request is let go. */
  private dropInbound(): void {
    this.inbound.length = 0;
    if (this.held) this.release(this.held);
  }

  private notifyClosed(): void {
    const d = this.onDrain;
    this.onDrain = null;
    d?.();
    this.abort?.abort();
    const ls = this.closeListeners;
    this.closeListeners = null;
    if (ls) for (const l of ls) l();
  }

  /** Runs `fn` once the stream is over (at once if it is). */
  onClose(fn: () => void): void {
    if (this.isClosed) return fn();
    (this.closeListeners ??= []).push(fn);
  }

  /** Aborted once the stream is over, whichever way (as Connect's Node adapter does). */
  get signal(): AbortSignal {
    if (!this.abort) {
      this.abort = new AbortController();
      if (this.isClosed) this.abort.abort();
    }
    return this.abort.signal;
  }
}

/** The stream ended by a reset (ours or the peer's) or the connection's end. */
export class StreamResetError extends Error {
  constructor(readonly code: number) {
    super(`stream reset (HTTP/2 error ${code})`);
  }
}

export { encodeHeaders };
