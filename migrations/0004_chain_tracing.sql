-- Spec migration 004: multi-agent chain tracing.
ALTER TABLE agent_context_requests
  ADD COLUMN chain_id text,
  ADD COLUMN parent_request_id text;
CREATE INDEX agent_context_requests_chain_idx ON agent_context_requests (chain_id) WHERE chain_id IS NOT NULL;
