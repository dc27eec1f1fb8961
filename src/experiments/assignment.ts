// Which part of an experiment a subscriber is in (docs/experiments.md): a
// function of the broadcast id and the subscriber id only, so a retry, a
// second worker, a crash and a restart all pick the same, and nothing is
// stored per subscriber.
import { createHash } from 'node:crypto'

/**
 * A number in [0, 1) from (broadcast, subscriber): the first 48 bits of
 * SHA-256, uniform enough that each part gets its share, and independent
 * between broadcasts (the same subscriber is not always in variant a).
 */
export function assignmentPoint(broadcastId: string, subscriberId: string): number {
  const digest = createHash('sha256').update(broadcastId).update('\u0000').update(subscriberId).digest()
  return digest.readUIntBE(0, 6) / 2 ** 48
}

/**
 * The variant index (0 … n-1) of a subscriber in the test, or null when they
 * are in the rest of the audience: the test share is split evenly.
 */
export function assignVariant(broadcastId: string, subscriberId: string, testShare: number, variants: number): number | null {
  const point = assignmentPoint(broadcastId, subscriberId)
  if (point >= testShare) return null
  return Math.min(variants - 1, Math.floor((point / testShare) * variants))
}
