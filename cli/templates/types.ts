/** The shape of a project template: what `svc new --type <t>` writes, before ids are namespaced. */

/** Id helpers handed to content builders (ids are namespaced by the project name). */
interface Refs { std: (slug: string) => string; role: (slug: string) => string }

interface RoleDef { slug: string; name: string; description: string; trust_level: 'high' | 'standard' | 'restricted'; responsibilities: string[] }

export interface StandardDef {
  slug: string;
  title: string;
  description: string;
  standard_name: string;
  standard_version: string;
  authority: string;
  scope: string;
  source_documents?: string[];
  sections: Array<{ id: string; title: string; description: string; category?: string; obligations?: string[] }>;
}

interface ProjectScdDef {
  slug: string;
  title: string;
  description: string;
  /** SCS project-tier content; `std(slug)` gives the id of one of the template's standards SCDs. */
  content: (ref: Refs) => Record<string, unknown>;
  /** Standards slugs this SCD satisfies (SCS `satisfies`, project -> standards). */
  satisfies?: string[];
  /** Role slugs this SCD applies to (the product's APPLIES_TO edges); none = every role. */
  roles?: string[];
}

interface ConcernDef { slug: string; title: string; description: string; scds: ProjectScdDef[] }

export interface TemplateDef {
  label: string;
  summary: string;
  domain: { slug: string; title: string; description: string };
  roles: RoleDef[];
  standards: StandardDef[];
  concerns: ConcernDef[];
}
