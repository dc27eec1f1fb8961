// /v1/session (sign in, who am I, switch project, sign out, change the
// password), /v1/sessions (sign out everywhere) and the invite page's two
// calls; the reset page's are in password-reset.routes.ts. Sign-in and invites
// need no credentials; the rest need the session cookie, and those that
// change something its CSRF token too (session-auth.ts).
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { AppContext } from '../platform/context.ts'
import type { App } from '../platform/http/app-type.ts'
import { ErrorBody, Ok } from '../platform/http/shared-schemas.ts'
import { AcceptedInvite, AcceptInviteBody, ChangePasswordBody, InviteView, SessionView, SignInBody, SwitchProjectBody, TokenBody } from './accounts.schemas.ts'
import { acceptInvite, inspectInvite } from './invites.service.ts'
import { countAttempt } from './login-limit.ts'
import { authenticateSession, type LiveSession } from './session-auth.ts'
import { clearSessionCookie, setSessionCookie } from './session-cookie.ts'
import { describeSession, normalizeEmail, signIn, signOut, signOutEverywhere, switchProject } from './sessions.service.ts'
import { changePassword } from './passwords.service.ts'
import { registerPasswordResetRoutes } from './password-reset.routes.ts'
import { requestOrigin } from '../audit/audit-context.ts'

/**
 * Answers that carry the CSRF token (the session's views) must not be kept by
 * a browser's or a proxy's cache: a shared or back-button copy would hand the
 * token, and who is signed in, to the next reader.
 */
function noStore(reply: FastifyReply): void {
  reply.header('Cache-Control', 'no-store')
}

const tags = ['session']
const security = [{ session: [] }]

declare module 'fastify' {
  interface FastifyRequest {
    /** Set on the /v1/session routes that need a signed-in user. */
    session?: LiveSession
  }
}

export function registerSessionRoutes(app: App, ctx: AppContext): void {
  const { db, config } = ctx
  const withSession = async (request: FastifyRequest) => {
    request.session = await authenticateSession(db, config, request)
  }
  /** A refused session also loses its cookie, so the browser stops sending a dead one. */
  const session = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      await withSession(request)
    } catch (err) {
      if ((err as { code?: string }).code === 'invalid_session') clearSessionCookie(reply, config)
      throw err
    }
  }

  app.post('/v1/session', {
    schema: {
      operationId: 'signIn',
      tags,
      security: [],
      summary: 'Sign in with email and password',
      description: 'Sets the HttpOnly session cookie and answers who is signed in, with the CSRF token to send as X-CSRF-Token. `project` picks the project to act in (default: the first). Attempts are limited per account and per IP (429 rate_limited, Retry-After).',
      body: SignInBody,
      response: { 200: SessionView, 400: ErrorBody, 401: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    noStore(reply)
    await countAttempt(ctx, request, reply, normalizeEmail(request.body.email))
    const { id, view } = await signIn(db, config, requestOrigin(request), request.body)
    setSessionCookie(reply, config, id, new Date(view.expires_at))
    return view
  })

  app.get('/v1/session', {
    onRequest: session,
    schema: { operationId: 'getSession', tags, security, summary: 'Who is signed in: the user, the current project and role, every project, the CSRF token', response: { 200: SessionView, 401: ErrorBody } },
  }, async (request, reply) => {
    noStore(reply)
    return describeSession(db, request.session!)
  })

  app.patch('/v1/session', {
    onRequest: session,
    schema: {
      operationId: 'switchProject',
      tags,
      security,
      summary: 'Switch the project the session acts in',
      description: 'A project the user is not a member of is 404 project_not_found.',
      body: SwitchProjectBody,
      response: { 200: SessionView, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody },
    },
  }, async (request, reply) => {
    noStore(reply)
    return switchProject(db, request.session!, request.body.project)
  })

  app.post('/v1/session/password', {
    onRequest: session,
    schema: {
      operationId: 'changePassword',
      tags,
      security,
      summary: 'Change the password, giving the current one',
      description:
        'Ends every other session of the account and renews this one: the answer sets a new session cookie and carries a new CSRF token. A wrong current password is 401 invalid_credentials and counts against the sign-in limits (429 rate_limited, Retry-After); a new password that is too easy to guess is 400 weak_password.',
      body: ChangePasswordBody,
      response: { 200: SessionView, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    noStore(reply)
    await countAttempt(ctx, request, reply, request.session!.email)
    const { id, view } = await changePassword(db, config, requestOrigin(request), request.session!, request.body)
    setSessionCookie(reply, config, id, new Date(view.expires_at))
    return view
  })

  app.delete('/v1/session', {
    onRequest: session,
    schema: { operationId: 'signOut', tags, security, summary: 'Sign out this session', response: { 200: Ok, 401: ErrorBody, 403: ErrorBody } },
  }, async (request, reply) => {
    await signOut(db, requestOrigin(request), request.session!)
    clearSessionCookie(reply, config)
    return { ok: true as const }
  })

  app.delete('/v1/sessions', {
    onRequest: session,
    schema: { operationId: 'signOutEverywhere', tags, security, summary: "Sign out everywhere: end every session of the signed-in user", response: { 200: Ok, 401: ErrorBody, 403: ErrorBody } },
  }, async (request, reply) => {
    await signOutEverywhere(db, requestOrigin(request), request.session!)
    clearSessionCookie(reply, config)
    return { ok: true as const }
  })

  app.post('/v1/invites/inspect', {
    schema: {
      operationId: 'inspectInvite',
      tags,
      security: [],
      summary: 'What an invite link is for (email, project, role), before accepting it',
      body: TokenBody,
      response: { 200: InviteView, 400: ErrorBody, 404: ErrorBody, 429: ErrorBody },
    },
  }, async (request) => inspectInvite(db, request.body.token))

  app.post('/v1/invites/accept', {
    schema: {
      operationId: 'acceptInvite',
      tags,
      security: [],
      summary: 'Accept an invite: a new account chooses its password; an existing one accepts signed in',
      description:
        'With `password`: for an email without an account, sets its password and joins (sign in afterwards with POST /v1/session); ' +
        'for an email that has one, 409 invite_sign_in_required, whatever the password (no password is checked here). ' +
        'Without `password`: accepts as the signed-in user (session cookie and X-CSRF-Token; 401 invalid_session, 403 csrf_token_invalid), ' +
        'whose email must be the invite\'s (403 invite_wrong_account). Someone already a member is 409 member_exists and keeps their role. ' +
        'Single use, within 72 hours of the invite (404 invite_not_found after). Counted against the per-IP sign-in limit.',
      body: AcceptInviteBody,
      response: { 200: AcceptedInvite, 400: ErrorBody, 401: ErrorBody, 403: ErrorBody, 404: ErrorBody, 409: ErrorBody, 429: ErrorBody },
    },
  }, async (request, reply) => {
    await countAttempt(ctx, request, reply, null)
    const { token, password } = request.body
    const how = password === undefined ? { userId: (await authenticateSession(db, config, request)).user_id } : { password }
    return { ok: true as const, ...(await acceptInvite(db, config, requestOrigin(request), token, how)) }
  })

  registerPasswordResetRoutes(app, ctx)
}
