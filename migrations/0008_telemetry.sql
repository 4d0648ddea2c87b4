-- Telemetry: every beacon attempt, with the exact payload sent.
CREATE TABLE telemetry_log (
  id                    bigserial PRIMARY KEY,
  report_date           date NOT NULL,
  trigger               text NOT NULL CHECK (trigger IN ('schedule', 'manual')),
  reported_at           timestamptz(3) NOT NULL DEFAULT now(),
  status                text NOT NULL CHECK (status IN ('pending', 'retrying', 'sent', 'failed')),
  attempts              integer NOT NULL DEFAULT 0,
  payload               jsonb NOT NULL,
  signed                boolean NOT NULL,
  error_message         text,
  endpoint              text,
  agent_count           integer NOT NULL,
  context_request_count integer NOT NULL,
  bundle_count          integer NOT NULL,
  updated_at            timestamptz(3) NOT NULL DEFAULT now()
);
-- At most one scheduled report per UTC day, across restarts and processes.
CREATE UNIQUE INDEX telemetry_log_one_scheduled_per_day ON telemetry_log (report_date) WHERE trigger = 'schedule';
GRANT SELECT, INSERT, UPDATE ON telemetry_log TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
