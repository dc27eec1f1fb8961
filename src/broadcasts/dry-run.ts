// POST /v1/send with "dry_run": true (issue 11): the checks of a real send, in
// its order and with its errors (checkSend, checkMedia), then what the send
// would do: its audience by push service, the size of each push and whether
// it is the fetch: true stub, and warnings. It creates no broadcast, enqueues
// no job, stores no media and reserves no pushes: its reads run in one
// read-only transaction, and media is checked but not stored.
import { newId } from '../platform/ids.ts'
import { checkMedia, isHostedMedia } from '../media/media.service.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import type { SendBody } from './broadcasts.schemas.ts'
import { countAudienceByPushService } from './audience-breakdown.store.ts'
import type { DryRunResponse } from './dry-run.schemas.ts'
import { dryRunWarnings } from './dry-run-warnings.ts'
import { fullPayload, type NotificationContent } from './notification-payload.ts'
import { pushBodySize } from './push-payload.ts'
import { siteOrigin } from './click-link.ts'

/** Signs nothing real: a dry run's payload is only measured, never sent. */
const DRY_RUN_KEY = Buffer.alloc(32)
import { checkSend, type CheckedSend, type SendDeps } from './send.service.ts'
import { findTimingSettings } from '../projects/timing-settings.store.ts'
import { planWaves } from '../delivery/waves.ts'
import { resolveSend } from '../templates/resolve-send.ts'
import { hasMarkup } from '../templates/liquid.ts'
import { allVariables, renderFor, type CompiledNotification } from '../templates/personalization.ts'
import { sampleSubscribers, variableCoverage } from '../templates/coverage.store.ts'
import type { Queryable } from '../platform/db/database.ts'
import type { Target } from './broadcasts.schemas.ts'

/** Subscribers a dry run renders for its preview. */
const SAMPLES = 5

async function preview(q: Queryable, projectId: string, target: Target, audience: number, compiled: CompiledNotification): Promise<NonNullable<DryRunResponse['personalization']>> {
  const p = compiled.personalization
  const paths = allVariables(compiled)
  const counts = await variableCoverage(q, projectId, target, paths)
  const variables = paths.map((variable) => {
    const given = variable.startsWith('data.') ? (p.data[variable.slice(5)] ?? '') !== '' : false
    const withValue = variable.startsWith('data.') ? (given ? audience : 0) : Math.min(counts.get(variable) ?? 0, audience)
    return { variable, with_value: withValue, coverage: audience === 0 ? 0 : withValue / audience, default: Object.hasOwn(p.defaults, variable) ? p.defaults[variable] : null }
  })
  const samples = (await sampleSubscribers(q, projectId, target, SAMPLES)).map((s) => {
    const rendered = renderFor(compiled, { tags: s.tags ?? null, external_id: s.external_id, locale: s.locale ?? null })
    return {
      subscriber_id: s.id,
      locale: s.locale ?? null,
      language: rendered.locale,
      notification: rendered.ok ? rendered.fields : null,
      skipped: rendered.ok ? null : rendered.cause,
    }
  })
  return { variables, samples }
}

/** How long a throttled fan-out of `audience` pushes takes: back-to-back slots of 60 s / rate per push. */
export function throttledDurationMs(audience: number, perMinute: number): number {
  return Math.ceil((audience * 60_000) / perMinute)
}

/**
 * The waves the fan-out would plan (delivery/waves.ts), judged at scheduled_at
 * or now: what waits for which time, and who is skipped. Empty when every push
 * would go out at once.
 */
async function previewWaves(q: Queryable, project: AuthedProject, body: SendBody, checked: CheckedSend): Promise<Pick<DryRunResponse, 'waiting' | 'skipped'>> {
  const settings = await findTimingSettings(q, project.id)
  if (!settings) return {}
  const inputs = { project_id: project.id, target: body.target, urgency: body.urgency ?? 'normal', timing: checked.timing, ...settings }
  const plan = await planWaves(q, inputs, checked.fireAt.getTime())
  if (!plan) return {}
  const waiting = plan.waves.filter((w) => w.reason !== 'now').map((w) => ({ at: w.at, reason: w.reason as 'local_time' | 'quiet_hours', count: w.planned }))
  return { waiting, skipped: plan.skipped }
}

export interface DryRunOptions {
  /** The time the send is judged at (tests). Default now. */
  now?: number
  /**
   * Whether the caller may read subscribers (subscribers:read). The preview
   * renders real subscribers' tags, external ids and languages, and coverage
   * counts who has a value: a send-only key, which may not read subscribers,
   * gets neither (empty lists). Default true.
   */
  readsSubscribers?: boolean
}

export async function dryRunSend(deps: SendDeps, project: AuthedProject, body: SendBody, options: DryRunOptions = {}): Promise<DryRunResponse> {
  const { db, config } = deps
  const now = options.now ?? Date.now()
  const { body: resolved, compiled } = await resolveSend(db, project.id, body)
  const notification = resolved.notification

  // One snapshot, so the audience (counted as the real send counts it, which
  // for an `all` target reads the project's counter) and its breakdown agree.
  // READ ONLY: should anything below ever try to write, the dry run fails.
  const { checked, byPushService, personalization, waves } = await db.transaction(async (tx) => {
    await tx.query('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY')
    const checked = await checkSend(tx, project, resolved, now)
    const personalization = !compiled ? null
      : options.readsSubscribers === false ? { variables: [], samples: [] }
      : await preview(tx, project.id, body.target, checked.audience, compiled)
    const waves = await previewWaves(tx, project, resolved, checked)
    return { checked, byPushService: await countAudienceByPushService(tx, project.id, body.target), personalization, waves }
  })

  // Media last, as in the real send: the same checks, nothing stored.
  // A URL with variables is checked per subscriber when rendered.
  const icon = notification.icon !== undefined && !hasMarkup(notification.icon) ? await checkMedia(config, 'icon', notification.icon) : null
  const image = notification.image !== undefined && !hasMarkup(notification.image) ? await checkMedia(config, 'image', notification.image) : null

  const content: NotificationContent = {
    project_id: project.id,
    // Not stored anywhere: an id of the real one's length, so the payload's size is the real one's.
    broadcast_id: newId('bdc', now),
    title: notification.title,
    body: notification.body,
    icon: icon?.url ?? project.default_icon ?? null,
    image: image?.url ?? null,
    url: checked.url,
    actions: notification.actions ?? [],
  }
  // The real send signs its click links with the project's key; every MAC is
  // the same length whatever the key, so any key gives the exact size.
  const size = pushBodySize(content, { publicUrl: config.publicUrl, origin: siteOrigin(project.domain), key: DRY_RUN_KEY })

  const throttled = body.throttle_per_minute === undefined
    ? {}
    : { throttle_per_minute: body.throttle_per_minute, expected_duration_ms: throttledDurationMs(checked.audience, body.throttle_per_minute) }
  return {
    ...throttled,
    ...waves,
    dry_run: true,
    audience: checked.audience,
    by_push_service: byPushService,
    payload_bytes: size.bytes,
    fetch: size.fetch,
    declarative: size.declarative,
    ...(personalization ? { personalization } : {}),
    warnings: dryRunWarnings({
      body: resolved,
      now,
      audience: checked.audience,
      byPushService,
      fetch: size.fetch,
      fullJsonBytes: Buffer.byteLength(JSON.stringify(fullPayload(content)), 'utf8'),
      iconHosted: icon !== null && (icon.file !== null || (await isHostedMedia(db, config, icon.url))),
      imageHosted: image !== null && (image.file !== null || (await isHostedMedia(db, config, image.url))),
    }),
  }
}
