/**
 * Cross-file checks over a set of loaded bundles and SCDs: references that must exist
 * (imports, SCDs, relationship targets), version pins that match, import cycles, the
 * import hierarchy by the imported bundles' real types, and ambiguous duplicate ids.
 * Under `strict` these are errors; loose validation reports them as warnings (loose does
 * not require the rest of the project to be present).
 */
import { checkBundle } from './bundle.js';
import {
  BUNDLE_TYPES, type BundleType, type Finding, SCD_ID_RE, isObject, parseImport, ptr,
} from './rules.js';
import type { RuleSet } from './versions.js';

export type DocumentKind = 'bundle' | 'scd' | 'domain' | 'unknown';

/** What an SCS document is, by its shape: bundle manifest, SCD, domain manifest, or none of these. */
export function classifyDocument(doc: unknown): DocumentKind {
  if (!isObject(doc)) return 'unknown';
  if (typeof doc.id === 'string') {
    if (doc.id.startsWith('bundle:')) return 'bundle';
    if (doc.id.startsWith('scd:')) return 'scd';
  }
  if (isObject(doc.domain) && Object.keys(doc).length <= 2) return 'domain';
  if ((BUNDLE_TYPES as readonly string[]).includes(String(doc.type)) && (Array.isArray(doc.imports) || Array.isArray(doc.scds))) return 'bundle';
  if (doc.content !== undefined && typeof doc.type === 'string' && 'title' in doc) return 'scd';
  return 'unknown';
}

interface LoadedBundle { file: string; doc: Record<string, unknown>; id: string; version: string | null; type: BundleType | null }

export function checkProject(files: Array<{ file: string; doc: unknown }>, opts: { strict: boolean; rules?: RuleSet }): Finding[] {
  const sev: Finding['severity'] = opts.strict ? 'error' : 'warning';
  const out: Finding[] = [];
  const add = (file: string, path: string, rule: string, message: string, severity = sev) =>
    out.push({ severity, path, rule, message, file });

  const bundles: LoadedBundle[] = [];
  const scds = new Map<string, Array<{ file: string; doc: Record<string, unknown> }>>();
  for (const { file, doc } of files) {
    const kind = classifyDocument(doc);
    if (!isObject(doc)) continue;
    if (kind === 'bundle' && typeof doc.id === 'string') {
      bundles.push({
        file, doc, id: doc.id,
        version: typeof doc.version === 'string' ? doc.version : null,
        type: (BUNDLE_TYPES as readonly string[]).includes(String(doc.type)) ? (doc.type as BundleType) : null,
      });
    } else if (kind === 'scd' && typeof doc.id === 'string') {
      const list = scds.get(doc.id) ?? [];
      list.push({ file, doc });
      scds.set(doc.id, list);
    }
  }
  const byId = new Map<string, LoadedBundle[]>();
  for (const b of bundles) byId.set(b.id, [...(byId.get(b.id) ?? []), b]);
  const knownTypes = new Map<string, BundleType>();
  for (const b of bundles) if (b.type) knownTypes.set(b.id, b.type);
  const hasProject = bundles.some((b) => b.type === 'project');

  // Same bundle id and version defined twice: which one is meant is ambiguous.
  for (const [id, list] of byId) {
    const seen = new Map<string, string>();
    for (const b of list) {
      const key = b.version ?? '';
      if (seen.has(key)) add(b.file, '/version', 'duplicate_bundle', `bundle ${id} version ${b.version} is also defined in ${seen.get(key)}`);
      else seen.set(key, b.file);
    }
  }

  const ambiguous = new Set<string>();
  const reportAmbiguous = (ref: string) => {
    const defs = scds.get(ref);
    if (!defs || defs.length < 2 || ambiguous.has(ref)) return;
    ambiguous.add(ref);
    for (const d of defs.slice(1)) add(d.file, '/id', 'duplicate_scd', `SCD ${ref} is defined in more than one file (${defs.map((x) => x.file).join(', ')})`);
  };

  for (const b of bundles) {
    const imports = Array.isArray(b.doc.imports) ? b.doc.imports : [];
    imports.forEach((ref, i) => {
      const parsed = typeof ref === 'string' ? parseImport(ref) : null;
      if (!parsed || parsed.id === b.id) return; // pattern and self-import are per-file findings
      const candidates = byId.get(parsed.id);
      if (!candidates) {
        add(b.file, ptr('imports', i), 'import_unresolved', `${b.id} imports ${ref}, but no bundle ${parsed.id} is present`);
      } else if (parsed.version && !candidates.some((c) => c.version === parsed.version)) {
        const have = candidates.map((c) => `${c.version ?? '(no version)'} (${c.file})`).join(', ');
        add(b.file, ptr('imports', i), 'import_version_mismatch', `${b.id} imports ${ref}, but ${parsed.id} is at version ${have}`);
      } else if (!parsed.version && candidates.every((c) => c.version === 'DRAFT')) {
        add(b.file, ptr('imports', i), 'import_unresolved', `${b.id} imports ${ref} unpinned, but ${parsed.id} exists only as DRAFT (unpinned imports resolve to published versions)`);
      }
    });
    for (const f of checkBundle(b.doc, { strict: opts.strict, file: b.file, knownTypes, rules: opts.rules })) {
      if (f.rule === 'import_hierarchy' || f.rule === 'meta_import_required' || f.rule === 'meta_version_pinning') {
        out.push({ ...f, severity: f.rule === 'meta_version_pinning' ? 'error' : sev });
      }
    }
    const list = Array.isArray(b.doc.scds) ? b.doc.scds : [];
    list.forEach((ref, i) => {
      if (typeof ref !== 'string' || !SCD_ID_RE.test(ref)) return;
      if (!scds.has(ref)) add(b.file, ptr('scds', i), 'scd_unresolved', `${b.id} lists SCD ${ref}, but no document defines it`);
      else reportAmbiguous(ref);
    });
  }

  importCycles(bundles, byId, (b, msg) => add(b.file, '/imports', 'import_cycle', msg));

  // Relationship targets: in a complete project an unresolved target is an error; a
  // standalone set of SCDs may point into bundles that are not loaded (a warning).
  const relSev: Finding['severity'] = opts.strict && hasProject ? 'error' : 'warning';
  const dependsOn = new Map<string, string[]>();
  for (const [id, defs] of scds) {
    for (const { file, doc } of defs) {
      const rels = Array.isArray(doc.relationships) ? doc.relationships : [];
      rels.forEach((r, i) => {
        if (!isObject(r) || typeof r.target !== 'string' || !SCD_ID_RE.test(r.target) || r.target === id) return;
        if (!scds.has(r.target)) {
          add(file, ptr('relationships', i, 'target'), 'relationship_unresolved', `relationship '${String(r.type)}' of ${id} targets ${r.target}, which no loaded document defines`, relSev);
        } else reportAmbiguous(r.target);
        if (r.type === 'depends-on') dependsOn.set(id, [...(dependsOn.get(id) ?? []), r.target]);
      });
    }
  }
  if (opts.strict) {
    for (const cycle of findCycles(dependsOn)) {
      const file = scds.get(cycle[0])![0].file;
      add(file, '/relationships', 'depends_on_cycle', `circular depends-on relationships: ${cycle.join(' -> ')}`, 'warning');
    }
  }
  return out;
}

