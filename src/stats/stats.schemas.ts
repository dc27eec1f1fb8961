// GET /v1/stats (issue 25, docs/stats.md): the query and the buckets it answers.
import { Type, type Static } from 'typebox'

/** Unix ms, as every time in the API. */
const unixMs = (description: string) => Type.Integer({ minimum: 0, maximum: 8_640_000_000_000_000, description })

/** The most buckets one request may ask for: 41 days of hours, or more than 2 years of days. */
export const MAX_STATS_BUCKETS = 1000

export const STATS_INTERVALS = ['hour', 'day'] as const
export type StatsInterval = (typeof STATS_INTERVALS)[number]

/** A time of the query: up to the end of year 9999, so a bucket's end is a date too. */
const queryMs = (description: string) => Type.Integer({ minimum: 0, maximum: 253_402_300_799_999, description })

export const StatsQuery = Type.Object({
  from: Type.Optional(queryMs('Start (Unix ms), rounded down to the start of its hour or day in the project\'s time zone. Default: the last 24 hours (interval hour) or 30 days (interval day) up to to, the one in progress included.')),
  to: Type.Optional(queryMs('End (Unix ms), excluded: the last bucket is the one holding the millisecond before it. Default: now.')),
  interval: Type.Optional(Type.Union([Type.Literal('hour'), Type.Literal('day')], { description: 'hour or day (of the project\'s default_timezone). Default day.' })),
})
export type StatsQuery = Static<typeof StatsQuery>

const Count = Type.Integer({ minimum: 0 })
const Counts = (description: string) => Type.Record(Type.String(), Type.Integer({ minimum: 0 }), { description })

const StatsNumbers = {
  sent: Type.Integer({ minimum: 0, description: 'Pushes handed to a push service (delivered plus failed, less those never sent: capped, skipped).' }),
  delivered: Type.Integer({ minimum: 0, description: 'Pushes a push service accepted.' }),
  shown: Type.Integer({ minimum: 0, description: 'Notifications the service worker reported shown (declarative pushes cannot report it).' }),
  clicked: Count,
  dismissed: Count,
  failed: Type.Integer({ minimum: 0, description: 'Failed pushes, every reason.' }),
  failed_by_reason: Counts('failed by reason: gone, rejected, unreachable, vapid_key_mismatch, capped, skipped (each present, 0 when none).'),
  gained: Type.Integer({ minimum: 0, description: 'Subscribers that became active (new, or active again).' }),
  gained_by_source: Type.Object({ subscribe: Count, import: Count, migrated: Count }, { description: 'gained by the subscriber\'s source.' }),
  lost: Type.Integer({ minimum: 0, description: 'Active subscribers that stopped being active.' }),
  lost_by_reason: Type.Object({ unsubscribed: Count, expired: Count, erased: Count }, { description: 'lost by why.' }),
}

export const StatsBucket = Type.Object({
  start: unixMs('Start of the bucket (Unix ms), a local hour or midnight.'),
  end: unixMs('End of the bucket (Unix ms), excluded. A day is 23 or 25 hours long on the days the clocks change.'),
  ...StatsNumbers,
  active: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], {
    description: 'Active subscribers at the end of the bucket (now, for the bucket in progress); null for a bucket that ends before stats_since or starts in the future.',
  }),
})
export type StatsBucket = Static<typeof StatsBucket>

export const StatsResponse = Type.Object({
  interval: Type.Union([Type.Literal('hour'), Type.Literal('day')]),
  time_zone: Type.String({ description: "The project's default_timezone, which the buckets follow." }),
  from: unixMs('Start of the first bucket.'),
  to: unixMs('End of the last bucket.'),
  stats_since: unixMs('When counting started for this project (the upgrade to 0.3.0, or its creation): nothing before is counted.'),
  buckets: Type.Array(StatsBucket),
  totals: Type.Object(StatsNumbers, { description: 'The buckets added up.' }),
})
export type StatsResponse = Static<typeof StatsResponse>
