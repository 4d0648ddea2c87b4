/**
 * gRPC health checking (`grpc.health.v1.Health`, spec/grpc/health/v1/health.proto) on 8002,
 * for Kubernetes' gRPC probes and load balancers.
 *
 * "" (the server as a whole) and the services that need the database follow readiness
 * (src/shared/readiness.ts: database, Redis when configured, migrations, draining), reused
 * for a second so that a probe storm queries the database once a second; the health and
 * reflection services themselves are SERVING until the process drains. Check answers
 * NOT_FOUND for a service it does not know, Watch SERVICE_UNKNOWN (as health.proto says).
 * Watch sends the current status, then each change, looking once a second while the stream
 * is open; once the process drains it sends NOT_SERVING and ends the stream, so that open
 * watches do not hold the shutdown.
 */
import { Code, ConnectError, type ConnectRouter } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { readiness } from '../../shared/readiness.js';
import { Health, HealthCheckResponse_ServingStatus as Status } from '../../../gen/proto/grpc/health/v1/health_pb.js';

/** How often an open Watch looks at the status again. */
const WATCH_POLL_MS = 1000;

/** Resolves after `ms`, or at once when `signal` aborts; the timer is cleared either way. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Registers Health on the router. `dependent`: services that answer only when the process is
 * ready; `independent`: services that work without the database (health, reflection).
 */
export function registerHealth(router: ConnectRouter, ctx: AppContext, dependent: string[], independent: string[]): void {
  const probe = readiness(ctx);
  const known = (service: string) => service === '' || dependent.includes(service) || independent.includes(service);
  const statusOf = async (service: string): Promise<Status> => {
    if (!known(service)) return Status.SERVICE_UNKNOWN;
    if (ctx.draining) return Status.NOT_SERVING;
    if (independent.includes(service)) return Status.SERVING;
    return (await probe()).status === 'ready' ? Status.SERVING : Status.NOT_SERVING;
  };
  router.service(Health, {
    async check(req) {
      const status = await statusOf(req.service);
      if (status === Status.SERVICE_UNKNOWN) throw new ConnectError('unknown service', Code.NotFound);
      return { status };
    },
    async *watch(req, hctx) {
      let last: Status | undefined;
      while (!hctx.signal.aborted) {
        const status = await statusOf(req.service);
        if (status !== last) {
          last = status;
          yield { status };
        }
        if (ctx.draining) return;
        await pause(WATCH_POLL_MS, hctx.signal);
      }
    },
    async list() {
      const statuses: Record<string, { status: Status }> = {};
      for (const service of ['', ...dependent, ...independent]) statuses[service] = { status: await statusOf(service) };
      return { statuses };
    },
  });
}
