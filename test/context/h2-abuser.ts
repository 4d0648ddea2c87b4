/**
 * Abusive HTTP/2 peers written as raw frames on a TCP socket (loopback only), for the
 * functional tests of port 8002 and for `bench/h2-abuse.bench.ts`: a SETTINGS flood, a PING
 * flood and a "rapid reset" client (HEADERS then RST_STREAM, stream after stream). Each is
 * bounded by a frame or stream count and a time limit, and reports how far it got before the
 * server cut the connection.
 *
 * Run as a child process (`node --import tsx test/context/h2-abuser.ts`) it takes its orders
 * from the parent over IPC (the bench keeps the abuser off the measuring client's event loop).
 */
import net from 'node:net';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const SETTINGS = 4;
const PING = 6;
const GOAWAY = 7;
const HEADERS = 1;
const RST_STREAM = 3;
const END_HEADERS = 0x4;
const CANCEL = 8;

function frame(type: number, flags: number, id: number, payload: Buffer = Buffer.alloc(0)): Buffer {
  const b = Buffer.alloc(9 + payload.length);
  b.writeUIntBE(payload.length, 0, 3);
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(id, 5);
  payload.copy(b, 9);
  return b;
}

/** HPACK: each field as a literal without indexing, new name (RFC 7541 6.2.2); strings under 127 bytes. */
function headerBlock(fields: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [name, value] of fields) {
    if (name.length > 126 || value.length > 126) throw new Error('header field too long for this encoder');
    parts.push(Buffer.from([0, name.length]), Buffer.from(name, 'latin1'), Buffer.from([value.length]), Buffer.from(value, 'latin1'));
  }
  return Buffer.concat(parts);
}

export type AbuseKind = 'settings' | 'ping' | 'rapid-reset';

export interface AbuseOptions {
  kind: AbuseKind;
  port: number;
  /** Frames (floods) or streams (rapid reset) to send at most. */
  maxCount: number;
  /** And for at most this long. */
  maxMs: number;
  /** Rapid reset: the request path (default the RequestContext method). */
  path?: string;
}

export interface AbuseResult {
  kind: AbuseKind;
  /** Connections opened (a flood reconnects each time the server cuts it, until the bounds). */
  connections: number;
  /** Frames (floods) or streams (rapid reset) written before the connection was cut or the bounds were reached. */
  sent: number;
  /** The server ended the connection (GOAWAY or close) before the bounds were reached. */
  cut: boolean;
  /** The GOAWAY error code, if the server sent one (11 = ENHANCE_YOUR_CALM). */
  goawayCode: number | null;
  /**
   * Rapid reset: the streams the server took before it cut the connection, from its GOAWAY's
   * last stream id (client streams are odd: id 2n-1 is the n-th); null without a GOAWAY.
   */
  accepted: number | null;
  ms: number;
}

/**
 * The abuse: a rapid reset on one connection; a flood that reconnects whenever the server
 * cuts it, until its frame count or time is spent (what a determined peer would do).
 */
export async function abuse(o: AbuseOptions): Promise<AbuseResult> {
  if (o.kind === 'rapid-reset') return { ...(await oneConnection(o)), connections: 1 };
  const t0 = performance.now();
  const total: AbuseResult = { kind: o.kind, connections: 0, sent: 0, cut: false, goawayCode: null, accepted: null, ms: 0 };
  while (total.sent < o.maxCount && performance.now() - t0 < o.maxMs) {
    const r = await oneConnection({ ...o, maxCount: o.maxCount - total.sent, maxMs: o.maxMs - (performance.now() - t0) });
    total.connections++;
    total.sent += r.sent;
    total.cut ||= r.cut;
    total.goawayCode ??= r.goawayCode;
  }
  total.ms = performance.now() - t0;
  return total;
}

/**
 * Connects, sends the preface and an empty SETTINGS, then floods (or opens and resets
 * streams) in batches, honouring the socket's backpressure, and reads (and drops) what the
 * server sends, watching for its GOAWAY.
 */
function oneConnection(o: AbuseOptions): Promise<Omit<AbuseResult, 'connections'>> {
  const BATCH = o.kind === 'rapid-reset' ? 100 : 1000;
  const unit =
    o.kind === 'settings'
      ? frame(SETTINGS, 0, 0, Buffer.from([0, 3, 0, 0, 0x27, 0x10])) // MAX_CONCURRENT_STREAMS = 10000
      : o.kind === 'ping'
        ? frame(PING, 0, 0, Buffer.alloc(8, 7))
        : null;
  const batch = unit ? Buffer.concat(Array.from({ length: BATCH }, () => unit)) : null;
  const block = headerBlock([
    [':method', 'POST'],
    [':scheme', 'http'],
    [':authority', `127.0.0.1:${o.port}`],
    [':path', o.path ?? '/svc.context.v1.ContextService/RequestContext'],
    ['content-type', 'application/grpc'],
    ['te', 'trailers'],
  ]);
  return new Promise((resolve) => {
    const sock = net.connect(o.port, '127.0.0.1');
    const t0 = performance.now();
    let sent = 0;
    let nextId = 1;
    let cut = false;
    let goawayCode: number | null = null;
    let accepted: number | null = null;
    let pending: Buffer = Buffer.alloc(0);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      sock.destroy();
      resolve({ kind: o.kind, sent, cut, goawayCode, accepted, ms: performance.now() - t0 });
    };
    sock.on('data', (d: Buffer) => {
      pending = pending.length ? Buffer.concat([pending, d]) : d;
      while (pending.length >= 9) {
        const len = pending.readUIntBE(0, 3);
        if (pending.length < 9 + len) break;
        if (pending[3] === GOAWAY && len >= 8) {
          accepted = ((pending.readUInt32BE(9) & 0x7fffffff) + 1) >> 1;
          goawayCode = pending.readUInt32BE(13);
          cut = true;
          // The server may keep the socket open after its GOAWAY (and stop reading it).
          setTimeout(finish, 50);
        }
        pending = pending.subarray(9 + len);
      }
    });
    sock.on('close', () => {
      cut = cut || sent < o.maxCount;
      finish();
    });
    sock.on('error', () => {});
    sock.once('connect', () => {
      sock.write(Buffer.concat([PREFACE, frame(SETTINGS, 0, 0)]));
      const pump = () => {
        while (!done && !cut && sent < o.maxCount && performance.now() - t0 < o.maxMs) {
          let chunk: Buffer;
          if (batch) {
            chunk = batch;
            sent += BATCH;
          } else {
            const parts: Buffer[] = [];
            for (let i = 0; i < BATCH && nextId < 2 ** 31; i++, nextId += 2) {
              const rst = Buffer.alloc(4);
              rst.writeUInt32BE(CANCEL);
              parts.push(frame(HEADERS, END_HEADERS, nextId, block), frame(RST_STREAM, 0, nextId, rst));
            }
            sent += parts.length / 2;
            chunk = Buffer.concat(parts);
          }
          if (!sock.write(chunk)) return void sock.once('drain', () => setImmediate(pump));
          // Let the server's answers (a GOAWAY) in between batches.
          return void setImmediate(pump);
        }
        if (!done && !cut) finish();
      };
      pump();
    });
  });
}

// As a child process: one run per IPC message, the result sent back.
if (process.send && process.argv[1]?.endsWith('h2-abuser.ts')) {
  process.on('message', (m: AbuseOptions) => {
    void abuse(m).then((r) => process.send!(r));
  });
  process.send('ready');
}
