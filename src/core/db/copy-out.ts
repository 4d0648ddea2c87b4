/**
 * `COPY ... TO STDOUT` on a dedicated postgres.js connection whose socket hands the data
 * over raw: the CopyData messages' payload bytes go straight to a callback, in place in
 * the socket's chunks, and only the other messages (CopyOutResponse, CopyDone,
 * CommandComplete, ReadyForQuery, errors, notices) reach postgres.js.
 *
 * Why: PostgreSQL sends one CopyData message per row, and postgres.js handles each as a
 * Buffer slice pushed into a Readable (an event per row), which cost about a microsecond
 * per row, as much as the whole checking of an audit record. Here a socket read (up to
 * 1 MB, many rows) is one call.
 *
 * postgres.js still speaks the protocol (start-up, authentication, the query, its errors):
 * the tap only takes CopyData out while a COPY it was armed for is running. The socket reads
 * into one buffer of its own (`onread`), so a read allocates nothing. A custom socket
 * means no TLS from postgres.js, so this is offered only without `ssl`; callers fall back
 * to postgres.js's own COPY stream otherwise.
 */
import net from 'node:net';
import postgres from 'postgres';

/** Payload bytes of CopyData messages: `buf[start, end)`; a row may be split across calls. */
export type CopyDataSink = (buf: Buffer, start: number, end: number) => void;

const COPY_DATA = 0x64; // d
/** The socket's one read buffer. */
const READ_BUFFER = 1 << 20;
const READY = 0x5a; // Z
const COPY_OUT_RESPONSE = 0x48; // H

/**
 * The framing state machine over one socket's incoming bytes. Unarmed, every chunk goes
 * through untouched; armed, CopyData payloads go to the sink and the rest through, until
 * ReadyForQuery ends the statement.
 */
export class CopyTap {
  private sink: CopyDataSink | null = null;
  /** Bytes of the current message still to come (after its 5-byte header). */
  private need = 0;
  private type = 0;
  /** A message header cut by a chunk boundary. */
  private readonly hdr = Buffer.alloc(5);
  private hdrLen = 0;
  private held: Buffer | null = null;

  arm(sink: CopyDataSink): void {
    this.sink = sink;
    this.need = 0;
    this.hdrLen = 0;
  }

  get armed(): boolean {
    return this.sink !== null;
  }

  /** Splits one incoming chunk; returns the bytes that postgres.js must see (null: none). */
  feed(chunk: Buffer): Buffer | null {
    const sink = this.sink;
    if (!sink) return chunk;
    const len = chunk.length;
    const out: Buffer[] = [];
    let run = -1; // start of the current run of bytes for postgres.js
    const flush = (upTo: number) => {
      if (run >= 0 && upTo > run) out.push(chunk.subarray(run, upTo));
      run = -1;
    };
    let split = -1; // out[split...] come after a CopyOutResponse: held back
    let p = 0;
    while (p < len) {
      if (this.need > 0) {
        const take = Math.min(this.need, len - p);
        if (this.type === COPY_DATA) sink(chunk, p, p + take);
        else if (run < 0) run = p;
        p += take;
        this.need -= take;
        if (this.need === 0 && this.type === COPY_OUT_RESPONSE && split < 0) {
          flush(p);
          split = out.length;
        }
        if (this.need === 0 && this.type === READY) {
          // The statement is over: what follows is postgres.js's alone.
          this.sink = null;
          if (run < 0) run = p;
          break;
        }
        continue;
      }
      // A message header: type byte and int32 length (which counts itself).
      let type: number;
      let length: number;
      if (this.hdrLen > 0 || len - p < 5) {
        const hs = p;
        while (this.hdrLen < 5 && p < len) this.hdr[this.hdrLen++] = chunk[p++]!;
        flush(hs);
        if (this.hdrLen < 5) break; // the rest of the header comes with the next chunk
        this.hdrLen = 0;
        type = this.hdr[0]!;
        length = this.hdr.readInt32BE(1);
        if (type !== COPY_DATA) out.push(Buffer.from(this.hdr));
      } else {
        type = chunk[p]!;
        length = chunk.readInt32BE(p + 1);
        if (type === COPY_DATA) flush(p);
        else if (run < 0) run = p;
        p += 5;
      }
      if (length < 4) throw new Error('bad protocol message length');
      this.type = type;
      this.need = length - 4;
      if (this.need === 0 && type === READY) {
        this.sink = null;
        if (run < 0) run = p;
        break;
      }
    }
    flush(len);
    if (split >= 0 && split < out.length) {
      this.held = join(out.slice(split));
      out.length = split;
    }
    return join(out);
  }

