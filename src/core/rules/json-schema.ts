/**
 * Rule schemas are JSON Schemas (draft-07 keywords) compiled with Ajv 8. Each schema gets
 * its own Ajv instance, so a `$ref` can reach nothing but the schema itself (no network,
 * no other stored schema). Strict: unknown keywords (a typo such as `requried` would
 * silently validate nothing) and unknown formats are compile errors; `x-` vendor keywords
 * are allowed as annotations.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

// ajv-formats is CommonJS: its default export seen through ESM.
const addFormats = addFormatsModule as unknown as (a: unknown) => void;

export class SchemaCompileError extends Error {}

/** Keys starting with `x-` anywhere in the schema (vendor annotations). */
function vendorKeywords(node: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(node)) for (const n of node) vendorKeywords(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k.startsWith('x-')) out.add(k);
      vendorKeywords(v, out);
    }
  }
  return out;
}

/** Compiles a schema or throws SchemaCompileError with the compiler's message. */
export function compileRuleSchema(schema: Record<string, unknown>): ValidateFunction {
  const ajv = new Ajv({
    allErrors: true,
    strictSchema: true,
    strictNumbers: true,
    strictTypes: false,
    strictTuples: false,
    strictRequired: false,
    logger: false,
    // Never fetch anything: a $ref outside the schema fails to compile.
    loadSchema: undefined,
  });
  addFormats(ajv);
  for (const k of vendorKeywords(schema)) if (!ajv.getKeyword(k)) ajv.addKeyword(k);
  let v: ValidateFunction;
  try {
    v = ajv.compile(schema);
  } catch (e) {
    throw new SchemaCompileError((e as Error).message);
  }
  // An async schema's validator answers a promise, which would let every rule through.
  if ((v as { $async?: boolean }).$async) throw new SchemaCompileError('$async schemas are not supported');
  return v;
}

export interface Violation {
  /** JSON Pointer into rule_data ('' for the whole object). */
  path: string;
  message: string;
}

export function violations(errors: ErrorObject[] | null | undefined): Violation[] {
  return (errors ?? []).map((e) => {
    let path = e.instancePath;
    if (e.keyword === 'required') path += `/${(e.params as { missingProperty: string }).missingProperty}`;
    if (e.keyword === 'additionalProperties') path += `/${(e.params as { additionalProperty: string }).additionalProperty}`;
    const extra = e.keyword === 'enum' ? `: ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}` : '';
    return { path, message: `${e.message ?? e.keyword}${extra}` };
  });
}
