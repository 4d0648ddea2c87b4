/**
 * The drizzle schema (./schema) against the catalog the migrations build: every table,
 * column, type, nullability, default and primary key must agree, on PGlite and (with
 * SVC_TEST_REAL=1) on PostgreSQL. A migration that adds or changes a column fails here
 * until its table file says the same.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { is, SQL } from 'drizzle-orm';
import { getTableConfig, integer, PgArray, PgDialect, pgTable, PgTable, PgJsonb, text, type PgColumn } from 'drizzle-orm/pg-core';
import { createTestDb, type TestDb } from '../../../test/harness.js';
import * as schema from './schema/index.js';

interface ColumnShape {
  type: string;
  notNull: boolean;
  /** Normalized default expression, or null. */
  default: string | null;
}
interface TableShape {
  columns: Map<string, ColumnShape>;
  primaryKey: string[];
}

const UDT: Record<string, string> = { smallint: 'int2', integer: 'int4', serial: 'int4', bigint: 'int8', bigserial: 'int8', boolean: 'bool' };

/** drizzle's SQL type, spelled as the catalog's udt names: 'int8', 'text[]', 'timestamptz(3)'. */
function drizzleType(c: PgColumn): string {
  const t = c.getSQLType();
  const array = t.endsWith('[]');
  let base = array ? t.slice(0, -2) : t;
  const ts = /^timestamp(?: \((\d)\))? with time zone$/.exec(base);
  if (ts) base = `timestamptz(${ts[1] ?? 6})`;
  base = UDT[base] ?? base;
  return array ? `${base}[]` : base;
}

const dialect = new PgDialect();

/** The default as the catalog prints it, casts removed: `'active'`, `'{}'`, `now()`, `false`. */
function drizzleDefault(c: PgColumn): string | null {
  if (!c.hasDefault) return null;
  const d = c.default;
  if (d === undefined) return /serial$/.test(c.getSQLType()) ? 'nextval' : null;
  if (is(d, SQL)) return dialect.sqlToQuery(d).sql;
  if (is(c, PgJsonb)) return `'${JSON.stringify(d)}'`;
  if (is(c, PgArray)) return `'{${(d as unknown[]).join(',')}}'`;
  if (typeof d === 'string') return `'${d}'`;
  return String(d);
}

function catalogDefault(d: string | null): string | null {
  if (d === null) return null;
  if (d.startsWith('nextval(')) return 'nextval';
  return d.replace(/::[a-z ]+(\[\])?$/, '');
}

function drizzleShapes(tables: PgTable[]): Map<string, TableShape> {
  const out = new Map<string, TableShape>();
  for (const table of tables) {
    const cfg = getTableConfig(table);
    const columns = new Map<string, ColumnShape>();
    for (const c of cfg.columns) columns.set(c.name, { type: drizzleType(c), notNull: c.notNull, default: drizzleDefault(c) });
    const primaryKey = cfg.primaryKeys.length ? cfg.primaryKeys[0].columns.map((c) => c.name) : cfg.columns.filter((c) => c.primary).map((c) => c.name);
    out.set(cfg.name, { columns, primaryKey });
  }
  return out;
}

async function catalogShapes(t: TestDb): Promise<Map<string, TableShape>> {
  // The owner sees every table's columns (information_schema shows only what a role may use).
  const cols = await t.owner.query<{ table_name: string; column_name: string; data_type: string; udt_name: string; is_nullable: string; column_default: string | null; datetime_precision: number | null }>(
    `SELECT c.table_name, c.column_name, c.data_type, c.udt_name, c.is_nullable, c.column_default, c.datetime_precision
       FROM information_schema.columns c
       JOIN information_schema.tables t ON t.table_schema = c.table_schema AND t.table_name = c.table_name
      WHERE c.table_schema = 'public' AND t.table_type = 'BASE TABLE'
      ORDER BY c.table_name, c.ordinal_position`,
  );
  const pks = await t.owner.query<{ table_name: string; column_name: string }>(
    `SELECT k.table_name, k.column_name
       FROM information_schema.table_constraints tc
       JOIN information_schema.key_column_usage k ON k.constraint_schema = tc.constraint_schema AND k.constraint_name = tc.constraint_name
      WHERE tc.table_schema = 'public' AND tc.constraint_type = 'PRIMARY KEY'
      ORDER BY k.table_name, k.ordinal_position`,
  );
  const out = new Map<string, TableShape>();
  for (const c of cols) {
    let shape = out.get(c.table_name);
    if (!shape) out.set(c.table_name, (shape = { columns: new Map(), primaryKey: [] }));
    const base = c.data_type === 'ARRAY' ? c.udt_name.slice(1) : c.udt_name;
    const type = base === 'timestamptz' ? `timestamptz(${c.datetime_precision})` : base;
    shape.columns.set(c.column_name, { type: c.data_type === 'ARRAY' ? `${type}[]` : type, notNull: c.is_nullable === 'NO', default: catalogDefault(c.column_default) });
  }
  for (const k of pks) out.get(k.table_name)?.primaryKey.push(k.column_name);
  return out;
}

