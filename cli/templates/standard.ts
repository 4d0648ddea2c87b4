import type { TemplateDef } from './types.js';

/** Standard: a software project with the usual security baselines (OWASP ASVS, ISO/IEC 27001). */
export const STANDARD: TemplateDef = {
  label: 'Software Development',
  summary: 'It governs AI coding and review agents on a software project, against OWASP ASVS and ISO/IEC 27001:2022 Annex A secure-development controls.',
  domain: { slug: 'software-development', title: 'Software Development', description: 'Building and running software: architecture, security, testing, delivery.' },
  roles: [
    { slug: 'developer', name: 'Developer', description: 'Writes and reviews code', trust_level: 'standard', responsibilities: ['Implement changes', 'Review peers\' changes'] },
    { slug: 'release-manager', name: 'Release Manager', description: 'Approves and coordinates releases', trust_level: 'high', responsibilities: ['Approve releases', 'Own rollback decisions'] },
    { slug: 'security-champion', name: 'Security Champion', description: 'Developer responsible for security practice in the team', trust_level: 'high', responsibilities: ['Threat modeling', 'Security review of risky changes'] },
    { slug: 'coding-agent', name: 'Coding Agent', description: 'AI agent that proposes code changes', trust_level: 'restricted', responsibilities: ['Propose changes as pull requests', 'Never push to protected branches'] },
  ],
  standards: [
    {
      slug: 'owasp-asvs', title: 'OWASP Application Security Verification Standard', description: 'Verifiable security requirements for web applications and services.',
      standard_name: 'OWASP ASVS', standard_version: '4.0.3', authority: 'OWASP Foundation', scope: 'The application and its APIs, verified at Level 2',
      source_documents: ['https://owasp.org/www-project-application-security-verification-standard/'],
      sections: [
        { id: 'V2', title: 'Authentication', description: 'Credential storage, MFA and authentication flows' },
        { id: 'V4', title: 'Access Control', description: 'Deny by default, enforced server-side' },
        { id: 'V5', title: 'Validation, Sanitization and Encoding', description: 'Input validation and output encoding against injection' },
        { id: 'V7', title: 'Error Handling and Logging', description: 'No sensitive data in logs; security events logged' },
        { id: 'V14', title: 'Configuration', description: 'Build, dependency and deployment configuration hardening' },
      ],
    },
    {
      slug: 'iso-27001', title: 'ISO/IEC 27001:2022 Annex A (secure development)', description: 'The Annex A controls of an ISMS that govern how software is developed and changed.',
      standard_name: 'ISO/IEC 27001', standard_version: '2022', authority: 'ISO/IEC JTC 1/SC 27', scope: 'Software development and change of production systems',
      sections: [
        { id: 'A.8.25', title: 'Secure development life cycle', description: 'Rules for secure development are established and applied' },
        { id: 'A.8.28', title: 'Secure coding', description: 'Secure coding principles are applied' },
        { id: 'A.8.29', title: 'Security testing in development and acceptance', description: 'Security testing processes are defined and implemented' },
        { id: 'A.8.32', title: 'Change management', description: 'Changes are subject to change management procedures' },
      ],
    },
  ],
  concerns: [
    {
      slug: 'architecture', title: 'Architecture', description: 'System context, components and technology choices.',
      scds: [
        { slug: 'system-context', title: 'System Context', description: 'What the system is, its boundaries and its neighbours.',
          content: () => ({
            summary: 'Describe the system, its users and the external systems it talks to.',
            architecture: { architecture_style: 'service-oriented', components: [
              { id: 'component:web', name: 'Web application', description: 'User-facing application', responsibilities: ['User interface', 'Session handling'] },
              { id: 'component:api', name: 'API', description: 'Business logic and data access', responsibilities: ['Authorization', 'Persistence'] },
            ] },
            decisions: [{ id: 'decision:adr-process', title: 'Record decisions as ADRs', rationale: 'Agents and people need the reasons behind the design', status: 'accepted' }],
          }) },
      ],
    },
    {
      slug: 'security', title: 'Security', description: 'Secure coding rules for people and agents.',
      scds: [
        { slug: 'secure-coding', title: 'Secure Coding Rules', description: 'Rules every change, human or AI-written, must follow.', satisfies: ['owasp-asvs', 'iso-27001'], roles: ['developer', 'coding-agent', 'security-champion'],
          content: ({ std }) => ({
            summary: 'Parameterized queries, server-side authorization, no secrets in code.',
            requirements: [
              { id: 'req:parameterized-queries', type: 'security', description: 'All database access uses parameterized queries', related_standards: [std('owasp-asvs')] },
              { id: 'req:server-side-authz', type: 'security', description: 'Authorization is enforced on the server for every request', related_standards: [std('owasp-asvs')] },
              { id: 'req:no-secrets', type: 'security', description: 'No secrets in source, logs or prompts; secrets come from the secret manager', related_standards: [std('owasp-asvs'), std('iso-27001')] },
            ],
          }) },
      ],
    },
    {
      slug: 'testing-validation', title: 'Testing & Validation', description: 'What must be tested before a change merges.',
      scds: [
        { slug: 'test-strategy', title: 'Test Strategy', description: 'Unit, integration and security tests required per change.', satisfies: ['iso-27001'],
          content: () => ({
            summary: 'Every change carries tests; security-relevant changes also get a security review.',
            required: ['Unit tests for new logic', 'Integration tests for new endpoints', 'Dependency and secret scanning in CI'],
            coverage_target: '80% of changed lines',
          }) },
      ],
    },
    {
      slug: 'deployment-operations', title: 'Deployment & Operations', description: 'How changes reach production.',
      scds: [
        { slug: 'release-process', title: 'Release Process', description: 'From merge to production, with rollback.', satisfies: ['iso-27001'], roles: ['release-manager', 'developer'],
          content: () => ({
            summary: 'Reviewed, tested changes ship through CI/CD with a one-step rollback.',
            steps: ['Pull request with at least one human approval', 'Green CI', 'Staged rollout', 'Rollback by redeploying the previous version'],
          }) },
      ],
    },
  ],
};
