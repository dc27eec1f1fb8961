// One line of POST /v1/subscribers/import (issue 23) and the answer. A line is
// a subscribe body (the same endpoint, keys, external_id, group_ids and tags
// rules) plus what a move from another provider brings: groups by name and the
// original subscription time.
import { Type, type Static } from 'typebox'
import { GROUP_IDS_MAX, SubscribeBody, SubscriberStatus } from './subscribers.schemas.ts'

// A browser's source and replaces are not an import's: an export's `source`
// column stays an ignored extra field, as it was before subscribe took one.
const { source: _source, replaces: _replaces, ...subscribeFields } = SubscribeBody.properties

export const ImportLine = Type.Object({
  ...subscribeFields,
  group_ids: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { maxItems: GROUP_IDS_MAX, description: 'Groups of this project to join, by id.' })),
  groups: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128 }), { maxItems: GROUP_IDS_MAX, description: 'Groups of this project to join, by name.' })),
  created_at: Type.Optional(Type.Union([
    Type.Integer({ minimum: 0, maximum: 8.64e15, description: 'Unix ms' }),
    Type.String({ format: 'date-time', description: 'RFC 3339' }),
  ], { description: 'When the browser first subscribed, kept for a new subscriber; now when absent.' })),
  status: Type.Optional(SubscriberStatus),
})
export type ImportLine = Static<typeof ImportLine>

/** A line that was not imported: its number (from 1), the field at fault, and why. */
export const ImportError = Type.Object({
  line: Type.Integer({ minimum: 1 }),
  field: Type.String({ description: 'The field at fault, e.g. keys.p256dh; (line) for the line as a whole.' }),
  reason: Type.String(),
})
export type ImportError = Static<typeof ImportError>

export const IMPORT_ERRORS_MAX = 100

export const ImportResult = Type.Object({
  imported: Type.Integer({ description: 'New subscribers.' }),
  updated: Type.Integer({ description: 'Existing subscribers the file changed (keys, external_id, tags, groups, or an inactive one made active). A line that matches what is stored counts in neither.' }),
  skipped: Type.Integer({ description: 'Lines not imported: invalid, naming an unknown group, or over the plan\'s subscriber cap.' }),
  errors: Type.Array(ImportError, { maxItems: IMPORT_ERRORS_MAX, description: 'The first 100 skipped lines, in file order.' }),
})
export type ImportResult = Static<typeof ImportResult>
