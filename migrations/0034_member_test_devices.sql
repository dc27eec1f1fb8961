-- "Send a test to me" (issue 25, docs/first-use.md): a member's own browsers,
-- subscribed from the dashboard with the project's VAPID key, as test devices.
--
-- A test device is a subscription of the project (a subscribers row: the
-- fan-out, encryption, delivery and beacons are those of every push) with the
-- status 'test', which no audience selects (they all take status 'active'),
-- the active-subscriber counter of 0003 does not count (its triggers count
-- 'active' only), the expiry rules never change (they move 'active' rows
-- only), and the subscriber list, export and counts leave out. A 0.2.0 process
-- sharing the database during an upgrade never writes 'test' and sends to
-- 'active' rows only, so it never reaches a test device.
ALTER TABLE subscribers DROP CONSTRAINT subscribers_status_check;
ALTER TABLE subscribers ADD CONSTRAINT subscribers_status_check CHECK (status IN ('active', 'unsubscribed', 'expired', 'test'));

-- Whose test device a subscription is. A member who leaves the project
-- (memberships row deleted) takes their devices with them, and the trigger
-- below deletes the subscription itself: nobody else may send to it.
CREATE TABLE member_test_devices (
  subscriber_id text PRIMARY KEY REFERENCES subscribers (id) ON DELETE CASCADE,
  project_id    text NOT NULL,
  user_id       text NOT NULL,
  -- What the member calls it ("Chrome on macOS"), from the browser's user agent unless named.
  label         text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  FOREIGN KEY (project_id, user_id) REFERENCES memberships (project_id, user_id) ON DELETE CASCADE
);
CREATE INDEX member_test_devices_member_idx ON member_test_devices (project_id, user_id);

CREATE FUNCTION member_test_device_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  DELETE FROM subscribers WHERE id = OLD.subscriber_id AND status = 'test';
  RETURN NULL;
END $$;
CREATE TRIGGER member_test_devices_delete AFTER DELETE ON member_test_devices
  FOR EACH ROW EXECUTE FUNCTION member_test_device_gone();
