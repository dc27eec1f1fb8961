-- Invites that cannot change an existing membership (issue 22).
--
-- new_user_id: the id an account made by accepting this invite gets, answered
-- as user_id when the invite is made. Inviting no longer makes the user row,
-- so the answer never carries an existing account's real id. Null on invites
-- made before this migration (acceptance then draws a fresh id).
ALTER TABLE invites ADD COLUMN new_user_id text;

-- The open invites of one email in one project (a new invite replaces them;
-- joining or being removed revokes them), and those a member made (revoked
-- when the member is removed or stops being an owner).
CREATE INDEX invites_open_email_idx ON invites (project_id, email) WHERE accepted_at IS NULL AND revoked_at IS NULL;
CREATE INDEX invites_open_invited_by_idx ON invites (project_id, invited_by) WHERE accepted_at IS NULL AND revoked_at IS NULL;

-- Earlier versions left invites open that the rules above now revoke at the
-- moment they go stale; revoke those that are already stale: made by someone
-- who is no longer an owner of the project, for an email already a member,
-- or replaced by a newer open invite for the same email.
UPDATE invites i SET revoked_at = now()
 WHERE i.accepted_at IS NULL AND i.revoked_at IS NULL
   AND (
     (i.invited_by IS NOT NULL AND NOT EXISTS (
        SELECT 1 FROM memberships m WHERE m.project_id = i.project_id AND m.user_id = i.invited_by AND m.role = 'owner'))
     OR EXISTS (
        SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id WHERE m.project_id = i.project_id AND u.email = i.email)
     OR EXISTS (
        SELECT 1 FROM invites newer
         WHERE newer.project_id = i.project_id AND newer.email = i.email AND newer.id > i.id
           AND newer.accepted_at IS NULL AND newer.revoked_at IS NULL)
   );
