import type { TemplateDef } from './types.js';

/** Minimal: the smallest valid SCS project (meta, one domain, one concern, project); no standards. */
export const MINIMAL: TemplateDef = {
  label: 'Minimal',
  summary: 'It is the smallest valid SCS project: one meta bundle, one domain with one concern, and the project bundle. Add standards and concerns as you need them.',
  domain: { slug: 'general', title: 'General', description: 'The project\'s single domain; add concern bundles to it as the project grows.' },
  roles: [
    { slug: 'contributor', name: 'Contributor', description: 'A person working on the project', trust_level: 'standard', responsibilities: ['Keep the context up to date'] },
    { slug: 'assistant', name: 'AI Assistant', description: 'An AI agent that receives the project context', trust_level: 'restricted', responsibilities: ['Work within the documented context'] },
  ],
  standards: [],
  concerns: [
    {
      slug: 'business-context', title: 'Business Context', description: 'What problem the project solves and for whom.',
      scds: [
        { slug: 'problem-definition', title: 'Problem Definition', description: 'The problem, who has it and what success looks like.',
          content: () => ({
            summary: 'Replace this with the problem your project solves.',
            problem: 'Describe the problem in two or three sentences.',
            stakeholders: ['Who has the problem', 'Who pays for the solution'],
            success_criteria: ['How you will know the problem is solved'],
          }) },
      ],
    },
  ],
};
