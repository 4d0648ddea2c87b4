/** The rules engine service (port 8001). */
import type { operations } from '../../gen/openapi/rules.js';
import { docsRoutes } from '../shared/http/docs.js';
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { readyHandler } from '../shared/readiness.js';
import { metricsResponse } from '../shared/metrics.js';
import { routes as rules } from './rules/routes.js';

export const rulesService = httpService<operations>()({
  name: 'rules',
  specFile: 'openapi-rules.yaml',
  port: (c) => c.ports.rules,
  modules: [{ handlers: { getRulesHealth: healthHandler('rules'), getRulesReady: readyHandler(), getRulesMetrics: metricsResponse } }, rules, docsRoutes('Rules', 'openapi-rules.yaml')],
});
