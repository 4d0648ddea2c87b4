/** MCP server registry routes (spec 4.3). */
import type { RouteModule } from '../../shared/service.js';

export const routes: RouteModule = {
  handlers: {},
};
