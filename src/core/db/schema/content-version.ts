import { bigint, boolean, pgTable } from 'drizzle-orm/pg-core';

/** migration 0006: the one content counter row, bumped with every content change. */
export const contentVersion = pgTable('content_version', {
  singleton: boolean('singleton').primaryKey().default(true),
  version: bigint('version', { mode: 'number' }).notNull(),
  bundles_version: bigint('bundles_version', { mode: 'number' }).notNull().default(0),
});
