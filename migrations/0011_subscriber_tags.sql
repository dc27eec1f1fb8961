-- Subscriber tags (issue 12): a flat object of at most 50 keys whose values
-- are strings, numbers or booleans, checked by the API (subscribers.schemas.ts)
-- before they get here. A segment's tag leaves compile to the operators the
-- default jsonb GIN operator class serves: containment (@>) for eq, ne and
-- in, key existence (?) for exists and in front of every range comparison.
-- jsonb_path_ops would be smaller but cannot answer `?`.
ALTER TABLE subscribers ADD COLUMN tags jsonb NOT NULL DEFAULT '{}'::jsonb;
CREATE INDEX subscribers_tags_idx ON subscribers USING gin (tags);
