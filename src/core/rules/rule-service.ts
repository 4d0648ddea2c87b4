/**
 * The rules engine's verbs: schemas (compiled when stored), rule set versions bound to a
 * schema, and rules validated against their set's schema. A schema may declare an edge
 * mapping; each rule stored under it whose `rule_data` holds both mapped fields writes one
 * operational edge (ON_FORMULARY, IN_NETWORK, REQUIRES_PRIOR_AUTH) between Entity nodes, in
 * the same transaction as the rule, with the rule that produced it recorded on the edge.
 * Everything here is immutable once created (no update or delete routes).
 */
import type { ValidateFunction } from 'ajv';
import { and, eq, getTableColumns, sql } from 'drizzle-orm';
import type { AppContext } from '../../shared/app-context.js';
import type { Db } from '../db/index.js';
import { graphEdges, graphNodes, ruleHistory, ruleSchemas, ruleSets, rules } from '../db/schema/index.js';
import { recordEvent, type Who } from '../audit/events.js';
import { AppError } from '../../shared/errors.js';
import type { components } from '../../../gen/openapi/rules.js';
import { semverSortKey } from '../../shared/semver.js';
import { compileRuleSchema, SchemaCompileError, violations } from './json-schema.js';

type S = components['schemas'];
type EdgeMapping = S['EdgeMapping'];

type SchemaRow = typeof ruleSchemas.$inferSelect;
type SetRow = typeof ruleSets.$inferSelect;
type RuleRow = typeof rules.$inferSelect;

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

export async function createRuleSchema(ctx: AppContext, input: S['CreateRuleSchemaRequest'], who: Who): Promise<S['RuleSchema']> {
  try {
    compileRuleSchema(input.schema);
  } catch (e) {
    if (!(e instanceof SchemaCompileError)) throw e;
    throw new AppError('validation_error', `Rule schema ${input.id} is not a valid JSON Schema: ${e.message}`, { details: { schema_errors: [e.message] } });
  }
  const now = ctx.clock.now();
  return ctx.db.tx(async (t) => {
    const rows = await t.orm
      .insert(ruleSchemas)
      .values({ id: input.id, schema: input.schema, edge: input.edge ?? null, created_at: now })
      .onConflictDoNothing({ target: ruleSchemas.id })
      .returning();
    if (!rows[0]) throw new AppError('conflict', `Rule schema ${input.id} already exists (schemas are immutable)`);
    await recordEvent(t, who, { event_type: 'rule_schema.created', resource_type: 'rule_schema', resource_id: input.id, after: { schema: input.schema, edge: input.edge ?? null } }, now);
    return toSchema(rows[0]);
  });
}

export async function getRuleSchema(ctx: AppContext, id: string): Promise<S['RuleSchema']> {
  const [row] = await ctx.db.orm.select().from(ruleSchemas).where(eq(ruleSchemas.id, id));
  if (!row) throw new AppError('not_found', `Rule schema ${id} does not exist`);
  return toSchema(row);
}

export async function createRuleSet(ctx: AppContext, input: S['CreateRuleSetRequest'], who: Who): Promise<S['RuleSet']> {
  return ctx.db.tx(async (t) => {
    const [schema] = await t.orm.select({ id: ruleSchemas.id }).from(ruleSchemas).where(eq(ruleSchemas.id, input.schema_id));
    if (!schema) throw new AppError('not_found', `Rule schema ${input.schema_id} does not exist`, { details: { schema_id: input.schema_id } });
    const rows = await t.orm
      .insert(ruleSets)
      .values({ id: input.id, version: input.version, schema_id: input.schema_id, created_at: ctx.clock.now() })
      .onConflictDoNothing({ target: [ruleSets.id, ruleSets.version] })
      .returning();
    if (!rows[0]) throw new AppError('conflict', `Rule set ${input.id} version ${input.version} already exists`);
    await recordEvent(t, who, { event_type: 'rule_set.created', resource_type: 'rule_set', resource_id: `${input.id}@${input.version}`, after: { id: input.id, version: input.version, schema_id: input.schema_id } }, rows[0].created_at);
    return toSet(rows[0]);
  });
}