/** Every difference, one line each (empty when the schema matches the catalog). */
function diff(catalog: Map<string, TableShape>, drizzle: Map<string, TableShape>): string[] {
  const out: string[] = [];
  for (const name of catalog.keys()) if (!drizzle.has(name)) out.push(`table ${name}: in the database, not in the drizzle schema`);
  for (const [name, d] of drizzle) {
    const c = catalog.get(name);
    if (!c) {
      out.push(`table ${name}: in the drizzle schema, not in the database`);
      continue;
    }
    for (const col of c.columns.keys()) if (!d.columns.has(col)) out.push(`${name}.${col}: in the database, not in the drizzle schema`);
    for (const [col, dc] of d.columns) {
      const cc = c.columns.get(col);
      if (!cc) {
        out.push(`${name}.${col}: in the drizzle schema, not in the database`);
        continue;
      }
      if (cc.type !== dc.type) out.push(`${name}.${col}: type ${cc.type} in the database, ${dc.type} in drizzle`);
      if (cc.notNull !== dc.notNull) out.push(`${name}.${col}: ${cc.notNull ? 'NOT NULL' : 'nullable'} in the database, ${dc.notNull ? 'NOT NULL' : 'nullable'} in drizzle`);
      if (cc.default !== dc.default) out.push(`${name}.${col}: default ${cc.default} in the database, ${dc.default} in drizzle`);
    }
    if (c.primaryKey.join(',') !== d.primaryKey.join(',')) out.push(`${name}: primary key (${c.primaryKey}) in the database, (${d.primaryKey}) in drizzle`);
  }
  return out;
}

const allTables: PgTable[] = Object.values(schema as Record<string, unknown>).filter((v): v is PgTable => is(v, PgTable));

let t: TestDb;
let catalog: Map<string, TableShape>;
beforeAll(async () => {
  t = await createTestDb();
  catalog = await catalogShapes(t);
});
afterAll(async () => {
  await t?.close();
});

describe('drizzle schema and the migrated catalog', () => {
  it('agree on every table, column, type, nullability, default and primary key', () => {
    expect(catalog.size).toBeGreaterThanOrEqual(23);
    expect(diff(catalog, drizzleShapes(allTables))).toEqual([]);
  });

  it('one table file per table: no table is declared twice', () => {
    const names = allTables.map((x) => getTableConfig(x).name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('reports a drifted table: missing and extra columns, type, nullability, default, a missing table', () => {
    // mcp_servers as a careless edit would leave it.
    const drifted = pgTable('mcp_servers', {
      server_id: text('server_id').primaryKey(),
      name: text('name'),
      description: integer('description'),
      status: text('status').notNull().default('inactive'),
      owner_name: text('owner_name'),
      owner_verified: text('owner_verified').notNull(),
      created_by: text('created_by').notNull(),
      created_at: text('created_at').notNull(),
      extra: text('extra'),
    });
    const tables = allTables.filter((x) => getTableConfig(x).name !== 'mcp_servers' && getTableConfig(x).name !== 'tag_history');
    const found = diff(catalog, drizzleShapes([...tables, drifted]));
    expect(found).toEqual(
      expect.arrayContaining([
        'table tag_history: in the database, not in the drizzle schema',
        'mcp_servers.updated_at: in the database, not in the drizzle schema',
        'mcp_servers.extra: in the drizzle schema, not in the database',
        'mcp_servers.description: type text in the database, int4 in drizzle',
        'mcp_servers.name: NOT NULL in the database, nullable in drizzle',
        "mcp_servers.status: default 'active' in the database, 'inactive' in drizzle",
        'mcp_servers.owner_verified: type bool in the database, text in drizzle',
        'mcp_servers.created_at: type timestamptz(3) in the database, text in drizzle',
      ]),
    );
    expect(found).toHaveLength(10);
  });
});
