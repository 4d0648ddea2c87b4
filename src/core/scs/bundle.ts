/**
 * Structural checks of one bundle manifest (no database, no other files).
 * Loose: well-formed object, the required fields, their shapes and the bundle-type
 * constraints. Strict adds the SCS bundle JSON Schema and the meta-import rules.
 */
import {
  BUNDLE_ID_RE, BUNDLE_REQUIRED, BUNDLE_VERSION_RE,
  type BundleType, type Finding, SCD_ID_RE, SEMVER_RE, isObject, parseImport, ptr, scdTier,
} from './rules.js';
import { schemaFindings } from './schemas.js';
import { svcBundleFindings } from './svc-limits.js';
import { DEFAULT_SCS_VERSION, RULE_SETS, type RuleSet } from './versions.js';

export interface CheckBundleOptions {
  strict: boolean;
  file?: string;
  /** Types of other bundles by id, when the caller knows them (enables the import-hierarchy rule). */
  knownTypes?: ReadonlyMap<string, BundleType> | Record<string, BundleType>;
  /** The SCS version's rule set (versions.ts); default 0.3.0. */
  rules?: RuleSet;
}

export function checkBundle(doc: unknown, opts: CheckBundleOptions): Finding[] {
  const out: Finding[] = [];
  const add = (path: string, rule: string, message: string, severity: Finding['severity'] = 'error') =>
    out.push({ severity, path, rule, message, ...(opts.file ? { file: opts.file } : {}) });

  const rules = opts.rules ?? RULE_SETS[DEFAULT_SCS_VERSION];
  if (!isObject(doc)) {
    add('', 'document_type', `a bundle must be a mapping (object), got ${doc === null ? 'null' : Array.isArray(doc) ? 'a list' : typeof doc}`);
    return out;
  }
  for (const f of BUNDLE_REQUIRED) {
    if (doc[f] === undefined || doc[f] === null) add(ptr(f), 'required', `required bundle field '${f}' is missing`);
  }
  const id = typeof doc.id === 'string' ? doc.id : null;
  const label = id ?? 'bundle';
  if (doc.id != null && (id === null || !BUNDLE_ID_RE.test(id))) {
    add('/id', 'id_pattern', `id ${JSON.stringify(doc.id)} must match bundle:<name> (letters, digits, '.', '_', '-')`);
  }
  let type: BundleType | null = null;
  if (doc.type != null) {
    if (typeof doc.type === 'string' && (rules.bundleTypes as readonly string[]).includes(doc.type)) type = doc.type as BundleType;
    else add('/type', 'bundle_type', `type ${JSON.stringify(doc.type)} must be one of ${rules.bundleTypes.join(', ')}${rules.version === DEFAULT_SCS_VERSION ? '' : ` (SCS ${rules.version})`}`);
  }
  if (doc.version != null && (typeof doc.version !== 'string' || !BUNDLE_VERSION_RE.test(doc.version))) {
    add('/version', 'version_pattern', `version ${JSON.stringify(doc.version)} must be a semantic version X.Y.Z or DRAFT`);
  }
  for (const f of ['title', 'description'] as const) {
    if (doc[f] != null && (typeof doc[f] !== 'string' || (doc[f] as string).trim() === '')) {
      add(ptr(f), 'field_type', `${f} must be a non-empty string`);
    }
  }
  if (doc.provenance != null && !isObject(doc.provenance)) add('/provenance', 'field_type', 'provenance must be a mapping (object)');

  const imports = stringList(doc, 'imports', add);
  const scds = stringList(doc, 'scds', add);
  if (imports) {
    imports.forEach((ref, i) => {
      if (typeof ref !== 'string' || !parseImport(ref)) {
        add(ptr('imports', i), 'import_pattern', `import ${JSON.stringify(ref)} must be bundle:<name> or bundle:<name>:<X.Y.Z>`);
      } else if (id && parseImport(ref)!.id === id) {
        add(ptr('imports', i), 'self_import', `${label} imports itself (${ref})`);
      }
    });
  }
  if (scds) {
    scds.forEach((ref, i) => {
      if (typeof ref !== 'string' || !SCD_ID_RE.test(ref)) {
        add(ptr('scds', i), 'scd_reference_pattern', `SCD reference ${JSON.stringify(ref)} must be scd:<meta|standards|project>:<name>`);
      }
    });
    const seen = new Set<string>();
    scds.forEach((ref, i) => {
      if (typeof ref === 'string' && seen.has(ref)) add(ptr('scds', i), 'duplicate_scd', `SCD ${ref} is listed twice`);
      seen.add(String(ref));
    });
  }

  if (type && imports && scds) typeConstraints(rules, type, label, imports, scds, add);
  if (type && imports && opts.knownTypes) hierarchy(rules, type, label, imports, toMap(opts.knownTypes), add);
  // What the control plane refuses beyond the SCS rules (payload limits, svc's extensions).
  out.push(...svcBundleFindings(doc, opts.file));

  if (opts.strict) {
    if (type === 'project' && imports) metaImport(label, imports, opts.knownTypes ? toMap(opts.knownTypes) : null, add);
    if (type === 'meta' && typeof doc.version === 'string' && !SEMVER_RE.test(doc.version)) {
      add('/version', 'meta_version_alignment', `meta bundle ${label} should carry a semantic version, not ${doc.version}`, 'warning');
    }
    // The schema repeats most structural checks: keep only what they did not already say.
    const covered = out.map((f) => f.path);
    // svc's own bundle fields (applies_to, schema_version) are checked by svcBundleFindings.
    const { applies_to: _a, schema_version: _s, ...scsDoc } = doc;
    for (const f of schemaFindings(rules.bundleSchema, scsDoc, 'schema', opts.file)) {
      if (!covered.some((p) => p === f.path || f.path.startsWith(p + '/'))) out.push(f);
    }
  }
  return out;
}

