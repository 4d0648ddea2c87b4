/**
 * The drizzle schema: one file per table the migrations create (plus the runner's
 * `schema_migrations`). The SQL files in `migrations/` remain the source of the schema;
 * this is its typed mirror, and `../schema.test.ts` fails when the two differ (tables,
 * columns, types, nullability, defaults, primary keys) on PGlite and on PostgreSQL.
 *
 * Property names are the column names (snake_case), so a row read through drizzle has the
 * same shape as one read with raw SQL.
 */
export { activeSubscriptions } from './active-subscriptions.js';
export { agentApiKeys } from './agent-api-keys.js';
export { agentContextRequests } from './agent-context-requests.js';
export { agentOutputLogs } from './agent-output-logs.js';
export { agentOwnershipTransfers } from './agent-ownership-transfers.js';
export { agentPolicyOverrides } from './agent-policy-overrides.js';
export { agents } from './agents.js';
export { analyticsDaily, analyticsHourly, analyticsHourlyAgents, analyticsWatermark } from './analytics.js';
export { auditChainGenesis } from './audit-chain-genesis.js';
export { auditManagementEvents } from './audit-management-events.js';
export { auditTlogCheckpoints, auditTlogCosignatures, auditTlogTiles } from './audit-tlog.js';
export { bundleScds } from './bundle-scds.js';
export { bundles } from './bundles.js';
export { consoleSessions } from './console-sessions.js';
export { contentVersion } from './content-version.js';
export { contextServiceEvents } from './context-service-events.js';
export { deployments } from './deployments.js';
export { graphEdges } from './graph-edges.js';
export { graphNodes } from './graph-nodes.js';
export { mcpServers } from './mcp-servers.js';
export { owners } from './owners.js';
export { ruleHistory } from './rule-history.js';
export { ruleSchemas } from './rule-schemas.js';
export { ruleSets } from './rule-sets.js';
export { rules } from './rules.js';
export { schemaMigrations } from './schema-migrations.js';
export { tagHistory } from './tag-history.js';
export { tags } from './tags.js';
export { telemetryLog } from './telemetry-log.js';
