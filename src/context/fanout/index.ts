/** The context service's stream fan-out: one registry per process (per AppContext). */
import type { AppContext } from '../../shared/app-context.js';
import { Fanout } from './registry.js';

export { Fanout } from './registry.js';

/** This process's registry (made on first use; stopped when the context closes). */
export function fanout(ctx: AppContext): Fanout {
  return ctx.singleton('context.fanout', () => {
    const f = new Fanout(ctx);
    ctx.onClose(() => f.stop());
    return f;
  });
}

/**
 * The gRPC service's `start`: listens on the broker before the first stream, and returns the
 * stop that ends every stream cleanly (UNAVAILABLE) before the server drains its connections.
 */
export async function startFanout(ctx: AppContext): Promise<() => Promise<void>> {
  const f = fanout(ctx);
  await f.start();
  return () => f.stop();
}
