// The warnings of a dry run (POST /v1/send with "dry_run": true): things a
// careful sender wants to hear before sending, none of which stops a send.
// Each has a stable code, a message in words and, where there is one, the
// request field it is about. The list, and where the figures come from, is in
// docs/decisions.md, "Dry run".
import { MAX_PLAINTEXT_BYTES } from '../platform/webpush/record-size.mjs'
import type { ResolvedBody } from '../templates/resolve-send.ts'
import type { PushServiceCounts } from './audience-breakdown.store.ts'
import type { DryRunWarning } from './dry-run.schemas.ts'

/**
 * Characters of title and body that common browsers show before cutting with
 * an ellipsis. Measured by notification vendors (docs/decisions.md cites them):
 * Chrome on Windows shows ~60-70 of a title and ~120-140 of a body, Firefox on
 * Windows ~50 and ~200, Chrome and Safari on macOS ~35-45 and ~90-100, Chrome
 * on Android ~30-50 collapsed. 50 and 120 are what Chrome shows on desktop
 * (the figures Mobify gives for it), a middle that most desktops reach.
 */
export const TITLE_SHOWN_CHARS = 50
export const BODY_SHOWN_CHARS = 120
/** A scheduled_at closer than this goes out about as soon as an immediate send. */
export const SCHEDULED_SOON_MS = 60_000

export interface WarningInput {
  body: ResolvedBody
  now: number
  audience: number
  byPushService: PushServiceCounts
  /** Whether the pushes would carry the fetch: true stub. */
  fetch: boolean
  /** Bytes of the notification's JSON as it would be pushed (before the stub decision). */
  fullJsonBytes: number
  /** Whether notification.icon / notification.image is a file Herald hosts (a data URL, or a URL under {cdn_url}/icons/). */
  iconHosted: boolean
  imageHosted: boolean
}

/** Characters as a reader counts them: code points, so an emoji is one, not two UTF-16 units. */
function chars(text: string): number {
  let n = 0
  for (const _ of text) n++
  return n
}

export function dryRunWarnings(input: WarningInput): DryRunWarning[] {
  const { body, audience } = input
  const notification = body.notification
  const warnings: DryRunWarning[] = []

  if (audience === 0) {
    warnings.push({ code: 'audience_empty', message: 'Nobody would receive this: the target has no active subscribers.', path: 'target' })
  }
  const other = input.byPushService.other
  if (other > 0) {
    warnings.push({
      code: 'other_push_service',
      message: `${other} of the ${audience} subscribers use a push service other than FCM, Mozilla, Apple or Microsoft (a self-hosted or a test one): check that they belong in this audience.`,
      path: 'target',
    })
  }

  const title = chars(notification.title)
  if (title > TITLE_SHOWN_CHARS) {
    warnings.push({
      code: 'title_may_be_cut',
      message: `The title is ${title} characters; common browsers show about ${TITLE_SHOWN_CHARS} (Chrome on macOS and Android fewer) and cut the rest.`,
      path: 'notification.title',
    })
  }
  const text = chars(notification.body)
  if (text > BODY_SHOWN_CHARS) {
    warnings.push({
      code: 'body_may_be_cut',
      message: `The body is ${text} characters; common browsers show about ${BODY_SHOWN_CHARS} (macOS fewer) and cut the rest.`,
      path: 'notification.body',
    })
  }

  if (notification.icon !== undefined && !input.iconHosted) {
    warnings.push({
      code: 'icon_not_checked',
      message: 'Herald never fetches icon URLs, so nothing has checked that this one answers with an image; if it does not, browsers show the notification without it.',
      path: 'notification.icon',
    })
  }
  if (notification.image !== undefined) {
    if (!input.imageHosted) {
      warnings.push({
        code: 'image_not_checked',
        message: 'Herald never fetches image URLs, so nothing has checked that this one answers with an image; if it does not, browsers show the notification without it.',
        path: 'notification.image',
      })
    }
    warnings.push({
      code: 'image_not_shown_everywhere',
      message: 'Only Chrome and Edge on Windows and Chrome on Android show the image; Firefox, Safari and Chrome on macOS show the notification without it.',
      path: 'notification.image',
    })
  }

  if (notification.url === undefined) {
    warnings.push({
      code: 'click_opens_site_root',
      message: 'No notification.url: a click opens the root (/) of the site whose service worker shows the notification.',
      path: 'notification.url',
    })
  }

  if (input.fetch) {
    warnings.push({
      code: 'payload_fetched',
      message: `The notification is ${input.fullJsonBytes} bytes as JSON, more than one push holds (${MAX_PLAINTEXT_BYTES}): each push carries only a stub and the service worker fetches the content from Herald when it arrives. A device that cannot reach Herald then shows a generic notification.`,
    })
  }

  if (body.ttl !== undefined && Math.floor(body.ttl) === 0) {
    warnings.push({
      code: 'ttl_zero',
      message: 'ttl is 0: only devices connected at the moment of sending receive it; push services drop it for the others, and Herald does not retry.',
      path: 'ttl',
    })
  }

  if (body.scheduled_at !== undefined) {
    const inMs = body.scheduled_at - input.now
    if (inMs < SCHEDULED_SOON_MS) {
      warnings.push({
        code: 'scheduled_soon',
        message: `scheduled_at is ${Math.max(1, Math.round(inMs / 1000))} s away, so the broadcast goes out about as soon as an immediate one. A scheduled_at that has passed when the send arrives is refused (invalid_scheduled_at): leave it out to send now.`,
        path: 'scheduled_at',
      })
    }
    warnings.push({
      code: 'audience_counted_now',
      message: 'The audience is counted as of now. The broadcast reaches whoever is subscribed when it fires, and its pushes are counted against the month\'s budget then: if they no longer fit, it fails with monthly_push_limit_reached.',
      path: 'scheduled_at',
    })
  }
  return warnings
}
