-- Fan-out bookkeeping. A broadcast's audience is sent in batch jobs, each
-- taking the next slice of subscriber ids after the previous one (keyset), so
-- several workers share a large broadcast and none loads it whole.
ALTER TABLE broadcasts
  -- Batch and retry jobs of this broadcast not yet finished.
  ADD COLUMN pending_batches integer NOT NULL DEFAULT 0,
  -- Set when the last slice of the audience has been handed to a batch job.
  ADD COLUMN planning_done boolean NOT NULL DEFAULT false;

-- A job kind and its broadcast, to find a broadcast's outstanding jobs.
CREATE INDEX jobs_broadcast_idx ON jobs ((payload ->> 'broadcast_id'));
