// SQL for broadcast_waves (migration 0029): the waves a broadcast is sent in
// when its subscribers' local times (deliver_at_local) or quiet hours make
// them due at different instants. Written when the fan-out plans them,
// marked started by each wave's first batch, read by the broadcast view
// (broadcasts.store.ts WAITING).
import type { Queryable } from '../platform/db/database.ts'

export type WaveReason = 'now' | 'local_time' | 'quiet_hours'

export interface NewWave {
  wave: number
  at: number
  reason: WaveReason
  zones: string[]
  planned: number
}

export async function insertWaves(q: Queryable, broadcastId: string, waves: NewWave[]): Promise<void> {
  if (waves.length === 0) return
  await q.query(
    `INSERT INTO broadcast_waves (broadcast_id, wave, due_at, reason, zones, planned)
     SELECT $1, w.wave, to_timestamp(w.at / 1000.0), w.reason, ARRAY(SELECT jsonb_array_elements_text(w.zones)), w.planned
       FROM unnest($2::int[], $3::float8[], $4::text[], $5::jsonb[], $6::int[]) AS w(wave, at, reason, zones, planned)`,
    [
      broadcastId,
      waves.map((w) => w.wave),
      waves.map((w) => w.at),
      waves.map((w) => w.reason),
      waves.map((w) => JSON.stringify(w.zones)),
      waves.map((w) => w.planned),
    ],
  )
}

/** A wave's first batch runs: it no longer waits. */
export async function markWaveStarted(q: Queryable, broadcastId: string, wave: number): Promise<void> {
  await q.query('UPDATE broadcast_waves SET started = true WHERE broadcast_id = $1 AND wave = $2', [broadcastId, wave])
}
