-- Subscription health (issue 23). For each subscriber: when a push service
-- last accepted a push for it, when a click on one of its notifications was
-- last recorded, and how many pushes in a row failed since the last accepted
-- one (reset by an accepted push). Fan-out writes them for every push, in the
-- statement that records each batch's outcomes (delivery/batch-outcomes.ts),
-- so they live in a narrow table of their own rather than on `subscribers`:
-- updating 500 wide subscriber rows (six indexes, a generated column) cost
-- about 7 times as much as 500 of these (docs/performance.md). A subscriber
-- without a row has had none of these yet (null times, no failure). Erasing
-- a subscriber erases its row.
CREATE TABLE subscriber_health (
  subscriber_id        text PRIMARY KEY REFERENCES subscribers (id) ON DELETE CASCADE,
  -- The subscriber's project (never changes): the per-project scans below.
  project_id           text NOT NULL,
  last_delivered_at    timestamptz,
  last_clicked_at      timestamptz,
  consecutive_failures integer NOT NULL DEFAULT 0
) WITH (fillfactor = 70); -- room on each page for updated rows (HOT updates)

-- The failing subscribers, a small part of a healthy audience: the expiry
-- job's scan, ?health=failing and the failing count read this index.
CREATE INDEX subscriber_health_failing_idx ON subscriber_health (project_id, subscriber_id)
  WHERE consecutive_failures > 0;

-- A project's expiry rules (docs/subscription-health.md), both off (null) by
-- default: expire a subscription after this many failed pushes in a row, or
-- once it has accepted nothing for this many days while its pushes fail.
ALTER TABLE projects ADD COLUMN expire_after_failures integer
  CHECK (expire_after_failures IS NULL OR expire_after_failures BETWEEN 1 AND 1000);
ALTER TABLE projects ADD COLUMN expire_after_days_without_delivery integer
  CHECK (expire_after_days_without_delivery IS NULL OR expire_after_days_without_delivery BETWEEN 1 AND 3650);

-- The expiry job (subscribers/health-expiry.ts) applies both rules every hour
-- and queues its next run in the transaction that completes it, so exactly
-- one is ever queued; this is the first. It never gives up.
INSERT INTO jobs (kind, payload, run_at, max_attempts)
VALUES ('expire_failing_subscribers', '{}', now() + interval '1 hour', 2147483647);
