-- How each subscriber arrived (issue 23): through subscribe (the SDK or the
-- API), a bulk import (POST /v1/subscribers/import), or moved over by the SDK
-- from another provider's key. Existing rows all came through subscribe.
ALTER TABLE subscribers ADD COLUMN source text NOT NULL DEFAULT 'subscribe'
  CHECK (source IN ('subscribe', 'import', 'migrated'));
