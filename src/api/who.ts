/** Who acts in a REST request, for management events (common brief: actor = admin key name). */
import type { Who } from '../core/audit/events.js';

/** `actor` is the presenting admin key's name (RequestInfo.actor once named admin keys land). */
export function whoOf(req: { requestId: string; actor?: string | null }): Who {
  return { actor: req.actor ?? 'anonymous', request_id: req.requestId };
}
