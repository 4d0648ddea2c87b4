/**
 * `make conformance`'s set-up against services that are already running: waits for each
 * service's /health and creates an agent with a key (so that schemathesis's context requests
 * reach the handlers, not only the key check). Prints `AGENT_KEY=...` for
 * test/conformance/run.sh to eval. Reads the ports and secrets from the
 * environment run.sh starts the server with. `prepare.ts webhook-token` prints only a fresh
 * webhook token (they live at most 300 s, so run.sh signs one just before the webhook's run).
 */
import { signWebhookToken } from '../../src/core/tokens/jwt.js';

const env = process.env;
const ports = ['API_PORT', 'RULES_PORT', 'CONTEXT_WEBHOOK_PORT', 'TELEMETRY_PORT', 'COLLECTOR_PORT'].map((n) => Number(env[n]));
const base = (p: number) => `http://127.0.0.1:${p}`;
const deadline = Date.now() + 120_000;

async function ready(port: number): Promise<void> {
  for (;;) {
    try {
      const r = await fetch(`${base(port)}/health`);
      if (r.ok) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`service on port ${port} did not answer /health within 120 s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function post(path: string, body: unknown): Promise<Record<string, unknown>> {
  const r = await fetch(`${base(ports[0]!)}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-admin-key': env.ADMIN_API_KEY! },
    body: JSON.stringify(body),
  });
  const json = (await r.json()) as Record<string, unknown>;
  if (!r.ok) throw new Error(`POST ${path}: ${r.status} ${JSON.stringify(json)}`);
  return json;
}

if (process.argv[2] === 'webhook-token') {
  process.stdout.write(`${await signWebhookToken(env.JWT_SECRET!, new Date(), 300)}\n`);
  process.exit(0);
}
for (const p of ports) await ready(p);
await post('/api/agents', { agent_id: 'agent:conformance', name: 'Conformance', role_id: 'role:conformance', allowed_intents: ['conformance'] });
const key = await post('/api/agents/agent:conformance/api-keys', {});
process.stdout.write(`AGENT_KEY='${String(key.api_key)}'\n`);
