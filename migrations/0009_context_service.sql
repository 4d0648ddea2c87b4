-- Context service: active Subscribe streams and the service's own event record.
CREATE TABLE active_subscriptions (
  subscription_id text PRIMARY KEY,
  tag_name        text NOT NULL,
  agent_id        text NOT NULL,
  process_id      text NOT NULL,
  started_at      timestamptz(3) NOT NULL DEFAULT now(),
  last_message_at timestamptz(3),
  ended_at        timestamptz(3)
);
CREATE INDEX active_subscriptions_tag_idx ON active_subscriptions (tag_name) WHERE ended_at IS NULL;
CREATE TABLE context_service_events (
  id         bigserial PRIMARY KEY,
  event_type text NOT NULL,
  tag_name   text,
  agent_id   text,
  details    jsonb,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON active_subscriptions, context_service_events TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
