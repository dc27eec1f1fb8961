-- The version of a job's payload (issue 27, docs/upgrades.md). During a
-- rolling upgrade workers of two releases share the jobs table: a release
-- that changes what a job kind's payload holds writes it with a higher
-- version, and a worker claims only the versions it understands, so an older
-- worker leaves such a job for a newer one instead of failing it. Every job
-- written so far, and every job an older release still writes without
-- naming the column, is version 1. A constant default: no table rewrite.
ALTER TABLE jobs ADD COLUMN payload_version integer NOT NULL DEFAULT 1;
