-- Spec migration 003: agent output logging, linked to a context request. Append-only.
CREATE TABLE agent_output_logs (
  output_id   text PRIMARY KEY,
  request_id  text NOT NULL REFERENCES agent_context_requests (request_id),
  agent_id    text NOT NULL REFERENCES agents (agent_id),
  output_type text,
  output      jsonb NOT NULL,
  output_hash text NOT NULL,
  created_at  timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX agent_output_logs_request_idx ON agent_output_logs (request_id);
CREATE TRIGGER agent_output_logs_immutable
  BEFORE UPDATE OR DELETE ON agent_output_logs
  FOR EACH ROW EXECUTE FUNCTION svc_reject_audit_change();
CREATE TRIGGER agent_output_logs_no_truncate
  BEFORE TRUNCATE ON agent_output_logs
  FOR EACH STATEMENT EXECUTE FUNCTION svc_reject_audit_change();
GRANT SELECT, INSERT ON agent_output_logs TO svc_app;
GRANT SELECT ON agent_output_logs TO svc_audit;
