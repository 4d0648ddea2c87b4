/**
 * Column helpers shared by the table files. Every timestamp the migrations create is
 * `timestamptz(3)` read as a JS Date; int8 columns are read as numbers (the postgres.js
 * setting in ../index.ts: counts and sequences stay far below 2^53).
 */
import { customType, timestamp } from 'drizzle-orm/pg-core';

/** `timestamptz(3)`, as a Date. */
export const timestamptz3 = (name: string) => timestamp(name, { withTimezone: true, precision: 3, mode: 'date' });

/** `bytea`, as the drivers hand it over (a Uint8Array). */
export const bytea = customType<{ data: Uint8Array }>({ dataType: () => 'bytea' });
