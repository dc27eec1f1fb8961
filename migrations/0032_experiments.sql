-- A/B tests (issue 25, docs/experiments.md): a broadcast sent with `variants`
-- and `experiment` tests its variants on a share of the audience, then sends
-- the winner to the rest. One row per experiment, one per variant.
--
-- Which variant a subscriber gets is never stored: it is a function of the
-- broadcast id and the subscriber id (experiments/assignment.ts), so every
-- batch, retry and worker computes the same.

-- True for a broadcast with an experiment: fan-out reads the experiment only
-- for those (one column on the row it reads anyway, not a query per batch).
ALTER TABLE broadcasts ADD COLUMN has_experiment boolean NOT NULL DEFAULT false;

CREATE TABLE broadcast_experiments (
  broadcast_id text PRIMARY KEY REFERENCES broadcasts (id) ON DELETE CASCADE,
  project_id text NOT NULL,
  -- Share of the audience in the test, split evenly among the variants; 1: no winner phase.
  test_share double precision NOT NULL CHECK (test_share > 0 AND test_share <= 1),
  metric text NOT NULL CHECK (metric IN ('clicked', 'shown')),
  decide_after_ms bigint NOT NULL,
  min_per_variant integer NOT NULL,
  on_inconclusive text NOT NULL CHECK (on_inconclusive IN ('best', 'first', 'stop')),
  -- The confidence the z-test asks for (0.95).
  confidence double precision NOT NULL,
  -- waiting (not started), testing, sending_winner, stopped (no winner sent), complete (test_share 1, nothing to decide).
  phase text NOT NULL DEFAULT 'waiting',
  -- When the decision job is due (set when the fan-out starts).
  decide_at timestamptz,
  winner text,
  -- What the decision saw and why it chose (the statistic, p-values, the reason): shown as is.
  decision jsonb,
  decided_at timestamptz,
  created_at timestamptz NOT NULL DEFAULT now()
);

-- A variant's content, and its counts in the test (the rest of the audience
-- counts in the broadcast's totals only). Counts are added by fan-out (one
-- statement per batch) and by the beacon writer, in (broadcast_id, key) order.
CREATE TABLE broadcast_variants (
  broadcast_id text NOT NULL REFERENCES broadcast_experiments (broadcast_id) ON DELETE CASCADE,
  key text NOT NULL,
  position integer NOT NULL,
  title text NOT NULL,
  body text NOT NULL,
  icon text,
  image text,
  url text NOT NULL,
  actions jsonb NOT NULL DEFAULT '[]',
  audience integer NOT NULL DEFAULT 0,
  sent integer NOT NULL DEFAULT 0,
  delivered integer NOT NULL DEFAULT 0,
  failed integer NOT NULL DEFAULT 0,
  clicked integer NOT NULL DEFAULT 0,
  dismissed integer NOT NULL DEFAULT 0,
  shown integer NOT NULL DEFAULT 0,
  PRIMARY KEY (broadcast_id, key)
);
