// SQL for a project's timing settings (migration 0029, docs/timing.md): its
// default time zone and its quiet hours. Apart from projects.store.ts's
// ProjectRow so the many readers of a project do not carry them.
import type { Queryable } from '../platform/db/database.ts'
import type { QuietHours } from '../broadcasts/local-time.ts'

export interface TimingSettings {
  /** IANA zone of subscribers without one. Default UTC. */
  default_timezone: string
  /** null: none. */
  quiet_hours: QuietHours | null
}

export async function findTimingSettings(q: Queryable, projectId: string): Promise<TimingSettings | null> {
  const result = await q.query<TimingSettings>('SELECT default_timezone, quiet_hours FROM projects WHERE id = $1', [projectId])
  return result.rows[0] ?? null
}

/** Sets the fields given (undefined: unchanged; quiet_hours null: off). */
export async function updateTimingSettings(q: Queryable, projectId: string, patch: Partial<TimingSettings>): Promise<TimingSettings | null> {
  const result = await q.query<TimingSettings>(
    `UPDATE projects SET default_timezone = COALESCE($2, default_timezone),
            quiet_hours = CASE WHEN $3::boolean THEN $4::jsonb ELSE quiet_hours END
      WHERE id = $1 RETURNING default_timezone, quiet_hours`,
    [projectId, patch.default_timezone ?? null, patch.quiet_hours !== undefined, patch.quiet_hours ? JSON.stringify(patch.quiet_hours) : null],
  )
  return result.rows[0] ?? null
}
