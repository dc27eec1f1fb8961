// Shapes of the session, invite and member routes (issue 13).
import { Type, type Static } from 'typebox'
import { PERMISSIONS, ROLES } from '../access/access.ts'
import { PASSWORD_MAX, PASSWORD_MIN } from './passwords.ts'

export const RoleSchema = Type.Enum([...ROLES], { description: 'owner: everything; admin: everything but members; editor: compose, send, groups, tags; viewer: read only.' })
const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^\\s*[^\\s@]+@[^\\s@]+\\s*$', description: 'Compared trimmed and lower-cased.' })
const ProjectId = Type.String({ minLength: 1, maxLength: 64, description: 'prj_…' })
const Token = Type.String({ minLength: 1, maxLength: 128, description: 'The token at the end of the invite link.' })
const NewPassword = Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX, description: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters.` })

export const SignInBody = Type.Object(
  {
    email: Email,
    password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }),
    project: Type.Optional(ProjectId),
  },
  { additionalProperties: false },
)
export type SignInBody = Static<typeof SignInBody>

export const SwitchProjectBody = Type.Object({ project: ProjectId }, { additionalProperties: false })

const ProjectRole = Type.Object({ id: Type.String(), name: Type.String(), role: RoleSchema })

export const SessionView = Type.Object({
  user: Type.Object({ id: Type.String({ description: 'usr_…' }), email: Type.String() }),
  project: Type.Union([ProjectRole, Type.Null()], { description: 'The project requests act in unless X-Herald-Project names another.' }),
  projects: Type.Array(ProjectRole),
  permissions: Type.Array(Type.Enum([...PERMISSIONS]), { description: "What the role allows in the current project." }),
  csrf_token: Type.String({ description: 'Send it as X-CSRF-Token on every request that changes something.' }),
  expires_at: Type.Integer({ description: 'The absolute end of the session (Unix ms); it also ends after HERALD_SESSION_IDLE_MINUTES unused.' }),
})

export const TokenBody = Type.Object({ token: Token }, { additionalProperties: false })
export const AcceptInviteBody = Type.Object(
  {
    token: Token,
    password: Type.Optional(Type.String({ minLength: PASSWORD_MIN, maxLength: PASSWORD_MAX, description: `A new account's password (${PASSWORD_MIN} to ${PASSWORD_MAX} characters). Leave it out to accept as the signed-in user (session cookie and X-CSRF-Token): an email that has an account already must sign in first.` })),
  },
  { additionalProperties: false },
)

export const InviteView = Type.Object({
  email: Type.String(),
  project: Type.Object({ id: Type.String(), name: Type.String() }),
  role: RoleSchema,
  expires_at: Type.Integer(),
}, { description: 'Whether the email has an account is not said (issue 22): the page offers both choosing a password and signing in.' })

export const AcceptedInvite = Type.Object({ ok: Type.Literal(true), user_id: Type.String({ description: 'usr_…: the account that joined.' }), email: Type.String(), project_id: Type.String(), role: RoleSchema })

export const InviteBody = Type.Object({ email: Email, role: RoleSchema }, { additionalProperties: false })
export type InviteBody = Static<typeof InviteBody>

export const CreatedInvite = Type.Object({
  id: Type.String({ description: 'inv_…' }),
  user_id: Type.String({ description: "usr_…: the id the account gets if the email has none when it accepts. Never an existing account's id: the member list shows the real one once the person has joined." }),
  email: Type.String(),
  project_id: Type.String(),
  role: RoleSchema,
  invite_url: Type.String({ description: 'Shown once; valid 72 hours, for one acceptance.' }),
  expires_at: Type.Integer(),
})

export const Member = Type.Object({ user_id: Type.String(), email: Type.String(), role: RoleSchema, created_at: Type.Integer() })

export const MemberList = Type.Object({
  members: Type.Array(Member),
  invites: Type.Array(Type.Object({ id: Type.String(), email: Type.String(), role: RoleSchema, created_at: Type.Integer(), expires_at: Type.Integer() }), {
    description: 'Invites not yet accepted, revoked or expired.',
  }),
})

export const MemberParams = Type.Object({ user_id: Type.String({ minLength: 1, maxLength: 64 }) })
export const InviteParams = Type.Object({ id: Type.String({ minLength: 1, maxLength: 64 }) })
export const RoleBody = Type.Object({ role: RoleSchema }, { additionalProperties: false })

export const ChangePasswordBody = Type.Object(
  {
    current_password: Type.String({ minLength: 1, maxLength: PASSWORD_MAX }),
    new_password: Type.String({ ...NewPassword, description: `${PASSWORD_MIN} to ${PASSWORD_MAX} characters; not the email, not a very common password (400 weak_password).` }),
  },
  { additionalProperties: false },
)
export type ChangePasswordBody = Static<typeof ChangePasswordBody>

export const PasswordResetBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 128, description: 'The token at the end of the reset link.' }), password: NewPassword },
  { additionalProperties: false },
)
export const PasswordResetTokenBody = Type.Object(
  { token: Type.String({ minLength: 1, maxLength: 128, description: 'The token at the end of the reset link.' }) },
  { additionalProperties: false },
)
export const PasswordResetView = Type.Object({ email: Type.String(), expires_at: Type.Integer({ description: 'Unix ms' }) })
export const PasswordResetDone = Type.Object({ ok: Type.Literal(true), email: Type.String({ description: 'Sign in with it and the new password.' }) })

export const CreatePasswordResetBody = Type.Object({ email: Email }, { additionalProperties: false })
export const CreatedPasswordReset = Type.Object({
  user_id: Type.String(),
  email: Type.String(),
  reset_url: Type.String({ description: 'Shown once; valid one hour, for one use. Using it ends every session of the account.' }),
  expires_at: Type.Integer({ description: 'Unix ms' }),
})
