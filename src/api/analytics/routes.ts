/** Usage and adherence analytics routes (issue 24) and the rollup job started with the API. */
import type { operations } from '../../../gen/openapi/control-plane.js';
import type { RouteModule } from '../../shared/service.js';
import { adherenceAnalytics } from '../../core/analytics/adherence.js';
import { startRollupJob } from '../../core/analytics/rollup.js';
import { usageAnalytics } from '../../core/analytics/usage.js';

export const routes = {
  handlers: {
    getUsageAnalytics: async (req, ctx) => ({ status: 200, body: await usageAnalytics(ctx, req.query) }),
    getAdherenceAnalytics: async (req, ctx) => ({ status: 200, body: await adherenceAnalytics(ctx, req.query) }),
  },
  start: (ctx) => startRollupJob(ctx),
} satisfies RouteModule<operations>;
