/**
 * The transparency log's HTTP API as the CLI reads it (spec/openapi-control-plane.yaml,
 * tag "Transparency log"): checkpoint, key, tiles, entry bundles, proofs, cosignatures.
 * Every failure is a CliError naming the URL and the HTTP status.
 */
import http from 'node:http';
import https from 'node:https';
import { entriesPath, tilePath } from '../../src/core/tlog/tile-path.js';
import { describeNetworkError, UnreachableError } from './api.js';
import { CliError } from './errors.js';

export interface TlogConnection {
  endpoint: string;
  adminKey?: string;
  timeoutMs?: number;
}

export interface InclusionProofBody { leaf_index: number; tree_size: number; hashes: Buffer[] }
export interface ConsistencyProofBody { from: number; to: number; hashes: Buffer[] }

function decodeHashes(v: unknown, what: string): Buffer[] {
  if (!Array.isArray(v)) throw new CliError(`${what}: hashes is not an array`);
  return v.map((h, i) => {
    const b = typeof h === 'string' ? Buffer.from(h, 'base64') : null;
    if (!b || b.length !== 32 || b.toString('base64') !== h) throw new CliError(`${what}: hashes[${i}] is not the base64 of 32 bytes`);
    return b;
  });
}

/**
 * Size of a pooled bundle buffer (a full bundle of audit records is about 220 KB), and how many
 * are kept: more than `--concurrency`'s most (64) in flight plus the one being checked.
 */
const POOLED_BYTES = 512 * 1024;
const MAX_FREE = 80;

export class TlogClient {
  /**
   * Tiles and entry bundles (`svc audit verify --since` reads a bundle of about 220 KB per
   * 256 leaves, a few at once) come through node:http on kept-alive sockets, not fetch: fetch
   * hands a body over through web streams, and for 800 such bodies it cost 2.1 s of CPU
   * against 0.8 s (client and server in one process, measured alone).
   */
  private readonly agent: http.Agent;
  private readonly get: typeof http.get;

  constructor(readonly conn: TlogConnection) {
    const tls = conn.endpoint.startsWith('https:');
    this.agent = tls ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
    this.get = tls ? https.get : http.get;
  }

  private signal(): AbortSignal {
    return AbortSignal.timeout(this.conn.timeoutMs ?? 30000);
  }

  private headers(accept: string, admin: boolean | undefined): Record<string, string> {
    return admin && this.conn.adminKey ? { accept, 'x-admin-key': this.conn.adminKey } : { accept };
  }

  /** A GET answered other than 200: the URL, the status, the start of the body, and what to do about a refused key. */
  private refusal(path: string, status: number, text: string, admin: boolean | undefined): CliError {
    const hint = status !== 401 || !admin ? '' : this.conn.adminKey ? ' (the admin key was refused)' : ' (an admin key is needed: --key or SVC_API_KEY)';
    return new CliError(`GET ${this.conn.endpoint}${path}: HTTP ${status}${text ? ` ${text}` : ''}${hint}`);
  }

  /**
   * Buffers entry bundles are read into, given back by release() once checked. A verify
   * reads about 860 MB of bundles for 1,000,000 leaves; a new Buffer each, held while later
   * ones arrived, was promoted to the old generation and freed by full collections (up to 110
   * in a verify): the CLI's main thread spent 2.15 s in the collector, 0.55 s with the pool
   * (CPU profiles, 2026-12-05).
   */
  private readonly free: ArrayBuffer[] = [];

  /** Gives an entry bundle's buffer back for the next one: the caller holds no view of it any more. */
  release(data: Uint8Array): void {
    if (data.buffer instanceof ArrayBuffer && data.buffer.byteLength >= POOLED_BYTES && this.free.length < MAX_FREE) this.free.push(data.buffer);
  }

