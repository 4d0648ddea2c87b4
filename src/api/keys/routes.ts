/** Agent API key routes (spec 4.2, 3.2). */
import type { RouteModule } from '../../shared/service.js';

export const routes: RouteModule = {
  handlers: {},
};
