-- Idempotency keys of POST /v1/send (issue 12). One row per (project, key):
-- reserved 'in_progress' by the first request in a statement of its own, so a
-- second API process sees it at once; turned 'done' with the answer in the
-- same transaction that creates the broadcast, so a stored answer and its
-- broadcast exist together or not at all. A request that fails deletes its
-- row (nothing was sent, a retry runs afresh). A process that dies between
-- the reservation and the commit leaves the row 'in_progress' until
-- locked_until, after which a retry with the same body takes it over; the
-- token tells the taker from the one that lost it.
CREATE TABLE idempotency_keys (
  project_id      text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  -- As sent: 1-255 printable ASCII characters (checked by the route's schema).
  key             text NOT NULL,
  -- SHA-256 (hex) of the request: its body with keys sorted, and the source header.
  request_hash    text NOT NULL,
  status          text NOT NULL CHECK (status IN ('in_progress', 'done')),
  -- Names the request that holds the reservation; NULL once done.
  token           text,
  -- While in_progress: after this, the holder is presumed dead and a retry may take over.
  locked_until    timestamptz,
  response_status integer,
  response_body   jsonb,
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- 24 hours after the first request: the key may then be used again, and is pruned.
  expires_at      timestamptz NOT NULL,
  PRIMARY KEY (project_id, key)
);
-- The prune job's scan (broadcasts/idempotency-prune.ts).
CREATE INDEX idempotency_keys_expires_idx ON idempotency_keys (expires_at);

-- The prune job (broadcasts/idempotency-prune.ts) deletes expired keys every
-- 10 minutes and enqueues its next run in the transaction that completes it,
-- so exactly one is ever queued, on whichever worker claims it; this is the
-- first. It never gives up (max_attempts), since nothing would queue another.
INSERT INTO jobs (kind, payload, run_at, max_attempts)
VALUES ('prune_idempotency_keys', '{}', now() + interval '10 minutes', 2147483647);