  /**
   * Bytes for postgres.js that came after a CopyOutResponse in the same chunk (null: none).
   * They must reach it only once the caller holds the COPY stream postgres.js made of that
   * response: an ErrorResponse and ReadyForQuery handled at once would error the stream
   * before anyone listens to it.
   */
  takeHeld(): Buffer | null {
    const h = this.held;
    this.held = null;
    return h;
  }
}

function join(parts: Buffer[]): Buffer | null {
  return parts.length === 0 ? null : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
}

export interface CopyOutConnection {
  /**
   * Runs `query` (a `COPY ... TO STDOUT`), handing its data to `sink` as it arrives;
   * resolves when the statement is complete, rejects with its error.
   */
  copyOut(query: string, sink: CopyDataSink): Promise<void>;
  close(): Promise<void>;
}

export interface CopyOutOptions {
  url: string;
  password?: string | null;
}

/**
 * The settings of a COPY connection: a sequential scan read for its storage order starts at
 * the table's first page and runs in one process (no joining another scan midway, no
 * parallel workers interleaving rows).
 */
export const COPY_OUT_SETTINGS = { synchronize_seqscans: 'off', max_parallel_workers_per_gather: '0' } as const;

/** Opens one dedicated connection (postgres.js over a tapped plain TCP socket). */
export async function openCopyOutConnection(opts: CopyOutOptions): Promise<CopyOutConnection> {
  const tap = new CopyTap();
  const sql = postgres(opts.url, {
    max: 1,
    ssl: false,
    password: opts.password ?? undefined,
    onnotice: () => {},
    prepare: false,
    fetch_types: false,
    connection: { application_name: 'svc-copy', ...COPY_OUT_SETTINGS },
    socket: async (o: { host: string[]; port: number[]; path?: string | false }) => {
      // Reads land in one buffer of ours (net's `onread`), not a fresh one per read: a COPY
      // of a million rows was over a microsecond a row of allocating, filling and freeing
      // read buffers. What postgres.js gets is copied out of it (the buffer is reused).
      const buffer = Buffer.allocUnsafe(READ_BUFFER);
      const onread = {
        buffer,
        callback: (n: number, buf: Buffer): boolean => {
          const chunk = buf.subarray(0, n);
          let rest: Buffer | null;
          try {
            rest = tap.armed ? tap.feed(chunk) : chunk;
          } catch (e) {
            s.destroy(e as Error); // not a protocol stream after all: postgres.js sees the error
            return false;
          }
          const own = (b: Buffer) => (b.buffer === buf.buffer ? Buffer.from(b) : b);
          if (rest) s.emit('data', own(rest));
          const later = tap.takeHeld();
          if (!later) return true;
          // Paused until the caller's listeners are on postgres.js's COPY stream (they are
          // attached in promise callbacks, which all run before setImmediate's).
          const l = own(later);
          setImmediate(() => {
            s.emit('data', l);
            s.resume();
          });
          return false;
        },
      };
      const s: net.Socket = o.path ? net.connect({ path: o.path, onread }) : net.connect({ port: o.port[0]!, host: o.host[0]!, onread });
      await new Promise<void>((resolve, reject) => {
        s.once('connect', resolve);
        s.once('error', reject);
      });
      s.setNoDelay(true);
      return s;
    },
  } as postgres.Options<{}>);
  await sql`select 1`;
  return {
    async copyOut(query, sink) {
      // Nothing else runs on this connection: once armed, every byte that comes is the COPY's.
      tap.arm(sink);
      const stream = await sql.unsafe(query).readable();
      await new Promise<void>((resolve, reject) => {
        stream.once('error', reject);
        stream.once('end', resolve);
        stream.resume();
      });
      // postgres.js may have paused the socket for a stream nobody read.
      (stream as { _read?: (n: number) => void })._read?.(0);
    },
    close: () => sql.end({ timeout: 5 }),
  };
}
