/**
 * Ownership transfers' rows, their wire form, and the pieces every transition shares: owners
 * (registered on first use, share-locked while a transfer names them), the acceptance token
 * (only its SHA-256 is stored; compared in constant time), the insert of a new transfer, and
 * the management event of each step with the transfer's `audit_hash`.
 *
 * Lock order, the same in every verb so that two of them cannot deadlock: the owners row(s)
 * first (deactivation takes its owner's row for update, the others take the incoming owner's
 * for share), then the agent row(s) (`FOR UPDATE`, several in agent_id order), then transfer
 * rows, and the event chain's lock last (recordEvent, which holds it to commit).
 */
import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { and, eq, inArray } from 'drizzle-orm';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { recordEvent, type Who } from '../audit/events.js';
import type { Db } from '../db/index.js';
import { agentOwnershipTransfers, owners } from '../db/schema/index.js';
import { notifyOwnership } from './notify.js';

export type OwnershipTransfer = components['schemas']['OwnershipTransfer'];
export type OwnershipTransferCreated = components['schemas']['OwnershipTransferCreated'];
export type TransferRow = typeof agentOwnershipTransfers.$inferSelect;
export type OwnerRow = typeof owners.$inferSelect;
export type { Who };

export const RESOURCE_TYPE = 'ownership_transfer';

export function toTransfer(r: TransferRow): OwnershipTransfer {
  return {
    transfer_id: r.id,
    agent_id: r.agent_id,
    from_owner_id: r.from_owner_id,
    to_owner_id: r.to_owner_id,
    status: r.status,
    reason: r.reason,
    initiated_by: r.initiated_by,
    initiated_at: r.initiated_at.toISOString(),
    effective_at: r.effective_at.toISOString(),
    expires_at: r.expires_at.toISOString(),
    resolved_at: r.resolved_at?.toISOString() ?? null,
    resolved_by: r.resolved_by,
    audit_hash: r.audit_hash,
  };
}

export function toOwner(r: OwnerRow): components['schemas']['Owner'] {
  return {
    owner_id: r.owner_id,
    status: r.status,
    created_at: r.created_at.toISOString(),
    deactivated_at: r.deactivated_at?.toISOString() ?? null,
    deactivated_by: r.deactivated_by,
  };
}

/** A new acceptance token (`ot_` + 32 random bytes, base64url) and the hash that is stored. */
export function newAcceptanceToken(): { token: string; hash: string } {
  const token = `ot_${randomBytes(32).toString('base64url')}`;
  return { token, hash: hashToken(token) };
}

const hashToken = (token: string) => createHash('sha256').update(token, 'utf8').digest('hex');

/**
 * 403 unless `token` hashes to the stored hash. Hashes of equal length are compared in
 * constant time, so the answer's timing says nothing of how much of a guess was right.
 */
export function assertToken(row: TransferRow, token: string | null): void {
  if (!token) throw new AppError('forbidden', 'The acceptance token is required (header X-Acceptance-Token or body acceptance_token)');
  const ok = timingSafeEqual(Buffer.from(hashToken(token), 'hex'), Buffer.from(row.acceptance_token_hash, 'hex'));
  if (!ok) throw new AppError('forbidden', 'The acceptance token does not match this transfer');
}

/** The transfer of this agent (locked when `lock`); 404 when absent or another agent's. */
export async function getTransferRow(db: Db, agentId: string, transferId: string, lock = false): Promise<TransferRow> {
  const q = db.orm.select().from(agentOwnershipTransfers).where(eq(agentOwnershipTransfers.id, transferId));
  const [row] = lock ? await q.for('update') : await q;
  if (!row || row.agent_id !== agentId) throw new AppError('not_found', `Transfer ${transferId} of agent ${agentId} does not exist`);
  return row;
}

export function notPending(row: Pick<TransferRow, 'id' | 'status'>): AppError {
  return new AppError('conflict', `Transfer ${row.id} is ${row.status}, not pending`, { details: { status: row.status } });
}

/**
 * The owner, registered as active when first named, and share-locked to the end of the
 * transaction (a concurrent deactivation waits, or is waited for); 409 when deactivated.
 */
