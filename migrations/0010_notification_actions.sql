-- Action buttons (issue 12): a broadcast's notification.actions, as sent
-- ([{ action, title, url? }], at most 2), and its clicks by action
-- ({ <action>: n }), kept on the broadcast row beside clicked and added to
-- by the same UPDATE (broadcast-state.ts addEngagement), so reading a
-- broadcast or a page of them costs no count over events.
-- Constant defaults: PostgreSQL adds both columns without rewriting the table.
ALTER TABLE broadcasts ADD COLUMN actions jsonb NOT NULL DEFAULT '[]';
ALTER TABLE broadcasts ADD COLUMN clicked_by_action jsonb NOT NULL DEFAULT '{}';
