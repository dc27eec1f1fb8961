// POST /v1/send (api.md 4.7): checks a send in the order a client can act on
// (cheap form checks, plan gates, time, target, budget, then media), and
// writes the broadcast, its budget reservation and its job in one transaction.
import type { Config } from '../platform/config.ts'
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import { isId, newId } from '../platform/ids.ts'
import { enqueue } from '../platform/jobs/queue.ts'
import { howToLift, planAtLeast } from '../projects/plans.ts'
import { resolveMedia, type MediaKind } from '../media/media.service.ts'
import { DEFAULT_TTL, type BroadcastSource, type NotificationAction, type SendBody, type SendResponse } from './broadcasts.schemas.ts'
import { insertBroadcast } from './broadcasts.store.ts'
import { groupExists, projectGroupIds } from '../groups/groups.store.ts'
import { checkSegmentFilter } from './segment-filter.ts'
import { countAudience } from './audience.store.ts'
import { checkPushBudget, reservePushes } from './push-budget.ts'
import { parseDate, type Timing } from './local-time.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { recordAudit } from '../audit/audit.store.ts'
import { resolveSend, type ResolvedBody } from '../templates/resolve-send.ts'
import { hasMarkup } from '../templates/liquid.ts'
import { BROADCAST_PAYLOAD_VERSION } from './payload-version.ts'
import { checkClickUrl, checkMediaForm } from './send-checks.ts'
import { checkExperimentForm, createExperiment, resolveVariants } from '../experiments/experiment-send.ts'

/** api.md §8: scheduled_at lies within 90 days. */
export const MAX_SCHEDULE_AHEAD_MS = 90 * 24 * 60 * 60 * 1000

export interface SendDeps {
  db: Database
  config: Config
}

/** Action ids are unique (a click is counted under its id) and their URLs parse; the schema checked the rest. */
function checkActions(actions: NotificationAction[] | undefined): void {
  const seen = new Set<string>()
  actions?.forEach((action, i) => {
    if (seen.has(action.action)) throw invalidField(`notification.actions.${i}.action`, `"${action.action}" is already the id of another action; each must be unique`)
    seen.add(action.action)
    if (action.url !== undefined) checkClickUrl(action.url, `notification.actions.${i}.url`)
  })
}

export interface SendOptions {
  /** Recorded on the broadcast: 'dashboard' for sends from Herald's dashboard. Default 'api'. */
  source?: BroadcastSource
  /** The time the send is judged at (tests). Default now. */
  now?: number
  /**
   * Runs first in the transaction that creates the broadcast, with the answer
   * the send will give (idempotent-send.ts stores it there): it commits with
   * the broadcast, and a throw rolls the whole send back.
   */
  recordIn?: (tx: Queryable, answer: SendResponse) => Promise<void>
}

/** A send that passed every check up to media (check order steps 1-8 of docs/decisions.md). */
export interface CheckedSend {
  /** The click URL, "/" when none was given. */
  url: string
  /** scheduled_at as a Date, or null for an immediate send. */
  runAt: Date | null
  /** The month whose budget the send counts against: runAt, or now. */
  fireAt: Date
  /** The project's monthly push cap. */
  cap: number
  /** Active subscribers of the target now. */
  audience: number
  /** Local-time delivery and the quiet-hours choice, as stored on the broadcast; null when the send gave none. */
  timing: Timing | null
}

/** deliver_on may lie this many UTC days back: yesterday's date is still today in the zones west of UTC. */
const DELIVER_ON_BACK_DAYS = 1

/**
 * deliver_at_local, deliver_on, past and ignore_quiet_hours (docs/timing.md):
 * each only where it means something, deliver_on a real date within
 * [yesterday, 90 days ahead] (UTC dates; the zones' dates are within a day
 * of them). Local-time delivery schedules, so it needs the plan scheduling does.
 */
