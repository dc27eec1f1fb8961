// Every error code Herald answers with, its HTTP status and its default
// message. Services throw `new AppError('group_not_found')`; the HTTP layer
// turns it into { error: { code, message, ...extra } }. Clients branch on code.

export const ERRORS = {
  invalid_request: { status: 400, message: 'The request is invalid.' },
  invalid_json: { status: 400, message: 'The body must be valid JSON sent as application/json.' },
  missing_project: { status: 400, message: 'Give the project as the project query parameter or the X-Service-Project header.' },
  invalid_icon: { status: 400, message: 'The icon must be an HTTPS URL or a PNG, JPEG or WebP data URL of at most 256 KB, and square.' },
  invalid_image: { status: 400, message: 'The image must be an HTTPS URL or a PNG, JPEG or WebP data URL of at most 1 MB.' },
  weak_password: { status: 400, message: 'The new password is too easy to guess: see the message and choose another.' },
  invalid_backup: { status: 400, message: 'The file is not a Herald backup this release can restore.' },
  template_invalid: { status: 400, message: 'A template field does not parse, uses a tag, filter or variable templates do not allow, or lets a variable choose a URL\'s host (docs/templates.md).' },
  template_render_failed: { status: 400, message: 'A template field ran over the time or output limit when rendered with this send\'s data (docs/templates.md "Limits").' },
  missing_variable: { status: 400, message: 'With missing "fail", every data variable the notification uses must be given in data.' },
  invalid_stats_range: { status: 400, message: 'The stats range is empty or has too many buckets: to must be after from, and at most 1000 buckets (docs/stats.md).' },
  invalid_experiment: { status: 400, message: 'The A/B test is invalid: variants and experiment come together, keys are unique, and some send fields cannot be combined with a test (docs/experiments.md).' },
  invalid_scheduled_at: { status: 400, message: 'scheduled_at must lie in the future and within 90 days.' },
  invalid_api_key: { status: 401, message: 'The API key is missing, malformed, revoked or unknown.' },
  invalid_admin_token: { status: 401, message: 'The operator token is missing or wrong.' },
  invalid_credentials: { status: 401, message: 'The email or password is wrong.' },
  invalid_session: { status: 401, message: 'You are not signed in, or your session has expired. Sign in again.' },
  // The plan gates: thrown with a message that also names the project and the
  // command that lifts them (projects/plans.ts howToLift); these are the floor.
  group_limit_reached: { status: 403, message: "The project is at its plan's group cap. The operator of this Herald can raise it (herald projects update)." },
  subscriber_limit_reached: { status: 403, message: "The project is at its plan's subscriber cap. The operator of this Herald can raise it (herald projects update)." },
  monthly_push_limit_reached: { status: 403, message: "The broadcast would take the project over its plan's monthly push cap. The operator of this Herald can raise it (herald projects update)." },
  scheduling_requires_upgrade: { status: 403, message: 'Scheduling needs the Plus plan or higher. The operator of this Herald can change the plan (herald projects update --plan plus).' },
  image_requires_upgrade: { status: 403, message: 'notification.image needs the Hobby plan or higher. The operator of this Herald can change the plan (herald projects update --plan hobby).' },
  insufficient_scope: { status: 403, message: "This API key's scope does not cover this request." },
  insufficient_role: { status: 403, message: 'Your role in this project does not allow this.' },
  csrf_token_invalid: { status: 403, message: 'A request made with a session cookie must carry the X-CSRF-Token header given at sign-in.' },
  webhook_limit_reached: { status: 403, message: 'The project has as many webhook endpoints as it may have.' },
  invite_wrong_account: { status: 403, message: 'This invite is for another email: sign in with the email it was made for.' },
  not_found: { status: 404, message: 'No such route.' },
  project_not_found: { status: 404, message: 'No such project.' },
  group_not_found: { status: 404, message: 'No such group in this project.' },
  subscriber_not_found: { status: 404, message: 'No such subscriber in this project.' },
  broadcast_not_found: { status: 404, message: 'No such broadcast in this project.' },
  experiment_not_found: { status: 404, message: 'This broadcast has no A/B test.' },
  template_not_found: { status: 404, message: 'No such template in this project.' },
  webhook_not_found: { status: 404, message: 'No such webhook in this project.' },
  api_key_not_found: { status: 404, message: 'No such API key in this project.' },
  vapid_key_not_found: { status: 404, message: 'No such VAPID key in this project.' },
  media_not_found: { status: 404, message: 'No such icon or image.' },
  click_link_not_found: { status: 404, message: 'This notification link is not valid: it was changed, or its broadcast no longer exists.' },
  member_not_found: { status: 404, message: 'No such member in this project.' },
  user_not_found: { status: 404, message: 'No account has that email.' },
  password_reset_not_found: { status: 404, message: 'This password reset link is unknown, already used or expired. Ask the operator of this Herald for a new one.' },
  invite_not_found: { status: 404, message: 'This invite link is unknown, already used, revoked or expired. Ask an owner of the project for a new one.' },
  method_not_allowed: { status: 405, message: 'This route does not take that method.' },
  restore_target_not_empty: { status: 409, message: 'A backup is restored into an empty database only.' },
  group_name_taken: { status: 409, message: 'Another group in this project has that name.' },
  template_name_taken: { status: 409, message: 'Another template in this project has that name.' },
  last_owner: { status: 409, message: 'A project keeps at least one owner: make someone else an owner first.' },
  member_exists: { status: 409, message: 'This person is already a member of the project.' },
  invite_sign_in_required: { status: 409, message: 'This email already has an account: sign in with it, then accept the invite. No password is taken here.' },
  broadcast_not_cancelable: { status: 409, message: 'Only a scheduled broadcast that has not fired can be canceled.' },
  no_test_devices: { status: 409, message: 'You have no test device in this project: subscribe this browser as a test device in the dashboard first (docs/first-use.md).' },
  experiment_not_decidable: { status: 409, message: 'The A/B test is not running: it has not started, is already decided, has no winner phase (test_share 1), or its broadcast was stopped.' },
  broadcast_not_stoppable: { status: 409, message: 'The broadcast is already over (sent, failed or canceled): there is nothing to stop.' },
  vapid_keys_in_use: { status: 409, message: "The project has active subscribers, whose subscriptions are bound to its current VAPID public key: replacing the pair would stop every push to them." },
  vapid_key_has_subscribers: { status: 409, message: 'Active subscriptions were made with this VAPID key: retiring it would lose them. Wait until none is left, or retire it with force (operator only), which expires them.' },
  vapid_key_current: { status: 409, message: 'This is the current VAPID key, which new subscriptions are made with: rotate to a new key first.' },
  idempotency_key_in_progress: { status: 409, message: 'A request with this Idempotency-Key is still being processed; retry in a moment.' },
  payload_too_large: { status: 413, message: 'The body is too large.' },
  idempotency_key_reused: { status: 422, message: 'This Idempotency-Key was used in the last 24 hours with a different request body.' },
  rate_limited: { status: 429, message: 'Too many requests; retry after the time in Retry-After.' },
  internal_error: { status: 500, message: 'Something went wrong on our side.' },
  not_ready: { status: 503, message: 'The service is not ready.' },
} as const satisfies Record<string, { status: number; message: string }>

export type ErrorCode = keyof typeof ERRORS

export interface ValidationIssue {
  path: string
  message: string
}

export class AppError extends Error {
  readonly code: ErrorCode
  readonly status: number
  /** Extra fields beside code and message, e.g. { limit, audience } or { issues }. */
  readonly extra: Record<string, unknown>

  constructor(code: ErrorCode, message?: string, extra: Record<string, unknown> = {}) {
    super(message ?? ERRORS[code].message)
    this.code = code
    this.status = ERRORS[code].status
    // decisions.md §1: every invalid_request carries issues. Callers that know
    // the field name it (invalidField, the schema errors); this is the floor.
    const issues = extra.issues
    this.extra = code === 'invalid_request' && !(Array.isArray(issues) && issues.length > 0)
      ? { ...extra, issues: [{ path: '(request)', message: this.message }] }
      : extra
  }

  toBody(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, ...this.extra } }
  }
}

/** A 400 invalid_request for one field, for rules a JSON schema cannot say. */
export function invalidField(path: string, message: string): AppError {
  return new AppError('invalid_request', `${path}: ${message}`, { issues: [{ path, message }] })
}
