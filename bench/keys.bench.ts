/**
 * Agent identity figures (benchmarks.md: key verification p50/p99 in process with 10,000
 * agents x 1 key, target p99 < 1 ms; plus agent-create throughput):
 *
 * - agent create through HTTP, 16 concurrent clients, under a license cap (every create
 *   takes the cap lock, as in production), and through the verb without a cap (reference),
 *   beside GET /health on the same edge (reference for HTTP figures);
 * - key issue through HTTP, 16 concurrent clients (the other agents and keys of the 10,000
 *   are loaded in bulk, to keep the run short);
 * - verifyAgentKey in process: cold (every key's first use: the database lookup) and warm
 *   (the cache), over random keys of the 10,000;
 * - a revocation through HTTP followed at once by a verification: it must be refused.
 *
 * Key verification over HTTP is measured by the context benchmarks (POST /api/context,
 * whose first step is this function); this area owns no other agent-key route.
 *
 * PostgreSQL (+ Redis when REDIS_URL is set) with DATABASE_URL; otherwise a smaller run on
 * PGlite, labelled so.
 */
interface Bench {
  real: boolean;
  print(line: string): void;
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function pool<T>(n: number, concurrency: number, one: (i: number) => Promise<T>): Promise<T[]> {
  const out: T[] = new Array(n);
  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        out[i] = await one(i);
      }
    }),
  );
  return out;
}

/** One retry when a pooled keep-alive connection was closed by the server while idle (undici does not retry a POST). */
async function retrying<T>(f: () => Promise<T>): Promise<T> {
  try {
    return await f();
  } catch (e) {
    if ((e as Error).message !== 'fetch failed') throw e;
    return f();
  }
}

