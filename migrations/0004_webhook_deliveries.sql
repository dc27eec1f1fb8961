-- Webhook deliveries: one row per (event, endpoint), written in the same
-- transaction as the event, sent by the worker's webhook dispatcher. A row is
-- deleted once the endpoint answers 2xx, so the table holds only work still to
-- do (plus the deliveries given up on, kept for operators to inspect).
CREATE TABLE webhook_deliveries (
  id              bigserial PRIMARY KEY,
  -- Deleting a webhook (or its project) takes its pending deliveries with it.
  webhook_id      text NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
  -- The body is built from the event row at each attempt (events never change,
  -- so every attempt sends the same bytes); erasing a subscriber erases its
  -- events and so any delivery still carrying its identity.
  event_id        text NOT NULL REFERENCES events (id) ON DELETE CASCADE,
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'failed')),
  attempts        integer NOT NULL DEFAULT 0,
  -- Due time while pending. A claim moves it forward by the lease, so a
  -- delivery whose worker died is due again once the lease has passed.
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  locked_by       text,
  last_status     integer,
  last_error      text,
  created_at      timestamptz NOT NULL DEFAULT now()
);
-- The dispatcher takes each endpoint's oldest due deliveries (at most its free slots).
CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (webhook_id, next_attempt_at, id) WHERE status = 'pending';
-- Deleting a webhook cascades to all its rows, given-up ones included.
CREATE INDEX webhook_deliveries_webhook_idx ON webhook_deliveries (webhook_id);
CREATE INDEX webhook_deliveries_event_idx ON webhook_deliveries (event_id);

-- Start of the endpoint's current run of failed attempts (null after a success):
-- an endpoint failing for days is disabled.
ALTER TABLE webhooks ADD COLUMN failing_since timestamptz;

-- Every event looks up its project's active endpoints: one index probe, which
-- finds nothing for most projects.
CREATE INDEX webhooks_active_idx ON webhooks (project_id) WHERE status = 'active';
