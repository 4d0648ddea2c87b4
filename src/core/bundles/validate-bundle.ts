/**
 * Bundle validation for `POST /api/bundles`: the shared SCS rules (src/core/scs, the same
 * ones the `svc validate` CLI runs) for the structure, plus the checks only the store can
 * answer: which SCDs and bundle versions exist, are active, and what type an import is.
 *
 * Two outcomes (contract): `errors` reject the payload (400, nothing stored); `findings`
 * (strict SCS conformance) are stored with the version as `validation_errors`.
 * Written to take any JSON value: it also runs on bodies that failed the contract, so that
 * a malformed corpus file gets every problem reported at once, each naming its reference.
 */
import YAML from 'yaml';
import { and, desc, eq, inArray, sql } from 'drizzle-orm';
import type { Db } from '../db/index.js';
import { bundleScds, bundles } from '../db/schema/index.js';
import { AppError, type ValidationIssue } from '../../shared/errors.js';
import { checkBundle, checkScd, ruleSetFor, type BundleType, type Finding } from '../scs/index.js';
import { loadHeads, resolveImport, type BundleHead } from '../graph/resolve.js';
import { parseRef, SCD_ID_RE } from '../graph/refs.js';

/** One problem of a bundle: the contract's ValidationIssue (with `reference` and `severity`). */
export type Issue = ValidationIssue;

interface ScdSource {
  document: Record<string, unknown>;
  yaml: string;
  /** Where the content came from: this payload, or a stored bundle version. */
  from: 'payload' | string;
}

export interface BundleCheck {
  errors: Issue[];
  findings: Issue[];
  /** The direct imports resolved now (only meaningful without errors). */
  imports: Array<{ ref: string; head: BundleHead }>;
  /** Content for every listed SCD (only meaningful without errors). */
  scds: Map<string, ScdSource>;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);

/** YAML text of an SCD as delivered to agents (no line folding, key order as posted). */
const toYaml = (doc: unknown): string => YAML.stringify(doc, { lineWidth: 0 });

