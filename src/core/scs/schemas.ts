/**
 * The SCS 0.3 JSON Schemas (copied unchanged into ./schemas, Apache-2.0, see NOTICE there),
 * compiled once with ajv (draft 2020-12, formats checked).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ErrorObject, ValidateFunction } from 'ajv';
import type { Finding } from './rules.js';

const FILES = {
  bundle: 'bundle.schema.json',
  domain: 'domain-manifest.schema.json',
  'scd-meta': 'scd-meta.schema.json',
  'scd-standards': 'scd-standards.schema.json',
  'scd-project': 'scd-project.schema.json',
} as const;

// ajv is loaded and each schema compiled on first use: a CLI run that checks one SCD
// should not pay for the four other schemas (or for ajv at all when it validates nothing).
let ajv: { compile(schema: object): ValidateFunction } | null = null;
const compiled = new Map<SchemaName, ValidateFunction>();

function validator(name: SchemaName): ValidateFunction {
  let fn = compiled.get(name);
  if (fn) return fn;
  if (!ajv) {
    const require = createRequire(import.meta.url);
    const { Ajv2020 } = require('ajv/dist/2020.js') as typeof import('ajv/dist/2020.js');
    const addFormats = require('ajv-formats') as (a: unknown) => void;
    const instance = new Ajv2020({ allErrors: true, strict: false });
    addFormats(instance);
    ajv = instance;
  }
  const file = name === 'bundle-0.1' ? FILES.bundle : FILES[name];
  const schema = JSON.parse(readFileSync(new URL(`./schemas/${file}`, import.meta.url), 'utf8')) as Record<string, unknown>;
  fn = ajv.compile(name === 'bundle-0.1' ? bundle01(schema) : schema);
  compiled.set(name, fn);
  return fn;
}

export type SchemaName = keyof typeof FILES | 'bundle-0.1';

/**
 * The SCS 0.1.0 bundle schema, derived from the 0.3 one (see versions.ts, difference 3):
 * no `concern` type, and none of the concern/domain conditionals 0.3 added (the 0.1 domain
 * container rule is a type rule in versions.ts).
 */
function bundle01(schema: Record<string, unknown>): object {
  const s = structuredClone(schema) as { $id?: string; properties: { type: { enum: string[] } }; allOf: Array<{ if: { properties: { type: { const: string } } } }> };
  s.$id = (s.$id ?? 'https://structuredcontext.dev/schema/bundle.schema.json').replace(/\.json$/, '-0.1.0.json');
  s.properties.type.enum = s.properties.type.enum.filter((t) => t !== 'concern');
  s.allOf = s.allOf.filter((c) => !['concern', 'domain'].includes(c.if.properties.type.const));
  return s;
}

/** Validates `doc` against one SCS schema; findings carry rule `rule` and a JSON-pointer path. */
export function schemaFindings(name: SchemaName, doc: unknown, rule: string, file?: string): Finding[] {
  const fn = validator(name);
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
