import { Type, type Static } from 'typebox'

export const EventsQuery = Type.Object({
  project: Type.Optional(Type.String({ description: 'The project id, prj_… (required; without it the event is dropped).' })),
})

export const EventBody = Type.Object(
  {
    type: Type.Union([Type.Literal('clicked'), Type.Literal('dismissed'), Type.Literal('shown')], { description: "clicked or dismissed (api.md 4.10); shown: the service worker displayed the notification (docs/funnel.md)." }),
    broadcast_id: Type.String({ pattern: '^bdc_[0-9a-hjkmnp-tv-z]{26}$', description: 'The broadcast the notification came from.' }),
    // Accepted and ignored: click and dismiss events are correlated by
    // broadcast_id only (api.md 4.10 rule 3), so a receiver id is never stored.
    // A click on an action button names it; recorded as the event's meta { action } when it is one of the
    // broadcast's actions, else the click counts as one on the notification itself.
    action: Type.Optional(Type.String({ maxLength: 64, description: "The action button clicked (notification.actions[].action); absent for a click on the notification itself." })),
    variant: Type.Optional(Type.Unknown({ description: "The A/B test variant the push named (its payload's variant); counted on that variant of the broadcast (docs/experiments.md). Any other value is ignored, as it was before variants existed: the beacon still counts." })),
    subscriber_id: Type.Optional(Type.Union([Type.String({ maxLength: 64 }), Type.Null()], { description: 'The receiver, if known. Never stored on the event (clicked and dismissed events carry no identity); on a click, a subscriber id of this project dates its last_clicked_at.' })),
  },
  // The service worker may send more than this in later versions; extra fields are ignored.
  { additionalProperties: true },
)
export type EventBody = Static<typeof EventBody>

export const AcceptedResponse = Type.Object({ ok: Type.Literal(true) })