/** The value a JSON pointer under the body names, when it is a string (for `reference`). */
function referenceAt(body: unknown, path: string): string | undefined {
  let cur: unknown = body;
  for (const seg of path.split('/').slice(1)) {
    if (cur === null || typeof cur !== 'object') return undefined;
    cur = (cur as Record<string, unknown>)[seg.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return typeof cur === 'string' ? cur : undefined;
}

const fromFinding = (f: Finding, prefix: string, body: unknown): Issue => {
  const path = `${prefix}${f.path}`;
  const reference = referenceAt(body, path.replace(/^\/body/, ''));
  return { path, rule: f.rule, message: f.message, severity: f.severity, ...(reference && /(imports|scds|target)/.test(path) ? { reference } : {}) };
};

/** The manifest as stored and as the SCS rules see it: the posted body without `documents`. */
export function manifestOf(body: Record<string, unknown>): Record<string, unknown> {
  const { documents: _documents, ...manifest } = body;
  return manifest;
}

/** Runs every check; never throws for a malformed body (only for a database failure). */
export async function checkBundleInput(db: Db, body: unknown): Promise<BundleCheck> {
  const errors: Issue[] = [];
  const findings: Issue[] = [];
  const out: BundleCheck = { errors, findings, imports: [], scds: new Map() };
  if (!isObject(body)) {
    errors.push({ path: '/body', rule: 'schema', message: 'the body must be a JSON object (an SCS bundle manifest)' });
    return out;
  }
  const id = typeof body.id === 'string' ? body.id : null;
  const label = id ?? 'the bundle';
  const imports = strings(body.imports);
  const scds = strings(body.scds);
  const documents: unknown[] = Array.isArray(body.documents) ? body.documents : [];

  // --- imports: resolve against the store (pinned: that version; unpinned: highest active) ---
  const names = [...new Set(imports.map((r) => parseRef(r)?.id).filter((x): x is string => !!x))];
  const heads = await loadHeads(db, names);
  const knownTypes = new Map<string, BundleType>();
  imports.forEach((ref, i) => {
    const p = parseRef(ref);
    if (!p || p.id === id) return; // pattern and self-import: reported by the SCS rules
    const path = `/body/imports/${i}`;
    const r = resolveImport(ref, heads.get(p.id));
    if (r.head && !r.reason) {
      out.imports.push({ ref, head: r.head });
      knownTypes.set(p.id, r.head.type);
    } else if (r.reason === 'inactive') {
      errors.push({ path, rule: 'import_inactive', reference: ref, message: `${label} imports ${ref}, which is deactivated (no active version to import)` });
    } else {
      const have = (heads.get(p.id) ?? []).filter((h) => h.version !== 'DRAFT').map((h) => h.version);
      const hint = have.length ? ` (stored versions: ${have.join(', ')})` : '';
      errors.push({ path, rule: 'import_unresolved', reference: ref, message: `${label} imports ${ref}, which does not resolve to a stored active version${hint}` });
    }
  });

  // --- the shared SCS rules: loose errors reject; what strict adds is a stored finding ---
  const manifest = manifestOf(body);
  // svc's extensions (applies_to, schema_version) are known to the shared rules; the rule set
  // is the one of the SCS version the bundle declares in schema_version (default 0.3.0), as
  // `svc validate` judges it.
  const rules = ruleSetFor(manifest.schema_version);
  const loose = checkBundle(manifest, { strict: false, knownTypes, rules });
  const looseKeys = new Set(loose.map((f) => `${f.path}\u0000${f.rule}`));
  for (const f of loose) (f.severity === 'error' ? errors : findings).push(fromFinding(f, '/body', body));
  for (const f of checkBundle(manifest, { strict: true, knownTypes, rules })) {
    if (!looseKeys.has(`${f.path}\u0000${f.rule}`)) findings.push(fromFinding(f, '/body', body));
  }

  // --- documents: unique, listed, and each checked by the SCS SCD rules (findings only) ---
  const docById = new Map<string, { doc: Record<string, unknown>; index: number }>();
  documents.forEach((d, i) => {
    if (!isObject(d) || typeof d.id !== 'string') return;
    const path = `/body/documents/${i}`;
    if (docById.has(d.id)) {
      errors.push({ path: `${path}/id`, rule: 'duplicate_document', reference: d.id, message: `${label} carries the document ${d.id} twice` });
      return;
    }
    docById.set(d.id, { doc: d, index: i });
    if (!scds.includes(d.id)) {
      errors.push({ path: `${path}/id`, rule: 'document_unlisted', reference: d.id, message: `${label} carries a document for ${d.id}, which its scds list does not name` });
    }
    for (const f of checkScd(d, { strict: true })) findings.push(fromFinding({ ...f, severity: f.severity }, path, body));
  });

  // --- SCDs: each listed id is in documents or already stored (newest active version's content) ---
  const notInPayload = scds.filter((s) => !docById.has(s) && SCD_ID_RE.test(s));
  const stored = new Map<string, { document: Record<string, unknown>; yaml: string; from: string }>();
  if (notInPayload.length) {
    const rows = await db.orm
      .selectDistinctOn([bundleScds.scd_id], {
        scd_id: bundleScds.scd_id,
        document: bundleScds.document,
        content_yaml: bundleScds.content_yaml,
        bundle_id: bundleScds.bundle_id,
        bundle_version: bundleScds.bundle_version,
      })
      .from(bundleScds)
      .innerJoin(bundles, and(eq(bundles.bundle_id, bundleScds.bundle_id), eq(bundles.version, bundleScds.bundle_version)))
      .where(inArray(bundleScds.scd_id, notInPayload))
      // The newest active published version's content first.
      .orderBy(bundleScds.scd_id, desc(bundles.is_active), sql`(${bundles.version} = 'DRAFT')`, sql`${bundles.published_at} DESC NULLS LAST`, desc(bundles.created_at));
    for (const r of rows) stored.set(r.scd_id, { document: r.document, yaml: r.content_yaml, from: `${r.bundle_id}:${r.bundle_version}` });
  }
  scds.forEach((s, i) => {
    const inPayload = docById.get(s);
    if (inPayload) out.scds.set(s, { document: inPayload.doc, yaml: toYaml(inPayload.doc), from: 'payload' });
    else if (stored.has(s)) out.scds.set(s, stored.get(s)!);
    else if (SCD_ID_RE.test(s)) {
      errors.push({ path: `/body/scds/${i}`, rule: 'scd_unresolved', reference: s, message: `${label} lists ${s}, which is neither in documents nor stored` });
    }
  });

  // --- relationship targets: in this bundle or stored (a warning: it may arrive later) ---
  const targets = new Map<string, Array<{ path: string; from: string; type: string }>>();
  for (const [scdId, src] of out.scds) {
    const rels = Array.isArray(src.document.relationships) ? src.document.relationships : [];
    const docIndex = docById.get(scdId)?.index;
    rels.forEach((r: unknown, i: number) => {
      if (!isObject(r) || typeof r.target !== 'string' || !SCD_ID_RE.test(r.target) || out.scds.has(r.target)) return;
      const path = docIndex === undefined ? `/body/scds/${scds.indexOf(scdId)}` : `/body/documents/${docIndex}/relationships/${i}/target`;
      const list = targets.get(r.target) ?? [];
      list.push({ path, from: scdId, type: String(r.type) });
      targets.set(r.target, list);
    });
  }
  if (targets.size) {
    const found = await db.orm.selectDistinct({ scd_id: bundleScds.scd_id }).from(bundleScds).where(inArray(bundleScds.scd_id, [...targets.keys()]));
    const have = new Set(found.map((r) => r.scd_id));
    for (const [target, uses] of targets) {
      if (have.has(target)) continue;
      for (const u of uses) {
        findings.push({ path: u.path, rule: 'relationship_unresolved', severity: 'warning', reference: target, message: `relationship '${u.type}' of ${u.from} targets ${target}, which is neither in this bundle nor stored` });
      }
    }
  }
  return out;
}

/** The 400 of `POST /api/bundles`: `details` is BundleValidationDetails. */
export function bundleValidationError(body: unknown, errors: Issue[]): AppError {
  const b = isObject(body) ? body : {};
  const id = typeof b.id === 'string' ? b.id : null;
  const version = typeof b.version === 'string' ? b.version : null;
  const first = errors[0];
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more problem${errors.length > 2 ? 's' : ''})` : '';
  const subject = id ? `Bundle ${id}${version ? ` ${version}` : ''}` : 'The bundle';
  const message = `${subject} is invalid: ${first ? first.message : 'it does not match the contract'}${more}`;
  return new AppError('validation_error', message, { details: { bundle_id: id, version, errors } });
}
