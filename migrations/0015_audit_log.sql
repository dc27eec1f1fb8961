-- The audit log (issue 13): one row per change made through the API or the
-- dashboard, written by the service in the same transaction as the change
-- (src/audit/audit.store.ts recordAudit), so a change that rolls back leaves
-- no entry and a committed change always has one. Read by GET /v1/audit-log;
-- rows older than HERALD_AUDIT_RETENTION_DAYS are pruned by a periodic job
-- (src/audit/audit-prune.ts). docs/decisions.md "Audit log" lists the actions
-- and what each keeps in details.
CREATE TABLE audit_log (
  -- aud_…: time-ordered, so ORDER BY id DESC is newest first and the cursor is the id.
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  actor_type  text NOT NULL CHECK (actor_type IN ('user', 'key', 'operator')),
  -- usr_… or key_…; null for the operator (one token, nobody in particular).
  -- Not a foreign key: the entry outlives a removed user or a deleted key.
  actor_id    text,
  -- e.g. broadcast.send, group.members.add, member.role_change.
  action      text NOT NULL,
  target_type text,
  target_id   text,
  -- Small and never a secret: what changed (counts, field names, roles), not content.
  details     jsonb NOT NULL DEFAULT '{}',
  ip          text,
  user_agent  text,
  -- The same millisecond as the id's time part.
  created_at  timestamptz NOT NULL
);
-- The list, newest first, and its filters (each with the id for the keyset page).
CREATE INDEX audit_log_project_idx ON audit_log (project_id, id DESC);
CREATE INDEX audit_log_actor_idx ON audit_log (project_id, actor_id, id DESC);
CREATE INDEX audit_log_target_idx ON audit_log (project_id, target_id, id DESC);
-- text_pattern_ops: also serves the prefix filter (action LIKE 'broadcast.%').
CREATE INDEX audit_log_action_idx ON audit_log (project_id, action text_pattern_ops, id DESC);
-- The retention prune's scan.
CREATE INDEX audit_log_created_idx ON audit_log (created_at);

-- The prune job (audit/audit-prune.ts) deletes entries past the retention
-- every hour and queues its next run in the transaction that completes it, so
-- exactly one is ever queued; this is the first. It never gives up.
INSERT INTO jobs (kind, payload, run_at, max_attempts)
VALUES ('prune_audit_log', '{}', now() + interval '1 hour', 2147483647);
