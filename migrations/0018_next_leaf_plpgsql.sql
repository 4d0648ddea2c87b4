-- svc_audit_next_leaf (migrations 0011 and 0012) as before, in PL/pgSQL instead of SQL. The
-- audit writer's svc_audit_append calls it once a batch; a SQL function called from PL/pgSQL
-- is parsed and planned again in each transaction (its three subqueries included), under the
-- chain lock: in a profile of PostgreSQL under the context benchmark's W1 (perf), the call
-- took about 7% of PostgreSQL's CPU, most of it parsing and planning. PL/pgSQL keeps the
-- statement's plan for the session. REST W1, four alternated pairs (2026-11-28): 10,125,
-- 11,030, 7,931 and 11,211 req/s before, 12,179, 12,304, 10,868 and 11,320 after. Same
-- result, same name and OID (the columns' defaults keep calling it).
CREATE OR REPLACE FUNCTION svc_audit_next_leaf() RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
  RETURN greatest(
    coalesce((SELECT leaf_index FROM agent_context_requests ORDER BY leaf_index DESC LIMIT 1), -1),
    coalesce((SELECT leaf_index FROM agent_output_logs ORDER BY leaf_index DESC LIMIT 1), -1),
    coalesce((SELECT leaf_index FROM audit_management_events ORDER BY leaf_index DESC LIMIT 1), -1)) + 1;
END;
$fn$;