function checkTiming(project: AuthedProject, body: SendBody, now: number): Timing | null {
  const { deliver_at_local, deliver_on, past, ignore_quiet_hours } = body
  if (deliver_on !== undefined && deliver_at_local === undefined) throw invalidField('deliver_on', 'needs deliver_at_local (the local time on that date)')
  if (past !== undefined && deliver_on === undefined) throw invalidField('past', 'only applies with deliver_on (without a date, the next such time is always ahead)')
  if (deliver_at_local !== undefined) {
    if (body.scheduled_at !== undefined) throw invalidField('deliver_at_local', 'cannot be combined with scheduled_at; give deliver_on for a later date')
    if (!planAtLeast(project.plan, 'plus')) throw new AppError('scheduling_requires_upgrade', `Local-time delivery (deliver_at_local) needs the Plus plan or higher; this project is on ${project.plan}. ${howToLift(project.id, { plan: 'plus' })}`)
  }
  if (deliver_on !== undefined) {
    const date = parseDate(deliver_on)
    const day = Date.UTC(date.year, date.month - 1, date.day)
    const check = new Date(day)
    if (check.getUTCMonth() !== date.month - 1 || check.getUTCDate() !== date.day) throw invalidField('deliver_on', `${deliver_on} is not a calendar date`)
    const today = Math.floor(now / 86_400_000) * 86_400_000
    if (day < today - DELIVER_ON_BACK_DAYS * 86_400_000 || day > today + MAX_SCHEDULE_AHEAD_MS) {
      throw invalidField('deliver_on', 'must lie between yesterday (UTC) and 90 days ahead')
    }
  }
  if (deliver_at_local === undefined && !ignore_quiet_hours) return null
  return {
    ...(deliver_at_local !== undefined ? { deliver_at_local } : {}),
    ...(deliver_on !== undefined ? { deliver_on } : {}),
    ...(past !== undefined ? { past } : {}),
    ...(ignore_quiet_hours ? { ignore_quiet_hours } : {}),
  }
}

/**
 * Every check of a send before its media: click URL, media form, plan gates,
 * scheduled_at, the group, the audience and the monthly budget. Shared by the
 * real send and its dry run (dry-run.ts), so both refuse the same bodies with
 * the same errors. Writes nothing.
 */
/**
 * A segment's group leaves must name groups of the project, as the group
 * target's must (404 group_not_found): a typo under `not` would otherwise
 * widen the audience to everyone, silently.
 */
async function checkSegmentGroups(q: Queryable, projectId: string, groups: Array<{ id: string; path: string }>): Promise<void> {
  if (groups.length === 0) return
  const wellFormed = groups.filter((g) => isId('grp', g.id)).map((g) => g.id)
  const known = new Set(wellFormed.length > 0 ? await projectGroupIds(q, projectId, wellFormed) : [])
  const missing = groups.find((g) => !known.has(g.id))
  if (missing) throw new AppError('group_not_found', `${missing.path}: no group ${missing.id} in this project.`)
}

export async function checkSend(q: Queryable, project: AuthedProject, body: ResolvedBody, now: number): Promise<CheckedSend> {
  const notification = body.notification
  const url = notification.url ?? '/'
  checkClickUrl(url)
  checkActions(notification.actions)
  checkMediaForm('icon', notification.icon)
  checkMediaForm('image', notification.image)

  if (notification.image !== undefined && !planAtLeast(project.plan, 'hobby')) throw new AppError('image_requires_upgrade', `notification.image needs the Hobby plan or higher; this project is on ${project.plan}. ${howToLift(project.id, { plan: 'hobby' })}`)

  let runAt: Date | null = null
  if (body.scheduled_at !== undefined) {
    if (!planAtLeast(project.plan, 'plus')) throw new AppError('scheduling_requires_upgrade', `Scheduling needs the Plus plan or higher; this project is on ${project.plan}. ${howToLift(project.id, { plan: 'plus' })}`)
    if (!(body.scheduled_at > now && body.scheduled_at <= now + MAX_SCHEDULE_AHEAD_MS)) {
      const message = body.scheduled_at <= now
        ? 'scheduled_at lies in the past; it must lie in the future and within 90 days.'
        : 'scheduled_at lies more than 90 days ahead; it must lie in the future and within 90 days.'
      throw new AppError('invalid_scheduled_at', message)
    }
    runAt = new Date(body.scheduled_at)
  }

  const timing = checkTiming(project, body, now)
  checkExperimentForm(project, body)

  const target = body.target
  if (target.type === 'group' && !(isId('grp', target.group_id) && (await groupExists(q, project.id, target.group_id)))) {
    throw new AppError('group_not_found', `No group ${target.group_id} in this project.`)
  }
  if (target.type === 'segment') await checkSegmentGroups(q, project.id, checkSegmentFilter(target.filter).groups)

  const cap = project.effectiveLimits.monthly_pushes
  const audience = await countAudience(q, project.id, target)
  // A scheduled broadcast counts against the month it fires in; it is only
  // checked here, and reserved by the scheduler at fire time.
  const fireAt = runAt ?? new Date(now)
  await checkPushBudget(q, project.id, cap, audience, fireAt)
  return { url, runAt, fireAt, cap, audience, timing }
}