export default async function run(b: Bench): Promise<void> {
  if (b.real) process.env.SVC_TEST_REAL = '1';
  const { startTestStack, REAL, REAL_REDIS } = await import('../test/harness.js');
  const { licenseAuthority } = await import('../test/identity/fixtures.js');
  const { verifyAgentKey } = await import('../src/core/keys/verify-key.js');
  const { createAgent } = await import('../src/core/agents/create-agent.js');
  const { keyCache } = await import('../src/core/keys/key-cache.js');
  const { generateApiKey, hashKey, keyPrefix } = await import('../src/core/keys/key-material.js');

  const N = REAL ? 10_000 : 1_000;
  /** How many of the N agents (and keys) go through HTTP for the throughput figures; the rest are loaded in bulk. */
  const H = REAL ? 1_000 : 200;
  const db = REAL ? `PostgreSQL${REAL_REDIS ? ' + Redis' : ''}` : 'PGlite (embedded; smaller run)';
  const authority = await licenseAuthority();
  const t = await startTestStack({
    services: ['api'],
    env: { LOG_LEVEL: 'warn', LICENSE_KEY: await authority.mint({ agent_cap: 10_000_000 }), LICENSE_PUBLIC_KEY: authority.publicKeyPem },
  });
  try {
    const run = Date.now().toString(36);
    const ids = Array.from({ length: N }, (_, i) => `agent:bench-${run}-${i}`);

    // Reference in the same run: the same HTTP edge answering GET /health.
    let t0 = performance.now();
    const HN = REAL ? 5_000 : 1_000;
    await pool(HN, 16, () => retrying(() => t.call('api', 'GET', '/health')));
    let s = (performance.now() - t0) / 1000;
    b.print(`${(HN / s).toFixed(0)} req/s  GET /health over HTTP, 16 clients (reference for the HTTP figures below)  [${db}]`);

    t0 = performance.now();
    const created = await pool(H, 16, (i) =>
      retrying(() =>
        t.call('api', 'POST', '/api/agents', { admin: true, body: { agent_id: ids[i], name: `bench ${i}`, role_id: `role:r${i % 20}`, allowed_intents: ['code_review', 'triage'] } }),
      ),
    );
    s = (performance.now() - t0) / 1000;
    const createdOk = created.filter((r) => r.status === 201).length;
    b.print(`${(createdOk / s).toFixed(0)} agents/s  agent create over HTTP (16 clients, license cap enforced: cap lock per create), ${createdOk}/${H} created  [${db}]`);

    const refN = H;
    const uncapped = { ...t.ctx, license: null };
    t0 = performance.now();
    await pool(refN, 16, (i) => createAgent(uncapped, { agent_id: `agent:bench-ref-${run}-${i}`, name: 'ref', role_id: 'role:ref', allowed_intents: [] }, { actor: 'bench', request_id: null }));
    s = (performance.now() - t0) / 1000;
    b.print(`${(refN / s).toFixed(0)} agents/s  agent create through the verb, no cap, 16 concurrent (reference for the above), ${refN} agents  [${db}]`);

    t0 = performance.now();
    const issued = await pool(H, 16, (i) => retrying(() => t.call('api', 'POST', `/api/agents/${ids[i]}/api-keys`, { admin: true, body: {} })));
    s = (performance.now() - t0) / 1000;
    const keys = issued.filter((r) => r.status === 201).map((r) => r.body as { api_key: string; key_id: string; agent_id: string });
    b.print(`${(keys.length / s).toFixed(0)} keys/s  key issue over HTTP (16 clients), ${keys.length}/${H} issued  [${db}]`);

    // The other agents and their keys, in bulk (same rows as the API writes).
    const rest = ids.slice(H);
    for (let i = 0; i < rest.length; i += 1000) {
      const chunk = rest.slice(i, i + 1000);
      const plain = chunk.map(() => generateApiKey());
      await t.ctx.db.query(
        `INSERT INTO agents (agent_id, name, role_id, allowed_intents, created_by) SELECT a, 'bulk', 'role:bulk', '[{"task_type":"code_review"}]'::jsonb, 'bench' FROM unnest($1::text[]) a`,
        [chunk],
      );
      await t.ctx.db.query(
        `INSERT INTO agent_api_keys (key_id, agent_id, key_prefix, key_hash, expires_at)
         SELECT 'bk-' || a, a, p, h, now() + interval '90 days' FROM unnest($1::text[], $2::text[], $3::text[]) AS u(a, p, h)`,
        [chunk, plain.map(keyPrefix), plain.map(hashKey)],
      );
      chunk.forEach((a, j) => keys.push({ api_key: plain[j], key_id: `bk-${a}`, agent_id: a }));
    }

    // Cold: first verification of each key (prefix lookup + join + hash check).
    keyCache(t.ctx);
    await new Promise((r) => setTimeout(r, 1500)); // let the cache subscribe (and the Redis heartbeat come back)
    const cold: number[] = [];
    let refused = 0;
    for (const k of keys) {
      const a = performance.now();
      const c = await verifyAgentKey(t.ctx, k.api_key);
      cold.push(performance.now() - a);
      if (!c.ok) refused++;
    }
    cold.sort((x, y) => x - y);
    b.print(`${pct(cold, 50).toFixed(3)} ms p50, ${pct(cold, 99).toFixed(3)} ms p99  key verification in process, cold (database lookup), ${N} agents x 1 key, ${refused} refused  [${db}]`);

    // Warm: random keys, cache filled.
    const M = 200_000;
    const warm = new Float64Array(M);
    let warmRefused = 0;
    for (let i = 0; i < 20_000; i++) await verifyAgentKey(t.ctx, keys[(Math.random() * keys.length) | 0].api_key);
    const w0 = performance.now();
    const misses0 = keyCache(t.ctx).misses;
    for (let i = 0; i < M; i++) {
      // A server reaches this function from I/O callbacks: let timers (the broker heartbeat) run.
      if (i % 256 === 0) await new Promise((r) => setImmediate(r));
      const k = keys[(Math.random() * keys.length) | 0];
      const a = performance.now();
      const c = await verifyAgentKey(t.ctx, k.api_key);
      warm[i] = performance.now() - a;
      if (!c.ok) warmRefused++;
    }
    const wall = (performance.now() - w0) / 1000;
    const ws = Array.from(warm).sort((x, y) => x - y);
    const cache = keyCache(t.ctx);
    b.print(
      `${pct(ws, 50).toFixed(4)} ms p50, ${pct(ws, 99).toFixed(4)} ms p99, ${pct(ws, 99.9).toFixed(4)} ms p99.9  key verification in process, warm (cache), ${N} agents x 1 key, ${M} random verifications (${(M / wall).toFixed(0)}/s on one core), ${warmRefused} refused, ${cache.misses - misses0} cache misses, cache ${cache.size} entries  (target p99 < 1 ms)  [${db}]`,
    );

    // Revocation still takes effect on the next request.
    const victim = keys[0];
    const before = await verifyAgentKey(t.ctx, victim.api_key);
    const rev = await t.call('api', 'DELETE', `/api/agents/${victim.agent_id}/api-keys/${victim.key_id}?revoked_by=bench`, { admin: true });
    const after = await verifyAgentKey(t.ctx, victim.api_key);
    b.print(
      `${before.ok && rev.status === 204 && !after.ok ? 'yes' : 'NO'}  revoked key refused on the very next verification (before: ${before.ok ? 'accepted' : 'refused'}, revoke: ${rev.status}, after: ${after.ok ? 'accepted' : `refused: ${after.reason}`})  [${db}]`,
    );
  } finally {
    await t.close();
  }
}
