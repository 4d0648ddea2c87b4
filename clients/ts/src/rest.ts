/**
 * The REST services as openapi-fetch clients typed by the spec (src/gen/openapi, written by
 * `make gen` from spec/openapi-*.yaml): `api.POST('/api/agents', { body })` resolves to
 * `{ data, error, response }`, `data` typed by the 2xx body and `error` by the spec's error
 * body of the other statuses. Nothing is thrown for an HTTP error; a network failure rejects.
 */
import createClient, { mergeHeaders, type Client, type ClientOptions } from 'openapi-fetch';
import type { paths as ControlPlanePaths } from './gen/openapi/control-plane.js';
import type { paths as RulesPaths } from './gen/openapi/rules.js';
import type { paths as TelemetryPaths } from './gen/openapi/telemetry.js';
import type { paths as CollectorPaths } from './gen/openapi/collector.js';
import type { paths as WebhookPaths } from './gen/openapi/context-webhook.js';

/** Options common to every REST client: the service's base URL, and openapi-fetch's own. */
export interface RestClientOptions extends Omit<ClientOptions, 'baseUrl'> {
  /** e.g. `http://127.0.0.1:8000` (the path prefix `/api/...` is part of each route). */
  baseUrl: string;
}

export interface AdminClientOptions extends RestClientOptions {
  /** Sent as `X-Admin-Key` on every request; required by the admin routes. */
  adminKey?: string;
}

export interface ControlPlaneClientOptions extends AdminClientOptions {
  /** An agent key (`sk_...`), sent as `X-API-Key`: for `/api/context` and `/api/context/token`. */
  apiKey?: string;
}

export interface WebhookClientOptions extends RestClientOptions {
  /** The HS256 JWT the control plane signs with JWT_SECRET, sent as `Authorization: Bearer`. */
  token?: string;
}

export type ControlPlaneClient = Client<ControlPlanePaths>;
export type RulesClient = Client<RulesPaths>;
export type TelemetryClient = Client<TelemetryPaths>;
export type CollectorClient = Client<CollectorPaths>;
export type WebhookClient = Client<WebhookPaths>;

/** The headers of `opts.headers` plus the credentials given (unset ones are not sent). */
function withHeaders(opts: RestClientOptions, auth: Record<string, string | undefined>): ClientOptions {
  return { ...opts, headers: mergeHeaders(opts.headers, auth) };
}

/** The control-plane API (port 8000): agents, keys, bundles, tags, deployments, audit, context. */
export function createControlPlaneClient({ adminKey, apiKey, ...opts }: ControlPlaneClientOptions): ControlPlaneClient {
  return createClient<ControlPlanePaths>(withHeaders(opts, { 'x-admin-key': adminKey, 'x-api-key': apiKey }));
}

/** The rules engine (port 8001): rule schemas, rule sets, rules. */
export function createRulesClient({ adminKey, ...opts }: AdminClientOptions): RulesClient {
  return createClient<RulesPaths>(withHeaders(opts, { 'x-admin-key': adminKey }));
}

/** The telemetry service (port 8004): beacon configuration, stats, log, manual trigger. */
export function createTelemetryClient({ adminKey, ...opts }: AdminClientOptions): TelemetryClient {
  return createClient<TelemetryPaths>(withHeaders(opts, { 'x-admin-key': adminKey }));
}

/** The collector store (port 7002): observed activity, read-only and without authentication. */
export function createCollectorClient(opts: RestClientOptions): CollectorClient {
  return createClient<CollectorPaths>(withHeaders(opts, {}));
}

/** The context service's webhook (port 8003): tag-update notifications, as the control plane sends them. */
export function createWebhookClient({ token, ...opts }: WebhookClientOptions): WebhookClient {
  return createClient<WebhookPaths>(withHeaders(opts, { authorization: token === undefined ? undefined : `Bearer ${token}` }));
}
