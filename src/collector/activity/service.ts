/** Verbs of the collector store API (spec 4.9). They read the store; none writes. */
import type { AppContext } from '../../shared/app-context.js';
import { AppError } from '../../shared/errors.js';
import { collectorStore } from '../store/context.js';
import type { components } from '../../../gen/openapi/collector.js';
import type { ActivityStats } from '../store/store.js';

type S = components['schemas'];

const OBSERVED_DEFAULT_LIMIT = 50;
const OBSERVED_MAX_LIMIT = 500;

/** Clamped, not refused (spec 8): below 1 reads as 1, above 500 as 500, absent as 50. */
function clampLimit(raw: unknown): number {
  const n = typeof raw === 'number' ? raw : typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : NaN;
  if (!Number.isFinite(n)) return OBSERVED_DEFAULT_LIMIT;
  return Math.min(OBSERVED_MAX_LIMIT, Math.max(1, Math.trunc(n)));
}

export function listObservedActivity(ctx: AppContext, input: { limit?: number; sourceId?: string }): S['ObservedActivityList'] {
  const limit = clampLimit(input.limit);
  return { events: collectorStore(ctx).listObserved({ limit, sourceId: input.sourceId }), limit };
}

export function listActivitySources(ctx: AppContext): S['ActivitySourceList'] {
  return { sources: collectorStore(ctx).listSources() };
}

export function getActivitySourceCoverage(ctx: AppContext, sourceId: string): S['CoverageManifest'] {
  const m = collectorStore(ctx).getCoverage(sourceId);
  if (!m) throw new AppError('not_found', `No activity source ${sourceId}`);
  return m;
}

export function getActivityStats(ctx: AppContext): ActivityStats {
  return collectorStore(ctx).stats();
}
