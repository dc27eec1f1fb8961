-- Subscription health (issue 23). Each subscriber records when a push service
-- last accepted a push for it, when a click on one of its notifications was
-- last recorded, and how many pushes in a row failed since the last accepted
-- one (reset by an accepted push). Fan-out writes the three in the statement
-- that already records each batch's outcomes (delivery/batch-outcomes.ts).
-- Existing rows start unknown (null) and with no failure: nothing is made up.
ALTER TABLE subscribers ADD COLUMN last_delivered_at timestamptz;
ALTER TABLE subscribers ADD COLUMN last_clicked_at timestamptz;
ALTER TABLE subscribers ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0;

-- A project's expiry rules (docs/subscription-health.md), both off (null) by
-- default: expire a subscription after this many failed pushes in a row, or
-- once it has accepted nothing for this many days while its pushes fail.
ALTER TABLE projects ADD COLUMN expire_after_failures integer
  CHECK (expire_after_failures IS NULL OR expire_after_failures BETWEEN 1 AND 1000);
ALTER TABLE projects ADD COLUMN expire_after_days_without_delivery integer
  CHECK (expire_after_days_without_delivery IS NULL OR expire_after_days_without_delivery BETWEEN 1 AND 3650);

-- The failing subscribers, a small part of a healthy audience: the expiry
-- job's scan, ?health=failing and the failing count read this index only.
CREATE INDEX subscribers_failing_idx ON subscribers (project_id, id)
  WHERE status = 'active' AND consecutive_failures > 0;

-- The expiry job (subscribers/health-expiry.ts) applies both rules every hour
-- and queues its next run in the transaction that completes it, so exactly
-- one is ever queued; this is the first. It never gives up.
INSERT INTO jobs (kind, payload, run_at, max_attempts)
VALUES ('expire_failing_subscribers', '{}', now() + interval '1 hour', 2147483647);
