import { SOC2 } from './shared-standards.js';
import type { TemplateDef } from './types.js';

/** SaaS: personal data of EU residents under GDPR, SOC 2 for the service. */
export const SAAS: TemplateDef = {
  label: 'SaaS',
  summary: 'It governs AI agents in a multi-tenant software service that processes personal data: the EU General Data Protection Regulation (GDPR) and SOC 2 Type II.',
  domain: { slug: 'saas-platform', title: 'SaaS Platform', description: 'A multi-tenant software service: tenant isolation, personal data, operations.' },
  roles: [
    { slug: 'developer', name: 'Developer', description: 'Builds and maintains the service', trust_level: 'standard', responsibilities: ['Ship changes through review', 'Never copy production personal data to development'] },
    { slug: 'sre', name: 'Site Reliability Engineer', description: 'Operates production', trust_level: 'high', responsibilities: ['Run incident response', 'Hold break-glass production access'] },
    { slug: 'data-protection-officer', name: 'Data Protection Officer', description: 'GDPR Article 37 DPO', trust_level: 'high', responsibilities: ['Advise on DPIAs', 'Handle data subject requests and breaches'] },
    { slug: 'support-agent', name: 'Support Agent', description: 'AI agent answering customer support tickets', trust_level: 'restricted', responsibilities: ['Answer product questions', 'Only read the requesting tenant\'s data'] },
  ],
  standards: [
    {
      slug: 'gdpr', title: 'General Data Protection Regulation', description: 'Processing of personal data of individuals in the EU/EEA.',
      standard_name: 'Regulation (EU) 2016/679 (GDPR)', standard_version: '2016/679, applicable since 2018-05-25', authority: 'European Union; enforced by national supervisory authorities',
      scope: 'All processing of personal data of data subjects in the EU/EEA, as controller or processor', source_documents: ['https://eur-lex.europa.eu/eli/reg/2016/679/oj'],
      sections: [
        { id: 'Art-5', title: 'Principles', description: 'Lawfulness, purpose limitation, data minimisation, accuracy, storage limitation, integrity and confidentiality, accountability' },
        { id: 'Art-15-22', title: 'Rights of the data subject', description: 'Access, rectification, erasure, restriction, portability, objection; answered within one month' },
        { id: 'Art-25', title: 'Data protection by design and by default', description: 'Only data necessary for each purpose is processed by default' },
        { id: 'Art-28', title: 'Processors', description: 'Processing by a processor is governed by a contract; sub-processors need prior authorization' },
        { id: 'Art-32', title: 'Security of processing', description: 'Appropriate technical and organisational measures, including encryption and pseudonymisation' },
        { id: 'Art-33', title: 'Breach notification', description: 'Notify the supervisory authority within 72 hours of becoming aware of a personal data breach' },
      ],
    },
    SOC2,
  ],
  concerns: [
    {
      slug: 'architecture', title: 'Architecture', description: 'Tenant isolation and where personal data lives.',
      scds: [
        { slug: 'tenant-isolation', title: 'Tenant Isolation', description: 'How one tenant\'s data is kept from another, including in AI context.', satisfies: ['gdpr', 'soc2-type2'],
          content: () => ({
            summary: 'Every query and every agent context is scoped to one tenant.',
            architecture: { architecture_style: 'multi-tenant, shared infrastructure, row-level tenant scoping', components: [
              { id: 'component:api', name: 'API', description: 'Authenticates the tenant and scopes every request', responsibilities: ['Tenant resolution', 'Authorization'] },
              { id: 'component:datastore', name: 'Datastore', description: 'PostgreSQL with row-level security per tenant', responsibilities: ['Tenant-scoped storage'] },
            ] },
            data_residency: 'EU tenants\' personal data is stored and processed in EU regions only',
          }) },
      ],
    },
    {
      slug: 'security', title: 'Security', description: 'Authentication, encryption and secrets.',
      scds: [
        { slug: 'data-protection', title: 'Data Protection', description: 'Encryption, pseudonymisation and minimisation of personal data.', satisfies: ['gdpr', 'soc2-type2'],
          content: ({ std }) => ({
            summary: 'Personal data is encrypted, minimised and kept out of prompts where possible.',
            security: { security_controls: [
              { id: 'sec:encryption', name: 'Encryption', description: 'AES-256 at rest, TLS 1.2+ in transit', requirement_level: 'required', maps_to: [std('gdpr'), std('soc2-type2')] },
              { id: 'sec:pseudonymise-prompts', name: 'Pseudonymised prompts', description: 'Names and e-mail addresses are replaced by tokens before text reaches an AI model', requirement_level: 'required', maps_to: [std('gdpr')] },
            ] },
          }) },
      ],
    },
    {
      slug: 'compliance-governance', title: 'Compliance & Governance', description: 'Data subject rights, processors and records of processing.',
      scds: [
        { slug: 'data-subject-rights', title: 'Data Subject Rights', description: 'How access, erasure and portability requests are fulfilled.', satisfies: ['gdpr'], roles: ['data-protection-officer', 'support-agent'],
          content: () => ({
            summary: 'Requests are verified, logged and answered within one month.',
            process: ['Verify the requester\'s identity', 'Locate data across the service and its sub-processors', 'Fulfil and confirm in writing', 'Log the request and outcome'],
            agent_rule: 'The support agent recognises rights requests and routes them to the DPO queue; it never deletes or exports data itself',
          }) },
        { slug: 'subprocessors', title: 'Sub-processor Management', description: 'Which third parties, including AI model providers, process personal data.', satisfies: ['gdpr'],
          content: () => ({
            summary: 'Every sub-processor has a DPA, is listed publicly, and customers are notified 30 days before a new one.',
            ai_providers: 'AI model providers are sub-processors: zero data retention and no training on customer data are contractual requirements',
          }) },
      ],
    },
    {
      slug: 'deployment-operations', title: 'Deployment & Operations', description: 'Incident response and breach notification.',
      scds: [
        { slug: 'incident-response', title: 'Incident Response', description: 'From detection to the 72-hour GDPR notification.', satisfies: ['gdpr', 'soc2-type2'], roles: ['sre', 'data-protection-officer'],
          content: () => ({
            summary: 'Detect, contain, assess personal-data impact, notify within 72 hours when required.',
            severity_levels: ['SEV1: personal data exposed or service down', 'SEV2: degraded service', 'SEV3: minor'],
            notification: 'The DPO decides on Article 33 notification within 48 hours of detection, leaving margin to the 72-hour deadline',
          }) },
      ],
    },
  ],
};
