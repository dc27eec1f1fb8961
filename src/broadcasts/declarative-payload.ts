// The Declarative Web Push form of a notification (issue 12; W3C Push API
// draft, WebKit since Safari 18.4): `web_push: 8030` and a `notification`
// object beside Herald's own fields, in the same JSON. A browser that
// implements it shows the notification by itself, even when the site's
// service worker is missing or broken; every other browser ignores those two
// members and Herald's service worker shows the notification from Herald's
// fields as before. Its `navigate` URLs are click links through Herald
// (click-link.ts), so a click Safari handles alone is still counted.
import { absoluteTarget, clickToken } from './click-link.ts'
import type { NotificationContent } from './notification-payload.ts'

/** What building the declarative form needs beyond the notification. */
export interface DeclarativeContext {
  /** Herald's public URL: click links are {publicUrl}/c/<token>. */
  publicUrl: string
  /** The site's origin (from the project's domain), to make paths absolute; null when unknown. */
  origin: string | null
  /** The project's click link key (click-link.ts clickLinkKey). */
  key: Buffer
}

export interface DeclarativeNotification {
  title: string
  body: string
  navigate: string
  tag: string
  icon?: string
  image?: string
  actions?: Array<{ action: string; title: string; navigate: string }>
  data: { herald: 1; project_id: string; broadcast_id: string; url: string }
}

export interface DeclarativeForm {
  web_push: 8030
  notification: DeclarativeNotification
}

/** How much of the notification a declarative form carries: all of it, or what fits (title, a body, the click). */
export type DeclarativeDetail = 'full' | 'lean'

/**
 * The declarative form, or null when a click target is a path and the
 * project has no domain to resolve it against (`navigate` must be absolute,
 * and Herald cannot guess the site's origin: the service worker can).
 */
export function declarativeForm(content: NotificationContent, ctx: DeclarativeContext, detail: DeclarativeDetail): DeclarativeForm | null {
  const target = absoluteTarget(content.url, ctx.origin)
  if (!target) return null
  const link = (action: string | null, url: string) =>
    `${ctx.publicUrl}/c/${clickToken(ctx.key, { project_id: content.project_id, broadcast_id: content.broadcast_id, action, url })}`
  const notification: DeclarativeNotification = {
    title: content.title,
    body: content.body,
    navigate: link(null, content.url),
    // Herald's service worker tags with the broadcast id too: one notification per broadcast either way.
    tag: content.broadcast_id,
    // The shape Herald's service worker gives its own notifications, should it ever be handed this one.
    data: { herald: 1, project_id: content.project_id, broadcast_id: content.broadcast_id, url: target },
  }
  if (content.actions.some((a) => absoluteTarget(a.url ?? content.url, ctx.origin) === null)) return null
  if (detail === 'full') {
    if (content.icon) notification.icon = content.icon
    if (content.image) notification.image = content.image
    if (content.actions.length > 0) {
      notification.actions = content.actions.map((a) => ({ action: a.action, title: a.title, navigate: link(a.action, a.url ?? content.url) }))
    }
  }
  return { web_push: 8030, notification }
}
