-- Templates, variables and languages (issue 24).
--
-- Saved templates, one project's each: a notification whose fields may hold
-- variables ({{ tags.first_name }}), the default value of each variable, and
-- localized versions by BCP 47 language tag. Names are unique per project.
CREATE TABLE templates (
  id           text PRIMARY KEY,
  project_id   text NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
  name         text NOT NULL,
  notification jsonb NOT NULL,
  defaults     jsonb NOT NULL DEFAULT '{}'::jsonb,
  localized    jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name)
);

-- The subscriber's language, a canonical BCP 47 tag (Intl.getCanonicalLocales):
-- the SDK records navigator.language, the API may set it. NULL: unknown, and
-- such a subscriber gets a send's default fields.
ALTER TABLE subscribers ADD COLUMN locale text;

-- A broadcast rendered per subscriber: the per-send data, the variables'
-- defaults, the missing and too-long policies and the localized versions.
-- NULL for a broadcast without variables or languages, which fan-out sends
-- as before (one payload for everyone). A process of the previous release
-- ignores the column, so it would send such a broadcast unrendered: the
-- upgrade notes say to drain fan-outs before mixing releases.
ALTER TABLE broadcasts ADD COLUMN personalization jsonb;

-- Subscribers a personalized broadcast did not push to (a missing variable
-- with missing "skip_subscriber" or "fail", a rendered field too long with
-- on_too_long "skip", a rendered URL that broke the URL rules): counted in
-- failed, beside gone, rejected and unreachable.
ALTER TABLE broadcasts ADD COLUMN failed_skipped integer NOT NULL DEFAULT 0;
