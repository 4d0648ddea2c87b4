/**
 * One context request's audit record with what a verifier needs to check it is in the
 * transparency log: the leaf's data (the exact bytes the log hashes, leaves.ts), the inclusion
 * proof to the latest checkpoint (RFC 9162 2.1.3), that checkpoint's signed note as served
 * (C2SP tlog-checkpoint, with any witness cosignature lines) and the log's verifier key.
 * The console's record page checks it in the browser (assets/proof.js).
 */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { listAuditRequests, type AuditRecord } from './read.js';
import { readLeaves } from '../tlog/leaves.js';
import { transparencyLog } from '../tlog/log.js';

export interface AuditRecordProof {
  record: AuditRecord;
  /** The leaf data (UTF-8 canonical JSON of the record). */
  leaf: Buffer;
  /** C2SP verifier key `<name>+<hash8hex>+<base64(0x01 || public key)>`. */
  verifierKey: string;
  /** The latest checkpoint (null: none yet) and the served note text. */
  checkpoint: { treeSize: number; note: string } | null;
  /** The inclusion proof's hashes (audit path) to that checkpoint; null when it does not cover the leaf yet. */
  proof: Buffer[] | null;
}

/** The record with `requestId` and its inclusion proof; 404 when no record has this id. */
export async function auditRecordProof(ctx: AppContext, requestId: string): Promise<AuditRecordProof> {
  const [record] = (await listAuditRequests(ctx, { requestId, limit: 1 })).records;
  if (!record) throw new AppError('not_found', 'No audit record has this request_id');
  const log = transparencyLog(ctx);
  const [leaf] = await readLeaves(ctx.db, record.leaf_index, 1);
  // A committed record always has its leaf; only a concurrent delete could take it away.
  if (!leaf) throw new AppError('not_found', 'The record has no leaf in the transparency log');
  const served = await log.servedCheckpoint();
  const checkpoint = served ? { treeSize: served.checkpoint.treeSize, note: served.served } : null;
  let proof: Buffer[] | null = null;
  if (checkpoint && record.leaf_index < checkpoint.treeSize) {
    const p = await log.inclusion({ leafIndex: record.leaf_index, treeSize: checkpoint.treeSize });
    proof = p.hashes.map((h) => Buffer.from(h, 'base64'));
  }
  return { record, leaf: leaf.data, verifierKey: log.verifierKey, checkpoint, proof };
}
