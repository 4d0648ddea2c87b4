-- Base schema: the agent registry, API keys, the context request record, MCP servers and
-- policy history. The spec's numbered changes 001-005 follow as 0001-0005.

CREATE TABLE agents (
  agent_id        text PRIMARY KEY CHECK (agent_id ~ '^agent:[A-Za-z0-9._-]+$'),
  name            text NOT NULL,
  description     text,
  role_id         text NOT NULL CHECK (role_id ~ '^role:[A-Za-z0-9._-]+$'),
  -- API takes strings; the store keeps objects {task_type, scope?}.
  allowed_intents jsonb NOT NULL DEFAULT '[]'::jsonb CHECK (jsonb_typeof(allowed_intents) = 'array'),
  overrides       text[] NOT NULL DEFAULT '{}',
  restrictions    text[] NOT NULL DEFAULT '{}',
  status          text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended', 'revoked')),
  created_by      text NOT NULL,
  created_at      timestamptz(3) NOT NULL DEFAULT now(),
  updated_at      timestamptz(3) NOT NULL DEFAULT now(),
  organization_id text
);
CREATE INDEX agents_role_idx ON agents (role_id);
CREATE INDEX agents_status_idx ON agents (status);
CREATE INDEX agents_created_idx ON agents (created_at, agent_id);

CREATE TABLE agent_api_keys (
  key_id       text PRIMARY KEY CHECK (key_id ~ '^[A-Za-z0-9._:-]{1,128}$'),
  agent_id     text NOT NULL REFERENCES agents (agent_id),
  -- Only the prefix (lookup) and the hex SHA-256 of the key are stored, never the key.
  key_prefix   text NOT NULL CHECK (length(key_prefix) = 8),
  key_hash     text NOT NULL CHECK (key_hash ~ '^[0-9a-f]{64}$'),
  name         text,
  scopes       text[],
  is_active    boolean NOT NULL DEFAULT true,
  created_at   timestamptz(3) NOT NULL DEFAULT now(),
  expires_at   timestamptz(3),
  last_used_at timestamptz(3)
);
CREATE INDEX agent_api_keys_prefix_idx ON agent_api_keys (key_prefix);
CREATE INDEX agent_api_keys_agent_idx ON agent_api_keys (agent_id);

-- The context request record (audit log). Append-only from 0001 on.
CREATE TABLE agent_context_requests (
  request_id         text PRIMARY KEY,
  agent_id           text REFERENCES agents (agent_id),
  task_type          text NOT NULL,
  request_params     jsonb,
  intent_valid       boolean NOT NULL,
  validation_errors  jsonb,
  context_bundle_ids text[],
  context_scd_ids    text[],
  processing_time_ms integer,
  requested_at       timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX agent_context_requests_agent_idx ON agent_context_requests (agent_id);

CREATE TABLE mcp_servers (
  server_id      text PRIMARY KEY CHECK (server_id ~ '^mcp_[0-9a-f]{32}$'),
  name           text NOT NULL,
  description    text,
  status         text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'inactive', 'deprecated')),
  owner_name     text,
  -- True only when owner_name was confirmed against an identity provider.
  owner_verified boolean NOT NULL DEFAULT false CHECK (NOT owner_verified OR owner_name IS NOT NULL),
  created_by     text NOT NULL,
  created_at     timestamptz(3) NOT NULL DEFAULT now(),
  updated_at     timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX mcp_servers_status_idx ON mcp_servers (status);
CREATE INDEX mcp_servers_created_idx ON mcp_servers (created_at, server_id);

-- Every change to an agent's overrides and restrictions, in order (who, when, what).
CREATE TABLE agent_policy_overrides (
  id           bigserial PRIMARY KEY,
  agent_id     text NOT NULL REFERENCES agents (agent_id),
  overrides    text[] NOT NULL,
  restrictions text[] NOT NULL,
  set_by       text NOT NULL,
  set_at       timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX agent_policy_overrides_agent_idx ON agent_policy_overrides (agent_id);
