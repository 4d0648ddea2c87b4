/**
 * GET /api/agents/{id}/ownership/history: the chain of custody. Holders are derived from the
 * completed transfers (accepted, force_assigned) in the order they completed, the first holder
 * being the owner the agent was registered with; every step carries the leaf_index of its
 * management event, so each can be proven against the transparency log.
 */
import { asc, eq } from 'drizzle-orm';
import type { components } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { getAgentRow } from '../agents/agent-store.js';
import { agentOwnershipTransfers } from '../db/schema/index.js';
import { expireDueTransfers } from './expire-transfers.js';
import { RESOURCE_TYPE, toTransfer } from './transfer-store.js';

export type OwnershipHistory = components['schemas']['OwnershipHistory'];
type Holder = components['schemas']['OwnershipHolder'];
type Step = components['schemas']['OwnershipStep'];

interface EventRow {
  resource_id: string;
  event_type: string;
  actor: string;
  occurred_at: Date | string;
  leaf_index: number | string;
}

export async function getOwnershipHistory(ctx: AppContext, agentId: string): Promise<OwnershipHistory> {
  await expireDueTransfers(ctx, { agentId });
  const db = ctx.db;
  const agent = await getAgentRow(db, agentId);
  const t = agentOwnershipTransfers;
  const transfers = await db.orm.select().from(t).where(eq(t.agent_id, agentId)).orderBy(asc(t.initiated_at), asc(t.id));
  const events = transfers.length
    ? await db.query<EventRow>(
        `SELECT resource_id, event_type, actor, occurred_at, leaf_index FROM audit_management_events
          WHERE resource_type = $1 AND resource_id = ANY($2::text[]) ORDER BY event_sequence`,
        [RESOURCE_TYPE, transfers.map((x) => x.id)],
      )
    : [];
  const steps = new Map<string, Step[]>();
  for (const e of events) {
    const list = steps.get(e.resource_id) ?? [];
    list.push({ event_type: e.event_type, actor: e.actor, occurred_at: new Date(e.occurred_at).toISOString(), leaf_index: Number(e.leaf_index) });
    steps.set(e.resource_id, list);
  }
  const [created] = await db.query<{ leaf_index: number | string }>(
    `SELECT leaf_index FROM audit_management_events WHERE resource_type = 'agent' AND resource_id = $1 AND event_type = 'agent.created' ORDER BY event_sequence LIMIT 1`,
    [agentId],
  );

  const completed = transfers
    .filter((x) => x.status === 'accepted' || x.status === 'force_assigned')
    .sort((a, b) => a.resolved_at!.getTime() - b.resolved_at!.getTime() || a.id.localeCompare(b.id));
  const holders: Holder[] = [
    {
      owner_id: completed[0]?.from_owner_id ?? agent.owner_id,
      from: agent.created_at.toISOString(),
      until: null,
      acquired_via: 'registered',
      transfer_id: null,
      reason: null,
      accepted_by: agent.created_by,
      leaf_index: created ? Number(created.leaf_index) : null,
    },
  ];
  for (const x of completed) {
    const at = x.resolved_at!.toISOString();
    holders[holders.length - 1].until = at;
    const type = x.status === 'accepted' ? 'ownership.transfer_accepted' : 'ownership.force_assigned';
    const step = (steps.get(x.id) ?? []).find((s) => s.event_type === type);
    holders.push({
      owner_id: x.to_owner_id,
      from: at,
      until: null,
      acquired_via: x.status as 'accepted' | 'force_assigned',
      transfer_id: x.id,
      reason: x.reason,
      accepted_by: x.resolved_by,
      leaf_index: step?.leaf_index ?? null,
    });
  }
  return {
    agent_id: agent.agent_id,
    owner_id: agent.owner_id,
    holders,
    transfers: transfers.map((x) => ({ ...toTransfer(x), steps: steps.get(x.id) ?? [] })),
  };
}
