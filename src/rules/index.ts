/** The rules engine service (port 8001). */
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { routes as rules } from './rules/routes.js';

export const rulesService = httpService({
  name: 'rules',
  specFile: 'openapi-rules.yaml',
  port: (c) => c.ports.rules,
  modules: [{ handlers: { getRulesHealth: healthHandler('rules') } }, rules],
});
