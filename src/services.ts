/**
 * Every service of the product, by name, each loaded when it is started: a process runs one
 * service in production (deploy/systemd), and loading every service's modules (the
 * collector's SQLite addon and workers, the gRPC port's descriptors and reflection, ...)
 * into an api process cost it 2-6 MB of resident memory before verify (217-219 MB against
 * 221-223 MB, `make bench ONLY=audit`, 2026-11-25), which counts against verify's 256 MB bound.
 */
import type { ServiceDef, ServiceName } from './shared/service.js';
import { withConsole } from './console/mount.js';

const LOADERS: Record<ServiceName, () => Promise<ServiceDef>> = {
  api: async () => withConsole((await import('./api/index.js')).apiService),
  rules: async () => (await import('./rules/index.js')).rulesService,
  'context-grpc': async () => (await import('./context/index.js')).contextGrpcService,
  'context-webhook': async () => (await import('./context/index.js')).contextWebhookService,
  telemetry: async () => (await import('./telemetry/index.js')).telemetryService,
  collector: async () => (await import('./collector/index.js')).collectorService,
};

/** The definition of a service, its modules loaded on first use. */
export function loadService(name: ServiceName): Promise<ServiceDef> {
  return LOADERS[name]();
}
