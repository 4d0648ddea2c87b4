import type { StandardDef } from './types.js';

/** SOC 2 Type II (AICPA Trust Services Criteria), used by several templates. */
export const SOC2: StandardDef = {
  slug: 'soc2-type2', title: 'SOC 2 Type II Trust Services Criteria',
  description: 'Controls over security, availability and confidentiality of the service, operated effectively over a review period.',
  standard_name: 'SOC 2 Type II', standard_version: 'Trust Services Criteria 2017 (revised points of focus 2022)',
  authority: 'American Institute of Certified Public Accountants (AICPA)',
  scope: 'The production service and the systems that support it',
  source_documents: ['https://www.aicpa-cima.com/resources/landing/system-and-organization-controls-soc-suite-of-services'],
  sections: [
    { id: 'CC6.1', title: 'Logical access', description: 'Logical access to information assets is restricted to authorized users and processes', category: 'security' },
    { id: 'CC7.2', title: 'System monitoring', description: 'Anomalies that indicate malicious acts or errors are detected and evaluated', category: 'security' },
    { id: 'CC8.1', title: 'Change management', description: 'Changes to infrastructure and software are authorized, tested and approved', category: 'security' },
    { id: 'A1.2', title: 'Availability', description: 'Recovery infrastructure and backups meet availability commitments', category: 'availability' },
    { id: 'C1.1', title: 'Confidentiality', description: 'Confidential information is identified and protected', category: 'confidentiality' },
  ],
};
