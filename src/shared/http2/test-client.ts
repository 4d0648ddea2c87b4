/**
 * Test-only raw HTTP/2 client: frames written by hand, server frames parsed and their header
 * blocks decoded. Used by server.test.ts to drive the server into the corners a real client
 * never reaches.
 */
import net from 'node:net';
import { HpackDecoder, encodeHeaders } from './hpack.js';

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const T = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

export const F = { END_STREAM: 0x1, ACK: 0x1, END_HEADERS: 0x4, PADDED: 0x8, PRIORITY: 0x20 } as const;

export const S = {
  HEADER_TABLE_SIZE: 1,
  ENABLE_PUSH: 2,
  MAX_CONCURRENT_STREAMS: 3,
  INITIAL_WINDOW_SIZE: 4,
  MAX_FRAME_SIZE: 5,
  MAX_HEADER_LIST_SIZE: 6,
} as const;

export interface Frame {
  type: number;
  flags: number;
  id: number;
  payload: Buffer;
  /** For HEADERS (with its CONTINUATIONs joined): the decoded header list. */
  fields?: string[];
}

export interface StreamState {
  headers: string[] | null;
  trailers: string[] | null;
  data: Buffer[];
  bytes: number;
  ended: boolean;
  rst: number | null;
}

export function frame(type: number, flags: number, id: number, payload: Buffer = Buffer.alloc(0), lengthOverride?: number): Buffer {
  const len = lengthOverride ?? payload.length;
  const b = Buffer.alloc(9 + payload.length);
  b[0] = (len >>> 16) & 0xff;
  b[1] = (len >>> 8) & 0xff;
  b[2] = len & 0xff;
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(id >>> 0, 5);
  payload.copy(b, 9);
  return b;
}

export function u32(...values: number[]): Buffer {
  const b = Buffer.alloc(4 * values.length);
  values.forEach((v, i) => b.writeUInt32BE(v >>> 0, 4 * i));
  return b;
}

export function settingsFrame(pairs: ReadonlyArray<readonly [number, number]> = []): Buffer {
  const p = Buffer.alloc(6 * pairs.length);
  pairs.forEach(([k, v], i) => {
    p.writeUInt16BE(k, 6 * i);
    p.writeUInt32BE(v >>> 0, 6 * i + 2);
  });
  return frame(T.SETTINGS, 0, 0, p);
}

/** A request header block (HPACK literals without indexing). */
export function requestBlock(path = '/', method = 'GET', extra: string[] = []): Buffer {
  return encodeHeaders([':method', method, ':scheme', 'http', ':path', path, ':authority', 'localhost', ...extra]);
}

export function headersFrame(id: number, block: Buffer, flags: number = F.END_HEADERS): Buffer {
  return frame(T.HEADERS, flags, id, block);
}

export function requestFrame(id: number, path = '/', method = 'GET', endStream = true, extra: string[] = []): Buffer {
  return headersFrame(id, requestBlock(path, method, extra), F.END_HEADERS | (endStream ? F.END_STREAM : 0));
}

export function dataFrame(id: number, data: Buffer, flags = 0): Buffer {
  return frame(T.DATA, flags, id, data);
}

/** A padded DATA frame: pad length byte, data, `pad` zero bytes. */
export function paddedDataFrame(id: number, data: Buffer, pad: number, flags = 0): Buffer {
  return frame(T.DATA, flags | F.PADDED, id, Buffer.concat([Buffer.from([pad]), data, Buffer.alloc(pad)]));
}

export const windowUpdateFrame = (id: number, inc: number): Buffer => frame(T.WINDOW_UPDATE, 0, id, u32(inc));
export const rstFrame = (id: number, code: number): Buffer => frame(T.RST_STREAM, 0, id, u32(code));
export const pingFrame = (payload: Buffer, ack = false): Buffer => frame(T.PING, ack ? F.ACK : 0, 0, payload);
export const goawayFrame = (last: number, code: number): Buffer => frame(T.GOAWAY, 0, 0, u32(last, code));

export interface RawClientOptions {
  /** Send WINDOW_UPDATEs (stream and connection) for every DATA frame received (default true). */
  autoWindow?: boolean;
}

let pingSeq = 0;

