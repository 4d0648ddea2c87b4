import { boolean, pgTable, serial, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0001: the one genesis row of the audit chain. Immutable (trigger). */
export const auditChainGenesis = pgTable('audit_chain_genesis', {
  id: serial('id').primaryKey(),
  deployment_id: text('deployment_id').notNull(),
  genesis_hash: text('genesis_hash').notNull(),
  initialized_at: timestamptz3('initialized_at').notNull(),
  singleton: boolean('singleton').notNull().default(true).unique(),
});
