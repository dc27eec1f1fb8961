-- Passwords people can change and operators can reset (issue 22, finding 7),
-- and API keys that say who made them (issue 22, review notes).

-- A reset link the operator makes for an account (`herald users
-- reset-password`, POST /admin/v1/users/password-reset): single use, short
-- lived, its token stored only as its SHA-256 (as invites, accounts/tokens.ts).
CREATE TABLE password_resets (
  id         text PRIMARY KEY,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- SHA-256 of the link's token: the link itself is shown once.
  token_hash text NOT NULL UNIQUE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  -- Set by the one UPDATE that uses the link; a newer link or a used one ends the others.
  used_at    timestamptz
);
CREATE INDEX password_resets_user_idx ON password_resets (user_id);

-- Who made the key: 'user' (a member's session, created_by_id usr_…), 'key'
-- (a full key, key_…) or 'operator' (the admin API or the CLI, no id). Null
-- for keys made before this migration: nobody recorded it then.
-- Not foreign keys: the record outlives a removed member or a revoked key.
ALTER TABLE api_keys
  ADD COLUMN created_by_type text CHECK (created_by_type IN ('user', 'key', 'operator')),
  ADD COLUMN created_by_id text;
-- The removal of a member lists the keys they made that still work.
CREATE INDEX api_keys_created_by_idx ON api_keys (project_id, created_by_id) WHERE revoked_at IS NULL;
