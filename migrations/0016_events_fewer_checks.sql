-- Fan-out writes an events row per push (issue 14), and each of the row's
-- three foreign keys cost a lookup and a row lock per row: measured on the
-- embedded database, 500 delivered events took ~50 µs a row with the three,
-- ~30 µs with the subscriber's alone (docs/performance.md, "Events without
-- two of their foreign keys"). Two of the three checked nothing worth it:
--
-- - project_id: every event's broadcast is of that project. Fan-out writes
--   the events of the broadcast it sends, under its own project; a beacon's
--   event is written only if its broadcast is found with that project
--   (events.store.ts recordEvents). The broadcast's own foreign key already
--   ties it to the project.
-- - broadcast_id: the broadcast exists when its events are written (fan-out
--   sends it; beacons join it) and broadcasts are never deleted on their own.
--   What the key did besides, deleting a broadcast's events with it (when its
--   project is deleted), is kept by the trigger below, once per statement.
--
-- The subscriber's key stays: erasing a subscriber must take its events with
-- it, and a push whose subscriber is being erased meanwhile must not leave an
-- event behind (its key-share lock makes the erasure and the batch wait for
-- each other).
ALTER TABLE events DROP CONSTRAINT events_project_id_fkey;
ALTER TABLE events DROP CONSTRAINT events_broadcast_id_fkey;

CREATE FUNCTION delete_events_of_deleted_broadcasts() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM events e USING deleted d WHERE e.broadcast_id = d.id;
  RETURN NULL;
END
$$;

CREATE TRIGGER broadcasts_delete_events
  AFTER DELETE ON broadcasts
  REFERENCING OLD TABLE AS deleted
  FOR EACH STATEMENT EXECUTE FUNCTION delete_events_of_deleted_broadcasts();
