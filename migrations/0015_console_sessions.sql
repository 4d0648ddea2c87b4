-- Migration 0015: the compliance console's server-side sessions (issue 24).
--
-- A session is opened by signing in with an admin or auditor key; the browser holds only a
-- random session token in an HttpOnly cookie, and this table holds only its SHA-256, the
-- key's name and role (never the key), the session's CSRF token, and its times. A session
-- ends at sign-out (row deleted), after CONSOLE_IDLE_MINUTES without a request, after
-- CONSOLE_SESSION_HOURS in all, or when its key's name is no longer configured.
CREATE TABLE console_sessions (
  token_hash    text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  key_name      text NOT NULL,
  role          text NOT NULL CHECK (role IN ('admin', 'auditor')),
  csrf_token    text NOT NULL,
  created_at    timestamptz(3) NOT NULL DEFAULT now(),
  last_seen_at  timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX console_sessions_last_seen_idx ON console_sessions (last_seen_at);

GRANT SELECT, INSERT, UPDATE, DELETE ON console_sessions TO svc_app;
