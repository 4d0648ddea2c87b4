/**
 * Turns a TemplateDef into the files of a new project in the public SCS 0.3 layout:
 *
 *   project-bundle.yaml, meta-bundle.yaml, standards-bundle.yaml (none for minimal)
 *   domains/<domain>.yaml, concerns/<concern>.yaml
 *   context/meta/*.yaml, context/standards/*.yaml, context/project/*.yaml (the SCDs)
 *   README.md, .svc/config.yaml, .svc/.gitignore
 *
 * Every bundle and SCD id is namespaced by the project name (`bundle:<p>.security`,
 * `scd:project:<p>.threat-model`) so that several projects can be published to one
 * control plane without colliding; role ids (`role:nurse`) are shared on purpose, since
 * agents are registered with them. Every bundle starts at 0.1.0 with pinned imports, so
 * the project validates strictly as created and can be published bottom-up.
 */
import type { TemplateDef } from './types.js';
import { TEMPLATES, type ProjectType } from './catalog.js';

const INITIAL_VERSION = '0.1.0';

export interface ScaffoldFile { path: string; doc?: Record<string, unknown>; text?: string }

export function scaffold(name: string, type: ProjectType, author: string, now: Date): ScaffoldFile[] {
  const t: TemplateDef = TEMPLATES[type];
  const at = now.toISOString().replace(/\.\d{3}Z$/, 'Z');
  const provenance = (rationale: string) => ({ created_by: author, created_at: at, rationale });
  const ids = {
    bundle: (slug?: string) => (slug ? `bundle:${name}.${slug}` : `bundle:${name}`),
    scd: (tier: 'meta' | 'standards' | 'project', slug: string) => `scd:${tier}:${name}.${slug}`,
  };
  const pin = (id: string) => `${id}:${INITIAL_VERSION}`;
  const refs = { std: (s: string) => ids.scd('standards', s), role: (s: string) => `role:${s}` };
  const files: ScaffoldFile[] = [];
  const rolesScd = ids.scd('meta', 'roles');
  const vocabScd = ids.scd('meta', 'vocabulary');

  // Meta tier: the roles agents are registered with, and the project's vocabulary.
  files.push({ path: 'context/meta/roles.yaml', doc: {
    id: rolesScd, type: 'meta', title: `${t.label} Roles`, version: INITIAL_VERSION,
    description: `Roles of the ${name} project: the people and AI agents that receive its context, and how far each is trusted.`,
    content: { roles: t.roles.map((r) => ({ id: `role:${r.slug}`, name: r.name, description: r.description, responsibilities: r.responsibilities, trust_level: r.trust_level })) },
    relationships: [],
    provenance: provenance(`Initial ${t.label.toLowerCase()} roles scaffolded by svc new`),
  } });
  files.push({ path: 'context/meta/vocabulary.yaml', doc: {
    id: vocabScd, type: 'meta', title: `${t.label} Vocabulary`, version: INITIAL_VERSION,
    description: `The domain and concern areas the ${name} project organizes its context into.`,
    content: {
      domains: [{ id: `domain:${t.domain.slug}`, name: t.domain.title, description: t.domain.description }],
      concerns: t.concerns.map((c) => ({ id: `concern:${c.slug}`, name: c.title, description: c.description, applies_to: [`domain:${t.domain.slug}`] })),
    },
    relationships: [{ type: 'depends-on', target: rolesScd, description: 'Concerns are owned by the roles defined in the roles SCD' }],
    provenance: provenance('Initial vocabulary scaffolded by svc new'),
  } });
  files.push({ path: 'meta-bundle.yaml', doc: bundleDoc(ids.bundle('meta'), 'meta', `${t.label} Meta Bundle`,
    `Meta-tier vocabulary of ${name}: roles and concern areas.`, [], [rolesScd, vocabScd], provenance('Meta-tier foundation of the project')) });

  // Standards tier.
  for (const s of t.standards) {
    files.push({ path: `context/standards/${s.slug}.yaml`, doc: {
      id: ids.scd('standards', s.slug), type: 'standards', title: s.title, version: INITIAL_VERSION, description: s.description,
      content: {
        standard_name: s.standard_name, standard_version: s.standard_version, authority: s.authority, scope: s.scope,
        sections: s.sections,
        ...(s.source_documents ? { source_documents: s.source_documents } : {}),
      },
      relationships: [],
      provenance: provenance(`${s.standard_name} obligations relevant to ${name}`),
    } });
  }
  if (t.standards.length > 0) {
    files.push({ path: 'standards-bundle.yaml', doc: bundleDoc(ids.bundle('standards'), 'standards', `${t.label} Standards Bundle`,
      `Regulatory and compliance standards ${name} must meet: ${t.standards.map((s) => s.standard_name).join('; ')}.`,
      [], t.standards.map((s) => ids.scd('standards', s.slug)), provenance('Standards the project is accountable to')) });
  }

  // Project tier: concern bundles of SCDs, aggregated by one domain bundle.
  for (const c of t.concerns) {
    for (const d of c.scds) {
      files.push({ path: `context/project/${d.slug}.yaml`, doc: {
        id: ids.scd('project', d.slug), type: 'project', title: d.title, version: INITIAL_VERSION, description: d.description,
        content: d.content(refs),
        ...(d.roles ? { applies_to: { roles: d.roles.map(refs.role) } } : {}),
        relationships: [
          ...(d.satisfies ?? []).map((s) => ({ type: 'satisfies', target: refs.std(s), description: `Implements the ${t.standards.find((x) => x.slug === s)?.standard_name ?? s} obligations that concern ${d.title.toLowerCase()}` })),
          { type: 'depends-on', target: rolesScd, description: 'Uses the project roles' },
        ],
        provenance: provenance(`${c.title} context scaffolded by svc new`),
      } });
    }
    files.push({ path: `concerns/${c.slug}.yaml`, doc: bundleDoc(ids.bundle(c.slug), 'concern', `${c.title} (${name})`, c.description,
      [], c.scds.map((d) => ids.scd('project', d.slug)), provenance(`${c.title} concern of the project`)) });
  }
  files.push({ path: `domains/${t.domain.slug}.yaml`, doc: bundleDoc(ids.bundle(t.domain.slug), 'domain', `${t.domain.title} Domain (${name})`,
    t.domain.description, t.concerns.map((c) => pin(ids.bundle(c.slug))), [], provenance('Domain bundle aggregating the concern bundles')) });
  files.push({ path: 'project-bundle.yaml', doc: bundleDoc(ids.bundle(), 'project', `${name}: Complete Context Bundle`,
    `Top-level bundle of ${name} (${t.label.toLowerCase()}): imports the meta, standards and domain bundles.`,
    [pin(ids.bundle('meta')), ...(t.standards.length ? [pin(ids.bundle('standards'))] : []), pin(ids.bundle(t.domain.slug))], [],
    provenance('Project bundle scaffolded by svc new')) });
  files.push({ path: 'README.md', text: readme(name, type, t, files) });
  return files;
}

