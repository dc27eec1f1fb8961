-- Throttled sends (issue 12): a broadcast's fan-out at most
-- throttle_per_minute pushes a minute, across all workers, retries included.
-- Every job that sends (a push_batch's slice, a push_retry) first takes a
-- time slot of its pushes × 60 s / rate from the broadcast row
-- (broadcasts/broadcast-state.ts takeThrottleSlot) and sends when it starts,
-- so the slots are back to back and never overlap, whichever worker runs them.
ALTER TABLE broadcasts
  -- NULL: not throttled (every broadcast before this migration).
  ADD COLUMN throttle_per_minute integer CHECK (throttle_per_minute > 0),
  -- The end of the last slot handed out; NULL until the first.
  ADD COLUMN throttle_next_at timestamptz,
  -- First attempts given a slot so far (retries take slots but are not counted
  -- here): what is left of the audience still needs slots, for expected_finish_at.
  ADD COLUMN throttle_planned integer NOT NULL DEFAULT 0;