export async function lockActiveOwner(db: Db, ownerId: string, now: Date): Promise<OwnerRow> {
  const row = await lockOwner(db, ownerId, now);
  if (row.status !== 'active') throw ownerDeactivated(row);
  return row;
}

/** The owner, registered as active when first named, share-locked; whatever its status. */
export async function lockOwner(db: Db, ownerId: string, now: Date): Promise<OwnerRow> {
  await db.orm.insert(owners).values({ owner_id: ownerId, created_at: now }).onConflictDoNothing({ target: owners.owner_id });
  const [row] = await db.orm.select().from(owners).where(eq(owners.owner_id, ownerId)).for('share');
  return row;
}

/** When a transfer effective at `from` expires: TRANSFER_WINDOW_HOURS later. */
export function windowEnd(ctx: AppContext, from: Date): Date {
  return new Date(from.getTime() + ctx.config.ownership.transferWindowHours * 3_600_000);
}

/**
 * Moves transfer `t` from one of the statuses `from` to `status`, resolved now by
 * `resolvedBy`: conditional on its status, so of two transactions racing on one transfer only
 * the first moves it; the other gets 409 with the status it found.
 */
export async function resolveTransfer(db: Db, t: TransferRow, from: TransferRow['status'][], status: TransferRow['status'], resolvedBy: string, now: Date): Promise<TransferRow> {
  const [row] = await db.orm
    .update(agentOwnershipTransfers)
    .set({ status, resolved_at: now, resolved_by: resolvedBy })
    .where(and(eq(agentOwnershipTransfers.id, t.id), inArray(agentOwnershipTransfers.status, from)))
    .returning();
  if (!row) throw notPending(await getTransferRow(db, t.agent_id, t.id));
  return row;
}

export function ownerDeactivated(row: OwnerRow): AppError {
  return new AppError('conflict', `Owner ${row.owner_id} is deactivated and cannot receive agents`, { details: { owner_id: row.owner_id, owner_status: row.status } });
}

export interface NewTransfer {
  agent_id: string;
  from_owner_id: string;
  to_owner_id: string;
  reason: string;
  initiated_by: string;
  effective_at: Date;
}

/**
 * Inserts a pending transfer (inside the caller's transaction, with the agent row locked) and
 * records `ownership.transfer_requested`. A second pending transfer of the agent is refused by
 * the partial unique index (409), whatever the caller checked before.
 */
export async function insertPendingTransfer(ctx: AppContext, db: Db, who: Who, t: NewTransfer): Promise<OwnershipTransferCreated> {
  const now = ctx.clock.now();
  const { token, hash } = newAcceptanceToken();
  // Never before the request (the clock has moved on since the caller read it).
  const effective = t.effective_at < now ? now : t.effective_at;
  const expires = windowEnd(ctx, effective);
  const [row] = await db.orm
    .insert(agentOwnershipTransfers)
    .values({ id: randomUUID(), ...t, status: 'pending', initiated_at: now, effective_at: effective, expires_at: expires, acceptance_token_hash: hash })
    .onConflictDoNothing()
    .returning();
  if (!row) throw new AppError('conflict', `A transfer of agent ${t.agent_id} is already pending`, { details: { agent_id: t.agent_id } });
  const after = { status: row.status, agent_id: row.agent_id, from_owner_id: row.from_owner_id, to_owner_id: row.to_owner_id, reason: row.reason, effective_at: row.effective_at.toISOString(), expires_at: row.expires_at.toISOString() };
  const saved = await recordTransferEvent(ctx, db, who, row, 'ownership.transfer_requested', null, after);
  notifyOwnership(ctx, db, 'ownership.transfer_requested', saved);
  return { ...toTransfer(saved), acceptance_token: token };
}

/** Records one step's event and keeps its record_hash as the transfer's audit_hash; returns the updated row. */
export async function recordTransferEvent(
  ctx: AppContext,
  db: Db,
  who: Who,
  row: TransferRow,
  eventType: string,
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): Promise<TransferRow> {
  const ev = await recordEvent(db, who, { event_type: eventType, resource_type: RESOURCE_TYPE, resource_id: row.id, before, after }, ctx.clock.now());
  const [saved] = await db.orm.update(agentOwnershipTransfers).set({ audit_hash: ev.record_hash }).where(eq(agentOwnershipTransfers.id, row.id)).returning();
  return saved;
}
