/**
 * A small generator of values from (dereferenced) OpenAPI 3.0 schemas, for the spec-driven
 * fuzz and admin-auth suites: valid values honour type, enum, pattern, format, bounds and
 * required; `mutate` derives invalid variants from a valid value.
 */
import * as randexpModule from 'randexp';

// randexp is CommonJS; its typings do not describe the default export under NodeNext.
const RandExp: any = (randexpModule as any).default ?? randexpModule;

export type Schema = Record<string, any>;

export class Rng {
  constructor(private s: number) {}
  next(): number {
    // mulberry32: deterministic per seed, so a failing case can be replayed.
    let t = (this.s += 0x6d2b79f5);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(min: number, max: number): number {
    return min + Math.floor(this.next() * (max - min + 1));
  }
  pick<T>(xs: T[]): T {
    return xs[this.int(0, xs.length - 1)];
  }
  bool(p = 0.5): boolean {
    return this.next() < p;
  }
}

const FORMATS: Record<string, (r: Rng) => string> = {
  'date-time': (r) => new Date(Date.UTC(2026, r.int(0, 11), r.int(1, 28), r.int(0, 23), r.int(0, 59), r.int(0, 59), r.int(0, 999))).toISOString(),
  date: (r) => `2026-${String(r.int(1, 12)).padStart(2, '0')}-${String(r.int(1, 28)).padStart(2, '0')}`,
  uuid: (r) => 'xxxxxxxx-xxxx-4xxx-8xxx-xxxxxxxxxxxx'.replace(/x/g, () => r.int(0, 15).toString(16)),
  uri: (r) => `http://127.0.0.1:${r.int(1024, 65000)}/x`,
  email: (r) => `user${r.int(0, 999)}@example.test`,
};

function fromPattern(pattern: string, r: Rng, maxLength?: number): string {
  const re = new RandExp(pattern);
  re.max = 8;
  re.randInt = (a: number, b: number) => r.int(a, b);
  // Keep to printable ASCII so path parameters survive URLs.
  re.defaultRange.subtract(0, 31);
  re.defaultRange.subtract(127, 65535);
  for (let i = 0; i < 20; i++) {
    const s = re.gen();
    if ((maxLength === undefined || s.length <= maxLength) && new RegExp(pattern).test(s)) return s;
  }
  return re.gen();
}

function merge(all: Schema[]): Schema {
  const out: Schema = { type: 'object', properties: {}, required: [] };
  for (const s of all) {
    if (s.type && s.type !== 'object') return s;
    Object.assign(out.properties, s.properties ?? {});
    out.required.push(...(s.required ?? []));
    if (s.additionalProperties === false) out.additionalProperties = false;
  }
  return out;
}

/** A valid value for `schema`. `depth` bounds recursion. */
export function valid(schema: Schema | undefined, r: Rng, depth = 0): unknown {
  if (!schema) return null;
  if (schema.allOf) return valid(merge(schema.allOf), r, depth);
  if (schema.oneOf) return valid(r.pick(schema.oneOf), r, depth);
  if (schema.anyOf) return valid(r.pick(schema.anyOf), r, depth);
  if (schema.enum) return r.pick(schema.enum);
  if (schema.nullable && r.bool(0.1)) return null;
  const type = schema.type ?? (schema.properties ? 'object' : schema.items ? 'array' : 'string');
  switch (type) {
    case 'boolean':
      return r.bool();
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? (schema.exclusiveMinimum === true ? 1 : 0);
      const max = schema.maximum ?? Math.max(min + 100, 100);
      const v = r.int(Math.ceil(min), Math.floor(max));
      return v;
    }
    case 'string': {
      if (schema.format && FORMATS[schema.format]) return FORMATS[schema.format](r);
      if (schema.pattern) return fromPattern(schema.pattern, r, schema.maxLength);
      const min = schema.minLength ?? 1;
      const max = Math.min(schema.maxLength ?? 24, min + 24);
      let s = '';
      const n = r.int(min, max);
      for (let i = 0; i < n; i++) s += String.fromCharCode(r.int(97, 122));
      return s;
    }
    case 'array': {
      const min = schema.minItems ?? 0;
      const max = Math.min(schema.maxItems ?? 3, min + 3);
      if (depth > 4) return [];
      const n = r.int(min, max);
      const out: unknown[] = [];
      for (let i = 0; i < n; i++) out.push(valid(schema.items, r, depth + 1));
      return schema.uniqueItems ? [...new Map(out.map((v) => [JSON.stringify(v), v])).values()] : out;
    }
    case 'object':
    default: {
      const out: Record<string, unknown> = {};
      const props = schema.properties ?? {};
      const required = new Set<string>(schema.required ?? []);
      for (const [k, s] of Object.entries<Schema>(props)) {
        if (s.readOnly) continue;
        if (required.has(k) || (depth < 3 && r.bool(0.5))) out[k] = valid(s, r, depth + 1);
      }
      if (schema.minProperties && Object.keys(out).length < schema.minProperties) {
        for (const [k, s] of Object.entries<Schema>(props)) {
          if (Object.keys(out).length >= schema.minProperties) break;
          if (!(k in out)) out[k] = valid(s, r, depth + 1);
        }
      }
      if (!schema.properties && schema.additionalProperties && typeof schema.additionalProperties === 'object' && r.bool()) {
        out[`k${r.int(0, 99)}`] = valid(schema.additionalProperties, r, depth + 1);
      }
      return out;
    }
  }
}

const JUNK: unknown[] = [null, 0, -1, 1e308, '', 'x'.repeat(5000), '\u0000', '💥', true, [], {}, [null], { __proto__: { x: 1 } }, '../../etc/passwd', "' OR 1=1 --", '%00', 'scd:', 'bundle::'];

/** An invalid (or at least hostile) variant of a valid value for `schema`. */
export function mutate(schema: Schema | undefined, value: unknown, r: Rng): unknown {
  const obj = value && typeof value === 'object' && !Array.isArray(value) ? { ...(value as Record<string, unknown>) } : null;
  const choice = r.int(0, 5);
  if (obj && schema?.properties) {
    const keys = Object.keys(schema.properties);
    if (choice === 0 && schema.required?.length) {
      delete obj[r.pick(schema.required as string[])];
      return obj;
    }
    if (choice === 1 && keys.length) {
      obj[r.pick(keys)] = r.pick(JUNK);
      return obj;
    }
    if (choice === 2) {
      obj[`unexpected_${r.int(0, 99)}`] = r.pick(JUNK);
      return obj;
    }
  }
  if (choice === 3) return r.pick(JUNK);
  if (choice === 4 && obj) {
    const keys = Object.keys(obj);
    if (keys.length) obj[r.pick(keys)] = r.pick(JUNK);
    return obj;
  }
  return r.pick(JUNK);
}
