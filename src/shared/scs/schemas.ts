/**
 * The SCS 0.3 JSON Schemas (copied unchanged into ./schemas, Apache-2.0, see NOTICE there),
 * compiled once with ajv (draft 2020-12, formats checked).
 */
import { readFileSync } from 'node:fs';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import type { Finding, ScdTier } from './rules.js';

const load = (name: string): Record<string, unknown> =>
  JSON.parse(readFileSync(new URL(`./schemas/${name}`, import.meta.url), 'utf8')) as Record<string, unknown>;

let compiled: { bundle: ValidateFunction; scd: Record<ScdTier, ValidateFunction>; domain: ValidateFunction } | null = null;

function validators() {
  if (compiled) return compiled;
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  (addFormats as unknown as (a: unknown) => void)(ajv);
  compiled = {
    bundle: ajv.compile(load('bundle.schema.json')),
    scd: {
      meta: ajv.compile(load('scd-meta.schema.json')),
      standards: ajv.compile(load('scd-standards.schema.json')),
      project: ajv.compile(load('scd-project.schema.json')),
    },
    domain: ajv.compile(load('domain-manifest.schema.json')),
  };
  return compiled;
}

export type SchemaName = 'bundle' | 'domain' | `scd-${ScdTier}`;

/** Validates `doc` against one SCS schema; findings carry rule `rule` and a JSON-pointer path. */
export function schemaFindings(name: SchemaName, doc: unknown, rule: string, file?: string): Finding[] {
  const v = validators();
  const fn = name === 'bundle' ? v.bundle : name === 'domain' ? v.domain : v.scd[name.slice(4) as ScdTier];
  if (fn(doc)) return [];
  const out: Finding[] = [];
  const seen = new Set<string>();
  for (const e of fn.errors ?? []) {
    // `if` only says "the `then` branch failed"; the branch's own error is reported too.
    if (e.keyword === 'if') continue;
    const path = errorPath(e);
    const message = `${describe(e)} (SCS JSON Schema, keyword '${e.keyword}')`;
    if (seen.has(path + message)) continue;
    seen.add(path + message);
    out.push({ severity: 'error', path, rule, message, ...(file ? { file } : {}) });
  }
  return out;
}

/** Required-property errors point at the missing field itself, not its parent. */
function errorPath(e: ErrorObject): string {
  if (e.keyword === 'required') {
    const p = (e.params as { missingProperty: string }).missingProperty;
    return `${e.instancePath}/${p.replace(/~/g, '~0').replace(/\//g, '~1')}`;
  }
  if (e.keyword === 'additionalProperties') {
    return `${e.instancePath}/${(e.params as { additionalProperty: string }).additionalProperty}`;
  }
  return e.instancePath;
}

function describe(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required': return `required field '${(e.params as { missingProperty: string }).missingProperty}' is missing`;
    case 'additionalProperties': return `field '${(e.params as { additionalProperty: string }).additionalProperty}' is not allowed here`;
    case 'pattern': return `must match pattern ${(e.params as { pattern: string }).pattern}`;
    case 'enum': return `must be one of ${((e.params as { allowedValues: unknown[] }).allowedValues).join(', ')}`;
    case 'const': return `must be ${JSON.stringify((e.params as { allowedValue: unknown }).allowedValue)}`;
    default: return e.message ?? e.keyword;
  }
}
