/** Polling for tests: until a condition holds, or a clear error once the time is up. */

/** Resolves with `fn`'s first truthy answer (polled every 25 ms); throws after `timeoutMs` (15 s) naming `what`. */
export async function waitFor<T>(fn: () => T | Promise<T>, opts: { timeoutMs?: number; what?: string } = {}): Promise<NonNullable<T>> {
  const until = Date.now() + (opts.timeoutMs ?? 15_000);
  for (;;) {
    const v = await fn();
    if (v) return v as NonNullable<T>;
    if (Date.now() > until) throw new Error(`timed out waiting for ${opts.what ?? 'a condition'}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
