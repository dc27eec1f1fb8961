// Request and response shapes of the group routes (api.md 4.1-4.6, §8).
import { Type, type Static } from 'typebox'

/** api.md §8: group name 1-64 chars, description at most 512. */
export const GROUP_NAME_MAX = 64
export const GROUP_DESCRIPTION_MAX = 512
/** api.md 4.5: subscriber_ids takes 1-500 items. */
export const ADD_MEMBERS_MAX = 500

const GroupName = Type.String({ minLength: 1, maxLength: GROUP_NAME_MAX, description: 'Unique within the project.' })
const GroupDescription = Type.String({ maxLength: GROUP_DESCRIPTION_MAX })

export const Group = Type.Object({
  id: Type.String({ description: 'grp_…' }),
  name: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  member_count: Type.Integer({ description: 'Memberships, whatever the subscribers’ status.' }),
  created_at: Type.Integer({ description: 'Unix ms' }),
})
export type Group = Static<typeof Group>

export const GroupList = Type.Object({ groups: Type.Array(Group) })

export const GroupParams = Type.Object({ id: Type.String({ description: 'A group id, grp_…' }) })
export const MemberParams = Type.Object({
  id: Type.String({ description: 'A group id, grp_…' }),
  sid: Type.String({ description: 'A subscriber id, sub_…' }),
})

export const CreateGroupBody = Type.Object({
  name: GroupName,
  description: Type.Optional(Type.Union([GroupDescription, Type.Null()], { description: 'null or omitted: no description' })),
})
export type CreateGroupBody = Static<typeof CreateGroupBody>

export const UpdateGroupBody = Type.Object({
  name: Type.Optional(GroupName),
  description: Type.Optional(Type.Union([GroupDescription, Type.Null()], { description: 'null clears it' })),
})
export type UpdateGroupBody = Static<typeof UpdateGroupBody>

export const AddMembersBody = Type.Object({
  subscriber_ids: Type.Array(Type.String(), {
    minItems: 1,
    maxItems: ADD_MEMBERS_MAX,
    description: 'Ids returned by subscribe; ids of other projects or unknown ids are silently dropped.',
  }),
})
export type AddMembersBody = Static<typeof AddMembersBody>

export const CreatedId = Type.Object({ id: Type.String() })
export const Added = Type.Object({ added: Type.Integer({ description: 'Memberships actually inserted.' }) })
