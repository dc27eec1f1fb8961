-- A broadcast's progress in the detail the API shows (issue 11): pushes
-- waiting for a retry, failures by reason, counts by push service, and the
-- last push error. Kept on the broadcast row and written by the one UPDATE
-- each batch already makes (broadcasts/broadcast-state.ts addOutcomes), so a
-- batch costs no extra statement and a read of the row is one consistent
-- snapshot: delivered + failed + retrying never exceeds audience there, and
-- pending is what is left of it.
ALTER TABLE broadcasts
  -- Pushes a push service asked to retry (429, 5xx, timeout) whose retry job
  -- has not run yet. On a canceled broadcast: those that were waiting when it
  -- was stopped (they are never sent).
  ADD COLUMN retrying integer NOT NULL DEFAULT 0,
  -- failed by reason; the three add up to failed.
  ADD COLUMN failed_gone integer NOT NULL DEFAULT 0,
  ADD COLUMN failed_rejected integer NOT NULL DEFAULT 0,
  ADD COLUMN failed_unreachable integer NOT NULL DEFAULT 0,
  -- delivered, failed and retrying by subscribers.push_service (migration 0006).
  ADD COLUMN fcm_delivered integer NOT NULL DEFAULT 0,
  ADD COLUMN fcm_failed integer NOT NULL DEFAULT 0,
  ADD COLUMN fcm_retrying integer NOT NULL DEFAULT 0,
  ADD COLUMN mozilla_delivered integer NOT NULL DEFAULT 0,
  ADD COLUMN mozilla_failed integer NOT NULL DEFAULT 0,
  ADD COLUMN mozilla_retrying integer NOT NULL DEFAULT 0,
  ADD COLUMN apple_delivered integer NOT NULL DEFAULT 0,
  ADD COLUMN apple_failed integer NOT NULL DEFAULT 0,
  ADD COLUMN apple_retrying integer NOT NULL DEFAULT 0,
  ADD COLUMN wns_delivered integer NOT NULL DEFAULT 0,
  ADD COLUMN wns_failed integer NOT NULL DEFAULT 0,
  ADD COLUMN wns_retrying integer NOT NULL DEFAULT 0,
  ADD COLUMN other_delivered integer NOT NULL DEFAULT 0,
  ADD COLUMN other_failed integer NOT NULL DEFAULT 0,
  ADD COLUMN other_retrying integer NOT NULL DEFAULT 0,
  -- The latest push that did not deliver (retryable ones included): the push
  -- service's status (null when it never answered), a reason code
  -- (decisions.md "Broadcast progress and stop"), the push service, and when.
  ADD COLUMN last_error_status integer,
  ADD COLUMN last_error_reason text,
  ADD COLUMN last_error_push_service text,
  ADD COLUMN last_error_at timestamptz;

-- Broadcasts sent before this migration: failures by reason and the push
-- service breakdown from their events. Failures whose event went with an
-- erased subscriber (events cascade with their subscriber) can no longer be
-- told apart; they count as gone (the subscription no longer exists), so the
-- reasons still add up to failed. Their push service is unknown: the
-- breakdown of such a broadcast may add up to less than its counts.
UPDATE broadcasts SET failed_gone = failed WHERE failed > 0;

WITH counts AS (
  SELECT e.broadcast_id,
         count(*) FILTER (WHERE e.type = 'failed' AND e.meta ->> 'reason' = 'rejected')::integer AS rejected,
         count(*) FILTER (WHERE e.type = 'failed' AND e.meta ->> 'reason' = 'unreachable')::integer AS unreachable,
         count(*) FILTER (WHERE e.type = 'delivered' AND s.push_service = 'fcm')::integer AS fcm_delivered,
         count(*) FILTER (WHERE e.type = 'failed' AND s.push_service = 'fcm')::integer AS fcm_failed,
         count(*) FILTER (WHERE e.type = 'delivered' AND s.push_service = 'mozilla')::integer AS mozilla_delivered,
         count(*) FILTER (WHERE e.type = 'failed' AND s.push_service = 'mozilla')::integer AS mozilla_failed,
         count(*) FILTER (WHERE e.type = 'delivered' AND s.push_service = 'apple')::integer AS apple_delivered,
         count(*) FILTER (WHERE e.type = 'failed' AND s.push_service = 'apple')::integer AS apple_failed,
         count(*) FILTER (WHERE e.type = 'delivered' AND s.push_service = 'wns')::integer AS wns_delivered,
         count(*) FILTER (WHERE e.type = 'failed' AND s.push_service = 'wns')::integer AS wns_failed,
         count(*) FILTER (WHERE e.type = 'delivered' AND s.push_service = 'other')::integer AS other_delivered,
         count(*) FILTER (WHERE e.type = 'failed' AND s.push_service = 'other')::integer AS other_failed
    FROM events e
    JOIN subscribers s ON s.id = e.subscriber_id
   WHERE e.type IN ('delivered', 'failed')
   GROUP BY e.broadcast_id
)
UPDATE broadcasts b
   SET failed_rejected = c.rejected,
       failed_unreachable = c.unreachable,
       failed_gone = GREATEST(0, b.failed - c.rejected - c.unreachable),
       fcm_delivered = c.fcm_delivered, fcm_failed = c.fcm_failed,
       mozilla_delivered = c.mozilla_delivered, mozilla_failed = c.mozilla_failed,
       apple_delivered = c.apple_delivered, apple_failed = c.apple_failed,
       wns_delivered = c.wns_delivered, wns_failed = c.wns_failed,
       other_delivered = c.other_delivered, other_failed = c.other_failed
  FROM counts c
 WHERE b.id = c.broadcast_id;