type Add = (path: string, rule: string, message: string, severity?: Finding['severity']) => void;

function stringList(doc: Record<string, unknown>, f: 'imports' | 'scds', add: Add): unknown[] | null {
  const v = doc[f];
  if (v == null) return null;
  if (!Array.isArray(v)) {
    add(ptr(f), 'field_type', `${f} must be a list`);
    return null;
  }
  return v;
}

function typeConstraints(rules: RuleSet, type: BundleType, label: string, imports: unknown[], scds: unknown[], add: Add): void {
  const rule = rules.typeRules[type];
  if (type === 'standards') {
    // XOR: a standards bundle aggregates (imports) or contains (scds), not both, not neither.
    if (imports.length > 0 && scds.length > 0) {
      add('/scds', 'xor_constraint', `Bundle '${label}' (type: standards) has both imports (${imports.length}) and scds (${scds.length}); a bundle contains imports OR scds, not both`);
    } else if (imports.length === 0 && scds.length === 0) {
      add('/scds', 'xor_constraint', `Bundle '${label}' (type: standards) has neither imports nor scds`);
    }
  } else {
    for (const [f, list] of [['imports', imports], ['scds', scds]] as const) {
      const r = rule[f];
      if (list.length < r.min || (r.max !== null && list.length > r.max)) {
        add(ptr(f), 'bundle_type', `${r.message}; '${label}' has ${list.length}`);
      }
    }
  }
  if (rule.scdTier) {
    scds.forEach((ref, i) => {
      const tier = typeof ref === 'string' ? scdTier(ref) : null;
      if (tier && tier !== rule.scdTier) {
        add(ptr('scds', i), 'scd_tier', `SCD '${ref}' in ${type} bundle '${label}' has tier '${tier}' but a ${type} bundle requires tier '${rule.scdTier}'`);
      }
    });
  }
}

function hierarchy(rules: RuleSet, type: BundleType, label: string, imports: unknown[], known: Map<string, BundleType>, add: Add): void {
  const allowed = rules.allowedImports;
  let concerns = 0;
  let allKnown = true;
  imports.forEach((ref, i) => {
    const parsed = typeof ref === 'string' ? parseImport(ref) : null;
    if (!parsed) return;
    const t = known.get(parsed.id);
    if (!t) { allKnown = false; return; }
    if (t === 'concern') concerns++;
    if (!allowed[type].includes(t)) {
      add(ptr('imports', i), 'import_hierarchy', `${type} bundle '${label}' cannot import ${t} bundle ${ref} (a ${type} bundle may import: ${allowed[type].join(', ') || 'nothing'})`);
    }
  });
  if (rules.domainImportsConcern && type === 'domain' && allKnown && imports.length > 0 && concerns === 0) {
    add('/imports', 'import_hierarchy', `domain bundle '${label}' must import at least one concern bundle`);
  }
}

/**
 * A project bundle imports a meta bundle, pinned to an exact version. Without the other
 * bundles' types only an import named `bundle:meta` is known to be the meta bundle, so the
 * "must import one" half needs `known`.
 */
function metaImport(label: string, imports: unknown[], known: Map<string, BundleType> | null, add: Add): void {
  const isMeta = (id: string) => (known?.get(id) ?? (id === 'bundle:meta' ? 'meta' : undefined)) === 'meta';
  let found = false;
  imports.forEach((ref, i) => {
    const parsed = typeof ref === 'string' ? parseImport(ref) : null;
    if (!parsed || !isMeta(parsed.id)) return;
    found = true;
    if (!parsed.version) {
      add(ptr('imports', i), 'meta_version_pinning', `Meta bundle import '${ref}' must specify an explicit version (e.g. ${ref}:0.3.0)`);
    }
  });
  if (!found && known) add('/imports', 'meta_import_required', `project bundle '${label}' must import a meta bundle (e.g. bundle:meta:<X.Y.Z>)`);
}

function toMap(k: ReadonlyMap<string, BundleType> | Record<string, BundleType>): Map<string, BundleType> {
  return k instanceof Map ? (k as Map<string, BundleType>) : new Map(Object.entries(k));
}
