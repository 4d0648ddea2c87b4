/**
 * gRPC `Subscribe` (spec 4.8, decisions.md): streams one tag's flattened context, a SNAPSHOT
 * first, then an UPDATE each time the tag moves, a HEARTBEAT when idle.
 *
 * Order of checks: arguments (INVALID_ARGUMENT), credential (UNAUTHENTICATED), agent
 * (PERMISSION_DENIED), tag (NOT_FOUND). A stream is open once its SNAPSHOT is due; it is
 * recorded in `active_subscriptions` before that SNAPSHOT is sent and ended there when the
 * stream ends, whoever ends it (client, shutdown, revocation).
 *
 * `subscriptionFrames` is the stream, independent of the transport: the Connect handler
 * below serves it on every protocol (gRPC, gRPC-Web, Connect; binary and JSON), and
 * subscribe-h2.ts serves plain binary gRPC without re-encoding the shared content per stream.
 */
import { randomUUID } from 'node:crypto';
import { create } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import type { AppContext } from '../../shared/app-context.js';
import { ContextMessageSchema, ContextMessageType, type ContextMessage, type ContextService, type SubscribeRequest } from '../../../gen/proto/context_pb.js';
import { fanout } from '../fanout/index.js';
import { authenticateSubscriber, type SubscribeAuth } from '../fanout/auth.js';
import { Subscriber, type EndReason } from '../fanout/subscriber.js';
import type { TagState } from '../fanout/tag-state.js';
import { subscribeStreamClosed, subscribeStreamOpened } from '../../shared/metrics.js';

const TAG_RE = /^[A-Za-z0-9._-]+:[A-Za-z0-9._-]+$/;
const AGENT_RE = /^agent:[A-Za-z0-9._-]+$/;

/** One message of a stream: the per-stream part, and the tag state it carries (none for a HEARTBEAT). */
export interface Frame {
  type: ContextMessageType;
  tag: string;
  sequence: bigint;
  timestamp: bigint;
  state: TagState | null;
}

function checkArguments(req: Pick<SubscribeRequest, 'tag' | 'agentId'>): void {
  if (!req.tag) throw new ConnectError('tag is required', Code.InvalidArgument);
  if (req.tag.length > 256 || !TAG_RE.test(req.tag)) throw new ConnectError('tag must be <name>:<label> (letters, digits, . _ -; at most 256 characters)', Code.InvalidArgument);
  if (!req.agentId) throw new ConnectError('agent_id is required', Code.InvalidArgument);
  if (req.agentId.length > 256 || !AGENT_RE.test(req.agentId)) throw new ConnectError('agent_id must be agent:<name>', Code.InvalidArgument);
}

/**
 * The frames of one Subscribe stream until it ends. Throws a ConnectError carrying the
 * stream's final status; returns when the client went away (`signal`).
 */
export async function* subscriptionFrames(ctx: AppContext, req: Pick<SubscribeRequest, 'tag' | 'agentId' | 'authToken'>, signal: AbortSignal): AsyncGenerator<Frame> {
  const fan = fanout(ctx);
  if (fan.closed) throw new ConnectError('server is shutting down', Code.Unavailable);
  const refused = (e: unknown, agentId: string | null) => {
    const err = ConnectError.from(e);
    fan.records.event('subscribe_refused', {
      tag: req.tag.slice(0, 256) || null,
      agentId: agentId ?? (req.agentId.slice(0, 256) || null),
      details: { code: Code[err.code], reason: err.rawMessage },
    });
    return err;
  };
  let auth: SubscribeAuth;
  try {
    checkArguments(req);
    await fan.start();
    auth = await authenticateSubscriber(ctx, req.agentId, req.authToken);
  } catch (e) {
    if (e instanceof ConnectError) throw refused(e, null);
    ctx.logger.error('subscribe failed before opening', { error: e as Error });
    throw new ConnectError('internal error', Code.Internal);
  }

  const heartbeatMs = ctx.config.contextStream.heartbeatSeconds * 1000;
  const sub = new Subscriber({ subscriptionId: randomUUID(), tag: req.tag, agentId: auth.agentId, authMethod: auth.authMethod, keyId: auth.keyId });
  fan.add(sub);
  subscribeStreamOpened();
  let recorded = false;
  let sent = 0;
  let reason: EndReason = 'client_closed';
  try {
    for (;;) {
      const next = await sub.next(heartbeatMs, signal);
      if (next.kind === 'aborted') return;
      if (next.kind === 'end') {
        reason = next.reason;
        if (!recorded && next.error) throw refused(next.error, auth.agentId);
        if (next.error) throw next.error;
        return;
      }
      if (!recorded) {
        try {
          await fan.records.open(sub.info);
        } catch (e) {
          ctx.logger.warn('recording a subscription failed', { error: (e as Error).message });
          throw new ConnectError('context store unavailable', Code.Unavailable);
        }
        recorded = true;
      }
      sent++;
      const head = { tag: sub.info.tag, sequence: BigInt(sent), timestamp: BigInt(ctx.clock.now().getTime()) };
      if (next.kind === 'heartbeat') yield { ...head, type: ContextMessageType.HEARTBEAT, state: null };
      else yield { ...head, type: next.type === 'snapshot' ? ContextMessageType.SNAPSHOT : ContextMessageType.UPDATE, state: next.state };
    }
  } catch (e) {
    if (e instanceof ConnectError) throw e;
    reason = 'error';
    ctx.logger.error('subscribe stream failed', { subscriptionId: sub.info.subscriptionId, error: e as Error });
    throw new ConnectError('internal error', Code.Internal);
  } finally {
    subscribeStreamClosed();
    fan.remove(sub);
    if (recorded) fan.records.close(sub.info, reason, sent);
  }
}

/** The Subscribe implementation for Connect, for `router.service(ContextService, { ..., subscribe })`. */
export function subscribeHandler(ctx: AppContext): ServiceImpl<typeof ContextService>['subscribe'] {
  return async function* subscribe(req: SubscribeRequest, hctx: HandlerContext): AsyncGenerator<ContextMessage> {
    // JSON codecs (gRPC+json, Connect JSON) do not write pre-encoded fields: full messages for them.
    const binary = !/json/i.test(hctx.requestHeader.get('content-type') ?? '');
    for await (const f of subscriptionFrames(ctx, req, hctx.signal)) {
      const head = { type: f.type, tag: f.tag, sequence: f.sequence, timestamp: f.timestamp };
      if (!f.state) {
        yield create(ContextMessageSchema, head);
      } else if (binary) {
        // The shared fields travel pre-encoded (see TagState.encoded): the same bytes on the wire.
        const m = create(ContextMessageSchema, head);
        m.$unknown = f.state.encoded;
        yield m;
      } else {
        yield create(ContextMessageSchema, { ...head, ...f.state.fields });
      }
    }
  };
}