export async function sendBroadcast(deps: SendDeps, project: AuthedProject, body: SendBody, audit: AuditContext, options: SendOptions = {}): Promise<SendResponse> {
  const { db, config } = deps
  const now = options.now ?? Date.now()
  const { body: resolved, personalization } = await resolveSend(db, project.id, body)
  const notification = resolved.notification
  const target = body.target
  const { url, runAt, fireAt, cap, audience, timing } = await checkSend(db, project, resolved, now)

  // Media last among the checks: storing a data URL is the costliest step, and
  // a send refused for any reason above stores nothing.
  // A URL with variables is rendered per subscriber: stored as written.
  const media = (kind: MediaKind, value: string) => (hasMarkup(value) ? value : resolveMedia(db, config, kind, value))
  const icon = notification.icon !== undefined ? await media('icon', notification.icon) : project.default_icon
  const image = notification.image !== undefined ? await media('image', notification.image) : null
  // Jobs of a personalized broadcast are version 2: a worker of the release before, which would send it unrendered, leaves them (docs/upgrades.md).
  // Version 2, as every broadcast job of this release: a worker of 0.2.0 would neither render
  // variables, wait for local times or quiet hours, nor apply caps (delivery/fanout.ts).
  const payloadVersion = BROADCAST_PAYLOAD_VERSION
  // An A/B test's variants, their media stored as the notification's (docs/experiments.md).
  const variants = body.variants ? await resolveVariants(db, config, project, notification, body.variants, personalization) : null

  const id = newId('bdc', now)
  const answer: SendResponse = runAt ? { broadcast_id: id, scheduled_at: runAt.getTime() } : { broadcast_id: id }
  await db.transaction(async (tx) => {
    await options.recordIn?.(tx, answer)
    // Reserve before the insert: when the budget ran out since the check, the
    // throw rolls back the whole transaction and nothing is written.
    if (!runAt) await reservePushes(tx, project.id, cap, audience, fireAt)
    await insertBroadcast(tx, {
      id,
      project_id: project.id,
      status: runAt ? 'scheduled' : 'pending',
      source: options.source ?? 'api',
      target,
      title: notification.title,
      body: notification.body,
      icon: icon ?? null,
      image,
      url,
      actions: notification.actions ?? [],
      // api.md types ttl as a number; the RFC 8030 TTL header takes whole seconds.
      ttl: Math.floor(body.ttl ?? DEFAULT_TTL),
      urgency: body.urgency ?? 'normal',
      topic: body.topic ?? null,
      audience,
      reserved: runAt ? 0 : audience,
      scheduled_at: runAt,
      throttle_per_minute: body.throttle_per_minute ?? null,
      personalization,
      timing,
      send_class: body.class ?? 'marketing',
      on_capped: body.on_capped ?? 'skip',
    })
    if (variants) await createExperiment(tx, id, project.id, body, variants)
    if (runAt) await enqueue(tx, 'fire_broadcast', { broadcast_id: id }, { runAt, payloadVersion })
    else await enqueue(tx, 'fanout_broadcast', { broadcast_id: id }, { payloadVersion })
    // What was aimed at whom, not what it said: the title and body stay on the broadcast.
    await recordAudit(tx, {
      projectId: project.id,
      context: audit,
      action: runAt ? 'broadcast.schedule' : 'broadcast.send',
      target: { type: 'broadcast', id },
      details: { target: target.type, audience, source: options.source ?? 'api', ...(runAt ? { scheduled_at: runAt.getTime() } : {}), ...(personalization?.template_id ? { template_id: personalization.template_id } : {}), ...(variants ? { variants: variants.map((v) => v.key) } : {}) },
    })
  })

  return answer
}
