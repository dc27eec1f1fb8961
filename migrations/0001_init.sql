-- Herald's first schema. Times are timestamptz; the API turns them into Unix ms.
-- Ids are prefixed, time-ordered strings made by src/platform/ids.ts, so
-- ORDER BY id is creation order and keyset pagination works on id alone.

CREATE TABLE projects (
  id            text PRIMARY KEY,
  name          text NOT NULL,
  domain        text,
  plan          text NOT NULL CHECK (plan IN ('free', 'hobby', 'plus', 'pro', 'max')),
  default_icon  text,
  -- Per-project overrides of the plan's numbers: { groups, subscribers, monthly_pushes, requests_per_minute }.
  limits        jsonb NOT NULL DEFAULT '{}'::jsonb,
  vapid_public  text NOT NULL,
  vapid_private text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name        text,
  -- The first characters of the key's random part: lets the server find a key
  -- without storing it; the hash is then compared in constant time.
  prefix      text NOT NULL UNIQUE,
  hash        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);
CREATE INDEX api_keys_project_idx ON api_keys (project_id);

CREATE TABLE groups (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name        text NOT NULL,
  description text,
  created_at  timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);

CREATE TABLE subscribers (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  endpoint     text NOT NULL,
  p256dh       text NOT NULL,
  auth         text NOT NULL,
  external_id  text,
  status       text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'unsubscribed', 'expired')),
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, endpoint)
);
-- Fan-out streams a project's active subscribers in id order (keyset pagination).
CREATE INDEX subscribers_project_status_idx ON subscribers (project_id, status, id);
CREATE INDEX subscribers_project_external_idx ON subscribers (project_id, external_id, id) WHERE external_id IS NOT NULL;

CREATE TABLE group_members (
  group_id      text NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
  subscriber_id text NOT NULL REFERENCES subscribers (id) ON DELETE CASCADE,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (group_id, subscriber_id)
);
CREATE INDEX group_members_subscriber_idx ON group_members (subscriber_id);

CREATE TABLE broadcasts (
  id             text PRIMARY KEY,
  project_id     text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  status         text NOT NULL CHECK (status IN ('scheduled', 'pending', 'sending', 'sent', 'failed', 'canceled')),
  source         text NOT NULL DEFAULT 'api' CHECK (source IN ('api', 'dashboard')),
  target         jsonb NOT NULL,
  title          text NOT NULL,
  body           text NOT NULL,
  icon           text,
  image          text,
  url            text NOT NULL,
  ttl            integer NOT NULL,
  urgency        text NOT NULL,
  topic          text,
  -- Estimated at send time, fixed when the broadcast fires.
  audience       integer NOT NULL DEFAULT 0,
  -- Pushes reserved against the monthly budget when the broadcast fired.
  reserved       integer NOT NULL DEFAULT 0,
  delivered      integer NOT NULL DEFAULT 0,
  failed         integer NOT NULL DEFAULT 0,
  clicked        integer NOT NULL DEFAULT 0,
  dismissed      integer NOT NULL DEFAULT 0,
  failure_reason text,
  scheduled_at   timestamptz,
  started_at     timestamptz,
  finished_at    timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX broadcasts_project_idx ON broadcasts (project_id, id);

-- Pushes counted against the plan's monthly cap, per calendar month (UTC).
CREATE TABLE push_usage (
  project_id text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  month      date NOT NULL,
  pushes     bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (project_id, month)
);

-- Delivered, failed, clicked and dismissed events (webhooks and analytics).
CREATE TABLE events (
  id            text PRIMARY KEY,
  project_id    text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  broadcast_id  text NOT NULL REFERENCES broadcasts (id) ON DELETE CASCADE,
  subscriber_id text REFERENCES subscribers (id) ON DELETE CASCADE,
  external_id   text,
  type          text NOT NULL CHECK (type IN ('delivered', 'failed', 'clicked', 'dismissed')),
  meta          jsonb,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX events_broadcast_idx ON events (broadcast_id);
CREATE INDEX events_subscriber_idx ON events (subscriber_id) WHERE subscriber_id IS NOT NULL;

CREATE TABLE webhooks (
  id          text PRIMARY KEY,
  project_id  text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  url         text NOT NULL,
  events      text[] NOT NULL,
  secret      text NOT NULL,
  status      text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'disabled')),
  disabled_at timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX webhooks_project_idx ON webhooks (project_id, id);

-- Hosted icons and images, stored once by the SHA-256 of their bytes.
CREATE TABLE media (
  sha256       text PRIMARY KEY,
  ext          text NOT NULL,
  content_type text NOT NULL,
  width        integer NOT NULL,
  height       integer NOT NULL,
  bytes        bytea NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);

-- The durable job queue: written in the same transaction as the row a job is
-- about, claimed with FOR UPDATE SKIP LOCKED, leased so a crashed worker's job
-- is picked up again once locked_until passes.
CREATE TABLE jobs (
  id           bigserial PRIMARY KEY,
  kind         text NOT NULL,
  payload      jsonb NOT NULL,
  run_at       timestamptz NOT NULL DEFAULT now(),
  attempts     integer NOT NULL DEFAULT 0,
  max_attempts integer NOT NULL DEFAULT 25,
  locked_by    text,
  locked_until timestamptz,
  last_error   text,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX jobs_ready_idx ON jobs (run_at, id);
