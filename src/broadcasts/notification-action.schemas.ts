// The click URL and action button shapes, apart from broadcasts.schemas.ts so
// the experiments' schemas (which hold buttons too) can use them without an
// import cycle.
import { Type, type Static } from 'typebox'

/**
 * notification.url: an absolute http(s) URL, or a path on the customer's site
 * ("/", "/sale?x=1"). "//host" is refused: it looks like a path but names
 * another host.
 */
export const CLICK_URL = '^(https?://[^\\s/?#]+[^\\s]*|/(?!/)[^\\s]*)$'
/** An action button's id: what the service worker reports back when it is clicked. */
const ACTION = '^[A-Za-z0-9_-]+$'
/** Chrome shows at most 2 action buttons (Notification.maxActions), as do OneSignal and PushAlert. */
export const MAX_ACTIONS = 2

/** One action button of a notification (docs/decisions.md "Action buttons"). */
export const NotificationAction = Type.Object(
  {
    action: Type.String({ minLength: 1, maxLength: 32, pattern: ACTION, description: 'Its id, unique in the notification: clicks on it are counted under it.' }),
    title: Type.String({ minLength: 1, maxLength: 64, description: 'The button text.' }),
    url: Type.Optional(
      Type.String({ maxLength: 2048, pattern: CLICK_URL, description: "Opened on a click on this button: absolute http(s) URL or a path starting with /. Default: the notification's url." }),
    ),
  },
  { additionalProperties: false },
)
export type NotificationAction = Static<typeof NotificationAction>
