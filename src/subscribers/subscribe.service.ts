// Subscribe and unsubscribe (api.md 4.8, 4.9): called from browsers with only
// the project id, so every rule here must hold against a hostile caller.
import type { Config } from '../platform/config.ts'
import { timingSafeEqual } from 'node:crypto'
import type { Database, Queryable } from '../platform/db/database.ts'
import { AppError, invalidField } from '../platform/errors.ts'
import { isId, newId } from '../platform/ids.ts'
import { howToLift, nextPlan } from '../projects/plans.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import { checkPushEndpoint } from '../platform/outbound/url-policy.ts'
import { joinGroups } from '../groups/groups.store.ts'
import { TAGS_MAX, type SubscribeBody, type UnsubscribeBody } from './subscribers.schemas.ts'
import * as store from './subscribers.store.ts'
import { expireReplaced, lockReplaced, type Replaced } from './replace.store.ts'
import { bodyLocale, checkTimezone, tooManyTags } from './subscribers.service.ts'
import { findVapidKeyByPublic } from '../projects/vapid-keys.store.ts'

/**
 * Stores the subscription and returns its id: a new row, or the project's
 * existing row for that endpoint, refreshed and active again.
 *
 * The subscriber cap counts active subscribers only (unsubscribed and expired
 * ones receive nothing). It is checked only when the call would add an active
 * subscriber: a new endpoint, or an unsubscribed/expired one coming back. A
 * repeat from an endpoint that is already active is never refused. The check
 * reads the project's counter of active subscribers (migration 0003) and
 * keeps its row locked until commit, so concurrent subscribes at cap - 1
 * cannot both pass; the insert's trigger then adds one to that counter.
 */
export async function subscribe(db: Database, config: Config, project: AuthedProject, body: SubscribeBody): Promise<string> {
  const refused = checkPushEndpoint(body.endpoint, config)
  if (refused) throw invalidField('endpoint', refused)
  const timezone = checkTimezone(body.timezone)
  const groupIds = (body.group_ids ?? []).filter((id) => isId('grp', id))
  const cap = project.effectiveLimits.subscribers

  return db.transaction(async (tx) => {
    const status = await store.lockStatusByEndpoint(tx, project.id, body.endpoint)
    // Before the cap check: the replaced subscriber, once expired, no longer counts.
    const replaced = await takeOver(tx, project.id, body)
    if (status !== 'active') {
      if ((await store.lockActiveCount(tx, project.id)) >= cap) {
        throw new AppError('subscriber_limit_reached', `The project is at its plan's cap of ${cap} subscribers. ${howToLift(project.id, { limit: 'subscribers', plan: nextPlan(project.plan) })}`, { limit: cap })
      }
    }
    // The pair the browser says it subscribed with (issue 23): one of the project's keys not retired, else 400.
    let vapidKeyId: string | undefined
    if (body.vapid_public !== undefined) {
      const key = await findVapidKeyByPublic(tx, project.id, body.vapid_public)
      if (!key) throw invalidField('vapid_public', "is not one of this project's VAPID public keys (retired ones are not taken): subscribe with the key GET /v1/vapid-public-key serves")
      vapidKeyId = key.id
    }
    const { id, tagCount } = await store.upsertSubscriber(tx, {
      id: newId('sub'),
      project_id: project.id,
      endpoint: body.endpoint,
      p256dh: body.keys.p256dh,
      auth: body.keys.auth,
      // The page's own values win over the replaced subscriber's.
      external_id: body.external_id !== undefined || !replaced?.external_id ? body.external_id : replaced.external_id,
      tags: replaced ? { ...replaced.tags, ...body.tags } : body.tags,
      source: body.source,
      locale: bodyLocale(body.locale),
      timezone,
      vapid_key_id: vapidKeyId,
    })
    // Only a repeat or a replacement can pass the cap (the schema bounds what is sent); the throw rolls the upsert back.
    if (tagCount > TAGS_MAX) throw tooManyTags(tagCount)
    const joined = replaced ? [...new Set([...replaced.group_ids, ...groupIds])] : groupIds
    if (joined.length > 0) await joinGroups(tx, project.id, id, joined)
    return id
  })
}

/**
 * `replaces` (issue 23): when the project has that endpoint and the caller
 * proves to be its browser, by the old subscription's auth secret, the old
 * subscriber is expired and returned, for the new one to take over its
 * external_id, tags and groups. Anything else (no such endpoint, another
 * project's, a wrong secret, the same endpoint as the new one) replaces
 * nothing, with no error: a different answer would tell a caller which
 * endpoints the project has. Knowing an endpoint is not enough, since
 * endpoints show up in logs and masked-off places; the auth secret never
 * leaves the browser but to the project's senders.
 */
async function takeOver(tx: Queryable, projectId: string, body: SubscribeBody): Promise<Replaced | null> {
  const claim = body.replaces
  if (!claim || claim.endpoint === body.endpoint) return null
  const old = await lockReplaced(tx, projectId, claim.endpoint)
  if (!old || !sameSecret(old.auth, claim.auth)) return null
  await expireReplaced(tx, projectId, old.id)
  return old
}

/** Base64url secrets compared in constant time, padding ignored. */
function sameSecret(stored: string, given: string): boolean {
  const a = Buffer.from(stored.replace(/=+$/, ''))
  const b = Buffer.from(given.replace(/=+$/, ''))
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Soft unsubscribe; an unknown endpoint is not an error (api.md 4.9). */
export async function unsubscribe(db: Database, projectId: string, body: UnsubscribeBody): Promise<void> {
  await store.markUnsubscribed(db, projectId, body.endpoint)
}
