/**
 * Telemetry routes (spec 4.7): configuration, statistics, the inspection log (served at both
 * `/log` and `/telemetry/log`), the manual trigger, and the daily schedule started with the
 * service. The admin key is checked at the edge, before these handlers.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { OperationHandler } from '../../shared/http/openapi-app.js';
import type { RouteModule } from '../../shared/service.js';
import { getBeacon } from './beacon.js';
import * as store from './store.js';

const listLog: OperationHandler<AppContext> = async (req, ctx) => {
  // The contract bounds both (limit 1-500, offset >= 0); defaults are applied here.
  const limit = typeof req.query.limit === 'number' ? req.query.limit : 50;
  const offset = typeof req.query.offset === 'number' ? req.query.offset : 0;
  return { status: 200, body: await store.listEntries(ctx.db, limit, offset) };
};

export const routes: RouteModule = {
  handlers: {
    getTelemetryConfig: (_req, ctx) => ({ status: 200, body: getBeacon(ctx).configView() }),
    getTelemetryStats: async (_req, ctx) => ({ status: 200, body: await store.readStats(ctx.db) }),
    listTelemetryLog: listLog,
    listTelemetryInspectionLog: listLog,
    triggerTelemetryReport: async (_req, ctx) => ({ status: 200, body: { status: 'triggered', log_id: await getBeacon(ctx).trigger() } }),
  },
  async start(ctx) {
    const beacon = getBeacon(ctx);
    await beacon.start();
    return () => beacon.stop();
  },
};
