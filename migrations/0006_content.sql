-- Context content: versioned immutable bundles, SCD snapshots, the graph, tags, deployments.

CREATE TABLE bundles (
  bundle_id         text NOT NULL CHECK (bundle_id ~ '^bundle:[A-Za-z0-9._-]+$'),
  version           text NOT NULL CHECK (version = 'DRAFT' OR version ~ '^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)$'),
  bundle_type       text NOT NULL CHECK (bundle_type IN ('project', 'meta', 'standards', 'domain', 'concern')),
  schema_version    text,
  title             text,
  created_by        text NOT NULL,
  description       text,
  manifest          jsonb NOT NULL,
  validation_status text NOT NULL DEFAULT 'pending' CHECK (validation_status IN ('pending', 'valid', 'invalid')),
  validation_errors jsonb,
  created_at        timestamptz(3) NOT NULL DEFAULT now(),
  published_at      timestamptz(3),
  is_active         boolean NOT NULL DEFAULT true,
  PRIMARY KEY (bundle_id, version)
);
CREATE INDEX bundles_type_idx ON bundles (bundle_type);
-- Who imports a name unpinned: a new version of that name may close a cycle (publish check).
CREATE INDEX bundles_imports_idx ON bundles USING gin ((manifest->'imports'));

-- The content of each SCD as published in one bundle version (immutable with the version).
CREATE TABLE bundle_scds (
  bundle_id      text NOT NULL,
  bundle_version text NOT NULL,
  scd_id         text NOT NULL CHECK (scd_id ~ '^scd:[A-Za-z0-9_-]+:[A-Za-z0-9._-]+$'),
  position       integer NOT NULL,
  document       jsonb NOT NULL,
  content_yaml   text NOT NULL,
  PRIMARY KEY (bundle_id, bundle_version, scd_id),
  FOREIGN KEY (bundle_id, bundle_version) REFERENCES bundles (bundle_id, version)
);
CREATE INDEX bundle_scds_scd_idx ON bundle_scds (scd_id);

-- Graph: nodes (Bundle, SCD, Role, Agent, Entity) and typed edges. `source` names what
-- produced the edge (a bundle version, a rule set, the agent registry).
CREATE TABLE graph_nodes (
  node_id text PRIMARY KEY,
  label   text NOT NULL CHECK (label IN ('Bundle', 'SCD', 'Role', 'Agent', 'Entity')),
  props   jsonb
);
CREATE TABLE graph_edges (
  id        bigserial PRIMARY KEY,
  edge_type text NOT NULL CHECK (edge_type IN ('CONTAINS', 'IMPORTS', 'APPLIES_TO', 'GOVERNED_BY', 'REFERENCES',
                                              'ON_FORMULARY', 'IN_NETWORK', 'REQUIRES_PRIOR_AUTH',
                                              'HAS_ROLE', 'HAS_OVERRIDE', 'HAS_RESTRICTION')),
  from_id   text NOT NULL,
  to_id     text NOT NULL,
  source    text NOT NULL,
  props     jsonb,
  UNIQUE (edge_type, from_id, to_id, source)
);
CREATE INDEX graph_edges_from_idx ON graph_edges (from_id, edge_type);
CREATE INDEX graph_edges_to_idx ON graph_edges (to_id, edge_type);
CREATE INDEX graph_edges_source_idx ON graph_edges (source);

CREATE TABLE tags (
  tag_name            text PRIMARY KEY CHECK (tag_name ~ '^[A-Za-z0-9._-]+:[A-Za-z0-9._-]+$'),
  bundle_id           text NOT NULL,
  bundle_version      text NOT NULL,
  resolved_bundle_ids text[] NOT NULL DEFAULT '{}',
  context_yaml        text,
  description         text,
  created_at          timestamptz(3) NOT NULL DEFAULT now(),
  updated_at          timestamptz(3) NOT NULL DEFAULT now(),
  FOREIGN KEY (bundle_id, bundle_version) REFERENCES bundles (bundle_id, version)
);

-- Every move of every tag, in order: which version a tag pointed to, and when.
CREATE TABLE tag_history (
  id             bigserial PRIMARY KEY,
  tag_name       text NOT NULL,
  bundle_id      text NOT NULL,
  bundle_version text NOT NULL,
  moved_at       timestamptz(3) NOT NULL DEFAULT now()
);

CREATE TABLE deployments (
  deployment_id    uuid PRIMARY KEY,
  project_bundles  text[] NOT NULL,
  resolved_bundles text[] NOT NULL,
  -- A newer deployment of the same project bundle id supersedes an older one.
  status           text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'superseded')),
  superseded_by    uuid,
  superseded_at    timestamptz(3),
  created_by       text,
  created_at       timestamptz(3) NOT NULL DEFAULT now()
);
CREATE INDEX deployments_status_idx ON deployments (status);

-- One counter bumped in the same transaction as every change to bundles, tags and
-- deployments: processes compare it with the version of their in-memory materialization,
-- so a stale cache cannot outlive a missed broker message by more than one check period.
-- Writers take its row lock first, which also serializes content writes (publish-time
-- cycle detection and version conflicts see each other's committed rows).
-- `bundles_version` moves only with the bundles table (publish, deactivate): a process's
-- in-memory copy of the bundle headers (imports, types, activity) is exact while it holds.
CREATE TABLE content_version (
  singleton       boolean PRIMARY KEY DEFAULT true CHECK (singleton),
  version         bigint NOT NULL,
  bundles_version bigint NOT NULL DEFAULT 0
);
INSERT INTO content_version (singleton, version, bundles_version) VALUES (true, 0, 0);

GRANT SELECT, INSERT, UPDATE, DELETE ON bundles, bundle_scds, graph_nodes, graph_edges, tags, tag_history, deployments TO svc_app;
GRANT SELECT, UPDATE ON content_version TO svc_app;
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO svc_app;
