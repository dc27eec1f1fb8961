-- Numbers over time (issue 25, docs/stats.md): one row per project and UTC
-- hour with the counters of what happened in it. GET /v1/stats sums these
-- rows into hours or days of the project's time zone, so a year of a project
-- with millions of events reads at most 8,784 rows by primary key.
--
-- Every counter is incremented in the transaction of what it counts, by one
-- upsert per statement (a fan-out batch's outcomes, a batch of beacons: the
-- stats/stats.store.ts addStats; subscribers changing status: the triggers
-- below), never a statement per push. The row is taken after the subscriber
-- rows and before the broadcast rows (the lock order of src/delivery/fanout.ts).
CREATE TABLE stats_hourly (
  project_id          text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  -- The start of the UTC hour (date_trunc('hour', now(), 'UTC') of the transaction).
  hour                timestamptz NOT NULL,
  -- Pushes handed to a push service (delivered, or failed after the push
  -- service answered or could not be reached; capped and skipped are not sent).
  sent                integer NOT NULL DEFAULT 0,
  delivered           integer NOT NULL DEFAULT 0,
  failed              integer NOT NULL DEFAULT 0,
  -- failed by reason (broadcasts.schemas.ts FAIL_REASONS): columns, summed by
  -- the read as plainly as the others. A reason a later release adds gets a
  -- column in its migration; until then it counts in failed alone.
  failed_gone         integer NOT NULL DEFAULT 0,
  failed_rejected     integer NOT NULL DEFAULT 0,
  failed_unreachable  integer NOT NULL DEFAULT 0,
  failed_vapid_key_mismatch integer NOT NULL DEFAULT 0,
  failed_capped       integer NOT NULL DEFAULT 0,
  failed_skipped      integer NOT NULL DEFAULT 0,
  -- Beacons, counted by type (shown comes with the service worker's shown beacon).
  shown               integer NOT NULL DEFAULT 0,
  clicked             integer NOT NULL DEFAULT 0,
  dismissed           integer NOT NULL DEFAULT 0,
  -- Subscribers that became active, by their source (migration 0023).
  gained_subscribe    integer NOT NULL DEFAULT 0,
  gained_import       integer NOT NULL DEFAULT 0,
  gained_migrated     integer NOT NULL DEFAULT 0,
  -- Active subscribers that stopped being active, by why.
  lost_unsubscribed   integer NOT NULL DEFAULT 0,
  lost_expired        integer NOT NULL DEFAULT 0,
  lost_erased         integer NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, hour)
);

-- When a project's numbers start: the upgrade for the projects that exist
-- now (now() is the migration's time, stored once for every existing row),
-- the creation for the others. Nothing before it is counted (no backfill:
-- docs/stats.md), and GET /v1/stats gives no active count before it.
ALTER TABLE projects ADD COLUMN stats_since timestamptz NOT NULL DEFAULT now();

-- herald restore inserts subscribers as they were, with the stats rows of the
-- backup: it turns the triggers below off for its transactions
-- (set_config('herald.stats', 'off', true)), or every restored subscriber
-- would count as gained at the hour of the restore.
CREATE FUNCTION stats_counting() RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT coalesce(current_setting('herald.stats', true), '') <> 'off'
$$;

-- Statement-level triggers with transition tables, like migration 0003's
-- (whose project_counters they keep in step with: both see the same rows, so
-- the active count and the gains and losses agree): one upsert per project per
-- statement, only when something became or stopped being active. They run
-- after 0003's (triggers fire in name order: subscribers_count_ < subscribers_stats_).
CREATE FUNCTION subscribers_stats_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT stats_counting() THEN RETURN NULL; END IF;
  INSERT INTO stats_hourly AS s (project_id, hour, gained_subscribe, gained_import, gained_migrated)
  SELECT project_id, date_trunc('hour', now(), 'UTC'),
         count(*) FILTER (WHERE source = 'subscribe'),
         count(*) FILTER (WHERE source = 'import'),
         count(*) FILTER (WHERE source = 'migrated')
    FROM new_rows WHERE status = 'active'
   GROUP BY project_id
   ORDER BY project_id
  ON CONFLICT (project_id, hour) DO UPDATE
     SET gained_subscribe = s.gained_subscribe + EXCLUDED.gained_subscribe,
         gained_import = s.gained_import + EXCLUDED.gained_import,
         gained_migrated = s.gained_migrated + EXCLUDED.gained_migrated;
  RETURN NULL;
END
$$;

CREATE FUNCTION subscribers_stats_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT stats_counting() THEN RETURN NULL; END IF;
  INSERT INTO stats_hourly AS s (project_id, hour, gained_subscribe, gained_import, gained_migrated, lost_unsubscribed, lost_expired)
  SELECT n.project_id, date_trunc('hour', now(), 'UTC'),
         count(*) FILTER (WHERE n.status = 'active' AND n.source = 'subscribe'),
         count(*) FILTER (WHERE n.status = 'active' AND n.source = 'import'),
         count(*) FILTER (WHERE n.status = 'active' AND n.source = 'migrated'),
         count(*) FILTER (WHERE n.status = 'unsubscribed'),
         count(*) FILTER (WHERE n.status = 'expired')
    FROM new_rows n JOIN old_rows o ON o.id = n.id
   WHERE (o.status = 'active') <> (n.status = 'active')
   GROUP BY n.project_id
   ORDER BY n.project_id
  ON CONFLICT (project_id, hour) DO UPDATE
     SET gained_subscribe = s.gained_subscribe + EXCLUDED.gained_subscribe,
         gained_import = s.gained_import + EXCLUDED.gained_import,
         gained_migrated = s.gained_migrated + EXCLUDED.gained_migrated,
         lost_unsubscribed = s.lost_unsubscribed + EXCLUDED.lost_unsubscribed,
         lost_expired = s.lost_expired + EXCLUDED.lost_expired;
  RETURN NULL;
END
$$;

-- Erasure of active subscribers. A project being deleted takes its
-- subscribers with it by cascade: its row is gone by then, and so are its stats.
CREATE FUNCTION subscribers_stats_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NOT stats_counting() THEN RETURN NULL; END IF;
  INSERT INTO stats_hourly AS s (project_id, hour, lost_erased)
  SELECT o.project_id, date_trunc('hour', now(), 'UTC'), count(*)
    FROM old_rows o
   WHERE o.status = 'active' AND EXISTS (SELECT 1 FROM projects p WHERE p.id = o.project_id)
   GROUP BY o.project_id
   ORDER BY o.project_id
  ON CONFLICT (project_id, hour) DO UPDATE
     SET lost_erased = s.lost_erased + EXCLUDED.lost_erased;
  RETURN NULL;
END
$$;

CREATE TRIGGER subscribers_stats_insert AFTER INSERT ON subscribers
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION subscribers_stats_insert();
CREATE TRIGGER subscribers_stats_update AFTER UPDATE ON subscribers
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION subscribers_stats_update();
CREATE TRIGGER subscribers_stats_delete AFTER DELETE ON subscribers
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION subscribers_stats_delete();
