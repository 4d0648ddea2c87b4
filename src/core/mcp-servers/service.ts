/**
 * MCP server registry (spec 2.5, 4.3): tool connectors with an accountable human owner, in
 * their own table. `owner_verified` is true only when the owner was confirmed against an
 * identity provider; none is configured in this version, so it is always false (a request
 * asking for true is refused rather than silently recorded as verified).
 */
import { randomBytes } from 'node:crypto';
import { count, eq } from 'drizzle-orm';
import type { components, operations } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { ownerUnverifiable } from '../agents/create-agent.js';
import { mcpServers } from '../db/schema/index.js';
import { changedFields, eventFields, recordEvent, type Who } from '../audit/events.js';

export type McpServer = components['schemas']['McpServer'];
/** The contract's body; `created_by` (contract default `admin`) may be left out, and is defaulted here. */
export type McpServerCreate = components['schemas']['McpServerCreate'];
export type McpServerUpdate = components['schemas']['McpServerUpdate'];
export type McpServerList = components['schemas']['McpServerList'];
/** The filters and paging of `GET /api/mcp-servers` (its query parameters). */
export type ListMcpServersInput = NonNullable<operations['listMcpServers']['parameters']['query']>;

const toServer = (r: typeof mcpServers.$inferSelect): McpServer => ({
  server_id: r.server_id,
  name: r.name,
  description: r.description,
  status: r.status,
  owner_name: r.owner_name,
  owner_verified: r.owner_verified,
  created_by: r.created_by,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

const notFound = (id: string) => new AppError('not_found', `MCP server ${id} does not exist`);

export async function createMcpServer(ctx: AppContext, input: McpServerCreate, who: Who): Promise<McpServer> {
  // The contract already allows only false here; the verb holds the rule for other callers too.
  if ((input.owner_verified as boolean | undefined) === true) throw ownerUnverifiable();
  const now = ctx.clock.now();
  return ctx.db.tx(async (db) => {
    const [row] = await db.orm
      .insert(mcpServers)
      .values({
        server_id: `mcp_${randomBytes(16).toString('hex')}`,
        name: input.name,
        description: input.description ?? null,
        status: 'active',
        owner_name: input.owner_name ?? null,
        owner_verified: false,
        created_by: input.created_by ?? 'admin',
        created_at: now,
        updated_at: now,
      })
      .returning();
    const server = toServer(row);
    await recordEvent(db, who, { event_type: 'mcp_server.created', resource_type: 'mcp_server', resource_id: server.server_id, after: eventFields(server) }, now);
    return server;
  });
}

export async function listMcpServers(ctx: AppContext, input: ListMcpServersInput): Promise<McpServerList> {
  const limit = Math.min(input.limit ?? 50, 100);
  const offset = input.offset ?? 0;
  const filter = input.status ? eq(mcpServers.status, input.status) : undefined;
  const [{ n }] = await ctx.db.orm.select({ n: count() }).from(mcpServers).where(filter);
  const rows = await ctx.db.orm.select().from(mcpServers).where(filter).orderBy(mcpServers.created_at, mcpServers.server_id).limit(limit).offset(offset);
  return { servers: rows.map(toServer), total: n, limit, offset };
}

export async function getMcpServer(ctx: AppContext, serverId: string): Promise<McpServer> {
  const [row] = await ctx.db.orm.select().from(mcpServers).where(eq(mcpServers.server_id, serverId));
  if (!row) throw notFound(serverId);
  return toServer(row);
}

export async function updateMcpServer(ctx: AppContext, serverId: string, input: McpServerUpdate, who: Who): Promise<McpServer> {
  if (input.owner_verified === true) throw ownerUnverifiable();
  const now = ctx.clock.now();
  return ctx.db.tx(async (db) => {
    const [cur] = await db.orm.select().from(mcpServers).where(eq(mcpServers.server_id, serverId)).for('update');
    if (!cur) throw notFound(serverId);
    // A field left out (or a null name or status) keeps its stored value; a null description
    // or owner_name clears it.
    const [row] = await db.orm
      .update(mcpServers)
      .set({
        ...(input.name != null && { name: input.name }),
        ...(input.description !== undefined && { description: input.description ?? null }),
        ...(input.status != null && { status: input.status }),
        ...(input.owner_name !== undefined && { owner_name: input.owner_name ?? null }),
        owner_verified: false,
        updated_at: now,
      })
      .where(eq(mcpServers.server_id, serverId))
      .returning();
    const server = toServer(row!);
    const changed = changedFields(eventFields(toServer(cur)), eventFields(server));
    if (changed.after) await recordEvent(db, who, { event_type: 'mcp_server.updated', resource_type: 'mcp_server', resource_id: serverId, ...changed }, now);
    return server;
  });
}

/** Hard delete; answers the record as it was just before. */
export async function deleteMcpServer(ctx: AppContext, serverId: string, who: Who): Promise<McpServer> {
  return ctx.db.tx(async (db) => {
    const [row] = await db.orm.delete(mcpServers).where(eq(mcpServers.server_id, serverId)).returning();
    if (!row) throw notFound(serverId);
    const server = toServer(row);
    await recordEvent(db, who, { event_type: 'mcp_server.deleted', resource_type: 'mcp_server', resource_id: serverId, before: eventFields(server) }, ctx.clock.now());
    return server;
  });
}
