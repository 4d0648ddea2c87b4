/** The collector store API (port 7002): no authentication, so bound to loopback by default. */
import type { operations } from '../../gen/openapi/collector.js';
import { docsRoutes } from '../shared/http/docs.js';
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { readyHandler } from '../shared/readiness.js';
import { metricsResponse } from '../shared/metrics.js';
import { routes as activity } from './activity/routes.js';

export const collectorService = httpService<operations>()({
  name: 'collector',
  specFile: 'openapi-collector.yaml',
  port: (c) => c.ports.collector,
  host: (c) => c.collectorHost,
  modules: [{ handlers: { getCollectorHealth: healthHandler('collector'), getCollectorReady: readyHandler(), getCollectorMetrics: metricsResponse } }, activity, docsRoutes('Collector', 'openapi-collector.yaml')],
});
