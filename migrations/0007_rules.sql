-- Rules engine: schemas (JSON Schema, optional edge mapping), versioned rule sets, rules.
CREATE TABLE rule_schemas (
  id         text PRIMARY KEY,
  schema     jsonb NOT NULL,
  edge       jsonb,
  created_at timestamptz(3) NOT NULL DEFAULT now()
);
CREATE TABLE rule_sets (
  id         text NOT NULL,
  version    text NOT NULL,
  schema_id  text NOT NULL REFERENCES rule_schemas (id),
  created_at timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (id, version)
);
CREATE TABLE rules (
  rule_set_id      text NOT NULL,
  rule_set_version text NOT NULL,
  rule_id          text NOT NULL,
  rule_data        jsonb NOT NULL,
  created_at       timestamptz(3) NOT NULL DEFAULT now(),
  PRIMARY KEY (rule_set_id, rule_set_version, rule_id),
  FOREIGN KEY (rule_set_id, rule_set_version) REFERENCES rule_sets (id, version)
);
-- Rule history: every write to a rule, in order.
CREATE TABLE rule_history (
  id               bigserial PRIMARY KEY,
  rule_set_id      text NOT NULL,
  rule_set_version text NOT NULL,
  rule_id          text NOT NULL,
  action           text NOT NULL,
  rule_data        jsonb,
  at               timestamptz(3) NOT NULL DEFAULT now()
);
GRANT SELECT, INSERT, UPDATE, DELETE ON rule_schemas, rule_sets, rules, rule_history TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