/** Semantic-version order in SQL (versions are stored only in the X.Y.Z shape; numeric parts, exact at any length). */
const SEMVER_ORDER = semverSortKey('"rule_sets"."version"');

export async function listRuleSets(ctx: AppContext): Promise<S['RuleSetList']> {
  const rows = await ctx.db.orm
    .select({
      ...getTableColumns(ruleSets),
      rule_count: sql<number>`(SELECT count(*) FROM ${rules} WHERE ${rules.rule_set_id} = ${ruleSets.id} AND ${rules.rule_set_version} = ${ruleSets.version})`.mapWith(Number),
    })
    .from(ruleSets)
    .orderBy(ruleSets.id, sql.raw(SEMVER_ORDER));
  return { rule_sets: rows.map((r) => ({ ...toSet(r), rule_count: Number(r.rule_count) })) };
}

/** The rule set version addressed (default: the highest version of the id). */
async function findSet(db: Db, id: string, version: string | undefined): Promise<SetRow & { schema: Record<string, unknown>; edge: EdgeMapping | null; schema_created_at: Date }> {
  const rows = await db.orm
    .select({ ...getTableColumns(ruleSets), schema: ruleSchemas.schema, edge: ruleSchemas.edge, schema_created_at: ruleSchemas.created_at })
    .from(ruleSets)
    .innerJoin(ruleSchemas, eq(ruleSchemas.id, ruleSets.schema_id))
    .where(and(eq(ruleSets.id, id), version ? eq(ruleSets.version, version) : undefined))
    .orderBy(sql`${sql.raw(SEMVER_ORDER)} DESC`)
    .limit(1);
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

export async function createRule(ctx: AppContext, setId: string, version: string | undefined, input: S['CreateRuleRequest'], who: Who): Promise<S['Rule']> {
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
    const rows = await t.orm
      .insert(rules)
      .values({ rule_set_id: set.id, rule_set_version: set.version, rule_id: input.rule_id, rule_data: input.rule_data, created_at: now })
      .onConflictDoNothing({ target: [rules.rule_set_id, rules.rule_set_version, rules.rule_id] })
      .returning();
    if (!rows[0]) throw new AppError('conflict', `Rule ${input.rule_id} already exists in rule set ${set.id} version ${set.version}`);
    await t.orm
      .insert(ruleHistory)
      .values({ rule_set_id: set.id, rule_set_version: set.version, rule_id: input.rule_id, action: 'create', rule_data: input.rule_data, at: now });
    const edge = set.edge ? edgeFor(set.edge, input.rule_data) : null;
    if (edge) {
      await t.orm
        .insert(graphNodes)
        .values([
          { node_id: edge.from, label: 'Entity' },
          { node_id: edge.to, label: 'Entity' },
        ])
        .onConflictDoNothing({ target: graphNodes.node_id });
      await t.orm
        .insert(graphEdges)
        .values({
          edge_type: edge.type,
          from_id: edge.from,
          to_id: edge.to,
          source: `rule:${set.id}:${set.version}:${input.rule_id}`,
          props: { rule_set_id: set.id, rule_set_version: set.version, rule_id: input.rule_id },
        })
        .onConflictDoNothing({ target: [graphEdges.edge_type, graphEdges.from_id, graphEdges.to_id, graphEdges.source] });
    }
    await recordEvent(t, who, {
      event_type: 'rule.created', resource_type: 'rule', resource_id: `${set.id}@${set.version}/${input.rule_id}`,
      after: { rule_set_id: set.id, rule_set_version: set.version, rule_id: input.rule_id, rule_data: input.rule_data },
    }, now);
    return toRule(rows[0]);
  });
}

export async function listRules(ctx: AppContext, setId: string, version: string | undefined): Promise<S['RuleList']> {
  const set = await findSet(ctx.db, setId, version);
  const rows = await ctx.db.orm
    .select()
    .from(rules)
    .where(and(eq(rules.rule_set_id, set.id), eq(rules.rule_set_version, set.version)))
    .orderBy(rules.created_at, rules.rule_id);
  return { rules: rows.map(toRule) };
}
