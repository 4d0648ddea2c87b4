/** The project templates of `svc new --type <t>`. */
import { FINTECH } from './fintech.js';
import { GOVERNMENT } from './government.js';
import { HEALTHCARE } from './healthcare.js';
import { MINIMAL } from './minimal.js';
import { SAAS } from './saas.js';
import { STANDARD } from './standard.js';
import type { TemplateDef } from './types.js';

export const PROJECT_TYPES = ['healthcare', 'fintech', 'saas', 'government', 'minimal', 'standard'] as const;
export type ProjectType = (typeof PROJECT_TYPES)[number];

export const TEMPLATES: Record<ProjectType, TemplateDef> = {
  healthcare: HEALTHCARE,
  fintech: FINTECH,
  saas: SAAS,
  government: GOVERNMENT,
  minimal: MINIMAL,
  standard: STANDARD,
};
