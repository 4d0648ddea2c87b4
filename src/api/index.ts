/** The control-plane API service (port 8000). */
import type { operations } from '../../gen/openapi/control-plane.js';
import type { HttpServiceDef } from '../shared/service.js';
import { REST_CORS } from '../shared/http/cors.js';
import { docsRoutes } from '../shared/http/docs.js';
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { readyHandler } from '../shared/readiness.js';
import { metricsResponse } from '../shared/metrics.js';
import { routes as agents } from './agents/routes.js';
import { routes as keys } from './keys/routes.js';
import { routes as ownership } from './ownership/routes.js';
import { routes as mcpServers } from './mcp-servers/routes.js';
import { routes as bundles } from './bundles/routes.js';
import { routes as tags } from './tags/routes.js';
import { routes as deployments } from './deployments/routes.js';
import { routes as audit } from './audit/routes.js';
import { routes as tlog } from './audit/tlog-routes.js';
import { routes as context } from './context/routes.js';
import { routes as analytics } from './analytics/routes.js';

export const apiService: HttpServiceDef = {
  ...httpService<operations>()({
    name: 'api',
    specFile: 'openapi-control-plane.yaml',
    port: (c) => c.ports.api,
    modules: [
      { handlers: { getApiHealth: healthHandler('api'), getApiReady: readyHandler(), getApiMetrics: metricsResponse, getContextApiHealth: healthHandler('context') } },
      agents,
      keys,
      ownership,
      mcpServers,
      bundles,
      tags,
      deployments,
      audit,
      tlog,
      context,
      analytics,
      docsRoutes('Api', 'openapi-control-plane.yaml'),
    ],
  }),
  // Browser pages of CORS_ORIGINS may call the control plane (README: CORS).
  cors: REST_CORS,
};
