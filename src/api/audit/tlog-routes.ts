/**
 * The transparency log's REST routes (issue 21): the latest checkpoint and the log's key
 * (text), witnesses' cosignatures, tiles and entry bundles (C2SP tlog-tiles), and inclusion
 * and consistency proofs. The work is in src/core/tlog; these adapt it to HTTP. The module's
 * start checks the tree against the published checkpoints (refusing to start on a mismatch)
 * and runs the integration loop.
 */
import { AppError } from '../../shared/errors.js';
import { adminKeyRefusal, type RequestInfo } from '../../shared/http/openapi-app.js';
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import type { RouteModule } from '../../shared/service.js';
import { transparencyLog } from '../../core/tlog/log.js';
import { parseTilePath } from '../../core/tlog/tile-path.js';

const text = (body: string, requestId: string, extra: Record<string, string> = {}) =>
  new Response(body, { status: 200, headers: { 'content-type': 'text/plain; charset=utf-8', 'x-request-id': requestId, ...extra } });

/**
 * One tile or entry bundle, whatever the number of segments its path has (the four
 * getTlogTile operations): the whole path is parsed as C2SP tlog-tiles says.
 */
async function tile(req: Pick<RequestInfo<operations['getTlogTile2']>, 'path' | 'headers' | 'requestId'>, ctx: AppContext): Promise<Response> {
  const at = req.path.indexOf('/api/audit/tlog/');
  const parsed = parseTilePath(req.path.slice(at + '/api/audit/tlog/'.length));
  if (!parsed) {
    throw new AppError('validation_error', 'Not a tile path (C2SP tlog-tiles: tile/<L>/<N>[.p/<W>] or tile/entries/<N>[.p/<W>])', {
      details: { errors: [{ path: '/path', rule: 'tlog-tiles', message: 'must be a C2SP tlog-tiles path' }] },
    });
  }
  if (parsed.kind === 'entries' && !ctx.config.tlog.public) {
    const refused = adminKeyRefusal(ctx.config.adminKeyring, req.headers['x-admin-key'], ctx.config.auditorKeyring);
    if (refused) throw refused;
  }
  const bytes = await transparencyLog(ctx).tile(parsed.kind === 'entries' ? 'entries' : parsed.level, parsed.index, parsed.width);
  // The bytes as they are, not a copy (a Buffer is a Uint8Array; the server writes the view):
  // the copy of each entry bundle took 0.68 s of a 37 s CPU profile of the server during
  // `svc audit verify --since` over 1,000,000 leaves. The log never writes to the full
  // bundles it keeps in its cache and serves again.
  return new Response(bytes as Uint8Array<ArrayBuffer>, {
    status: 200,
    headers: {
      'content-type': 'application/octet-stream',
      'cache-control': parsed.width === undefined ? 'public, max-age=31536000, immutable' : 'no-cache',
      'x-request-id': req.requestId,
    },
  });
}

export const routes = {
  handlers: {
    async getTlogCheckpoint(req, ctx) {
      const c = await transparencyLog(ctx).servedCheckpoint();
      if (!c) throw new AppError('not_found', 'The log has no checkpoint yet');
      return text(c.served, req.requestId, { 'cache-control': 'no-cache' });
    },
    getTlogKey(req, ctx) {
      return text(`${transparencyLog(ctx).verifierKey}\n`, req.requestId);
    },
    async addTlogCosignature(req, ctx) {
      const r = await transparencyLog(ctx).addCosignature(req.body);
      const body = { tree_size: r.treeSize, witness: r.witness };
      return r.created ? { status: 201 as const, body } : { status: 200 as const, body };
    },
    getTlogTile2: tile,
    getTlogTile3: tile,
    getTlogTile4: tile,
    getTlogTile5: tile,
    async getInclusionProof(req, ctx) {
      const q = req.query;
      return { status: 200, body: await transparencyLog(ctx).inclusion({ leafIndex: q.leaf_index, requestId: q.request_id, treeSize: q.tree_size }) };
    },
    async getConsistencyProof(req, ctx) {
      return { status: 200, body: await transparencyLog(ctx).consistency({ from: req.query.from, to: req.query.to }) };
    },
  },
  // Proofs asked of the app once the API is up, inclusion and consistency in turn, so that V8
  // has compiled their whole path before callers come (HttpServiceDef.warmUp).
  async warmUp(ctx) {
    const { size, leaves, froms } = await transparencyLog(ctx).warmUpDraws();
    return leaves.flatMap((leaf, i) => [`/api/audit/proof/inclusion?leaf_index=${leaf}&tree_size=${size}`, `/api/audit/proof/consistency?from=${froms[i]}&to=${size}`]);
  },
  async start(ctx) {
    const log = transparencyLog(ctx);
    await log.checkAgainstPublished();
    await log.warm();
    return log.startLoop();
  },
} satisfies RouteModule<operations>;
