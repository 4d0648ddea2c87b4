/** Telemetry routes (spec 4.7). */
import type { RouteModule } from '../../shared/service.js';

export const routes: RouteModule = {
  handlers: {},
};
