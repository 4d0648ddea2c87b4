/**
 * What the control plane refuses beyond the SCS rules, so that `svc validate` and
 * `POST /api/bundles` give one verdict. The request schema (spec/openapi-control-plane.yaml,
 * `BundleCreate`, `BundleProvenance`, `ScdDocument`, `AppliesTo`) accepts every field the
 * SCS schemas accept (extra provenance fields, extra SCD fields) and adds only:
 * - length and count caps (a payload limit, not an SCS rule): ids 256, titles 256,
 *   descriptions and rationales 4096, import references 300, lists 1000 items;
 * - versions as exact semantic versions (no leading zeros, at most 15 digits a part), because
 *   the store orders versions by semantic-version precedence (`01.0.0` and `1.0.0` would tie);
 * - no import listed twice (the SCS rules already refuse an SCD listed twice);
 * - svc's own bundle fields `applies_to` ({roles: [role:<name>, ...]}) and `schema_version`
 *   (the SCS version the bundle follows), and an SCD's `applies_to` of the same shape;
 * - no U+0000 in any string or key (PostgreSQL cannot store it; YAML writes it as "\0").
 * Every finding here is an error (the API answers 400) with rule `svc_limit`,
 * `version_semver`, `duplicate_import`, `applies_to` or `nul_character`. Keep these numbers equal to the
 * spec's; src/core/scs/scs.test.ts checks them against it.
 */
import { findNul } from '../graph/input-text.js';
import { type Finding, isObject, ptr } from './rules.js';

export const SVC_LIMITS = {
  id: 256,
  title: 256,
  description: 4096,
  rationale: 4096,
  person: 256,
  importRef: 300,
  items: 1000,
  schemaVersion: 64,
  scdType: 64,
  scdVersion: 64,
  relationshipType: 64,
  relationshipTarget: 256,
} as const;

/** The API's BundleVersionString: DRAFT, or MAJOR.MINOR.PATCH without leading zeros, parts of at most 15 digits. */
const EXACT_VERSION_RE = /^((0|[1-9][0-9]{0,14})\.(0|[1-9][0-9]{0,14})\.(0|[1-9][0-9]{0,14})|DRAFT)$/;
const LOOSE_VERSION_RE = /^(\d+\.\d+\.\d+|DRAFT)$/;
const IMPORT_VERSION_RE = /^bundle:[a-zA-Z0-9._-]+:(\d+\.\d+\.\d+)$/;
const ROLE_RE = /^role:[A-Za-z0-9._-]+$/;

type Add = (path: string, rule: string, message: string) => void;

function adder(out: Finding[], file?: string): Add {
  return (path, rule, message) => out.push({ severity: 'error', path, rule, message, ...(file ? { file } : {}) });
}

function maxLen(v: unknown, max: number, path: string, what: string, add: Add): void {
  if (typeof v === 'string' && v.length > max) add(path, 'svc_limit', `${what} is ${v.length} characters; the control plane accepts at most ${max}`);
}

function maxItems(v: unknown, path: string, what: string, add: Add): void {
  if (Array.isArray(v) && v.length > SVC_LIMITS.items) add(path, 'svc_limit', `${what} has ${v.length} entries; the control plane accepts at most ${SVC_LIMITS.items}`);
}

function exactVersion(v: string, path: string, add: Add, what = 'version'): void {
  if (LOOSE_VERSION_RE.test(v) && !EXACT_VERSION_RE.test(v)) {
    add(path, 'version_semver', `${what} ${v} has a leading zero or a part longer than 15 digits; the control plane orders versions by semantic-version precedence and needs exact MAJOR.MINOR.PATCH`);
  }
}

/** `applies_to` as svc reads it: {roles: [role:<name>, ...]}, at least one role, no repeats, nothing else. */
function appliesToFindings(v: unknown, path: string, add: Add): void {
  if (v === undefined) return;
  if (!isObject(v)) { add(path, 'applies_to', 'applies_to must be a mapping with a roles list ({roles: [role:<name>, ...]})'); return; }
  for (const k of Object.keys(v)) if (k !== 'roles') add(`${path}/${k}`, 'applies_to', `applies_to carries only roles, not '${k}'`);
  const roles = v.roles;
  if (!Array.isArray(roles) || roles.length === 0) { add(`${path}/roles`, 'applies_to', 'applies_to.roles must be a non-empty list of role ids (role:<name>)'); return; }
  maxItems(roles, `${path}/roles`, 'applies_to.roles', add);
  const seen = new Set<unknown>();
  roles.forEach((r, i) => {
    if (typeof r !== 'string' || !ROLE_RE.test(r)) add(`${path}/roles/${i}`, 'applies_to', `role ${JSON.stringify(r)} must be role:<name> (letters, digits, '.', '_', '-')`);
    else maxLen(r, SVC_LIMITS.id, `${path}/roles/${i}`, 'role id', add);
    if (seen.has(r)) add(`${path}/roles/${i}`, 'applies_to', `role ${String(r)} is listed twice`);
    seen.add(r);
  });
}

