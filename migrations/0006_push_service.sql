-- Which push service a subscription belongs to, from its endpoint's host
-- (the hosts of decisions.md §5 and notes/push-protocol.md): fcm, mozilla,
-- apple, wns, or other (a self-hosted or test push service). Stored and
-- generated, so that counting an audience by push service, the broadcast
-- breakdown and filters read a column instead of parsing URLs, and no writer
-- can get it wrong. The host is compared whole or by its dot-suffix, never
-- as a substring of the URL.
ALTER TABLE subscribers ADD COLUMN push_service text GENERATED ALWAYS AS (
  CASE
    WHEN lower(substring(endpoint FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)')) IN ('fcm.googleapis.com', 'android.googleapis.com') THEN 'fcm'
    WHEN lower(substring(endpoint FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)')) = 'updates.push.services.mozilla.com'
      OR lower(substring(endpoint FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)')) LIKE '%.push.services.mozilla.com' THEN 'mozilla'
    WHEN lower(substring(endpoint FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)')) LIKE '%.push.apple.com' THEN 'apple'
    WHEN lower(substring(endpoint FROM '^[A-Za-z][A-Za-z0-9+.-]*://([^/:?#]+)')) LIKE '%.notify.windows.com' THEN 'wns'
    ELSE 'other'
  END
) STORED;