  /**
   * The body of a GET answered 200, as one Buffer; the same errors as ok(). `pooled`: read into
   * a buffer of the pool (a view of it), else a Buffer of its own.
   */
  private bytes(path: string, admin: boolean, pooled = false): Promise<Buffer> {
    const url = new URL(`${this.conn.endpoint}${path}`);
    return new Promise<Buffer>((resolve, reject) => {
      const unreachable = (e: unknown) => reject(new UnreachableError(url.href, describeNetworkError(e)));
      const req = this.get(url, { agent: this.agent, headers: this.headers('application/octet-stream', admin), signal: this.signal() }, (res) => {
        const parts: Buffer[] = [];
        const length = Number(res.headers['content-length']);
        let into: Buffer | null = null;
        let at = 0;
        if (pooled && res.statusCode === 200 && Number.isSafeInteger(length) && length >= 0) {
          const ab = length <= POOLED_BYTES ? this.free.pop() : undefined;
          into = ab ? Buffer.from(ab) : Buffer.allocUnsafeSlow(Math.max(length, POOLED_BYTES));
        }
        // node:http ends a body at its content-length, so a pooled buffer of that size holds it.
        res.on('data', (d: Buffer) => {
          if (into) at += d.copy(into, at);
          else parts.push(d);
        });
        res.on('error', unreachable);
        res.on('end', () => {
          const body = into ? into.subarray(0, at) : parts.length === 1 ? parts[0]! : Buffer.concat(parts);
          if (res.statusCode === 200) resolve(body);
          else reject(this.refusal(path, res.statusCode ?? 0, body.toString('utf8').slice(0, 300), admin));
        });
      });
      req.on('error', unreachable);
    });
  }

  private async request(path: string, init: { method?: string; body?: string; admin?: boolean; accept?: string; contentType?: string } = {}): Promise<Response> {
    const url = `${this.conn.endpoint}${path}`;
    const headers = this.headers(init.accept ?? '*/*', init.admin);
    if (init.contentType) headers['content-type'] = init.contentType;
    try {
      return await fetch(url, { method: init.method ?? 'GET', headers, body: init.body, signal: this.signal() });
    } catch (e) {
      throw new UnreachableError(url, describeNetworkError(e));
    }
  }

  private async ok(path: string, init: Parameters<TlogClient['request']>[1] = {}): Promise<Response> {
    const res = await this.request(path, init);
    if (res.status === 200) return res;
    throw this.refusal(path, res.status, (await res.text().catch(() => '')).slice(0, 300), init.admin);
  }

  async checkpoint(): Promise<string> {
    return (await this.ok('/api/audit/tlog/checkpoint', { accept: 'text/plain' })).text();
  }

  async logKey(): Promise<string> {
    return (await (await this.ok('/api/audit/tlog/key', { accept: 'text/plain' })).text()).trim();
  }

  /** A hash tile (width 256 or absent: full). */
  async hashTile(level: number, index: number, width?: number): Promise<Buffer> {
    const data = await this.bytes(`/api/audit/tlog/${tilePath(level, index, width)}`, false);
    const want = (width ?? 256) * 32;
    if (data.length !== want) throw new CliError(`tile ${tilePath(level, index, width)}: ${data.length} bytes, want ${want}`);
    return data;
  }

  /** An entry bundle (admin key), in a buffer of the pool: release() it once read. */
  async entryBundle(index: number, width?: number): Promise<Buffer> {
    return this.bytes(`/api/audit/tlog/${entriesPath(index, width)}`, true, true);
  }

  async inclusionProof(q: { leafIndex?: number; requestId?: string; treeSize: number }): Promise<InclusionProofBody> {
    const p = new URLSearchParams();
    if (q.leafIndex !== undefined) p.set('leaf_index', String(q.leafIndex));
    if (q.requestId !== undefined) p.set('request_id', q.requestId);
    p.set('tree_size', String(q.treeSize));
    const body = (await (await this.ok(`/api/audit/proof/inclusion?${p}`, { accept: 'application/json' })).json()) as Record<string, unknown>;
    if (!Number.isSafeInteger(body.leaf_index) || body.tree_size !== q.treeSize) throw new CliError(`inclusion proof: leaf_index ${String(body.leaf_index)} / tree_size ${String(body.tree_size)} is not what was asked`);
    return { leaf_index: body.leaf_index as number, tree_size: q.treeSize, hashes: decodeHashes(body.hashes, 'inclusion proof') };
  }

  async consistencyProof(from: number, to: number): Promise<ConsistencyProofBody> {
    const body = (await (await this.ok(`/api/audit/proof/consistency?from=${from}&to=${to}`, { accept: 'application/json' })).json()) as Record<string, unknown>;
    if (body.from !== from || body.to !== to) throw new CliError(`consistency proof: from ${String(body.from)} to ${String(body.to)} is not what was asked (${from} to ${to})`);
    return { from, to, hashes: decodeHashes(body.hashes, 'consistency proof') };
  }

  /** POSTs a cosigned note; resolves to the HTTP status and body text (201 stored, 200 already there). */
  async postCosignature(note: string): Promise<{ status: number; body: string }> {
    const res = await this.request('/api/audit/tlog/cosignature', { method: 'POST', body: note, contentType: 'text/plain; charset=utf-8', accept: 'application/json' });
    return { status: res.status, body: await res.text() };
  }
}
