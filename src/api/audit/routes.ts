/** Audit routes (spec 4.5). */
import type { RouteModule } from '../../shared/service.js';

export const routes: RouteModule = {
  handlers: {},
};
