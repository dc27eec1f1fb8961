-- Confirmed delivery and the funnel (issue 25, docs/funnel.md).
--
-- shown: notifications the service worker of Herald reported displayed (the
-- `shown` beacon), counted per broadcast like clicked. A shown beacon writes
-- no events row unless an active webhook endpoint of the project subscribed
-- to `shown` (events only exist to carry webhooks and the per-event log), so
-- the counter is the record.
-- clicked_via_link: of clicked, the clicks that came through a click link
-- (GET /c/:token): notifications Safari showed by itself from the
-- Declarative Web Push form, which never report shown. Kept apart so the
-- click-through over shown counts only clicks of notifications that could
-- report being shown.
ALTER TABLE broadcasts ADD COLUMN shown integer NOT NULL DEFAULT 0,
  ADD COLUMN clicked_via_link integer NOT NULL DEFAULT 0;

-- Events may now be of type shown (only written for projects whose webhook
-- asked for them). NOT VALID: every existing row already passes, so the
-- upgrade does not scan the events table under its lock; 0.2.0 processes
-- never write the new type.
ALTER TABLE events DROP CONSTRAINT events_type_check;
ALTER TABLE events ADD CONSTRAINT events_type_check CHECK (type IN ('delivered', 'failed', 'clicked', 'dismissed', 'shown')) NOT VALID;
