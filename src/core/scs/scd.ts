/**
 * Checks of one SCD document. Loose: a mapping with a well-formed id and the identity
 * fields (id, type, title, version), type matching the id's tier; nothing about content.
 * Strict: the tier's SCS JSON Schema, the version pattern, non-empty content and the
 * per-document relationship rules (known type, tier constraints, no self reference).
 */
import {
  type Finding, RELATIONSHIP_TIERS, RELATIONSHIP_TYPES, SCD_IDENTITY_FIELDS, SCD_TIERS, BUNDLE_VERSION_RE,
  type ScdTier, isObject, ptr, scdTier,
} from './rules.js';
import { schemaFindings } from './schemas.js';
import { svcScdFindings } from './svc-limits.js';

export function checkScd(doc: unknown, opts: { strict: boolean; file?: string }): Finding[] {
  const out: Finding[] = [];
  const add = (path: string, rule: string, message: string, severity: Finding['severity'] = 'error') =>
    out.push({ severity, path, rule, message, ...(opts.file ? { file: opts.file } : {}) });

  if (!isObject(doc)) {
    add('', 'document_type', `an SCD must be a mapping (object), got ${doc === null ? 'null' : Array.isArray(doc) ? 'a list' : typeof doc}`);
    return out;
  }
  for (const f of SCD_IDENTITY_FIELDS) {
    if (doc[f] === undefined || doc[f] === null) add(ptr(f), 'required', `required SCD field '${f}' is missing`);
  }
  const id = typeof doc.id === 'string' ? doc.id : null;
  const tier = id ? scdTier(id) : null;
  if (doc.id != null && !tier) {
    add('/id', 'id_pattern', `id ${JSON.stringify(doc.id)} must match scd:<meta|standards|project>:<name>`);
  }
  if (doc.type != null) {
    if (typeof doc.type !== 'string' || !(SCD_TIERS as readonly string[]).includes(doc.type)) {
      add('/type', 'scd_type', `type ${JSON.stringify(doc.type)} must be one of ${SCD_TIERS.join(', ')}`);
    } else if (tier && doc.type !== tier) {
      add('/type', 'type_tier_mismatch', `type '${doc.type}' does not match tier '${tier}' in id '${id}'`);
    }
  }
  if (doc.title != null && (typeof doc.title !== 'string' || doc.title.trim() === '')) add('/title', 'field_type', 'title must be a non-empty string');
  if (doc.version != null && typeof doc.version !== 'string') add('/version', 'field_type', 'version must be a string');
  // What the control plane refuses beyond the SCS rules (payload limits, svc's applies_to).
  out.push(...svcScdFindings(doc, opts.file));

  if (!opts.strict) return out;

  if (typeof doc.version === 'string' && !BUNDLE_VERSION_RE.test(doc.version)) {
    add('/version', 'version_pattern', `version '${doc.version}' must be DRAFT or a semantic version X.Y.Z`);
  }
  if (typeof doc.title === 'string' && doc.title.length > 200) add('/title', 'field_length', 'title must be at most 200 characters');
  if (isObject(doc.content) && Object.keys(doc.content).length === 0) add('/content', 'content_empty', 'content must be a non-empty mapping');
  if (Array.isArray(doc.relationships)) relationships(id, tier, doc.relationships, add);

  // Tier schema: by the id's tier, else by the declared type.
  const schemaTier: ScdTier | null = tier ?? ((SCD_TIERS as readonly string[]).includes(String(doc.type)) ? (doc.type as ScdTier) : null);
  if (schemaTier) {
    const covered = out.map((f) => f.path);
    for (const f of schemaFindings(`scd-${schemaTier}`, doc, 'scd_schema', opts.file)) {
      if (!covered.some((p) => p === f.path || f.path.startsWith(p + '/'))) out.push(f);
    }
  }
  return out;
}

type Add = (path: string, rule: string, message: string, severity?: Finding['severity']) => void;

function relationships(id: string | null, tier: ScdTier | null, rels: unknown[], add: Add): void {
  rels.forEach((r, i) => {
    if (!isObject(r)) return; // the schema reports the shape
    const type = r.type;
    const target = r.target;
    if (typeof type === 'string' && !RELATIONSHIP_TYPES.includes(type)) {
      add(ptr('relationships', i, 'type'), 'relationship_type', `relationship type '${type}' must be one of ${RELATIONSHIP_TYPES.join(', ')}`);
    }
    if (typeof target !== 'string') return;
    if (id && target === id) {
      add(ptr('relationships', i, 'target'), 'self_reference', `SCD '${id}' cannot have a relationship to itself (type '${String(type)}')`);
      return;
    }
    const targetTier = scdTier(target);
    if (!tier || !targetTier || typeof type !== 'string' || !RELATIONSHIP_TYPES.includes(type)) return;
    const allowed = RELATIONSHIP_TIERS[type][tier] ?? [];
    if (!allowed.includes(targetTier)) {
      const combos = Object.entries(RELATIONSHIP_TIERS[type]).map(([f, to]) => `${f}->${to!.join('|')}`).join(', ');
      add(ptr('relationships', i), 'relationship_tier', `relationship '${type}' from ${tier}-tier SCD '${id}' to ${targetTier}-tier SCD '${target}' violates tier constraints (allowed: ${combos})`);
    }
  });
}

