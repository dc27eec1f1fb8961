-- People who sign in to the dashboard (issue 13): users, their role in each
-- project, the invite links that make them members, and their sessions.
-- No secret is stored in clear: passwords as scrypt hashes, invite tokens and
-- session ids as SHA-256 hashes (src/accounts/).

CREATE TABLE users (
  id            text PRIMARY KEY,
  -- Lower-cased and trimmed by the code, so one person is one row.
  email         text NOT NULL UNIQUE,
  -- scrypt$N$r$p$salt$hash (accounts/passwords.ts); null until the first invite is accepted.
  password_hash text,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  user_id    text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  role       text NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, user_id)
);
-- "My projects" at sign-in.
CREATE INDEX memberships_user_idx ON memberships (user_id);

CREATE TABLE invites (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  email       text NOT NULL,
  role        text NOT NULL CHECK (role IN ('owner', 'admin', 'editor', 'viewer')),
  -- SHA-256 of the link's token: the link itself is shown once.
  token_hash  text NOT NULL UNIQUE,
  -- Null when the operator made it.
  invited_by  text REFERENCES users (id) ON DELETE SET NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  accepted_at timestamptz,
  revoked_at  timestamptz
);
CREATE INDEX invites_project_idx ON invites (project_id, id);

CREATE TABLE sessions (
  -- SHA-256 of the cookie's random id: a copy of this table signs nobody in.
  id_hash      text PRIMARY KEY,
  user_id      text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
  -- The project the session acts in when a request names none.
  project_id   text REFERENCES projects (id) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL,
  last_seen_at timestamptz NOT NULL,
  -- created_at + the absolute lifetime; the idle limit is checked against last_seen_at.
  expires_at   timestamptz NOT NULL
);
CREATE INDEX sessions_user_idx ON sessions (user_id);
