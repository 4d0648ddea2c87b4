/** The telemetry service (port 8004). */
import type { operations } from '../../gen/openapi/telemetry.js';
import { docsRoutes } from '../shared/http/docs.js';
import { healthHandler, httpService } from '../shared/http/service-app.js';
import { readyHandler } from '../shared/readiness.js';
import { metricsResponse } from '../shared/metrics.js';
import { routes as beacon } from './beacon/routes.js';

export const telemetryService = httpService<operations>()({
  name: 'telemetry',
  specFile: 'openapi-telemetry.yaml',
  port: (c) => c.ports.telemetry,
  modules: [{ handlers: { getTelemetryHealth: healthHandler('telemetry'), getTelemetryReady: readyHandler(), getTelemetryMetrics: metricsResponse } }, beacon, docsRoutes('Telemetry', 'openapi-telemetry.yaml')],
});
