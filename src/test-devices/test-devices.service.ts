// "Send a test to me" (issue 25, docs/first-use.md). A member's test devices
// are their own browsers, subscribed from the dashboard; a test is a normal
// broadcast (source dashboard: counts, the monthly budget and the audit log as
// usual) whose target is that member's test devices only. The member is
// always the signed-in one: no route takes a user id, so nobody reaches
// another member's devices, and every query names the project.
import { AppError, invalidField } from '../platform/errors.ts'
import { newId } from '../platform/ids.ts'
import { checkPushEndpoint } from '../platform/outbound/url-policy.ts'
import type { AuthedProject } from '../projects/project-auth.ts'
import type { AuditContext } from '../audit/audit-context.ts'
import { sendBroadcast, type SendDeps } from '../broadcasts/send.service.ts'
import type { SendBody } from '../broadcasts/broadcasts.schemas.ts'
import { countAudience } from '../broadcasts/audience.store.ts'
import type { AddTestDeviceBody, SendTestBody, TestDevice } from './test-devices.schemas.ts'
import * as store from './test-devices.store.ts'

/** What a test says when the member sends no draft. */
export const TEST_MESSAGE = { title: 'Test from Herald', body: 'Notifications from this project reach this browser.' }

function toView(row: store.TestDeviceRow): TestDevice {
  return {
    id: row.id,
    label: row.label,
    push_service: row.push_service,
    created_at: row.created_at.getTime(),
    last_delivered_at: row.last_delivered_at ? row.last_delivered_at.getTime() : null,
    consecutive_failures: row.consecutive_failures,
  }
}

export async function listTestDevices(deps: SendDeps, projectId: string, userId: string): Promise<TestDevice[]> {
  return (await store.listTestDevices(deps.db, projectId, userId)).map(toView)
}

export async function addTestDevice(deps: SendDeps, projectId: string, userId: string, body: AddTestDeviceBody): Promise<TestDevice> {
  const refused = checkPushEndpoint(body.endpoint, deps.config)
  if (refused) throw invalidField('endpoint', refused)
  return deps.db.transaction(async (tx) => {
    const id = await store.upsertTestDevice(tx, {
      id: newId('sub'), projectId, userId, endpoint: body.endpoint, p256dh: body.keys.p256dh, auth: body.keys.auth, label: body.label ?? 'Browser',
    })
    if (!id) throw invalidField('endpoint', 'is a subscriber of this project, not a test device')
    const row = (await store.listTestDevices(tx, projectId, userId)).find((d) => d.id === id)!
    return toView(row)
  })
}

// Adding and removing a test device are not in the audit log: they touch the
// member's own browsers only, reach no subscriber and cost nothing. The test
// sends are (broadcast.send, source dashboard, target test_devices).

export async function removeTestDevice(deps: SendDeps, projectId: string, userId: string, id: string): Promise<number> {
  return store.deleteTestDevice(deps.db, projectId, userId, id)
}

/** Sends the draft (or TEST_MESSAGE) to the member's test devices, as a broadcast from the dashboard. */
export async function sendTest(deps: SendDeps, audit: AuditContext, project: AuthedProject, userId: string, body: SendTestBody): Promise<{ broadcast_id: string; audience: number }> {
  const target = { type: 'test_devices', user_id: userId } as const
  // Checked before the send so that "no device" is its own answer, not a broadcast to nobody.
  const audience = await countAudience(deps.db, project.id, target)
  if (audience === 0) throw new AppError('no_test_devices')
  // Transactional: a project's frequency caps never hold back a test (its push still counts toward them).
  const send = { target, notification: body.notification ?? TEST_MESSAGE, class: 'transactional' } as unknown as SendBody
  const answer = await sendBroadcast(deps, project, send, audit, { source: 'dashboard' })
  return { broadcast_id: answer.broadcast_id, audience }
}
