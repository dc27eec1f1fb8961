// What a dry run shows of a personalized send (issue 24): how much of the
// audience has a value for each variable, counted in one pass over the
// audience (one FILTER count per variable), and a few real subscribers to
// render for a preview.
import type { Queryable } from '../platform/db/database.ts'
import { audienceCondition, nextAudience, type AudienceTarget, type Recipient } from '../broadcasts/audience.store.ts'

/** For each subscriber variable (tags.*, external_id, locale), how many of the audience have a value. */
export async function variableCoverage(q: Queryable, projectId: string, target: AudienceTarget, paths: string[]): Promise<Map<string, number>> {
  const counted = paths.filter((path) => path.startsWith('tags.') || path === 'external_id' || path === 'locale')
  if (counted.length === 0) return new Map()
  const where = audienceCondition(projectId, target)
  const params = [...where.params]
  const filters = counted.map((path, i) => {
    if (path === 'external_id') return `count(*) FILTER (WHERE s.external_id IS NOT NULL)::int AS c${i}`
    if (path === 'locale') return `count(*) FILTER (WHERE s.locale IS NOT NULL)::int AS c${i}`
    params.push(path.slice(5))
    return `count(*) FILTER (WHERE COALESCE(s.tags ->> $${params.length}::text, '') <> '')::int AS c${i}`
  })
  const result = await q.query<Record<string, number>>(`SELECT ${filters.join(', ')} FROM subscribers s WHERE ${where.sql}`, params)
  const row = result.rows[0]
  return new Map(counted.map((path, i) => [path, row[`c${i}`] ?? 0]))
}

/** The first `limit` of the audience (in id order) with their variables: the dry run's preview. */
export async function sampleSubscribers(q: Queryable, projectId: string, target: AudienceTarget, limit: number): Promise<Recipient[]> {
  return nextAudience(q, projectId, target, null, limit, true)
}
