// SQL for templates (migration 0028). Every query names the project, so a
// template id of another project is simply not found.
import type { Queryable } from '../platform/db/database.ts'
import type { Localized, NotificationInput, VariableDefaults } from '../broadcasts/broadcasts.schemas.ts'

export interface TemplateRow {
  id: string
  project_id: string
  name: string
  notification: NotificationInput
  defaults: VariableDefaults
  localized: Localized
  created_at: Date
  updated_at: Date
}

const COLUMNS = 'id, project_id, name, notification, defaults, localized, created_at, updated_at'

export async function listTemplates(q: Queryable, projectId: string): Promise<TemplateRow[]> {
  const result = await q.query<TemplateRow>(`SELECT ${COLUMNS} FROM templates WHERE project_id = $1 ORDER BY name, id`, [projectId])
  return result.rows
}

export async function findTemplate(q: Queryable, projectId: string, id: string): Promise<TemplateRow | null> {
  const result = await q.query<TemplateRow>(`SELECT ${COLUMNS} FROM templates WHERE project_id = $1 AND id = $2`, [projectId, id])
  return result.rows[0] ?? null
}

export async function insertTemplate(q: Queryable, row: Omit<TemplateRow, 'created_at' | 'updated_at'>): Promise<void> {
  await q.query(
    'INSERT INTO templates (id, project_id, name, notification, defaults, localized) VALUES ($1, $2, $3, $4, $5, $6)',
    [row.id, row.project_id, row.name, JSON.stringify(row.notification), JSON.stringify(row.defaults), JSON.stringify(row.localized)],
  )
}

/** Replaces the fields given; false when the project has no such template. */
export async function updateTemplate(
  q: Queryable,
  projectId: string,
  id: string,
  fields: Partial<Pick<TemplateRow, 'name' | 'notification' | 'defaults' | 'localized'>>,
): Promise<boolean> {
  const result = await q.query(
    `UPDATE templates SET
        name = COALESCE($3, name),
        notification = COALESCE($4::jsonb, notification),
        defaults = COALESCE($5::jsonb, defaults),
        localized = COALESCE($6::jsonb, localized),
        updated_at = now()
      WHERE project_id = $1 AND id = $2`,
    [
      projectId,
      id,
      fields.name ?? null,
      fields.notification ? JSON.stringify(fields.notification) : null,
      fields.defaults ? JSON.stringify(fields.defaults) : null,
      fields.localized ? JSON.stringify(fields.localized) : null,
    ],
  )
  return result.rowCount > 0
}

export async function deleteTemplate(q: Queryable, projectId: string, id: string): Promise<boolean> {
  const result = await q.query('DELETE FROM templates WHERE project_id = $1 AND id = $2', [projectId, id])
  return result.rowCount > 0
}
