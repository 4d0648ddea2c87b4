/** REST context API (spec 4.1). */
import type { RouteModule } from '../../shared/service.js';
import { mintSubscribeTokenHandler } from './token.js';

export const routes: RouteModule = {
  handlers: {
    mintSubscribeToken: mintSubscribeTokenHandler,
  },
};
