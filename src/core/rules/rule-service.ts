/**
 * The rules engine's verbs: schemas (compiled when stored), rule set versions bound to a
 * schema, and rules validated against their set's schema. A schema may declare an edge
 * mapping; each rule stored under it whose `rule_data` holds both mapped fields writes one
 * operational edge (ON_FORMULARY, IN_NETWORK, REQUIRES_PRIOR_AUTH) between Entity nodes, in
 * the same transaction as the rule, with the rule that produced it recorded on the edge.
 * Everything here is immutable once created (no update or delete routes).
 */
import type { ValidateFunction } from 'ajv';
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/rules.js';
import { semverSortKey } from '../../shared/semver.js';
import { compileRuleSchema, SchemaCompileError, violations } from './json-schema.js';

type S = components['schemas'];
type EdgeMapping = S['EdgeMapping'];

type SchemaRow = { id: string; schema: Record<string, unknown>; edge: EdgeMapping | null; created_at: Date };
type SetRow = { id: string; version: string; schema_id: string; created_at: Date };
type RuleRow = { rule_set_id: string; rule_set_version: string; rule_id: string; rule_data: Record<string, unknown>; created_at: Date };

const toSchema = (r: SchemaRow): S['RuleSchema'] => ({ id: r.id, schema: r.schema, edge: r.edge ?? null, created_at: r.created_at.toISOString() });
const toSet = (r: SetRow): S['RuleSet'] => ({ id: r.id, version: r.version, schema_id: r.schema_id, created_at: r.created_at.toISOString() });
const toRule = (r: RuleRow): S['Rule'] => ({
  rule_id: r.rule_id,
  rule_set_id: r.rule_set_id,
  rule_set_version: r.rule_set_version,
  rule_data: r.rule_data,
  created_at: r.created_at.toISOString(),
});

/** Compiled validators by schema id (schemas are immutable, so entries never go stale). */
const validators = (ctx: AppContext) => ctx.singleton('rule-schema-validators', () => new Map<string, ValidateFunction>());

function validatorFor(ctx: AppContext, row: SchemaRow): ValidateFunction {
  const cache = validators(ctx);
  let v = cache.get(row.id);
  if (!v) {
    v = compileRuleSchema(row.schema);
    cache.set(row.id, v);
  }
  return v;
}

export async function createRuleSchema(ctx: AppContext, input: S['CreateRuleSchemaRequest']): Promise<S['RuleSchema']> {
  try {
    compileRuleSchema(input.schema);
  } catch (e) {
    if (!(e instanceof SchemaCompileError)) throw e;
    throw new AppError('validation_error', `Rule schema ${input.id} is not a valid JSON Schema: ${e.message}`, { details: { schema_errors: [e.message] } });
  }
  const rows = await ctx.db.query<SchemaRow>(
    `INSERT INTO rule_schemas (id, schema, edge, created_at) VALUES ($1, $2::jsonb, $3::jsonb, $4)
     ON CONFLICT (id) DO NOTHING RETURNING *`,
    [input.id, JSON.stringify(input.schema), input.edge ? JSON.stringify(input.edge) : null, ctx.clock.now()],
  );
  if (!rows[0]) throw new AppError('conflict', `Rule schema ${input.id} already exists (schemas are immutable)`);
  return toSchema(rows[0]);
}

export async function getRuleSchema(ctx: AppContext, id: string): Promise<S['RuleSchema']> {
  const [row] = await ctx.db.query<SchemaRow>('SELECT * FROM rule_schemas WHERE id = $1', [id]);
  if (!row) throw new AppError('not_found', `Rule schema ${id} does not exist`);
  return toSchema(row);
}

export async function createRuleSet(ctx: AppContext, input: S['CreateRuleSetRequest']): Promise<S['RuleSet']> {
  return ctx.db.tx(async (t) => {
    const [schema] = await t.query('SELECT 1 FROM rule_schemas WHERE id = $1', [input.schema_id]);
    if (!schema) throw new AppError('not_found', `Rule schema ${input.schema_id} does not exist`, { details: { schema_id: input.schema_id } });
    const rows = await t.query<SetRow>(
      `INSERT INTO rule_sets (id, version, schema_id, created_at) VALUES ($1, $2, $3, $4)
       ON CONFLICT (id, version) DO NOTHING RETURNING *`,
      [input.id, input.version, input.schema_id, ctx.clock.now()],
    );
    if (!rows[0]) throw new AppError('conflict', `Rule set ${input.id} version ${input.version} already exists`);
    return toSet(rows[0]);
  });
}

/** Semantic-version order in SQL (versions are stored only in the X.Y.Z shape; numeric parts, exact at any length). */
const SEMVER_ORDER = semverSortKey('s.version');

