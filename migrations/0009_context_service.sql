-- Context service: Subscribe streams (open and ended) and the service's own event record.

-- One row per Subscribe stream that was opened (authenticated, tag found, SNAPSHOT sent).
-- `ended_at` is set when the stream ends, for whatever reason (`end_reason`). A row of a
-- process that died without ending its streams keeps `ended_at` null: `last_seen_at`
-- (refreshed by the owning process at least every heartbeat interval while the stream is
-- open) tells a live stream from a stale one.
CREATE TABLE active_subscriptions (
  subscription_id text PRIMARY KEY,
  tag_name        text NOT NULL,
  agent_id        text NOT NULL REFERENCES agents (agent_id),
  process_id      text NOT NULL,
  auth_method     text NOT NULL CHECK (auth_method IN ('token', 'api_key')),
  started_at      timestamptz(3) NOT NULL DEFAULT now(),
  last_seen_at    timestamptz(3) NOT NULL DEFAULT now(),
  messages_sent   integer NOT NULL DEFAULT 0,
  ended_at        timestamptz(3),
  end_reason      text CHECK (end_reason IN ('client_closed', 'server_shutdown', 'tag_not_found', 'revoked', 'error'))
);
CREATE INDEX active_subscriptions_tag_idx ON active_subscriptions (tag_name) WHERE ended_at IS NULL;
CREATE INDEX active_subscriptions_agent_idx ON active_subscriptions (agent_id);

-- subscribe / unsubscribe: one per stream; subscribe_refused: a Subscribe that was refused
-- (bad token, wrong agent, unknown tag), with the reason and never the credential;
-- update_delivered: one per tag move per process, with the number of streams sent the
-- UPDATE; resync: every stream of a process was sent a fresh SNAPSHOT (broker reconnect).
CREATE TABLE context_service_events (
  id              bigserial PRIMARY KEY,
  event_type      text NOT NULL CHECK (event_type IN ('subscribe', 'subscribe_refused', 'unsubscribe', 'update_delivered', 'resync')),
  tag_name        text,
  agent_id        text,
  subscription_id text,
  process_id      text NOT NULL,
  details         jsonb,
  created_at      timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX context_service_events_type_idx ON context_service_events (event_type, created_at);
CREATE INDEX context_service_events_tag_idx ON context_service_events (tag_name, created_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON active_subscriptions TO svc_app;
GRANT SELECT, INSERT ON context_service_events TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
