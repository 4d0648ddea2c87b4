/**
 * A beacon receiver on loopback for the telemetry tests: it records every request, checks the
 * signature over the raw body and that the body is exactly the six fields of spec 2.11, and
 * answers from a script (e.g. 503, 500, then 200) to exercise the retries.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHash, createHmac, generateKeyPairSync, randomUUID, timingSafeEqual } from 'node:crypto';
import { SignJWT, importPKCS8 } from 'jose';

export const SIX_FIELDS = ['active_agent_count', 'agent_count', 'deployment_id', 'license_key_hash', 'reported_at', 'scp_version'];

interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  json: any;
  /** true/false when the receiver has a secret; null when it has none. */
  signatureValid: boolean | null;
  /** Exactly the six fields, with the spec's types. */
  sixFields: boolean;
  answered: number;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** Statuses to answer next, in order; 200 once the script is used up. */
  script: number[];
  /** Answer nothing at all (the sender must time out). */
  hang: boolean;
  /** Resolves when `n` requests have been received. */
  waitFor(n: number, timeoutMs?: number): Promise<Received[]>;
  close(): Promise<void>;
}

function hasSixFields(x: any): boolean {
  if (!x || typeof x !== 'object' || Array.isArray(x)) return false;
  const keys = Object.keys(x).sort();
  if (JSON.stringify(keys) !== JSON.stringify(SIX_FIELDS)) return false;
  return (
    /^[0-9a-f-]{36}$/i.test(x.deployment_id) &&
    (x.license_key_hash === null || /^[0-9a-f]{64}$/.test(x.license_key_hash)) &&
    Number.isInteger(x.agent_count) &&
    Number.isInteger(x.active_agent_count) &&
    typeof x.reported_at === 'string' &&
    new Date(x.reported_at).toISOString() === x.reported_at &&
    typeof x.scp_version === 'string'
  );
}

export async function startReceiver(opts: { secret?: string | null; path?: string } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const hung: http.ServerResponse[] = [];
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let json: any = undefined;
      try {
        json = JSON.parse(raw);
      } catch {
        /* recorded as is */
      }
      let signatureValid: boolean | null = null;
      if (opts.secret) {
        const want = Buffer.from(`sha256=${createHmac('sha256', opts.secret).update(raw, 'utf8').digest('hex')}`);
        const got = Buffer.from(String(req.headers['x-svc-signature'] ?? ''));
        signatureValid = got.length === want.length && timingSafeEqual(got, want);
      }
      const answered = r.hang ? 0 : (r.script.shift() ?? 200);
      received.push({ method: req.method!, path: req.url!, headers: req.headers, raw, json, signatureValid, sixFields: hasSixFields(json), answered });
      for (const w of waiters.splice(0)) w();
      if (r.hang) {
        hung.push(res);
        return;
      }
      res.writeHead(answered, { 'content-type': 'application/json' });
      res.end(answered < 300 ? '{"ok":true}' : '{"ok":false}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const r: Receiver = {
    url: `http://127.0.0.1:${port}${opts.path ?? '/beacon'}`,
    received,
    script: [],
    hang: false,
    async waitFor(n, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (received.length < n) {
        if (Date.now() > deadline) throw new Error(`receiver: expected ${n} requests, got ${received.length}`);
        await new Promise<void>((resolve) => {
          const t = setTimeout(resolve, 50);
          waiters.push(() => {
            clearTimeout(t);
            resolve();
          });
        });
      }
      return received;
    },
    async close() {
      for (const res of hung) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return r;
}

/** A real RS256 license (and the public key that verifies it) for `deploymentId`. */
export async function makeLicense(deploymentId: string, at: Date = new Date()): Promise<{ licenseKey: string; publicKeyPem: string }> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pk = await importPKCS8(privateKey.export({ type: 'pkcs8', format: 'pem' }) as string, 'RS256');
  const now = Math.floor(at.getTime() / 1000);
  const licenseKey = await new SignJWT({ deployment_id: deploymentId, agent_cap: 0, tier: 'standard' })
    .setProtectedHeader({ alg: 'RS256' })
    .setSubject(`customer-${randomUUID()}`)
    .setIssuer('svc-license-authority')
    .setIssuedAt(now)
    .setExpirationTime(now + 365 * 86400)
    .sign(pk);
  return { licenseKey, publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }) as string };
}

export const sha256Hex = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');
