/**
 * The transparency log over gRPC/Connect (spec/context.proto, TransparencyLogService): the
 * latest checkpoint and RFC 9162 proofs, the same as the control plane's REST routes, from
 * the same domain verbs (src/core/tlog/log.ts). Public, like the REST routes.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import type { TransparencyLogService } from '../../../gen/proto/context_pb.js';
import { transparencyLog } from '../../core/tlog/log.js';
import { connectError, isRefusal } from './errors.js';

/** A domain refusal as the gRPC code the proto names; anything else is logged and INTERNAL. */
async function rpc<T>(ctx: AppContext, what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (!isRefusal(e)) ctx.logger.error(`transparency log ${what} failed`, { error: e as Error });
    throw connectError(e);
  }
}

/** Numbers past 2^53 cannot name a leaf or a size of this log. */
function safe(v: bigint, name: string): number {
  if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new AppError('validation_error', `${name} is too large`);
  return Number(v);
}

const b64 = (s: string) => Buffer.from(s, 'base64');

/**
 * The three calls, each taking the decoded request alone: the Connect router's service
 * implementation, and what the plain binary gRPC path (transparency-log-h2.ts) calls.
 */
export function transparencyLogHandlers(ctx: AppContext) {
  return {
    getCheckpoint: () =>
      rpc(ctx, 'checkpoint', async () => {
        const log = transparencyLog(ctx);
        const c = await log.servedCheckpoint();
        if (!c) throw new AppError('not_found', 'The log has no checkpoint yet');
        return { note: c.served, origin: log.origin, treeSize: BigInt(c.checkpoint.treeSize), rootHash: c.checkpoint.root };
      }),
    getInclusionProof: (req) =>
      rpc(ctx, 'inclusion proof', async () => {
        const leaf = req.leaf;
        const p = await transparencyLog(ctx).inclusion({
          leafIndex: leaf.case === 'leafIndex' ? safe(leaf.value, 'leaf_index') : undefined,
          requestId: leaf.case === 'requestId' ? leaf.value : undefined,
          treeSize: req.treeSize === undefined ? undefined : safe(req.treeSize, 'tree_size'),
        });
        return { leafIndex: BigInt(p.leaf_index), treeSize: BigInt(p.tree_size), hashes: p.hashes.map(b64) };
      }),
    getConsistencyProof: (req) =>
      rpc(ctx, 'consistency proof', async () => {
        const p = await transparencyLog(ctx).consistency({ from: safe(req.from, 'from'), to: req.to === undefined ? undefined : safe(req.to, 'to') });
        return { from: BigInt(p.from), to: BigInt(p.to), hashes: p.hashes.map(b64) };
      }),
  } satisfies ServiceImpl<typeof TransparencyLogService>;
}
