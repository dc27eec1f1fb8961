-- Frequency caps (issue 24, docs/frequency-caps.md): a project may cap how
-- many pushes each subscriber gets in rolling windows, across every broadcast.
--
-- The project's rules, e.g. [{"max": 2, "per": "1d"}, {"max": 5, "per": "7d"}].
-- NULL (every project before this migration) or []: no caps, and fan-out
-- counts nothing (a broadcast costs what it did before).
ALTER TABLE projects ADD COLUMN frequency_caps jsonb;

ALTER TABLE broadcasts
  -- 'transactional' sends are never capped (their pushes still count);
  -- 'marketing' ones are. Every broadcast before this migration is marketing,
  -- which changes nothing for a project without caps.
  ADD COLUMN send_class text NOT NULL DEFAULT 'marketing' CHECK (send_class IN ('marketing', 'transactional')),
  -- What a marketing send does with a subscriber over a cap: 'skip' (a failed
  -- push with reason capped) or 'defer' (pushed when the window allows it).
  ADD COLUMN on_capped text NOT NULL DEFAULT 'skip' CHECK (on_capped IN ('skip', 'defer')),
  -- Of failed, the pushes skipped for a cap (failures.capped on the API).
  ADD COLUMN failed_capped integer NOT NULL DEFAULT 0;

-- The pushes each subscriber was counted for, newest last: the times within
-- the longest window a cap may have (30 days), one row per subscriber, so
-- fan-out checks and counts a whole batch with one row lock per subscriber,
-- taken in subscriber id order (frequency-caps/push-counts.store.ts). No
-- foreign key: a subscriber row is locked by other writers in another order,
-- and a row of a subscriber gone is deleted by the prune job.
CREATE TABLE push_counts (
  subscriber_id text PRIMARY KEY,
  project_id text NOT NULL,
  sent_at timestamptz[] NOT NULL DEFAULT '{}',
  -- The newest of sent_at: what the prune job reads.
  last_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX push_counts_last_at_idx ON push_counts (last_at);

-- The prune job (frequency-caps/push-counts-prune.ts) deletes rows whose
-- newest push left the longest window, then queues its next run; this is the
-- first. It never gives up, since nothing would queue another.
INSERT INTO jobs (kind, payload, run_at, max_attempts)
VALUES ('prune_push_counts', '{}', now() + interval '1 hour', 2147483647);
