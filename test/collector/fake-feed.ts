/**
 * A fake Compliance API Activity Feed on 127.0.0.1 (external-formats.md 3): newest first
 * (created_at, then id, descending), `created_at.gte/gt/lte/lt` filters, `after_id` /
 * `before_id` paging, `x-api-key` auth, the error envelope, and scripted failures (429 with
 * or without retry-after, 5xx, x-should-retry: false).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Activity {
  id: string;
  created_at: string;
  type: string;
  [k: string]: unknown;
}

interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface FakeFeed {
  url: string;
  key: string;
  activities: Activity[];
  requests: Array<{ url: URL; headers: http.IncomingHttpHeaders; at: number; status: number }>;
  /** Served (in order) before normal answers. */
  script: ScriptedResponse[];
  add(...a: Activity[]): void;
  close(): Promise<void>;
}

const order = (a: Activity, b: Activity) => Date.parse(b.created_at) - Date.parse(a.created_at) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export async function startFakeFeed(opts: { key?: string; activities?: Activity[] } = {}): Promise<FakeFeed> {
  const key = opts.key ?? 'sk-vnd-api01-test-key';
  const feed: FakeFeed = {
    url: '',
    key,
    activities: [...(opts.activities ?? [])].sort(order),
    requests: [],
    script: [],
    add(...a) {
      feed.activities.push(...a);
      feed.activities.sort(order);
    },
    close: () => new Promise((r) => server.close(() => r())),
  };
  const send = (res: http.ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_${Math.random().toString(36).slice(2)}`, ...headers });
    res.end(typeof body === 'string' ? body : JSON.stringify(body));
  };
  const error = (type: string, message: string) => ({ error: { type, message } });
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const record = (status: number) => feed.requests.push({ url, headers: req.headers, at: Date.now(), status });
    if (url.pathname !== '/v1/compliance/activities') {
      record(404);
      return send(res, 404, error('not_found_error', 'no such path'));
    }
    if (req.headers['x-api-key'] !== key) {
      record(401);
      return send(res, 401, error('authentication_error', 'invalid x-api-key'));
    }
    const scripted = feed.script.shift();
    if (scripted) {
      record(scripted.status);
      return send(res, scripted.status, scripted.body ?? error(scripted.status === 429 ? 'rate_limit_error' : 'api_error', 'scripted'), scripted.headers);
    }
    const q = url.searchParams;
    const limit = Number(q.get('limit') ?? 100);
    if (!Number.isInteger(limit) || limit < 1 || limit > 5000) {
      record(400);
      return send(res, 400, error('invalid_request_error', 'limit'));
    }
    if (q.has('after_id') && q.has('before_id')) {
      record(400);
      return send(res, 400, error('invalid_request_error', 'after_id and before_id'));
    }
    const bounds: Array<[string, (t: number, b: number) => boolean]> = [
      ['created_at.gte', (t, b) => t >= b],
      ['created_at.gt', (t, b) => t > b],
      ['created_at.lte', (t, b) => t <= b],
      ['created_at.lt', (t, b) => t < b],
    ];
    let list = feed.activities;
    for (const [name, ok] of bounds) {
      const v = q.get(name);
      if (v === null) continue;
      if (!/T.*(Z|[+-]\d\d:\d\d)$/.test(v) || Number.isNaN(Date.parse(v))) {
        record(400);
        return send(res, 400, error('invalid_request_error', `bad ${name}`));
      }
      const b = Date.parse(v);
      list = list.filter((a) => ok(Date.parse(a.created_at), b));
    }
    let page: Activity[];
    let hasMore: boolean;
    const after = q.get('after_id');
    const before = q.get('before_id');
    if (after) {
      const i = list.findIndex((a) => a.id === after);
      if (i < 0) {
        record(400);
        return send(res, 400, error('invalid_request_error', 'unknown cursor'));
      }
      page = list.slice(i + 1, i + 1 + limit);
      hasMore = i + 1 + limit < list.length;
    } else if (before) {
      const i = list.findIndex((a) => a.id === before);
      page = list.slice(Math.max(0, i - limit), Math.max(0, i));
      hasMore = i - limit > 0;
    } else {
      page = list.slice(0, limit);
      hasMore = limit < list.length;
    }
    record(200);
    send(res, 200, { data: page, has_more: hasMore, first_id: page[0]?.id ?? null, last_id: page.at(-1)?.id ?? null });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  feed.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return feed;
}

let seq = 0;
/** A user_actor activity of an allowlisted type, created at `at`. */
export function activity(at: Date, over: Partial<Activity> = {}): Activity {
  seq++;
  return {
    id: `activity_T${String(seq).padStart(8, '0')}${Math.random().toString(36).slice(2, 8)}`,
    created_at: at.toISOString().replace('.000Z', 'Z'),
    organization_id: 'org_01TEST',
    organization_uuid: null,
    actor: {
      type: 'user_actor',
      email_address: `user${seq}@example.com`,
      user_id: `user_01T${seq}`,
      ip_address: `198.51.100.${seq % 250}`,
      user_agent: 'Mozilla/5.0 (test)',
    },
    type: 'vendor_chat_created',
    vendor_chat_id: `vendor_chat_${seq}`,
    ...over,
  };
}
