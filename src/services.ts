/** Every service of the product, by name. */
import type { ServiceDef, ServiceName } from './shared/service.js';
import { apiService } from './api/index.js';
import { rulesService } from './rules/index.js';
import { contextGrpcService, contextWebhookService } from './context/index.js';
import { telemetryService } from './telemetry/index.js';
import { collectorService } from './collector/index.js';

export const SERVICES: Record<ServiceName, ServiceDef> = {
  api: apiService,
  rules: rulesService,
  'context-grpc': contextGrpcService,
  'context-webhook': contextWebhookService,
  telemetry: telemetryService,
  collector: collectorService,
};
