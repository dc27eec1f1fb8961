-- VAPID key rotation (issue 23): a project can hold several key pairs. Every
-- push subscription is bound to the public key it was made with, so each
-- subscriber records its key and is signed with it, while new subscriptions
-- take the project's current key.
--
-- Only additions. projects.vapid_public and vapid_private stay the project's
-- CURRENT pair (every reader of them, the SDK's key endpoint included, goes on
-- serving the key new subscriptions must use); rotation updates them together
-- with projects.vapid_key_id. A NULL vapid_key_id, on a project or on a
-- subscriber, means the project's original pair, whose id is derived from the
-- project's: 'vk_' and the 26 characters after 'prj_'. So no subscriber row is
-- rewritten here, and a process of the previous release that inserts
-- subscribers during the upgrade (leaving the column NULL) files them under
-- the original pair, which is right as long as no key is rotated before every
-- process runs this release (docs/vapid-keys.md says so).
CREATE TABLE vapid_keys (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  public_key  text NOT NULL,
  private_key text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  -- Set when the key was retired: no push is signed with it any more.
  retired_at  timestamptz
);
CREATE INDEX vapid_keys_project ON vapid_keys (project_id, id);

INSERT INTO vapid_keys (id, project_id, public_key, private_key, created_at)
SELECT 'vk_' || substr(id, 5), id, vapid_public, vapid_private, created_at FROM projects;

ALTER TABLE projects ADD COLUMN vapid_key_id text;
ALTER TABLE subscribers ADD COLUMN vapid_key_id text;

-- A push refused because its VAPID key is not the one the subscription was
-- made with (Apple 400 VapidPkHashMismatch, FCM 403, Mozilla 401): its own
-- failure reason, apart from failed_rejected.
ALTER TABLE broadcasts ADD COLUMN failed_vapid_key_mismatch integer NOT NULL DEFAULT 0;
