/**
 * The context service (port 8002, spec/context.proto) over Connect, gRPC or gRPC-Web on
 * HTTP/2 cleartext, with the agent's API key filled in: `requestContext` sends it as the
 * request's `api_key`, `subscribe` as the stream's `auth_token` (which the service accepts
 * beside a Subscribe token).
 *
 * HTTP/2 sessions: the client opens one session (an `Http2SessionManager` of connect-node)
 * and keeps it for its calls. `close()` ends it; without it an idle session keeps the
 * process alive for minutes. A caller that passes its own `sessionManager` (to share one
 * session between clients) closes that itself, and `close()` leaves it open.
 */
import { createClient, type CallOptions, type Client, type Transport } from '@connectrpc/connect';
import { createConnectTransport, createGrpcTransport, createGrpcWebTransport, Http2SessionManager } from '@connectrpc/connect-node';
import type { MessageInitShape } from '@bufbuild/protobuf';
import {
  ContextService,
  type ContextMessage,
  type RequestContextRequestSchema,
  type RequestContextResponse,
} from './gen/proto/context_pb.js';

/** The three protocols port 8002 speaks, all over HTTP/2. */
export type ContextProtocol = 'connect' | 'grpc' | 'grpc-web';

export interface ContextClientOptions {
  /** e.g. `http://127.0.0.1:8002`. */
  baseUrl: string;
  /** The agent's API key (`sk_...`). */
  apiKey: string;
  /** Default `connect`. */
  protocol?: ContextProtocol;
  /** Protobuf binary (default) or JSON. */
  useBinaryFormat?: boolean;
  /** An HTTP/2 session manager of the caller's for `baseUrl`; the caller closes it. */
  sessionManager?: Http2SessionManager;
}

/** What `requestContext` takes: the request message without `api_key` (the client adds it). */
export type RequestContextInput = { taskType: string } & Omit<MessageInitShape<typeof RequestContextRequestSchema>, 'apiKey' | '$typeName'>;

export interface SubscribeInput {
  /** A tag, `<name>:<label>`. */
  tag: string;
  /** The agent the API key belongs to. */
  agentId: string;
  /** A Subscribe token (`POST /api/context/token`) to send instead of the API key. */
  authToken?: string;
}

export interface ContextClient {
  /** RequestContext: refusals (AUTH_FAILED, INTENT_NOT_ALLOWED, ...) come back in-band, `success: false`. */
  requestContext(input: RequestContextInput, options?: CallOptions): Promise<RequestContextResponse>;
  /** Subscribe: a snapshot, then updates and heartbeats; leaving the loop or `options.signal` ends the stream. */
  subscribe(input: SubscribeInput, options?: CallOptions): AsyncIterable<ContextMessage>;
  /** The generated Connect client, for what the two methods above do not cover (it does not add the key). */
  readonly raw: Client<typeof ContextService>;
  /** Ends the client's own HTTP/2 session (calls in flight fail with `canceled`); a later call opens a new one. */
  close(): void;
}

function transportFor(protocol: ContextProtocol, baseUrl: string, useBinaryFormat: boolean, sessionManager: Http2SessionManager): Transport {
  switch (protocol) {
    case 'connect':
      return createConnectTransport({ baseUrl, httpVersion: '2', useBinaryFormat, sessionManager });
    case 'grpc-web':
      return createGrpcWebTransport({ baseUrl, httpVersion: '2', useBinaryFormat, sessionManager });
    case 'grpc':
      return createGrpcTransport({ baseUrl, useBinaryFormat, sessionManager });
    default:
      throw new TypeError(`unknown protocol ${JSON.stringify(protocol)}: expected connect, grpc or grpc-web`);
  }
}

/** A context-service client for one agent key. */
export function createContextClient(options: ContextClientOptions): ContextClient {
  const { baseUrl, apiKey, protocol = 'connect', useBinaryFormat = true } = options;
  if (!apiKey) throw new TypeError('createContextClient: apiKey is required');
  const own = options.sessionManager === undefined;
  const sessionManager = options.sessionManager ?? new Http2SessionManager(baseUrl);
  const raw = createClient(ContextService, transportFor(protocol, baseUrl, useBinaryFormat, sessionManager));
  return {
    raw,
    requestContext(input, callOptions) {
      return raw.requestContext({ ...input, apiKey }, callOptions);
    },
    subscribe({ tag, agentId, authToken }, callOptions) {
      return raw.subscribe({ tag, agentId, authToken: authToken ?? apiKey }, callOptions);
    },
    close() {
      if (own) sessionManager.abort();
    },
  };
}
