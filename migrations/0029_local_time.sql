-- Time zones, local-time delivery and quiet hours (issue 24, docs/timing.md).
--
-- A subscriber's IANA time zone (the SDK records the browser's; the API may
-- set it). NULL: unknown, the project's default_timezone applies.
ALTER TABLE subscribers ADD COLUMN timezone text;

-- The project's zone for subscribers without one, and its quiet hours
-- ({"start": "22:00", "end": "08:00"}, local time; NULL: none).
ALTER TABLE projects ADD COLUMN default_timezone text NOT NULL DEFAULT 'UTC',
  ADD COLUMN quiet_hours jsonb;

-- A send's timing as given (deliver_at_local, deliver_on, past,
-- ignore_quiet_hours); NULL for a send that gave none.
-- waves_left: the waves of a broadcast whose audience is still being handed
-- to batches (0 for a broadcast sent in one wave, as before).
ALTER TABLE broadcasts ADD COLUMN timing jsonb,
  ADD COLUMN waves_left integer NOT NULL DEFAULT 0,
  ADD COLUMN skipped integer NOT NULL DEFAULT 0;

-- The waves a broadcast is sent in when its subscribers' local times differ:
-- one per due instant, with the zones it covers and how many subscribers it
-- had when it was planned. started turns true when its first batch runs; the
-- broadcast view's `waiting` is the waves not started.
CREATE TABLE broadcast_waves (
  broadcast_id text NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
  wave         integer NOT NULL,
  due_at       timestamptz NOT NULL,
  reason       text NOT NULL CHECK (reason IN ('now', 'local_time', 'quiet_hours')),
  zones        text[] NOT NULL,
  planned      integer NOT NULL,
  started      boolean NOT NULL DEFAULT false,
  PRIMARY KEY (broadcast_id, wave)
);
