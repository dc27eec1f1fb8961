-- Webhooks an owner can debug (issue 11): why an endpoint is disabled, a log
-- of delivery attempts, and a second secret during a rotation.

-- Why the endpoint is disabled, in words shown to its owner (410 Gone, failing
-- for days, or disabled by the owner); null while active.
ALTER TABLE webhooks ADD COLUMN disabled_reason text;
UPDATE webhooks SET disabled_reason = 'disabled by Herald before reasons were recorded: the endpoint answered 410 Gone or failed without a success for days'
 WHERE status = 'disabled';

-- The secret a rotation replaced, kept (in clear, like `secret`: Herald signs
-- with it) until previous_secret_expires_at; deliveries until then carry a
-- signature with each secret.
ALTER TABLE webhooks ADD COLUMN previous_secret text;
ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at timestamptz;

-- One row per attempt to send to an endpoint (a real delivery or a test
-- event), written in the transaction recording the attempt's outcome. Kept
-- for 7 days and at most a fixed number per endpoint (webhooks/webhook-attempts.store.ts).
CREATE TABLE webhook_attempts (
  id              bigserial PRIMARY KEY,
  webhook_id      text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  -- No foreign key: a test event has no events row, and erasing a subscriber
  -- erases its events while this log (which names no subscriber) stays.
  event_id        text NOT NULL,
  event_type      text NOT NULL,
  attempt         integer NOT NULL,
  outcome         text NOT NULL CHECK (outcome IN ('delivered', 'failed', 'retrying')),
  response_status integer,
  -- A short, fixed description of a network error (never a stack or a body).
  error           text,
  duration_ms     integer NOT NULL,
  attempted_at    timestamptz NOT NULL DEFAULT now(),
  next_attempt_at timestamptz
);
-- An endpoint's log, newest first (GET /v1/webhooks/:id/deliveries), and its size cap.
CREATE INDEX webhook_attempts_webhook_idx ON webhook_attempts (webhook_id, id);
