-- Key rotation (issue 22): a rotated key points at its successor and keeps working until
-- grace_until (its expires_at is moved to that time as well, so authentication, which checks
-- expires_at on every request, needs nothing new); the successor names its predecessor.
ALTER TABLE agent_api_keys
  ADD COLUMN rotated_from text REFERENCES agent_api_keys (key_id),
  ADD COLUMN rotated_to text REFERENCES agent_api_keys (key_id),
  ADD COLUMN rotated_at timestamptz(3),
  ADD COLUMN grace_until timestamptz(3);
-- A key is rotated at most once; rotated_at and grace_until come with rotated_to.
ALTER TABLE agent_api_keys ADD CONSTRAINT agent_api_keys_rotated_to_key UNIQUE (rotated_to);
ALTER TABLE agent_api_keys ADD CONSTRAINT agent_api_keys_rotation_check
  CHECK ((rotated_to IS NULL) = (rotated_at IS NULL) AND (rotated_to IS NULL) = (grace_until IS NULL));
