/**
 * Telemetry routes (spec 4.7): configuration, statistics, the inspection log (served at both
 * `/log` and `/telemetry/log`), the manual trigger, and the daily schedule started with the
 * service. The admin key is checked at the edge, before these handlers.
 */
import type { AppContext } from '../../shared/app-context.js';
import type { OperationHandler } from '../../shared/http/openapi-app.js';
import type { operations } from '../../../gen/openapi/telemetry.js';
import type { RouteModule } from '../../shared/service.js';
import { getBeacon } from './beacon.js';
import * as store from './store.js';

/** Serves both log operations (`/log` and `/telemetry/log`), whose contracts are the same. */
const listLog: OperationHandler<operations['listTelemetryLog'], AppContext> = async (req, ctx) => {
  // The contract bounds both (limit 1-500, offset >= 0) and the edge coerces them to
  // integers; the defaults are applied here.
  const limit = req.query.limit ?? 50;
  const offset = req.query.offset ?? 0;
  return { status: 200, body: await store.listEntries(ctx.db, limit, offset) };
};

export const routes = {
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
} satisfies RouteModule<operations>;
