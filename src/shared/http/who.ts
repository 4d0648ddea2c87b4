/** Who made a REST request, for the management events of what it changes. */
import type { Who } from '../../core/audit/events.js';

/**
 * The admin key's name (the edge matched it) and the request id. An admin route never runs
 * without a matched key, so `anonymous` is only for a route that needs none.
 */
export function whoOf(req: { actor: string | null; requestId: string }): Who {
  return { actor: req.actor ?? 'anonymous', request_id: req.requestId };
}
