import { boolean, pgTable, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0000. `owner_verified` is true only after identity-provider confirmation. */
export const mcpServers = pgTable('mcp_servers', {
  server_id: text('server_id').primaryKey(),
  name: text('name').notNull(),
  description: text('description'),
  status: text('status', { enum: ['active', 'inactive', 'deprecated'] }).notNull().default('active'),
  owner_name: text('owner_name'),
  owner_verified: boolean('owner_verified').notNull().default(false),
  created_by: text('created_by').notNull(),
  created_at: timestamptz3('created_at').notNull().defaultNow(),
  updated_at: timestamptz3('updated_at').notNull().defaultNow(),
});