export class RawClient {
  readonly frames: Frame[] = [];
  readonly streams = new Map<number, StreamState>();
  /** Every byte received, for the non-HTTP/2 cases. */
  readonly received: Buffer[] = [];
  closed = false;
  readonly closedP: Promise<void>;
  /** Called for every frame before it is stored (flow-control bookkeeping). */
  onFrame: ((f: Frame) => void) | null = null;
  private buf: Buffer = Buffer.alloc(0);
  private readonly waiters = new Set<() => void>();
  private readonly decoder = new HpackDecoder(4096, 1 << 20);
  private block: { id: number; flags: number; chunks: Buffer[] } | null = null;
  private readonly autoWindow: boolean;
  /** Errors in the client's own parsing (a server sending something undecodable). */
  readonly errors: string[] = [];

  private constructor(
    readonly sock: net.Socket,
    opts: RawClientOptions,
  ) {
    this.autoWindow = opts.autoWindow ?? true;
    sock.setNoDelay(true);
    sock.on('data', (d: Buffer) => this.onData(d));
    sock.on('error', () => {});
    this.closedP = new Promise((resolve) => {
      sock.once('close', () => {
        this.closed = true;
        this.wakeAll();
        resolve();
      });
    });
  }

  static connect(port: number, opts: RawClientOptions = {}): Promise<RawClient> {
    return new Promise((resolve, reject) => {
      const sock = net.connect(port, '127.0.0.1');
      const c = new RawClient(sock, opts);
      sock.once('connect', () => resolve(c));
      sock.once('error', reject);
    });
  }

  send(...bufs: Buffer[]): void {
    if (!this.sock.destroyed && this.sock.writable) this.sock.write(bufs.length === 1 ? bufs[0]! : Buffer.concat(bufs));
  }

  /** Preface + SETTINGS; waits for the server's SETTINGS (acked) and the ACK of ours. */
  async handshake(settings: ReadonlyArray<readonly [number, number]> = []): Promise<Frame> {
    this.send(PREFACE, settingsFrame(settings));
    const serverSettings = await this.waitFrame((f) => f.type === T.SETTINGS && !(f.flags & F.ACK), 'server SETTINGS');
    this.send(frame(T.SETTINGS, F.ACK, 0));
    await this.waitFrame((f) => f.type === T.SETTINGS && (f.flags & F.ACK) !== 0, 'SETTINGS ACK');
    return serverSettings;
  }

  stream(id: number): StreamState {
    let s = this.streams.get(id);
    if (!s) {
      s = { headers: null, trailers: null, data: [], bytes: 0, ended: false, rst: null };
      this.streams.set(id, s);
    }
    return s;
  }

