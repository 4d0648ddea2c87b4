import { integer, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Created by the migration runner (../migrate.ts), not by a migration file. */
export const schemaMigrations = pgTable('schema_migrations', {
  version: integer('version').primaryKey(),
  name: text('name').notNull(),
  checksum: text('checksum').notNull(),
  applied_at: timestamp('applied_at', { withTimezone: true, mode: 'date' }).notNull().defaultNow(),
});
