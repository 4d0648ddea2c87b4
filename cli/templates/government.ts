import type { TemplateDef } from './types.js';

/** Government: federal information systems under NIST SP 800-53 and FedRAMP. */
export const GOVERNMENT: TemplateDef = {
  label: 'Government',
  summary: 'It governs AI agents in a U.S. federal information system: NIST SP 800-53 Rev. 5 security and privacy controls and the FedRAMP Moderate baseline for cloud services.',
  domain: { slug: 'public-sector', title: 'Public Sector', description: 'Citizen services on a federal information system: authorization to operate, continuous monitoring, records.' },
  roles: [
    { slug: 'case-worker', name: 'Case Worker', description: 'Agency staff processing citizen cases', trust_level: 'standard', responsibilities: ['Decide cases', 'Review AI-drafted correspondence'] },
    { slug: 'isso', name: 'Information System Security Officer', description: 'Maintains the system\'s security posture (ISSO)', trust_level: 'high', responsibilities: ['Maintain the SSP and POA&M', 'Run continuous monitoring'] },
    { slug: 'authorizing-official', name: 'Authorizing Official', description: 'Senior official who grants the authority to operate', trust_level: 'high', responsibilities: ['Accept residual risk', 'Grant or revoke the ATO'] },
    { slug: 'citizen-services-agent', name: 'Citizen Services Agent', description: 'AI agent answering public questions about services and case status', trust_level: 'restricted', responsibilities: ['Answer public questions from published guidance', 'Never make eligibility determinations'] },
  ],
  standards: [
    {
      slug: 'nist-800-53', title: 'NIST SP 800-53 Rev. 5', description: 'Security and privacy controls for information systems and organizations.',
      standard_name: 'NIST Special Publication 800-53', standard_version: 'Revision 5 (update 1)', authority: 'National Institute of Standards and Technology',
      scope: 'The information system and the organization operating it', source_documents: ['https://csrc.nist.gov/pubs/sp/800/53/r5/upd1/final'],
      sections: [
        { id: 'AC', title: 'Access Control', description: 'AC-2 account management, AC-3 access enforcement, AC-6 least privilege', category: 'family' },
        { id: 'AU', title: 'Audit and Accountability', description: 'AU-2 event logging, AU-6 audit review, AU-9 protection of audit information', category: 'family' },
        { id: 'IA', title: 'Identification and Authentication', description: 'IA-2 multi-factor authentication for organizational users, IA-5 authenticator management', category: 'family' },
        { id: 'SC', title: 'System and Communications Protection', description: 'SC-7 boundary protection, SC-8 transmission confidentiality, SC-13 FIPS-validated cryptography', category: 'family' },
        { id: 'SI', title: 'System and Information Integrity', description: 'SI-4 system monitoring, SI-10 information input validation', category: 'family' },
      ],
    },
    {
      slug: 'fedramp-moderate', title: 'FedRAMP Moderate Baseline', description: 'Authorization and continuous monitoring of cloud services used by federal agencies.',
      standard_name: 'FedRAMP Moderate Baseline', standard_version: 'Rev. 5', authority: 'FedRAMP Program Management Office (GSA)',
      scope: 'Cloud service offerings handling moderate-impact federal data', source_documents: ['https://www.fedramp.gov/'],
      sections: [
        { id: 'ATO', title: 'Authorization to operate', description: 'System Security Plan, independent 3PAO assessment, agency or JAB authorization' },
        { id: 'ConMon', title: 'Continuous monitoring', description: 'Monthly vulnerability scans and POA&M updates; annual assessment', obligations: ['High findings remediated within 30 days', 'Moderate within 90 days'] },
        { id: 'SCR', title: 'Significant change requests', description: 'Significant changes are approved before implementation' },
        { id: 'IR', title: 'Incident reporting', description: 'Incidents are reported to the agency and CISA within one hour of identification' },
      ],
    },
  ],
  concerns: [
    {
      slug: 'security', title: 'Security', description: 'Identity, least privilege and boundary protection.',
      scds: [
        { slug: 'access-control', title: 'Access Control', description: 'Account management and MFA for people and agents.', satisfies: ['nist-800-53', 'fedramp-moderate'],
          content: ({ std }) => ({
            summary: 'PIV/CAC or phishing-resistant MFA for people; scoped, expiring keys for agents.',
            security: { security_controls: [
              { id: 'sec:ac-2', name: 'AC-2 Account management', description: 'Accounts, including agent identities, are approved, reviewed and disabled when unused for 90 days', requirement_level: 'required', maps_to: [std('nist-800-53')] },
              { id: 'sec:ia-2', name: 'IA-2 Multi-factor authentication', description: 'Phishing-resistant MFA for all privileged and non-privileged users', requirement_level: 'required', maps_to: [std('nist-800-53'), std('fedramp-moderate')] },
              { id: 'sec:ac-6', name: 'AC-6 Least privilege', description: 'Agents are limited to their registered intents and role', requirement_level: 'required', maps_to: [std('nist-800-53')] },
            ] },
          }) },
        { slug: 'boundary-protection', title: 'Boundary Protection', description: 'The authorization boundary and what may cross it.', satisfies: ['nist-800-53', 'fedramp-moderate'],
          content: ({ std }) => ({
            summary: 'Federal data stays inside the authorization boundary; external AI services must be FedRAMP authorized.',
            requirements: [
              { id: 'req:fips-crypto', type: 'security', description: 'FIPS 140-validated cryptography for data in transit and at rest (SC-8, SC-13)', related_standards: [std('nist-800-53')] },
              { id: 'req:authorized-ai', type: 'security', description: 'Only AI services inside the boundary or with their own FedRAMP authorization receive federal data', related_standards: [std('fedramp-moderate')] },
            ],
          }) },
      ],
    },
    {
      slug: 'compliance-governance', title: 'Compliance & Governance', description: 'Continuous monitoring, audit logging and records.',
      scds: [
        { slug: 'continuous-monitoring', title: 'Continuous Monitoring', description: 'ConMon cadence, POA&M and significant changes.', satisfies: ['fedramp-moderate'], roles: ['isso', 'authorizing-official'],
          content: () => ({
            summary: 'Monthly scans, POA&M updates and annual assessment keep the ATO current.',
            cadence: { vulnerability_scans: 'monthly', poam_update: 'monthly', assessment: 'annual by a 3PAO' },
            significant_change: 'A new AI model or context bundle affecting federal data is reviewed as a potential significant change',
          }) },
        { slug: 'audit-logging', title: 'Audit Logging', description: 'AU family events, protection and review.', satisfies: ['nist-800-53'],
          content: () => ({
            summary: 'Tamper-evident audit records of logons, privileged actions and every AI context request.',
            events: ['Logon and logoff', 'Privileged actions', 'Agent context requests, accepted and rejected'],
            retention: 'Per NARA General Records Schedule 3.2 (at least 90 days online, longer in archive)',
          }) },
      ],
    },
    {
      slug: 'ethics-ai-accountability', title: 'Ethics & AI Accountability', description: 'Responsible federal use of AI.',
      scds: [
        { slug: 'ai-use-case-governance', title: 'AI Use Case Governance', description: 'Inventory and safeguards for rights- and safety-impacting AI.', roles: ['authorizing-official', 'case-worker', 'citizen-services-agent'],
          content: () => ({
            summary: 'Every AI use case is inventoried; rights-impacting uses get impact assessments and human review (OMB M-24-10).',
            prohibited: ['Eligibility or benefit determinations by an AI agent alone', 'Answers not grounded in published agency guidance'],
            transparency: 'The public is told when they interact with an AI agent and how to reach a person',
          }) },
      ],
    },
  ],
};
