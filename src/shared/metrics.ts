/**
 * The process's Prometheus metrics (prom-client): one registry with the default process
 * metrics, the HTTP and gRPC request durations, and the domain figures. Served as text by
 * `GET /metrics` on every HTTP service (`metricsText`).
 *
 * Every label value comes from a fixed set: the service name, the HTTP method (unknown ones
 * as `OTHER`), the OpenAPI path template (`/api/agents/{agent_id}`, never the raw path;
 * `unmatched` when no operation matched), the status class, the gRPC method of a
 * registered service (`unknown` otherwise), the gRPC status name, and outcome names the code
 * spells out. No agent id, key, tag or other unbounded value is ever a label.
 *
 * Hot paths take their label children once (`httpRouteTimer`, the `*Children` tables below).
 * prom-client's histogram child still hashes its labels at each observation (about 0.5 µs,
 * three observations on a context request of about 110 µs): kept, rather than a histogram of
 * our own, because that is about 1% of the request; `make bench` reports the whole cost.
 */
import { Code } from '@connectrpc/connect';
import client from 'prom-client';

const registry = new client.Registry();
client.collectDefaultMetrics({ register: registry });

/** Request durations (seconds): 0.5 ms to 10 s. */
const DURATION_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const httpDuration = new client.Histogram({
  name: 'svc_http_request_duration_seconds',
  help: 'HTTP request duration until the response is handed to node, by service, method, OpenAPI route template and status class',
  labelNames: ['service', 'method', 'route', 'status_class'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const grpcDuration = new client.Histogram({
  name: 'svc_grpc_request_duration_seconds',
  help: 'gRPC / Connect call duration on port 8002 (streams: until they end), by method (/package.Service/Method; unknown for unregistered paths) and status code',
  labelNames: ['method', 'code'] as const,
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const contextRequests = new client.Counter({
  name: 'svc_context_requests_total',
  help: 'Context requests (REST and gRPC) by outcome: served, refused_auth, refused_intent, refused_validation, refused_internal (recorded failure after the intent check), error (not answered: the audit record could not be committed)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

const auditAppended = new client.Counter({
  name: 'svc_audit_records_appended_total',
  help: 'Audit records committed to the hash chain',
  registers: [registry],
});

const auditBatchSize = new client.Histogram({
  name: 'svc_audit_group_commit_batch_size',
  help: 'Records per audit group commit (one statement, one transaction)',
  buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1000],
  registers: [registry],
});

const auditAppendLatency = new client.Histogram({
  name: 'svc_audit_append_duration_seconds',
  help: 'Time from an audit append to its commit (waiting for the batch included)',
  buckets: DURATION_BUCKETS,
  registers: [registry],
});

const subscribeStreams = new client.Gauge({
  name: 'svc_subscribe_streams_open',
  help: 'Subscribe streams open on this process (every protocol)',
  registers: [registry],
});

const collectorStored = new client.Counter({
  name: 'svc_collector_events_stored_total',
  help: 'Collector events stored, by source',
  labelNames: ['source'] as const,
  registers: [registry],
});

const collectorSkipped = new client.Counter({
  name: 'svc_collector_events_skipped_total',
  help: 'Collector input not stored, by source and reason (duplicate, or the source counter that counted it: lines_malformed, lines_skipped_metrics, ...)',
  labelNames: ['source', 'reason'] as const,
  registers: [registry],
});

const telemetrySends = new client.Counter({
  name: 'svc_telemetry_sends_total',
  help: 'Telemetry beacon send attempts by result (ok, failed)',
  labelNames: ['result'] as const,
  registers: [registry],
});

/** The Prometheus text exposition of every metric (for GET /metrics and port 8002's HTTP/1.1 handler). */
export async function metricsText(): Promise<{ contentType: string; body: string }> {
  return { contentType: registry.contentType, body: await registry.metrics() };
}

/** `GET /metrics` as a fetch Response (the edge answers a handler's Response as it is). */
export async function metricsResponse(): Promise<Response> {
  const m = await metricsText();
  return new Response(m.body, { status: 200, headers: { 'content-type': m.contentType, 'cache-control': 'no-store' } });
}

// --- HTTP -------------------------------------------------------------------------------

const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
/** The method as a label: one of the standard ones, else OTHER. */
export const methodLabel = (m: string | undefined): string => (m && METHODS.has(m) ? m : 'OTHER');

/** The route label of a request no operation matched. */
export const UNMATCHED_ROUTE = 'unmatched';

type Observer = { observe(v: number): void };

/** The duration histogram of one (service, method, route), its five status classes taken once. */
export class HttpRouteTimer {
  private readonly children: Array<Observer | undefined> = [];
  constructor(
    private readonly service: string,
    readonly method: string,
    readonly route: string,
  ) {}

  /** Records one answered request; `ms` from performance.now() differences. */
  observe(status: number, ms: number): void {
    const cls = status >= 100 && status < 600 ? (status / 100) | 0 : 0;
    let c = this.children[cls];
    if (c === undefined) c = this.children[cls] = httpDuration.labels(this.service, this.method, this.route, cls ? `${cls}xx` : 'other');
    c.observe(ms / 1000);
  }
}

const routeTimers = new Map<string, HttpRouteTimer>();
/** The timer of one route (kept; callers on a hot path keep their own reference too). */
export function httpRouteTimer(service: string, method: string, route: string): HttpRouteTimer {
  const m = methodLabel(method);
  const key = `${service} ${m} ${route}`;
  let t = routeTimers.get(key);
  if (t === undefined) routeTimers.set(key, (t = new HttpRouteTimer(service, m, route)));
  return t;
}

// --- gRPC -------------------------------------------------------------------------------

/** gRPC status names as they are written in the spec (OK, INVALID_ARGUMENT, ...). */
const CODE_NAMES: Record<number, string> = {
  0: 'OK',
  [Code.Canceled]: 'CANCELLED',
  [Code.Unknown]: 'UNKNOWN',
  [Code.InvalidArgument]: 'INVALID_ARGUMENT',
  [Code.DeadlineExceeded]: 'DEADLINE_EXCEEDED',
  [Code.NotFound]: 'NOT_FOUND',
  [Code.AlreadyExists]: 'ALREADY_EXISTS',
  [Code.PermissionDenied]: 'PERMISSION_DENIED',
  [Code.ResourceExhausted]: 'RESOURCE_EXHAUSTED',
  [Code.FailedPrecondition]: 'FAILED_PRECONDITION',
  [Code.Aborted]: 'ABORTED',
  [Code.OutOfRange]: 'OUT_OF_RANGE',
  [Code.Unimplemented]: 'UNIMPLEMENTED',
  [Code.Internal]: 'INTERNAL',
  [Code.Unavailable]: 'UNAVAILABLE',
  [Code.DataLoss]: 'DATA_LOSS',
  [Code.Unauthenticated]: 'UNAUTHENTICATED',
};
export const grpcCodeName = (code: number): string => CODE_NAMES[code] ?? 'UNKNOWN';

/** The label of a gRPC method not registered on the port. */
export const UNKNOWN_GRPC_METHOD = 'unknown';

/** The duration histogram of one gRPC method (a registered path, or `unknown`), by code, children taken once. */
export class GrpcMethodTimer {
  private readonly children: Array<Observer | undefined> = [];
  constructor(readonly method: string) {}
  observe(code: number, ms: number): void {
    const i = code >= 0 && code <= 16 ? code : 2;
    let c = this.children[i];
    if (c === undefined) c = this.children[i] = grpcDuration.labels(this.method, grpcCodeName(i));
    c.observe(ms / 1000);
  }
}

const grpcTimers = new Map<string, GrpcMethodTimer>();
/** The timer of a method path; callers pass only registered paths (or UNKNOWN_GRPC_METHOD). */
export function grpcMethodTimer(method: string): GrpcMethodTimer {
  let t = grpcTimers.get(method);
  if (t === undefined) grpcTimers.set(method, (t = new GrpcMethodTimer(method)));
  return t;
}

// --- Domain -----------------------------------------------------------------------------

export type ContextOutcomeLabel = 'served' | 'refused_auth' | 'refused_intent' | 'refused_validation' | 'refused_internal' | 'refused_revision' | 'error';
const OUTCOMES: ContextOutcomeLabel[] = ['served', 'refused_auth', 'refused_intent', 'refused_validation', 'refused_internal', 'refused_revision', 'error'];
const contextChildren = Object.fromEntries(OUTCOMES.map((o) => [o, contextRequests.labels(o)])) as Record<ContextOutcomeLabel, { inc(): void }>;
/** One context request answered (or failed) with this outcome. */
export const countContextRequest = (outcome: ContextOutcomeLabel): void => contextChildren[outcome].inc();

/** One group commit of `records` audit records; `waitedMs` each record's time from append to commit. */
export function observeAuditCommit(records: number): void {
  auditAppended.inc(records);
  auditBatchSize.observe(records);
}
export const observeAuditAppend = (ms: number): void => auditAppendLatency.observe(ms / 1000);

export const subscribeStreamOpened = (): void => subscribeStreams.inc();
export const subscribeStreamClosed = (): void => subscribeStreams.dec();

/** What one collector commit stored and skipped (reasons are the source's own counter names). */
export function countCollectorCommit(source: string, stored: number, skipped: Record<string, number>): void {
  if (stored) collectorStored.inc({ source }, stored);
  for (const reason in skipped) {
    const n = skipped[reason]!;
    if (n > 0) collectorSkipped.inc({ source, reason }, n);
  }
}

export const countTelemetrySend = (ok: boolean): void => telemetrySends.inc({ result: ok ? 'ok' : 'failed' });
