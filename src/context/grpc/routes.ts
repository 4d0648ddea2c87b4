/** Connect-RPC routes of the context service (spec 4.8). */
import type { ConnectRouter } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';

export function contextRoutes(ctx: AppContext): (router: ConnectRouter) => void {
  void ctx;
  return () => {};
}
