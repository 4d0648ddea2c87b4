/**
 * Collector store API (spec 4.9, port 7002, no authentication) and the collectors' start:
 * each collector runs only when its input is configured (a file for the two tailers, a base
 * URL and a key for the chat poller) and registers its activity_sources row as it starts.
 */
import os from 'node:os';
import type { AppContext } from '../../shared/app-context.js';
import type { operations } from '../../../gen/openapi/collector.js';
import type { RouteModule } from '../../shared/service.js';
import { codeCli } from '../code-cli/definition.js';
import { cowork } from '../cowork/definition.js';
import { ChatPoller } from '../chat/poller.js';
import { createOtlpCollector } from '../otlp/collector.js';
import { collectorRedactor, collectorStore } from '../store/context.js';
import { ParsePool } from '../tail/processor.js';
import { getActivitySourceCoverage, getActivityStats, listActivitySources, listObservedActivity } from './service.js';

/** Starts the configured collectors; returns their stop function. */
async function startCollectors(ctx: AppContext): Promise<() => Promise<void>> {
  const cfg = ctx.config.collector;
  const log = ctx.logger.child({ service: 'collector' });
  const store = collectorStore(ctx);
  const redactor = collectorRedactor(ctx);
  if (!cfg.hmacSecret) {
    log.warn('COLLECTOR_HMAC_SECRET is not set: e-mail and IP addresses are replaced by [redacted] instead of keyed hashes (masked, but no longer correlatable)');
  }
  const stops: Array<() => Promise<void>> = [];
  // Two parsing threads shared by the file collectors (started at their first batch).
  const pool = new ParsePool({ size: Math.min(2, os.availableParallelism()), hmacSecret: cfg.hmacSecret, pseudonymize: cfg.pseudonymizeAttributes, logger: log });
  for (const [def, file] of [
    [cowork, cfg.coworkFile],
    [codeCli, cfg.codeCliFile],
  ] as const) {
    if (!file) continue;
    const tailer = createOtlpCollector(ctx, store, redactor, pool, def, file);
    tailer.start();
    stops.push(() => tailer.stop());
    log.info('collector started', { source_id: def.profile.sourceId, file });
  }
  if (cfg.chatBaseUrl && cfg.chatApiKey) {
    const poller = new ChatPoller({
      store,
      redactor,
      logger: log.child({ collector: 'vendor-enterprise-chat' }),
      clock: ctx.clock,
      baseUrl: cfg.chatBaseUrl,
      apiKey: cfg.chatApiKey,
      pollSeconds: cfg.chatPollSeconds,
      backfillOnFirstRun: cfg.backfillOnFirstRun,
    });
    poller.start();
    stops.push(() => poller.stop());
    log.info('collector started', { source_id: 'vendor-enterprise-chat', poll_seconds: cfg.chatPollSeconds });
  } else if (cfg.chatBaseUrl || cfg.chatApiKey) {
    log.warn('chat collector not started: it needs both COLLECTOR_CHAT_BASE_URL and COLLECTOR_CHAT_API_KEY');
  }
  return async () => {
    await Promise.all(stops.map((s) => s()));
    await pool.close();
  };
}

export const routes = {
  handlers: {
    listObservedActivity: (req, ctx) => ({
      status: 200,
      body: listObservedActivity(ctx, { limit: req.query.limit, sourceId: req.query.source_id }),
    }),
    listActivitySources: (_req, ctx) => ({ status: 200, body: listActivitySources(ctx) }),
    getActivitySourceCoverage: (req, ctx) => ({ status: 200, body: getActivitySourceCoverage(ctx, req.params.source_id) }),
    getActivityStats: (_req, ctx) => ({ status: 200, body: getActivityStats(ctx) }),
  },
  start: startCollectors,
} satisfies RouteModule<operations>;
