-- API keys in the dashboard (issue 13): a key may be restricted to a scope,
-- and owners see when each key was last used.
ALTER TABLE api_keys
  -- What the key may do (access/access.ts BY_SCOPE); 'full' is what every
  -- key could do before scopes, so existing keys keep their behaviour.
  ADD COLUMN scope text NOT NULL DEFAULT 'full' CHECK (scope IN ('full', 'send', 'subscribers', 'groups', 'webhooks')),
  -- The last request the key authenticated, written at most once a minute
  -- per key (project-auth.ts); NULL until its first use after this migration.
  ADD COLUMN last_used_at timestamptz;
