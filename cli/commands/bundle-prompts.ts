/**
 * The questions of `svc bundle create`, asked with @inquirer/prompts. Values already given
 * as flags or in the template become the defaults. Every answer is checked as it is typed
 * (id shape, SCD tiers, import references, counts the bundle type needs), so what comes
 * out is a valid bundle.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { checkbox, confirm, input, select } from '@inquirer/prompts';
import {
  ALLOWED_IMPORTS, BUNDLE_ID_RE, BUNDLE_TYPES, BUNDLE_VERSION_RE, SCD_ID_RE, parseImport, scdTier, type BundleType,
} from '../../src/core/scs/index.js';
import type { ProjectSet } from '../lib/project-set.js';
import type { BundleFields } from './bundle-fields.js';

const TYPE_HELP: Record<BundleType, string> = {
  meta: 'meta: foundational vocabulary (roles, concepts); contains meta-tier SCDs, imports nothing',
  standards: 'standards: compliance requirements; contains standards-tier SCDs or imports other standards bundles',
  domain: 'domain: an organizational area; imports concern bundles, contains no SCDs',
  concern: 'concern: a functional area (security, architecture...); contains project-tier SCDs, imports nothing',
  project: 'project: the top-level bundle; imports meta, standards and domain bundles',
};
const TIER_OF: Partial<Record<BundleType, 'meta' | 'standards' | 'project'>> = { meta: 'meta', standards: 'standards', concern: 'project' };

const split = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);

export async function askBundle(
  given: BundleFields,
  project: ProjectSet | null,
  pathFor: (type: BundleType, id: string) => string,
  force: boolean,
): Promise<BundleFields> {
  const type = await select<BundleType>({
    message: 'Bundle type',
    choices: BUNDLE_TYPES.map((t) => ({ value: t, name: t, description: TYPE_HELP[t] })),
    default: given.type,
  });
  const rawId = await input({
    message: 'Bundle id (bundle:<name>)',
    default: given.id,
    required: true,
    validate: (v) => BUNDLE_ID_RE.test(withPrefix(v)) || 'use bundle:<name> with letters, digits, ".", "_" or "-"',
  });
  const id = withPrefix(rawId);
  const title = await input({ message: 'Title', default: given.title, required: true, validate: (v) => v.trim().length > 0 || 'a title is required' });
  const description = await input({ message: 'Description', default: given.description, required: true, validate: (v) => v.trim().length > 0 || 'a description is required' });

  let scds: string[] = [];
  let imports: string[] = [];
  let wantScds = type === 'meta' || type === 'concern';
  if (type === 'standards') {
    wantScds = (await select({
      message: 'A standards bundle contains SCDs or imports other standards bundles (not both)',
      choices: [{ value: 'scds', name: 'standards SCDs' }, { value: 'imports', name: 'imports of standards bundles' }],
      default: given.imports?.length && !given.scds?.length ? 'imports' : 'scds',
    })) === 'scds';
  }
  if (wantScds) scds = await askScds(type, given.scds ?? [], project);
  if (type === 'project' || type === 'domain' || (type === 'standards' && !wantScds)) imports = await askImports(type, id, given.imports ?? [], project);

  const version = await input({
    message: 'Version (DRAFT, or MAJOR.MINOR.PATCH to publish as is)',
    default: given.version ?? 'DRAFT',
    validate: (v) => BUNDLE_VERSION_RE.test(v.trim()) || 'DRAFT or a semantic version such as 1.0.0',
  });
  const out = await input({
    message: 'Write to file',
    default: given.out ?? pathFor(type, id),
    required: true,
    validate: (v) => force || !existsSync(resolve(v)) || `${v} exists; choose another file (or rerun with --force)`,
  });
  const rationale = await input({ message: 'Rationale (provenance, optional)', default: given.rationale });
  if (!(await confirm({ message: `Write ${id} ${version.trim()} (${type}) to ${out}?`, default: true }))) {
    throw Object.assign(new Error('cancelled'), { name: 'ExitPromptError' });
  }
  return { type, id, title: title.trim(), description: description.trim(), scds, imports, version: version.trim(), out, rationale: rationale.trim() || undefined };
}

const withPrefix = (v: string) => (v.trim().startsWith('bundle:') ? v.trim() : `bundle:${v.trim()}`);

async function askScds(type: BundleType, preset: string[], project: ProjectSet | null): Promise<string[]> {
  const tier = TIER_OF[type]!;
  const known = [...(project?.scds.keys() ?? [])].filter((id) => scdTier(id) === tier).sort();
  let chosen: string[] = [];
  if (known.length > 0) {
    chosen = await checkbox({
      message: `${tier}-tier SCDs to include (space to select, enter to confirm)`,
      choices: known.map((id) => ({ value: id, name: id, checked: preset.includes(id) })),
      pageSize: 12,
    });
  }
  const min = type === 'standards' || type === 'meta' || type === 'concern' ? 1 : 0;
  const extra = await input({
    message: known.length ? 'Other SCD ids (comma-separated, blank for none)' : `SCD ids (comma-separated, scd:${tier}:<name>)`,
    default: preset.filter((p) => !known.includes(p)).join(', ') || undefined,
    validate: (v) => {
      const ids = split(v);
      const bad = ids.find((x) => !SCD_ID_RE.test(x) || scdTier(x) !== tier);
      if (bad) return `${bad}: a ${type} bundle lists ${tier}-tier SCDs, scd:${tier}:<name>`;
      return chosen.length + ids.length >= min || `a ${type} bundle contains at least one SCD`;
    },
  });
  return [...new Set([...chosen, ...split(extra)])];
}

async function askImports(type: BundleType, self: string, preset: string[], project: ProjectSet | null): Promise<string[]> {
  const allowed = ALLOWED_IMPORTS[type];
  const offers = (project?.bundles ?? [])
    .map((f) => f.doc as { id: string; type: BundleType; version?: string })
    // Only locked versions are offered, pinned: an import cannot resolve to a DRAFT.
    .filter((d) => d.id !== self && allowed.includes(d.type) && typeof d.version === 'string' && d.version !== 'DRAFT')
    .map((d) => `${d.id}:${d.version}`);
  const known = [...new Set(offers)].sort();
  let chosen: string[] = [];
  if (known.length > 0) {
    chosen = await checkbox({
      message: `Bundles to import (${allowed.join(', ')})`,
      choices: known.map((ref) => ({ value: ref, name: ref, checked: preset.includes(ref) })),
      pageSize: 12,
    });
  }
  const min = type === 'project' || type === 'domain' || type === 'standards' ? 1 : 0;
  const extra = await input({
    message: known.length ? 'Other imports (comma-separated, blank for none)' : 'Imports (comma-separated, bundle:<name> or bundle:<name>:<X.Y.Z>)',
    default: preset.filter((p) => !known.includes(p)).join(', ') || undefined,
    validate: (v) => {
      const refs = split(v);
      const bad = refs.find((r) => !parseImport(r));
      if (bad) return `${bad}: use bundle:<name> or bundle:<name>:<X.Y.Z>`;
      if (refs.some((r) => parseImport(r)!.id === self)) return 'a bundle cannot import itself';
      return chosen.length + refs.length >= min || `a ${type} bundle imports at least one bundle`;
    },
  });
  return [...new Set([...chosen, ...split(extra)])];
}
