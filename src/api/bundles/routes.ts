/** Bundle routes (spec 4.4). */
import type { RouteModule } from '../../shared/service.js';

export const routes: RouteModule = {
  handlers: {},
};