export async function listRuleSets(ctx: AppContext): Promise<S['RuleSetList']> {
  const rows = await ctx.db.query<SetRow & { rule_count: number }>(
    `SELECT s.id, s.version, s.schema_id, s.created_at,
            (SELECT count(*) FROM rules r WHERE r.rule_set_id = s.id AND r.rule_set_version = s.version) AS rule_count
       FROM rule_sets s ORDER BY s.id, ${SEMVER_ORDER}`,
  );
  return { rule_sets: rows.map((r) => ({ ...toSet(r), rule_count: Number(r.rule_count) })) };
}

/** The rule set version addressed (default: the highest version of the id). */
async function findSet(db: Db, id: string, version: string | undefined): Promise<SetRow & { schema: Record<string, unknown>; edge: EdgeMapping | null; schema_created_at: Date }> {
  const rows = await db.query<SetRow & { schema: Record<string, unknown>; edge: EdgeMapping | null; schema_created_at: Date }>(
    `SELECT s.id, s.version, s.schema_id, s.created_at, sc.schema, sc.edge, sc.created_at AS schema_created_at
       FROM rule_sets s JOIN rule_schemas sc ON sc.id = s.schema_id
      WHERE s.id = $1 ${version ? 'AND s.version = $2' : ''}
      ORDER BY ${SEMVER_ORDER} DESC LIMIT 1`,
    version ? [id, version] : [id],
  );
  if (!rows[0]) {
    throw new AppError('not_found', version ? `Rule set ${id} has no version ${version}` : `Rule set ${id} does not exist`);
  }
  return rows[0];
}

/** The edge a rule produces under a mapping, or null (a missing field or a non-scalar value). */
export function edgeFor(mapping: EdgeMapping, data: Record<string, unknown>): { type: EdgeMapping['type']; from: string; to: string } | null {
  const scalar = (v: unknown) => (typeof v === 'string' && v.length > 0) || (typeof v === 'number' && Number.isFinite(v));
  const a = data[mapping.from_field];
  const b = data[mapping.to_field];
  if (!scalar(a) || !scalar(b)) return null;
  return { type: mapping.type, from: `${mapping.from_label ?? mapping.from_field}:${String(a)}`, to: `${mapping.to_label ?? mapping.to_field}:${String(b)}` };
}

export async function createRule(ctx: AppContext, setId: string, version: string | undefined, input: S['CreateRuleRequest']): Promise<S['Rule']> {
  return ctx.db.tx(async (t) => {
    const set = await findSet(t, setId, version);
    const validate = validatorFor(ctx, { id: set.schema_id, schema: set.schema, edge: set.edge, created_at: set.schema_created_at });
    if (!validate(input.rule_data)) {
      const v = violations(validate.errors);
      throw new AppError('validation_error', `rule_data of ${input.rule_id} does not conform to schema ${set.schema_id}: ${v.map((x) => `${x.path || '(rule_data)'} ${x.message}`).slice(0, 5).join('; ')}`, {
        details: { rule_set_id: set.id, rule_set_version: set.version, schema_id: set.schema_id, violations: v },
      });
    }
    const now = ctx.clock.now();
    const rows = await t.query<RuleRow>(
      `INSERT INTO rules (rule_set_id, rule_set_version, rule_id, rule_data, created_at) VALUES ($1, $2, $3, $4::jsonb, $5)
       ON CONFLICT (rule_set_id, rule_set_version, rule_id) DO NOTHING RETURNING *`,
      [set.id, set.version, input.rule_id, JSON.stringify(input.rule_data), now],
    );
    if (!rows[0]) throw new AppError('conflict', `Rule ${input.rule_id} already exists in rule set ${set.id} version ${set.version}`);
    await t.query(
      `INSERT INTO rule_history (rule_set_id, rule_set_version, rule_id, action, rule_data, at) VALUES ($1, $2, $3, 'create', $4::jsonb, $5)`,
      [set.id, set.version, input.rule_id, JSON.stringify(input.rule_data), now],
    );
    const edge = set.edge ? edgeFor(set.edge, input.rule_data) : null;
    if (edge) {
      await t.query(`INSERT INTO graph_nodes (node_id, label) VALUES ($1, 'Entity'), ($2, 'Entity') ON CONFLICT (node_id) DO NOTHING`, [edge.from, edge.to]);
      await t.query(
        `INSERT INTO graph_edges (edge_type, from_id, to_id, source, props) VALUES ($1, $2, $3, $4, $5::jsonb)
         ON CONFLICT (edge_type, from_id, to_id, source) DO NOTHING`,
        [edge.type, edge.from, edge.to, `rule:${set.id}:${set.version}:${input.rule_id}`, JSON.stringify({ rule_set_id: set.id, rule_set_version: set.version, rule_id: input.rule_id })],
      );
    }
    return toRule(rows[0]);
  });
}

export async function listRules(ctx: AppContext, setId: string, version: string | undefined): Promise<S['RuleList']> {
  const set = await findSet(ctx.db, setId, version);
  const rows = await ctx.db.query<RuleRow>(
    'SELECT * FROM rules WHERE rule_set_id = $1 AND rule_set_version = $2 ORDER BY created_at, rule_id',
    [set.id, set.version],
  );
  return { rules: rows.map(toRule) };
}
