-- Spec migration 005: accountable human owner on agents. owner_verified is true only when
-- confirmed against an identity provider; false means manually asserted.
ALTER TABLE agents
  ADD COLUMN owner_name text,
  ADD COLUMN owner_verified boolean NOT NULL DEFAULT false,
  ADD CONSTRAINT agents_owner_verified_check CHECK (NOT owner_verified OR owner_name IS NOT NULL);
