// GET /v1/audit-log (issue 13): the query and the entries it answers.
import { Type, type Static } from 'typebox'

const NullableString = Type.Union([Type.String(), Type.Null()])
/** Unix ms, as every time in the API. */
const unixMs = (description: string) => Type.Integer({ minimum: 0, maximum: 8_640_000_000_000_000, description })

export const ListAuditQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 50 })),
  cursor: Type.Optional(Type.String({ pattern: '^aud_[0-9a-z]{26}$', description: 'next_cursor of the previous page.' })),
  actor_id: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'A user (usr_…) or key (key_…) id.' })),
  action: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 64,
    pattern: '^[a-z_]+(\\.[a-z_]+)*\\.?$',
    description: 'An action, exactly (broadcast.send); or, ending with a dot, every action under it (broadcast.).',
  })),
  target_id: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'The id the change was about (bdc_…, grp_…, usr_…, an external_id …).' })),
  since: Type.Optional(unixMs('Entries at or after this time (Unix ms).')),
  until: Type.Optional(unixMs('Entries before this time (Unix ms).')),
})
export type ListAuditQuery = Static<typeof ListAuditQuery>

export const AuditEntryView = Type.Object({
  id: Type.String({ description: 'aud_…' }),
  action: Type.String({ description: 'e.g. broadcast.send, group.members.add, member.role_change (docs/decisions.md "Audit log").' }),
  actor: Type.Object({
    type: Type.Enum(['user', 'key', 'operator']),
    id: Type.Union([Type.String(), Type.Null()], { description: 'usr_… or key_…; null for the operator.' }),
    label: Type.Union([Type.String(), Type.Null()], { description: "The user's email, or the key's name and prefix, where still known." }),
  }),
  target: Type.Object({ type: NullableString, id: NullableString }),
  details: Type.Record(Type.String(), Type.Unknown(), { description: 'What changed: counts, field names, roles; never secrets or notification content.' }),
  ip: NullableString,
  user_agent: NullableString,
  created_at: Type.Integer({ description: 'Unix ms.' }),
})
export type AuditEntryView = Static<typeof AuditEntryView>

export const AuditList = Type.Object({
  entries: Type.Array(AuditEntryView),
  next_cursor: NullableString,
})
export type AuditList = Static<typeof AuditList>