  /** Resolves with fn's first truthy value, re-evaluated on every frame; rejects on close or after the guard timeout. */
  until<R>(fn: () => R | undefined | null | false, what: string, timeoutMs = 10_000): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      const check = (): boolean => {
        const v = fn();
        if (v !== undefined && v !== null && v !== false) {
          done();
          resolve(v);
          return true;
        }
        if (this.closed) {
          done();
          reject(new Error(`connection closed while waiting for ${what}`));
          return true;
        }
        return false;
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`timed out waiting for ${what}`));
      }, timeoutMs);
      // Also re-checked periodically: conditions on server-side state change without a frame.
      const poll = setInterval(() => void check(), 2);
      const done = (): void => {
        clearTimeout(timer);
        clearInterval(poll);
        this.waiters.delete(waiter);
      };
      const waiter = (): void => void check();
      if (check()) return;
      this.waiters.add(waiter);
    });
  }

  waitFrame(pred: (f: Frame) => boolean, what: string, timeoutMs?: number): Promise<Frame> {
    return this.until(() => this.frames.find(pred), what, timeoutMs);
  }

  /** The GOAWAY the server sent, as { last, code }. */
  async goaway(timeoutMs?: number): Promise<{ last: number; code: number }> {
    const f = await this.waitFrame((x) => x.type === T.GOAWAY, 'GOAWAY', timeoutMs);
    return { last: f.payload.readUInt32BE(0) & 0x7fffffff, code: f.payload.readUInt32BE(4) };
  }

  /** A stream's response once it ended (END_STREAM or RST_STREAM). */
  response(id: number, timeoutMs?: number): Promise<StreamState> {
    return this.until(() => {
      const s = this.streams.get(id);
      return s && (s.ended || s.rst !== null) ? s : undefined;
    }, `the end of stream ${id}`, timeoutMs);
  }

  /** The RST_STREAM code the server sent on a stream. */
  rstCode(id: number, timeoutMs?: number): Promise<number> {
    return this.until(() => this.streams.get(id)?.rst ?? undefined, `RST_STREAM on stream ${id}`, timeoutMs);
  }

  /** A PING round trip: every frame the server queued before handling it has arrived when this resolves. */
  async ping(): Promise<void> {
    const payload = Buffer.alloc(8);
    payload.writeUInt32BE(0x7e57, 0);
    payload.writeUInt32BE(++pingSeq, 4);
    this.send(pingFrame(payload));
    await this.waitFrame((f) => f.type === T.PING && (f.flags & F.ACK) !== 0 && f.payload.equals(payload), 'PING ACK');
  }

  close(): void {
    this.sock.destroy();
  }

  private wakeAll(): void {
    for (const w of [...this.waiters]) w();
  }

  private onData(d: Buffer): void {
    this.received.push(d);
    this.buf = this.buf.length ? Buffer.concat([this.buf, d]) : d;
    let o = 0;
    while (this.buf.length - o >= 9) {
      const len = (this.buf[o]! << 16) | (this.buf[o + 1]! << 8) | this.buf[o + 2]!;
      if (this.buf.length - o < 9 + len) break;
      const f: Frame = {
        type: this.buf[o + 3]!,
        flags: this.buf[o + 4]!,
        id: this.buf.readUInt32BE(o + 5) & 0x7fffffff,
        payload: Buffer.from(this.buf.subarray(o + 9, o + 9 + len)),
      };
      o += 9 + len;
      this.handle(f);
    }
    this.buf = o < this.buf.length ? Buffer.from(this.buf.subarray(o)) : Buffer.alloc(0);
    this.wakeAll();
  }

  private handle(f: Frame): void {
    if (f.type === T.HEADERS || f.type === T.CONTINUATION) {
      if (f.type === T.HEADERS) {
        let start = 0;
        let end = f.payload.length;
        if (f.flags & F.PADDED) {
          start = 1;
          end -= f.payload[0]!;
        }
        if (f.flags & F.PRIORITY) start += 5;
        this.block = { id: f.id, flags: f.flags, chunks: [f.payload.subarray(start, end)] };
      } else if (this.block) {
        this.block.chunks.push(f.payload);
      } else {
        this.errors.push('CONTINUATION without HEADERS');
      }
      if (f.flags & F.END_HEADERS && this.block) {
        const b = this.block;
        this.block = null;
        try {
          f.fields = this.decoder.decode(Buffer.concat(b.chunks));
        } catch (e) {
          this.errors.push(`undecodable header block: ${String(e)}`);
          f.fields = [];
        }
        const s = this.stream(b.id);
        if (s.headers === null) s.headers = f.fields;
        else s.trailers = f.fields;
        if (b.flags & F.END_STREAM) s.ended = true;
      }
    } else if (f.type === T.DATA) {
      const s = this.stream(f.id);
      let data = f.payload;
      if (f.flags & F.PADDED) data = f.payload.subarray(1, f.payload.length - f.payload[0]!);
      s.data.push(data);
      s.bytes += data.length;
      if (f.flags & F.END_STREAM) s.ended = true;
      if (this.autoWindow && f.payload.length > 0) {
        this.send(windowUpdateFrame(0, f.payload.length));
        if (!(f.flags & F.END_STREAM)) this.send(windowUpdateFrame(f.id, f.payload.length));
      }
    } else if (f.type === T.RST_STREAM) {
      this.stream(f.id).rst = f.payload.readUInt32BE(0);
    }
    this.onFrame?.(f);
    this.frames.push(f);
  }
}

/** Status of a decoded response header list. */
export function fieldOf(fields: string[] | null | undefined, name: string): string | undefined {
  if (!fields) return undefined;
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return fields[i + 1];
  return undefined;
}
