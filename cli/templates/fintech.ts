import type { TemplateDef } from './types.js';

/** Fintech: cardholder data under PCI DSS, financial reporting controls under SOX. */
export const FINTECH: TemplateDef = {
  label: 'Financial Services',
  summary: 'It governs AI agents that touch payment card data and systems relevant to financial reporting: PCI DSS v4.0.1 for cardholder data and Sarbanes-Oxley (SOX) IT general controls.',
  domain: { slug: 'financial-services', title: 'Financial Services', description: 'Payments and financial operations: cardholder data, financial reporting integrity, model risk.' },
  roles: [
    { slug: 'financial-analyst', name: 'Financial Analyst', description: 'Prepares and reviews financial reports', trust_level: 'standard', responsibilities: ['Prepare period-end reports', 'Review reconciliations'] },
    { slug: 'payments-operator', name: 'Payments Operator', description: 'Operates payment processing and handles exceptions', trust_level: 'high', responsibilities: ['Resolve failed payments', 'Handle chargebacks'] },
    { slug: 'compliance-officer', name: 'Compliance Officer', description: 'Owns PCI DSS and SOX compliance programs', trust_level: 'high', responsibilities: ['Maintain control evidence', 'Coordinate QSA and external audits'] },
    { slug: 'internal-auditor', name: 'Internal Auditor', description: 'Tests controls independently', trust_level: 'standard', responsibilities: ['Test ITGCs', 'Report deficiencies'] },
    { slug: 'customer-support-agent', name: 'Customer Support Agent', description: 'AI agent answering account and payment questions', trust_level: 'restricted', responsibilities: ['Answer balance and payment-status questions', 'Never handle full card numbers'] },
  ],
  standards: [
    {
      slug: 'pci-dss-v4', title: 'PCI DSS v4.0.1', description: 'Security requirements for every system that stores, processes or transmits cardholder data.',
      standard_name: 'Payment Card Industry Data Security Standard (PCI DSS)', standard_version: '4.0.1', authority: 'PCI Security Standards Council',
      scope: 'The cardholder data environment (CDE) and every system connected to it', source_documents: ['https://www.pcisecuritystandards.org/document_library/'],
      sections: [
        { id: 'Req-3', title: 'Protect stored account data', description: 'Do not store sensitive authentication data after authorization; render PAN unreadable wherever stored', obligations: ['PAN masked when displayed (at most BIN and last four)', 'No PAN in logs, prompts or model context'] },
        { id: 'Req-4', title: 'Protect cardholder data with strong cryptography during transmission', description: 'Strong cryptography over open, public networks' },
        { id: 'Req-7', title: 'Restrict access by business need to know', description: 'Access to system components and cardholder data is limited to those whose job requires it' },
        { id: 'Req-8', title: 'Identify users and authenticate access', description: 'Unique IDs and multi-factor authentication into the CDE' },
        { id: 'Req-10', title: 'Log and monitor all access', description: 'Audit logs of access to system components and cardholder data, reviewed daily' },
      ],
    },
    {
      slug: 'sox-itgc', title: 'Sarbanes-Oxley IT General Controls', description: 'Internal control over financial reporting (ICFR) as it depends on IT systems.',
      standard_name: 'Sarbanes-Oxley Act of 2002 (Sections 302 and 404)', standard_version: '2002, PCAOB AS 2201', authority: 'U.S. Securities and Exchange Commission / PCAOB',
      scope: 'Systems and processes that produce or affect financial statements', source_documents: ['https://www.sec.gov/spotlight/sarbanes-oxley.htm'],
      sections: [
        { id: 'ITGC-access', title: 'Access to programs and data', description: 'Access is approved, reviewed quarterly and removed promptly at termination' },
        { id: 'ITGC-change', title: 'Program changes', description: 'Changes are requested, tested, approved and segregated from development' },
        { id: 'ITGC-operations', title: 'Computer operations', description: 'Jobs, backups and incidents are monitored and resolved' },
        { id: '404', title: 'Management assessment of internal controls', description: 'Management assesses and the auditor attests to ICFR effectiveness annually' },
      ],
    },
  ],
  concerns: [
    {
      slug: 'security', title: 'Security', description: 'Protection of cardholder data and access to the CDE.',
      scds: [
        { slug: 'cardholder-data-protection', title: 'Cardholder Data Protection', description: 'How PAN and authentication data are kept out of reach, including from AI agents.', satisfies: ['pci-dss-v4'],
          content: ({ std }) => ({
            summary: 'AI agents never see full card numbers; the vault tokenizes PAN at the edge.',
            requirements: [
              { id: 'req:tokenize-pan', type: 'security', description: 'PAN is tokenized on capture; downstream systems and agents only see tokens', related_standards: [std('pci-dss-v4')] },
              { id: 'req:mask-display', type: 'security', description: 'Any PAN display shows at most the first six and last four digits', related_standards: [std('pci-dss-v4')] },
              { id: 'req:no-sad-storage', type: 'security', description: 'CVV and PIN data are never stored after authorization', related_standards: [std('pci-dss-v4')] },
            ],
          }) },
        { slug: 'access-control', title: 'Access Control', description: 'Need-to-know access and strong authentication for people and agents.', satisfies: ['pci-dss-v4', 'sox-itgc'],
          content: ({ std }) => ({
            summary: 'Unique identities, MFA, quarterly access reviews.',
            security: { security_controls: [
              { id: 'sec:mfa-cde', name: 'MFA into the CDE', description: 'All administrative and CDE access uses multi-factor authentication', requirement_level: 'required', maps_to: [std('pci-dss-v4')] },
              { id: 'sec:access-review', name: 'Quarterly access review', description: 'Owners recertify every human and agent credential each quarter', requirement_level: 'required', maps_to: [std('sox-itgc')] },
              { id: 'sec:agent-scopes', name: 'Agent key scopes', description: 'Agent API keys are scoped to the intents the agent needs and expire', requirement_level: 'required', maps_to: [std('pci-dss-v4'), std('sox-itgc')] },
            ] },
          }) },
      ],
    },
    {
      slug: 'compliance-governance', title: 'Compliance & Governance', description: 'Financial reporting controls, change management and audit evidence.',
      scds: [
        { slug: 'change-management', title: 'Change Management', description: 'How changes to financially relevant systems, including agent context, are approved.', satisfies: ['sox-itgc'], roles: ['compliance-officer', 'internal-auditor', 'financial-analyst'],
          content: () => ({
            summary: 'No change reaches production without a ticket, a test and an independent approval.',
            steps: ['Request with business justification', 'Test in a non-production environment', 'Independent approval (no self-approval)', 'Deploy via tagged, immutable bundle versions'],
            evidence: 'Ticket, test result, approver and deployed version are retained for seven years',
          }) },
        { slug: 'audit-logging', title: 'Audit Logging', description: 'What is logged, how it is protected and reviewed.', satisfies: ['pci-dss-v4', 'sox-itgc'],
          content: () => ({
            summary: 'Tamper-evident logs of every access to cardholder data and every agent context request.',
            logged_events: ['Access to cardholder data', 'Administrative actions', 'Agent context requests, accepted and rejected'],
            retention: 'One year, three months immediately available (PCI DSS 10.5.1)',
            review: 'Daily automated review with alerts to the security team',
          }) },
      ],
    },
    {
      slug: 'ethics-ai-accountability', title: 'Ethics & AI Accountability', description: 'Model risk management and customer fairness.',
      scds: [
        { slug: 'model-risk-management', title: 'Model Risk Management', description: 'Validation, monitoring and inventory of models used in financial decisions.', roles: ['compliance-officer', 'financial-analyst'],
          content: () => ({
            summary: 'Every model that informs a financial decision is inventoried, independently validated and monitored (in the spirit of SR 11-7).',
            inventory_fields: ['Owner', 'Purpose', 'Data used', 'Validation date', 'Known limitations'],
            prohibited: ['Automated credit or fraud decisions without human review of adverse outcomes', 'Use of protected characteristics as model inputs'],
          }) },
      ],
    },
  ],
};
