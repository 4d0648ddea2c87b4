import { boolean, jsonb, pgTable, primaryKey, text } from 'drizzle-orm/pg-core';
import { timestamptz3 } from './columns.js';

/** migration 0006: versioned, immutable SCS manifests (`DRAFT` is the only mutable version). */
export const bundles = pgTable(
  'bundles',
  {
    bundle_id: text('bundle_id').notNull(),
    version: text('version').notNull(),
    bundle_type: text('bundle_type', { enum: ['project', 'meta', 'standards', 'domain', 'concern'] }).notNull(),
    schema_version: text('schema_version'),
    title: text('title'),
    created_by: text('created_by').notNull(),
    description: text('description'),
    manifest: jsonb('manifest').$type<Record<string, unknown>>().notNull(),
    validation_status: text('validation_status', { enum: ['pending', 'valid', 'invalid'] }).notNull().default('pending'),
    validation_errors: jsonb('validation_errors').$type<unknown>(),
    created_at: timestamptz3('created_at').notNull().defaultNow(),
    published_at: timestamptz3('published_at'),
    is_active: boolean('is_active').notNull().default(true),
  },
  (t) => [primaryKey({ columns: [t.bundle_id, t.version] })],
);