function importCycles(bundles: LoadedBundle[], byId: Map<string, LoadedBundle[]>, report: (b: LoadedBundle, msg: string) => void): void {
  const edges = new Map<string, string[]>();
  for (const b of bundles) {
    const imports = Array.isArray(b.doc.imports) ? b.doc.imports : [];
    for (const ref of imports) {
      const p = typeof ref === 'string' ? parseImport(ref) : null;
      if (p && p.id !== b.id && byId.has(p.id)) edges.set(b.id, [...(edges.get(b.id) ?? []), p.id]);
    }
  }
  for (const cycle of findCycles(edges)) report(byId.get(cycle[0])![0], `import cycle: ${cycle.join(' -> ')}`);
}

/** Every elementary cycle found by DFS, each reported once (rotated to start at its smallest id). */
function findCycles(edges: Map<string, string[]>): string[][] {
  const cycles = new Map<string, string[]>();
  const state = new Map<string, 1 | 2>();
  const stack: string[] = [];
  const visit = (n: string) => {
    state.set(n, 1);
    stack.push(n);
    for (const m of edges.get(n) ?? []) {
      if (state.get(m) === 1) {
        const cyc = stack.slice(stack.indexOf(m));
        const start = cyc.indexOf([...cyc].sort()[0]);
        const rot = [...cyc.slice(start), ...cyc.slice(0, start)];
        cycles.set(rot.join('|'), [...rot, rot[0]]);
      } else if (!state.has(m)) visit(m);
    }
    stack.pop();
    state.set(n, 2);
  };
  for (const n of [...edges.keys()].sort()) if (!state.has(n)) visit(n);
  return [...cycles.values()];
}
