-- Telemetry: every beacon report, with the exact payload sent (the customer inspection log).
-- One row per report; its send attempts update the row (attempts, status, error_message).
CREATE TABLE telemetry_log (
  id                    bigserial PRIMARY KEY,
  -- UTC date the report belongs to (the scheduled report's day).
  report_date           date NOT NULL,
  trigger               text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
  -- When the report was generated; equals payload->>'reported_at'.
  reported_at           timestamptz(3) NOT NULL,
  status                text NOT NULL CHECK (status IN ('pending', 'retrying', 'sent', 'failed')),
  attempts              integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  -- The six fields of the beacon (interface spec 2.11), nothing else.
  payload               jsonb NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
  signed                boolean NOT NULL,
  error_message         text,
  -- Where the report was (or was to be) sent, credentials masked; null when none configured.
  endpoint              text,
  agent_count           integer NOT NULL CHECK (agent_count >= 0),
  context_request_count bigint NOT NULL CHECK (context_request_count >= 0),
  bundle_count          integer NOT NULL CHECK (bundle_count >= 0),
  -- Delivery lease: the process sending the report, until when; another process resumes
  -- an unfinished report only after the lease has run out (crash recovery, no double send).
  claimed_by            text,
  claimed_until         timestamptz(3),
  -- When the next attempt is due (status retrying).
  next_attempt_at       timestamptz(3),
  created_at            timestamptz(3) NOT NULL DEFAULT now(),
  updated_at            timestamptz(3) NOT NULL DEFAULT now()
);
-- At most one scheduled report per UTC day, across restarts and processes.
CREATE UNIQUE INDEX telemetry_log_one_scheduled_per_day ON telemetry_log (report_date) WHERE trigger = 'schedule';
-- The log is read newest first.
CREATE INDEX telemetry_log_reported_idx ON telemetry_log (reported_at DESC, id DESC);
-- Unfinished reports (queue depth, resumption after a restart).
CREATE INDEX telemetry_log_queue_idx ON telemetry_log (id) WHERE status IN ('pending', 'retrying');
-- The application may add and update reports, never delete them.
GRANT SELECT, INSERT, UPDATE ON telemetry_log TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