function bundleDoc(id: string, type: string, title: string, description: string, imports: string[], scds: string[], provenance: object) {
  return { id, type, version: INITIAL_VERSION, title, description, imports, scds, provenance };
}

function readme(name: string, type: ProjectType, t: TemplateDef, files: ScaffoldFile[]): string {
  const list = (prefix: string) => files.filter((f) => f.path.startsWith(prefix)).map((f) => `- \`${f.path}\` (\`${f.doc!.id}\`)`).join('\n');
  return `# ${name}

Structured context for a ${t.label.toLowerCase()} project, in the layout of the public
Structured Context Specification (SCS) 0.3. Created with \`svc new ${name} --type ${type}\`.

${t.summary}

## Layout

Bundles (manifests that group SCDs; every bundle is at version ${INITIAL_VERSION}):

- \`project-bundle.yaml\`: the top-level bundle; imports meta, ${t.standards.length ? 'standards, ' : ''}and domain bundles
- \`meta-bundle.yaml\`: roles and vocabulary (meta tier)
${t.standards.length ? '- `standards-bundle.yaml`: ' + t.standards.map((s) => s.standard_name).join('; ') + '\n' : ''}- \`domains/${t.domain.slug}.yaml\`: the domain bundle, importing the concern bundles
${list('concerns/')}

Structured Context Documents (SCDs), under \`context/\`:

${list('context/')}

## Working with it

\`\`\`sh
svc validate . --strict                  # everything: schemas, references, versions
svc bundle create                        # add a bundle interactively
svc bundle version concerns/${t.concerns[0].slug}.yaml --version 0.2.0
svc config set api.endpoint https://svc.example.com
svc config set api.key <admin key> --user
svc bundle publish meta-bundle.yaml      # publish bottom-up: meta, standards, concerns, domain, project
\`\`\`

Project SCDs carry \`applies_to.roles\` where they concern only some roles; an SCD without it
applies to every role. Ids are namespaced by the project name (\`${name}.\`) so that several
projects can share one control plane.
`;
}
