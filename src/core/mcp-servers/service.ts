/**
 * MCP server registry (spec 2.5, 4.3): tool connectors with an accountable human owner, in
 * their own table. `owner_verified` is true only when the owner was confirmed against an
 * identity provider; none is configured in this version, so it is always false (a request
 * asking for true is refused rather than silently recorded as verified).
 */
import { randomBytes } from 'node:crypto';
import type { components, operations } from '../../../gen/openapi/control-plane.js';
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { ownerUnverifiable } from '../agents/create-agent.js';

export type McpServer = components['schemas']['McpServer'];
/** The contract's body; `created_by` (contract default `admin`) may be left out, and is defaulted here. */
export type McpServerCreate = components['schemas']['McpServerCreate'];
export type McpServerUpdate = components['schemas']['McpServerUpdate'];
export type McpServerList = components['schemas']['McpServerList'];
/** The filters and paging of `GET /api/mcp-servers` (its query parameters). */
export type ListMcpServersInput = NonNullable<operations['listMcpServers']['parameters']['query']>;

interface McpRow {
  server_id: string;
  name: string;
  description: string | null;
  status: McpServer['status'];
  owner_name: string | null;
  owner_verified: boolean;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

const toServer = (r: McpRow): McpServer => ({
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

export async function createMcpServer(ctx: AppContext, input: McpServerCreate): Promise<McpServer> {
  // The contract already allows only false here; the verb holds the rule for other callers too.
  if ((input.owner_verified as boolean | undefined) === true) throw ownerUnverifiable();
  const now = ctx.clock.now();
  const [row] = await ctx.db.query<McpRow>(
    `INSERT INTO mcp_servers (server_id, name, description, status, owner_name, owner_verified, created_by, created_at, updated_at)
     VALUES ($1, $2, $3, 'active', $4, false, $5, $6, $6) RETURNING *`,
    [`mcp_${randomBytes(16).toString('hex')}`, input.name, input.description ?? null, input.owner_name ?? null, input.created_by ?? 'admin', now],
  );
  return toServer(row);
}

export async function listMcpServers(ctx: AppContext, input: ListMcpServersInput): Promise<McpServerList> {
  const limit = Math.min(input.limit ?? 50, 100);
  const offset = input.offset ?? 0;
  const filter = input.status ? 'WHERE status = $1' : '';
  const params = input.status ? [input.status] : [];
  const [{ n }] = await ctx.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM mcp_servers ${filter}`, params);
  const rows = await ctx.db.query<McpRow>(
    `SELECT * FROM mcp_servers ${filter} ORDER BY created_at, server_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, limit, offset],
  );
  return { servers: rows.map(toServer), total: n, limit, offset };
}

export async function getMcpServer(ctx: AppContext, serverId: string): Promise<McpServer> {
  const [row] = await ctx.db.query<McpRow>(`SELECT * FROM mcp_servers WHERE server_id = $1`, [serverId]);
  if (!row) throw notFound(serverId);
  return toServer(row);
}

export async function updateMcpServer(ctx: AppContext, serverId: string, input: McpServerUpdate): Promise<McpServer> {
  if (input.owner_verified === true) throw ownerUnverifiable();
  const [row] = await ctx.db.query<McpRow>(
    `UPDATE mcp_servers SET
       name = COALESCE($2, name),
       description = CASE WHEN $3 THEN $4 ELSE description END,
       status = COALESCE($5, status),
       owner_name = CASE WHEN $6 THEN $7 ELSE owner_name END,
       owner_verified = false,
       updated_at = $8
     WHERE server_id = $1 RETURNING *`,
    [serverId, input.name ?? null, input.description !== undefined, input.description ?? null, input.status ?? null, input.owner_name !== undefined, input.owner_name ?? null, ctx.clock.now()],
  );
  if (!row) throw notFound(serverId);
  return toServer(row);
}

/** Hard delete; answers the record as it was just before. */
export async function deleteMcpServer(ctx: AppContext, serverId: string): Promise<McpServer> {
  const [row] = await ctx.db.query<McpRow>(`DELETE FROM mcp_servers WHERE server_id = $1 RETURNING *`, [serverId]);
  if (!row) throw notFound(serverId);
  return toServer(row);
}
