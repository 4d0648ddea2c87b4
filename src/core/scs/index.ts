/**
 * SCS 0.3 validation rules, shared by the `svc` CLI and the API's bundle validation.
 * Pure functions over parsed documents: no I/O beyond reading the bundled JSON Schemas.
 */
import { checkBundle } from './bundle.js';
import { checkProject, classifyDocument, type DocumentKind } from './project.js';
import type { Finding } from './rules.js';
import { checkScd } from './scd.js';
import { schemaFindings } from './schemas.js';
import type { RuleSet } from './versions.js';

export type { Finding, BundleType } from './rules.js';
export {
  BUNDLE_TYPES, BUNDLE_ID_RE, BUNDLE_VERSION_RE, SCD_ID_RE, ALLOWED_IMPORTS, parseImport, scdTier,
} from './rules.js';
export { checkBundle } from './bundle.js';
export { checkScd } from './scd.js';
export { checkProject, classifyDocument, type DocumentKind } from './project.js';
export {
  DEFAULT_SCS_VERSION, RULE_SETS, isKnownScsVersion, normalizeScsVersion, ruleSetFor, type RuleSet,
} from './versions.js';
export { SVC_LIMITS } from './svc-limits.js';

/**
 * Checks one document of any kind (bundle, SCD, domain manifest); an unknown kind is an
 * error. Under a rule set without domain manifests (SCS 0.1.0) a domain manifest is not checked.
 */
export function checkDocument(doc: unknown, opts: { strict: boolean; file?: string; rules?: RuleSet }): { kind: DocumentKind; findings: Finding[] } {
  const kind = classifyDocument(doc);
  const file = opts.file ? { file: opts.file } : {};
  switch (kind) {
    case 'bundle': return { kind, findings: checkBundle(doc, opts) };
    case 'scd': return { kind, findings: checkScd(doc, opts) };
    case 'domain': return { kind, findings: opts.strict && (opts.rules?.domainManifests ?? true) ? schemaFindings('domain', doc, 'domain_schema', opts.file) : [] };
    default: return {
      kind,
      findings: [{ severity: 'error', path: '', rule: 'document_kind', message: 'not an SCS bundle, SCD or domain manifest (no bundle:/scd: id)', ...file }],
    };
  }
}

/**
 * Validates a set of documents: each on its own (documents of unknown kind are skipped and
 * listed), then the cross-file checks. Findings are de-duplicated and ordered by file, path.
 */
export function validateDocuments(
  files: Array<{ file: string; doc: unknown }>,
  opts: { strict: boolean; rules?: RuleSet },
): { findings: Finding[]; kinds: Map<string, DocumentKind> } {
  const kinds = new Map<string, DocumentKind>();
  const all: Finding[] = [];
  for (const { file, doc } of files) {
    const r = checkDocument(doc, { strict: opts.strict, file, rules: opts.rules });
    kinds.set(file, r.kind);
    if (r.kind !== 'unknown') all.push(...r.findings);
  }
  all.push(...checkProject(files.filter((f) => kinds.get(f.file) !== 'unknown'), opts));
  const seen = new Set<string>();
  const findings = all.filter((f) => {
    const k = `${f.file ?? ''}\u0000${f.path}\u0000${f.rule}`;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  findings.sort((a, b) => (a.file ?? '').localeCompare(b.file ?? '') || a.path.localeCompare(b.path, 'en', { numeric: true }) || a.rule.localeCompare(b.rule));
  return { findings, kinds };
}
