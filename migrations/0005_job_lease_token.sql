-- A lease token per claim. Every write a worker makes about a job it runs
-- (renewal, completion, saved progress, failure) names the token of its
-- claim, not only its worker id: one worker can claim the same job again
-- after its lease lapsed, and a renewal or completion left over from the
-- earlier run must then change nothing. NULL while nobody holds the job.
ALTER TABLE jobs ADD COLUMN lease_token text;
