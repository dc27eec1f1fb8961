// Click and dismiss beacons from the service worker (api.md 4.10, §6).
import type { Database } from '../platform/db/database.ts'
import { newId } from '../platform/ids.ts'
import { enqueueDeliveriesForEvents } from '../webhooks/webhook-deliveries.store.ts'
import { incrementBroadcastCount, insertBeaconEvent, type BeaconEventType } from './events.store.ts'

/**
 * Records the event, bumps the broadcast's count and writes its webhook
 * deliveries, together or not at all.
 * Returns false (nothing recorded) when the broadcast is not the project's:
 * the caller drops the request silently.
 */
export async function recordBeaconEvent(
  db: Database,
  projectId: string,
  input: { type: BeaconEventType; broadcast_id: string },
): Promise<boolean> {
  return db.transaction(async (tx) => {
    if (!(await incrementBroadcastCount(tx, projectId, input.broadcast_id, input.type))) return false
    const id = newId('evt')
    await insertBeaconEvent(tx, { id, project_id: projectId, broadcast_id: input.broadcast_id, type: input.type })
    await enqueueDeliveriesForEvents(tx, projectId, [{ id, type: input.type }])
    return true
  })
}
