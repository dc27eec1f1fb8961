// The payload_version of the jobs a broadcast runs as (docs/upgrades.md).
/**
 * The payload version of every broadcast job this release enqueues
 * (fire_broadcast, fanout_broadcast, push_batch, push_retry): 2. A worker of
 * 0.2.0 claims version 1 only, and would send a personalized broadcast
 * unrendered (issue 24), a local-time one or one in a project with quiet hours
 * at once, and a capped one uncapped; so during an upgrade a broadcast this
 * release planned waits for a worker of this release (docs/upgrades.md). The
 * payload's shape is the same; this release's workers take both versions.
 */
export const BROADCAST_PAYLOAD_VERSION = 2
