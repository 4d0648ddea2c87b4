import { SOC2 } from './shared-standards.js';
import type { TemplateDef } from './types.js';

/** Healthcare: PHI under HIPAA, AI assurance per CHAI, SOC 2 for the service organization. */
export const HEALTHCARE: TemplateDef = {
  label: 'Healthcare',
  summary: 'It governs AI agents that work with protected health information (PHI): HIPAA Privacy and Security Rules, the Coalition for Health AI (CHAI) assurance framework for clinical AI, and SOC 2 Type II controls.',
  domain: { slug: 'clinical-care', title: 'Clinical Care', description: 'Clinical software and AI assistance for care teams: PHI handling, clinical safety, accountability of AI outputs.' },
  roles: [
    { slug: 'clinician', name: 'Clinician', description: 'Licensed physician or advanced practitioner accountable for clinical decisions', trust_level: 'high', responsibilities: ['Make and sign off clinical decisions', 'Review AI-generated clinical suggestions before use'] },
    { slug: 'nurse', name: 'Nurse', description: 'Registered nurse delivering and coordinating patient care', trust_level: 'high', responsibilities: ['Administer care plans', 'Escalate deteriorating patients'] },
    { slug: 'care-coordinator', name: 'Care Coordinator', description: 'Non-clinical staff scheduling and coordinating care', trust_level: 'standard', responsibilities: ['Schedule appointments', 'Coordinate referrals with minimum necessary PHI'] },
    { slug: 'compliance-officer', name: 'Compliance Officer', description: 'HIPAA privacy and security officer', trust_level: 'high', responsibilities: ['Own HIPAA policies', 'Investigate incidents and breaches'] },
    { slug: 'patient-support-agent', name: 'Patient Support Agent', description: 'AI agent answering patient questions about schedules and medications', trust_level: 'restricted', responsibilities: ['Answer administrative questions', 'Hand off clinical questions to humans'] },
  ],
  standards: [
    {
      slug: 'hipaa-privacy-rule', title: 'HIPAA Privacy Rule', description: 'Permitted uses and disclosures of PHI, minimum necessary standard and individual rights.',
      standard_name: 'HIPAA Privacy Rule', standard_version: '45 CFR Part 160 and Part 164 Subparts A and E', authority: 'U.S. Department of Health and Human Services, Office for Civil Rights',
      scope: 'All PHI created, received, maintained or transmitted by the covered entity or business associate',
      source_documents: ['https://www.hhs.gov/hipaa/for-professionals/privacy/index.html'],
      sections: [
        { id: '164.502(b)', title: 'Minimum necessary', description: 'Use, disclose and request only the minimum PHI necessary for the purpose', obligations: ['Role-based access to PHI', 'AI agents receive only the PHI their task needs'] },
        { id: '164.508', title: 'Authorizations', description: 'Uses beyond treatment, payment and operations need patient authorization' },
        { id: '164.524', title: 'Right of access', description: 'Individuals can inspect and obtain a copy of their PHI' },
      ],
    },
    {
      slug: 'hipaa-security-rule', title: 'HIPAA Security Rule', description: 'Administrative, physical and technical safeguards for electronic PHI.',
      standard_name: 'HIPAA Security Rule', standard_version: '45 CFR Part 164 Subpart C', authority: 'U.S. Department of Health and Human Services, Office for Civil Rights',
      scope: 'Electronic PHI (ePHI)', source_documents: ['https://www.hhs.gov/hipaa/for-professionals/security/index.html'],
      sections: [
        { id: '164.308(a)(1)', title: 'Security management process', description: 'Risk analysis and risk management', category: 'administrative' },
        { id: '164.312(a)', title: 'Access control', description: 'Unique user identification, emergency access, automatic logoff, encryption', category: 'technical' },
        { id: '164.312(b)', title: 'Audit controls', description: 'Record and examine activity in systems that contain ePHI', category: 'technical' },
        { id: '164.312(e)', title: 'Transmission security', description: 'Guard against unauthorized access to ePHI in transit', category: 'technical' },
      ],
    },
    {
      slug: 'chai-assurance', title: 'CHAI Assurance Standards for Health AI', description: 'Coalition for Health AI principles for trustworthy AI in healthcare, applied across the AI lifecycle.',
      standard_name: 'CHAI Assurance Standards Guide', standard_version: '2024', authority: 'Coalition for Health AI (CHAI)',
      scope: 'AI models and agents that inform or automate healthcare workflows', source_documents: ['https://chai.org/'],
      sections: [
        { id: 'usefulness', title: 'Usefulness, usability and efficacy', description: 'The AI solves the intended clinical or operational problem and is measured against it' },
        { id: 'fairness', title: 'Fairness and equity', description: 'Performance is evaluated across patient subgroups and bias is mitigated' },
        { id: 'safety', title: 'Safety and reliability', description: 'Failure modes are known, monitored, and humans stay in the loop for clinical decisions' },
        { id: 'transparency', title: 'Transparency, intelligibility and accountability', description: 'Users know when AI is involved; outputs are traceable to the context and model that produced them' },
        { id: 'privacy', title: 'Security and privacy', description: 'PHI used by AI is protected as required by HIPAA' },
      ],
    },
    SOC2,
  ],
  concerns: [
    {
      slug: 'security', title: 'Security', description: 'Authentication, authorization and protection of PHI at rest and in transit.',
      scds: [
        { slug: 'access-control', title: 'Access Control', description: 'Who and which agents may reach PHI, and how they authenticate.', satisfies: ['hipaa-security-rule', 'soc2-type2'],
          content: ({ std }) => ({
            summary: 'Unique identities for people and agents, least privilege by role, automatic logoff.',
            security: { security_controls: [
              { id: 'sec:unique-identity', name: 'Unique identification', description: 'Every user and every AI agent has its own identity and credential; no shared accounts', requirement_level: 'required', maps_to: [std('hipaa-security-rule'), std('soc2-type2')] },
              { id: 'sec:least-privilege', name: 'Least privilege by role', description: 'PHI access is granted per role and task type; agents are restricted to their allowed intents', requirement_level: 'required', maps_to: [std('hipaa-security-rule')] },
              { id: 'sec:session-timeout', name: 'Automatic logoff', description: 'Interactive sessions end after 15 minutes of inactivity', requirement_level: 'addressable', maps_to: [std('hipaa-security-rule')] },
            ] },
          }) },
        { slug: 'phi-protection', title: 'PHI Protection', description: 'Encryption and handling of PHI in storage, transit and AI prompts.', satisfies: ['hipaa-security-rule', 'hipaa-privacy-rule'],
          content: ({ std }) => ({
            summary: 'PHI is encrypted everywhere and kept out of prompts unless the task needs it.',
            requirements: [
              { id: 'req:encrypt-at-rest', type: 'security', description: 'PHI at rest is encrypted with AES-256', related_standards: [std('hipaa-security-rule')] },
              { id: 'req:encrypt-in-transit', type: 'security', description: 'PHI in transit uses TLS 1.2 or later', related_standards: [std('hipaa-security-rule')] },
              { id: 'req:minimum-necessary-prompts', type: 'privacy', description: 'Prompts sent to AI models contain only the minimum necessary PHI; identifiers are removed when not needed', related_standards: [std('hipaa-privacy-rule')] },
            ],
          }) },
      ],
    },
    {
      slug: 'compliance-governance', title: 'Compliance & Governance', description: 'HIPAA policies, business associate agreements and audit trails.',
      scds: [
        { slug: 'phi-use-policy', title: 'PHI Use and Disclosure Policy', description: 'When PHI may be used or disclosed, and by whom.', satisfies: ['hipaa-privacy-rule'], roles: ['clinician', 'nurse', 'care-coordinator', 'compliance-officer'],
          content: () => ({
            summary: 'PHI is used for treatment, payment and operations only; anything else needs written authorization.',
            permitted_uses: ['Treatment', 'Payment', 'Healthcare operations'],
            business_associates: 'A signed BAA is required before any vendor, including AI model providers, receives PHI',
            patient_rights: ['Access within 30 days', 'Amendment', 'Accounting of disclosures'],
          }) },
        { slug: 'audit-requirements', title: 'Audit Requirements', description: 'What is logged about PHI access and AI context requests, and for how long.', satisfies: ['hipaa-security-rule', 'soc2-type2'],
          content: () => ({
            summary: 'Every PHI access and every AI context request is recorded in a tamper-evident log.',
            logged_events: ['PHI read and write by user or agent', 'Context requests (accepted and rejected)', 'Administrative changes to roles and keys'],
            retention: 'Six years, per 45 CFR 164.316(b)(2)',
            review: 'Compliance officer reviews access anomalies weekly',
          }) },
      ],
    },
    {
      slug: 'ethics-ai-accountability', title: 'Ethics & AI Accountability', description: 'Responsible use of AI in care, following the CHAI assurance principles.',
      scds: [
        { slug: 'ai-usage-policy', title: 'AI Usage Policy', description: 'What AI agents may and may not do in clinical workflows.', satisfies: ['chai-assurance'],
          content: () => ({
            summary: 'AI assists; licensed humans decide.',
            allowed: ['Summarize charts for clinicians', 'Draft patient messages for human review', 'Answer administrative patient questions'],
            prohibited: ['Diagnose or prescribe', 'Send clinical advice to patients without clinician review', 'Use PHI to train models without authorization'],
            disclosure: 'Patients are told when they are talking to an AI agent',
          }) },
        { slug: 'model-oversight', title: 'Model Oversight', description: 'How AI models are evaluated for bias, monitored and rolled back.', satisfies: ['chai-assurance'], roles: ['clinician', 'compliance-officer'],
          content: () => ({
            summary: 'Models are validated before use and monitored in production.',
            evaluation: ['Accuracy against a held-out clinical test set', 'Performance parity across age, sex, race and language subgroups'],
            monitoring: ['Monthly drift review', 'Incident review of every harmful or near-miss output'],
            rollback: 'A model or context version can be withdrawn by moving its tag back',
          }) },
      ],
    },
    {
      slug: 'safety-risk', title: 'Safety & Risk', description: 'Clinical safety rules for AI assistance and escalation to humans.',
      scds: [
        { slug: 'clinical-escalation', title: 'Clinical Escalation Rules', description: 'When an AI agent must stop and hand over to a human.', satisfies: ['chai-assurance'], roles: ['patient-support-agent', 'nurse'],
          content: () => ({
            summary: 'Red-flag symptoms and uncertainty always go to a human.',
            escalate_when: ['Patient reports chest pain, breathing difficulty, suicidal thoughts or other red-flag symptoms', 'The question needs clinical judgment', 'The agent is not confident in its answer'],
            handoff: 'Warm handoff to the on-call nurse line; the agent states that a human will follow up',
          }) },
      ],
    },
  ],
};
