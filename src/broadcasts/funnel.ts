// A broadcast's funnel (issue 25, docs/funnel.md): audience → sent →
// delivered → shown → clicked (and per action button), dismissed, with rates.
//
// Safari 18.4+ shows a push that carries the Declarative Web Push form
// (declarative-payload.ts) by itself, without running Herald's service
// worker, so it never reports `shown`. Those pushes are counted apart
// (cannot_report_shown) and left out of the shown rate's denominator, never
// counted as "not shown"; their clicks, which come through click links
// (GET /c/:token, counted in clicked_via_link), are left out of the
// click-through over shown likewise.
import { Type, type Static } from 'typebox'
import { absoluteTarget, siteOrigin } from './click-link.ts'
import type { NotificationAction } from './broadcasts.schemas.ts'

const Count = Type.Integer({ minimum: 0 })
const Rate = Type.Union([Type.Number({ minimum: 0 }), Type.Null()])

export const BroadcastFunnel = Type.Object(
  {
    audience: Count,
    sent: Type.Integer({ minimum: 0, description: 'Pushes handed to a push service: delivered, failed after being sent, and waiting for a retry (not those skipped or capped).' }),
    delivered: Type.Integer({ minimum: 0, description: 'Pushes the push service accepted (2xx).' }),
    cannot_report_shown: Type.Integer({
      minimum: 0,
      description: 'Of delivered, the pushes to Safari (Apple push service) that carried the Declarative Web Push form: Safari shows them without the service worker, so they never report shown. Not counted as not shown.',
    }),
    shown: Type.Integer({ minimum: 0, description: "Notifications Herald's service worker reported displayed." }),
    clicked: Count,
    clicked_by_action: Type.Record(Type.String(), Count, { description: 'Of clicked, those on each action button (every action, 0 included).' }),
    dismissed: Count,
    rates: Type.Object(
      {
        delivered: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'delivered / sent; null when nothing was sent.' }),
        shown: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'shown / (delivered − cannot_report_shown): over the pushes that can report; null when none can.' }),
        click_through: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], { description: 'clicked / delivered; null when nothing was delivered.' }),
        click_through_shown: Type.Union([Type.Number({ minimum: 0 }), Type.Null()], {
          description: "Clicks on notifications that can report shown (clicked less those through Safari's click links) / shown; null when nothing was shown.",
        }),
      },
      { description: 'Fractions between 0 and 1 (4 decimals; a repeated beacon can take one past 1), or null when the denominator is 0.' },
    ),
  },
  { description: 'audience → sent → delivered → shown → clicked, dismissed (docs/funnel.md).' },
)
export type BroadcastFunnel = Static<typeof BroadcastFunnel>

/** The broadcast columns the funnel reads beyond those of the view. */
export interface FunnelColumns {
  shown: number
  clicked_via_link: number
  /** The project's domain now (what click targets that are paths resolve against). */
  project_domain: string | null
}

/** For the broadcasts store's SELECT (FROM broadcasts b). */
export const FUNNEL_COLUMNS = 'b.shown, b.clicked_via_link, (SELECT p.domain FROM projects p WHERE p.id = b.project_id) AS project_domain'

export interface FunnelInputs extends FunnelColumns {
  url: string
  actions: NotificationAction[]
  personalization: unknown
  /** An A/B test's pushes carry no declarative form either (fanout.ts plaintextOf). */
  has_experiment: boolean
  audience: number
  delivered: number
  failed: number
  failed_skipped: number
  failed_capped: number
  retrying: number
  apple_delivered: number
  clicked: number
  clicked_by_action: Record<string, number>
  dismissed: number
}

/**
 * Whether the broadcast's pushes carried the declarative form: as fan-out
 * decides it (push-payload.ts), every click target absolute, or a path with
 * the project's domain to resolve it; never a personalized broadcast's
 * (personal-payloads.ts). Read from the domain as it is now.
 */
export function carriesDeclarativeForm(row: Pick<FunnelInputs, 'url' | 'actions' | 'personalization' | 'project_domain' | 'has_experiment'>): boolean {
  if (row.personalization || row.has_experiment) return false
  const origin = siteOrigin(row.project_domain)
  return [row.url, ...row.actions.map((a) => a.url ?? row.url)].every((url) => absoluteTarget(url, origin) !== null)
}

function rate(part: number, whole: number): number | null {
  return whole > 0 ? Math.round((part / whole) * 10_000) / 10_000 : null
}

export function toFunnel(row: FunnelInputs, audience: number): BroadcastFunnel {
  const sent = row.delivered + row.failed - row.failed_skipped - row.failed_capped + row.retrying
  const cannotReport = carriesDeclarativeForm(row) ? Math.min(row.apple_delivered, row.delivered) : 0
  const canReport = row.delivered - cannotReport
  return {
    audience,
    sent,
    delivered: row.delivered,
    cannot_report_shown: cannotReport,
    shown: row.shown,
    clicked: row.clicked,
    clicked_by_action: Object.fromEntries(row.actions.map((a) => [a.action, row.clicked_by_action[a.action] ?? 0])),
    dismissed: row.dismissed,
    rates: {
      delivered: rate(row.delivered, sent),
      shown: rate(row.shown, canReport),
      click_through: rate(row.clicked, row.delivered),
      click_through_shown: rate(Math.max(0, row.clicked - row.clicked_via_link), row.shown),
    },
  }
}
