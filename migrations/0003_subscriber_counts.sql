-- Active subscribers per project, kept by triggers, so the subscriber cap
-- check at subscribe and the usage shown by /v1/me read one row instead of
-- counting the project's active subscribers (~400 ms at 900k of them).

CREATE TABLE project_counters (
  project_id         text PRIMARY KEY REFERENCES projects (id) ON DELETE CASCADE,
  -- Subscribers with status 'active'; exact, maintained by the triggers below.
  active_subscribers integer NOT NULL DEFAULT 0
);

-- Every project has its counter row from its creation on: the subscribers
-- triggers only UPDATE it (an upsert there would try to re-create the row of
-- a project being deleted, whose subscribers go by cascade).
CREATE FUNCTION project_counters_create() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO project_counters (project_id) VALUES (NEW.id);
  RETURN NULL;
END
$$;

-- Statement-level triggers with transition tables: one UPDATE of the counter
-- per project per statement, however many rows the statement touched (fan-out
-- expires a batch's dead subscriptions in one UPDATE, erasure by external_id
-- and a project's deletion remove many rows at once). The counter row is
-- locked only at the end of the statement, after the subscriber rows, the
-- same order as subscribe takes them, and only when the count changes.
--
-- PostgreSQL allows one event per trigger with transition tables and no
-- column list (no UPDATE OF status), hence three functions, and the UPDATE
-- one runs on every UPDATE of subscribers; rows whose status stays on the
-- same side of 'active' add nothing.
CREATE FUNCTION subscribers_count_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE project_counters c
     SET active_subscribers = c.active_subscribers + d.delta
    FROM (SELECT project_id, count(*)::integer AS delta
            FROM new_rows WHERE status = 'active'
           GROUP BY project_id) d
   WHERE c.project_id = d.project_id;
  RETURN NULL;
END
$$;

CREATE FUNCTION subscribers_count_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE project_counters c
     SET active_subscribers = c.active_subscribers + d.delta
    FROM (SELECT project_id, sum(change)::integer AS delta
            FROM (SELECT project_id, 1 AS change FROM new_rows WHERE status = 'active'
                  UNION ALL
                  SELECT project_id, -1 FROM old_rows WHERE status = 'active') changes
           GROUP BY project_id
          HAVING sum(change) <> 0) d
   WHERE c.project_id = d.project_id;
  RETURN NULL;
END
$$;

CREATE FUNCTION subscribers_count_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE project_counters c
     SET active_subscribers = c.active_subscribers - d.delta
    FROM (SELECT project_id, count(*)::integer AS delta
            FROM old_rows WHERE status = 'active'
           GROUP BY project_id) d
   WHERE c.project_id = d.project_id;
  RETURN NULL;
END
$$;

-- TRUNCATE fires no row or DELETE triggers; no code truncates subscribers,
-- but a counter must not survive the rows it counts.
CREATE FUNCTION subscribers_count_truncate() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  UPDATE project_counters SET active_subscribers = 0 WHERE active_subscribers <> 0;
  RETURN NULL;
END
$$;

-- No project or subscriber may change between the triggers' creation and the
-- backfill, or the counts would start off by the difference (a server still
-- running while this migrates). Released when the migration commits.
LOCK TABLE projects, subscribers IN SHARE ROW EXCLUSIVE MODE;

CREATE TRIGGER projects_counter_row AFTER INSERT ON projects
  FOR EACH ROW EXECUTE FUNCTION project_counters_create();

CREATE TRIGGER subscribers_count_insert AFTER INSERT ON subscribers
  REFERENCING NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION subscribers_count_insert();

CREATE TRIGGER subscribers_count_update AFTER UPDATE ON subscribers
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
  FOR EACH STATEMENT EXECUTE FUNCTION subscribers_count_update();

CREATE TRIGGER subscribers_count_delete AFTER DELETE ON subscribers
  REFERENCING OLD TABLE AS old_rows
  FOR EACH STATEMENT EXECUTE FUNCTION subscribers_count_delete();

CREATE TRIGGER subscribers_count_truncate AFTER TRUNCATE ON subscribers
  FOR EACH STATEMENT EXECUTE FUNCTION subscribers_count_truncate();

INSERT INTO project_counters (project_id, active_subscribers)
SELECT p.id, (SELECT count(*) FROM subscribers s WHERE s.project_id = p.id AND s.status = 'active')
  FROM projects p;