function provenanceFindings(p: unknown, add: Add): void {
  if (!isObject(p)) return;
  maxLen(p.created_by, SVC_LIMITS.person, '/provenance/created_by', 'provenance.created_by', add);
  maxLen(p.updated_by, SVC_LIMITS.person, '/provenance/updated_by', 'provenance.updated_by', add);
  maxLen(p.rationale, SVC_LIMITS.rationale, '/provenance/rationale', 'provenance.rationale', add);
}

function nul(doc: unknown, add: Add): void {
  const p = findNul(doc);
  if (p !== null) add(p, 'nul_character', `${p} contains the NUL character (U+0000), which the control plane cannot store`);
}

/** A bundle manifest: the control plane's limits and svc's extension fields. */
export function svcBundleFindings(doc: Record<string, unknown>, file?: string): Finding[] {
  const out: Finding[] = [];
  const add = adder(out, file);
  nul(doc, add);
  maxLen(doc.id, SVC_LIMITS.id, '/id', 'id', add);
  maxLen(doc.title, SVC_LIMITS.title, '/title', 'title', add);
  maxLen(doc.description, SVC_LIMITS.description, '/description', 'description', add);
  if (typeof doc.version === 'string') exactVersion(doc.version, '/version', add);
  maxItems(doc.scds, '/scds', 'scds', add);
  maxItems(doc.imports, '/imports', 'imports', add);
  if (Array.isArray(doc.imports)) {
    const seen = new Set<unknown>();
    doc.imports.forEach((ref, i) => {
      if (typeof ref === 'string') {
        maxLen(ref, SVC_LIMITS.importRef, ptr('imports', i), 'import reference', add);
        const m = IMPORT_VERSION_RE.exec(ref);
        if (m) exactVersion(m[1], ptr('imports', i), add, `import ${ref}: version`);
      }
      if (seen.has(ref)) add(ptr('imports', i), 'duplicate_import', `import ${String(ref)} is listed twice`);
      seen.add(ref);
    });
  }
  if (Array.isArray(doc.scds)) doc.scds.forEach((ref, i) => maxLen(ref, SVC_LIMITS.id, ptr('scds', i), 'SCD reference', add));
  provenanceFindings(doc.provenance, add);
  if (doc.schema_version !== undefined) {
    if (typeof doc.schema_version !== 'string' || doc.schema_version === '') add('/schema_version', 'svc_limit', 'schema_version must be a non-empty string (the SCS version, e.g. 0.3.0)');
    else maxLen(doc.schema_version, SVC_LIMITS.schemaVersion, '/schema_version', 'schema_version', add);
  }
  appliesToFindings(doc.applies_to, '/applies_to', add);
  return out;
}

/** An SCD document: the control plane's limits and svc's `applies_to`. */
export function svcScdFindings(doc: Record<string, unknown>, file?: string): Finding[] {
  const out: Finding[] = [];
  const add = adder(out, file);
  nul(doc, add);
  maxLen(doc.id, SVC_LIMITS.id, '/id', 'id', add);
  maxLen(doc.type, SVC_LIMITS.scdType, '/type', 'type', add);
  maxLen(doc.title, SVC_LIMITS.title, '/title', 'title', add);
  maxLen(doc.version, SVC_LIMITS.scdVersion, '/version', 'version', add);
  maxLen(doc.description, SVC_LIMITS.description, '/description', 'description', add);
  appliesToFindings(doc.applies_to, '/applies_to', add);
  if (Array.isArray(doc.relationships)) {
    maxItems(doc.relationships, '/relationships', 'relationships', add);
    doc.relationships.forEach((r, i) => {
      if (!isObject(r)) return;
      maxLen(r.type, SVC_LIMITS.relationshipType, ptr('relationships', i, 'type'), 'relationship type', add);
      maxLen(r.target, SVC_LIMITS.relationshipTarget, ptr('relationships', i, 'target'), 'relationship target', add);
      maxLen(r.description, SVC_LIMITS.description, ptr('relationships', i, 'description'), 'relationship description', add);
    });
  }
  return out;
}
