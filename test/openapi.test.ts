// The live /openapi.json as the tools customers point at it read it: Redocly's
// recommended lint, and the operationIds client generators (openapi-generator,
// orval, openapi-typescript-codegen) name their methods by.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createConfig, lintFromString } from '@redocly/openapi-core'
import { createTestApp, type TestApp } from './support/app.ts'

interface Operation {
  operationId?: string
  summary?: string
  security?: Record<string, string[]>[]
  responses?: Record<string, unknown>
}
interface Document {
  paths: Record<string, Record<string, Operation>>
}

/**
 * Warnings of the recommended ruleset that stay, each with its reason (also in
 * docs/decisions.md, "The OpenAPI document"). Keyed by rule and JSON pointer:
 * a new warning anywhere else fails the test, and so does an entry here that
 * no longer matches anything.
 */
const ALLOWED_WARNINGS: Record<string, string> = {
  // Herald is deployed by its operators; the document states no licence for them.
  'info-license #/info': 'no licence is stated in the API document',
  // Liveness and readiness answer 200 or 503 whatever the request: there is no client error to document.
  'operation-4xx-response #/paths/~1healthz/get/responses': 'liveness has no 4xx',
  'operation-4xx-response #/paths/~1readyz/get/responses': 'readiness has no 4xx',
  // api.md 4.10: any events call answers 202, a bad one included.
  'operation-4xx-response #/paths/~1v1~1events/post/responses': 'events always answers 202',
  // A click link's success is the 302 to the notification's URL.
  'operation-2xx-response #/paths/~1c~1{token}/get/responses': 'a click link redirects (302)',
  // The send target's discriminator is there for Herald's own validator (one clear issue for a bad type);
  // each variant still carries its `type` as a const, which is how generators tell them apart.
  ...Object.fromEntries([0, 1, 2, 3].map((i) => [
    `no-illogical-composition-keywords #/paths/~1v1~1send/post/requestBody/content/application~1json/schema/properties/target/oneOf/${i}`,
    'inline target variants',
  ])),
  // Kept so documents and tools written against earlier versions still resolve it; no operation
  // uses it since the project id, which names a project and proves nothing, became a plain parameter.
  'no-unused-components #/components/securitySchemes/project': 'kept for compatibility',
}

/** The operationIds that exist, pinned: renaming one renames a method in every generated client. */
const OPERATION_IDS: Record<string, string> = {
  'GET /healthz': 'getHealth', 'GET /readyz': 'getReadiness', 'GET /metrics': 'getMetrics',
  'POST /admin/v1/projects': 'createProject', 'GET /admin/v1/projects': 'listProjects',
  'GET /admin/v1/projects/{id}': 'getProject', 'PATCH /admin/v1/projects/{id}': 'updateProject',
  'GET /admin/v1/projects/{id}/api-keys': 'listProjectApiKeys', 'POST /admin/v1/projects/{id}/api-keys': 'createProjectApiKey',
  'DELETE /admin/v1/projects/{id}/api-keys/{key_id}': 'revokeProjectApiKey', 'POST /admin/v1/projects/{id}/members': 'inviteProjectMember',
  'GET /v1/me': 'getCurrentProject', 'PATCH /v1/me': 'updateCurrentProject', 'GET /v1/vapid-public-key': 'getVapidPublicKey',
  'GET /v1/api-keys': 'listApiKeys', 'POST /v1/api-keys': 'createApiKey', 'DELETE /v1/api-keys/{id}': 'revokeApiKey',
  'GET /admin/v1/projects/{id}/vapid-keys': 'listProjectVapidKeys', 'POST /admin/v1/projects/{id}/vapid-keys/rotate': 'rotateProjectVapidKeys',
  'DELETE /admin/v1/projects/{id}/vapid-keys/{key_id}': 'retireProjectVapidKey',
  'GET /v1/vapid-keys': 'listVapidKeys', 'POST /v1/vapid-keys/rotate': 'rotateVapidKeys', 'DELETE /v1/vapid-keys/{key_id}': 'retireVapidKey',
  'POST /v1/session': 'signIn', 'GET /v1/session': 'getSession', 'PATCH /v1/session': 'switchProject',
  'DELETE /v1/session': 'signOut', 'DELETE /v1/sessions': 'signOutEverywhere',
  'POST /v1/session/password': 'changePassword', 'POST /admin/v1/users/password-reset': 'createPasswordResetLink',
  'POST /v1/password-reset/inspect': 'inspectPasswordReset', 'POST /v1/password-reset': 'resetPassword',
  'POST /v1/invites/inspect': 'inspectInvite', 'POST /v1/invites/accept': 'acceptInvite',
  'GET /v1/members': 'listMembers', 'POST /v1/members/invites': 'createInvite', 'DELETE /v1/members/invites/{id}': 'revokeInvite',
  'PATCH /v1/members/{user_id}': 'changeMemberRole', 'DELETE /v1/members/{user_id}': 'removeMember',
  'GET /v1/audit-log': 'listAuditLog', 'GET /v1/stats': 'getStats',
  'GET /v1/templates': 'listTemplates', 'POST /v1/templates': 'createTemplate', 'GET /v1/templates/{id}': 'getTemplate',
  'PATCH /v1/templates/{id}': 'updateTemplate', 'DELETE /v1/templates/{id}': 'deleteTemplate',
  'GET /v1/groups': 'listGroups', 'POST /v1/groups': 'createGroup', 'PATCH /v1/groups/{id}': 'updateGroup',
  'DELETE /v1/groups/{id}': 'deleteGroup', 'POST /v1/groups/{id}/subscribers': 'addGroupSubscribers',
  'DELETE /v1/groups/{id}/subscribers/{sid}': 'removeGroupSubscriber',
  'POST /v1/subscribe': 'subscribe', 'POST /v1/unsubscribe': 'unsubscribe',
  'GET /v1/subscribers': 'listSubscribers', 'GET /v1/subscribers/counts': 'countSubscribers',
  'GET /v1/subscribers/health': 'countSubscriberHealth',
  'GET /v1/subscribers/{sid}': 'getSubscriber', 'PATCH /v1/subscribers/{sid}': 'updateSubscriberTags',
  'DELETE /v1/subscribers/{sid}': 'eraseSubscriber',
  'PATCH /v1/subscribers/by-external-id/{external_id}': 'updateUserSubscriberTags',
  'DELETE /v1/subscribers/by-external-id/{external_id}': 'eraseUserSubscribers',
  'DELETE /v1/subscribers/by-endpoint': 'eraseSubscriberByEndpoint',
  'POST /v1/send': 'sendNotification',
  'GET /v1/broadcasts': 'listBroadcasts', 'GET /v1/broadcasts/{id}': 'getBroadcast',
  'GET /v1/broadcasts/export': 'exportBroadcasts', 'GET /v1/subscribers/export': 'exportSubscribers',
  'GET /v1/test-devices': 'listTestDevices', 'POST /v1/test-devices': 'addTestDevice', 'POST /v1/test-devices/send': 'sendTestToMe',
  'DELETE /v1/test-devices/{id}': 'removeTestDevice',
  'DELETE /v1/broadcasts/{id}': 'cancelBroadcast', 'POST /v1/broadcasts/{id}/stop': 'stopBroadcast',
  'POST /v1/broadcasts/{id}/experiment/decide': 'decideExperiment',
  'GET /v1/notifications/{broadcast_id}': 'getNotification', 'GET /c/{token}': 'openClickLink',
  'POST /v1/webhooks': 'createWebhook', 'GET /v1/webhooks': 'listWebhooks', 'GET /v1/webhooks/{id}': 'getWebhook',
  'PATCH /v1/webhooks/{id}': 'updateWebhook', 'DELETE /v1/webhooks/{id}': 'deleteWebhook',
  'GET /v1/webhooks/{id}/deliveries': 'listWebhookDeliveries', 'POST /v1/webhooks/{id}/test': 'testWebhook',
  'POST /v1/webhooks/{id}/rotate-secret': 'rotateWebhookSecret',
  'GET /icons/{file}': 'getIcon', 'POST /v1/events': 'recordEvent',
}

let t: TestApp
let source: string
let operations: { name: string; op: Operation }[]
beforeAll(async () => {
  // A deployment's document names its HERALD_PUBLIC_URL as the server; the
  // tests' default (localhost) would be a lint warning that no deployment has.
  t = await createTestApp({ HERALD_PUBLIC_URL: 'https://push.herald.test' })
  const res = await t.app.inject({ method: 'GET', url: '/openapi.json' })
  expect(res.statusCode).toBe(200)
  source = res.body
  const doc = JSON.parse(source) as Document
  operations = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })))
})
afterAll(async () => {
  await t.close()
})

describe('Redocly recommended lint of /openapi.json', () => {
  it('finds no error, and no warning outside the allowlist (whose every entry still applies)', async () => {
    const config = await createConfig({ extends: ['recommended'] })
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config })
    const described = problems.map((p) => ({
      key: `${p.ruleId} ${p.location[0]?.pointer ?? ''}`,
      line: `${p.severity} ${p.ruleId} at ${p.location[0]?.pointer ?? '?'}: ${p.message}`,
      severity: p.severity,
    }))
    expect(described.filter((p) => p.severity === 'error').map((p) => p.line)).toEqual([])
    expect(described.filter((p) => !(p.key in ALLOWED_WARNINGS)).map((p) => p.line)).toEqual([])
    const seen = new Set(described.map((p) => p.key))
    expect(Object.keys(ALLOWED_WARNINGS).filter((key) => !seen.has(key)), 'allowlisted warnings that no longer occur: remove them').toEqual([])
  })
})

describe('every operation of /openapi.json', () => {
  it('has a camelCase operationId, unique, declared beside its route schema', () => {
    const missing = operations.filter(({ op }) => !op.operationId).map(({ name }) =>
      `${name} has no operationId: add operationId: 'verbNoun' (e.g. 'listGroups', 'createGroup') beside its route's schema, ` +
      'and pin it in test/openapi.test.ts OPERATION_IDS')
    expect(missing).toEqual([])
    const badlyNamed = operations.filter(({ op }) => !/^[a-z]+(?:[A-Z][a-z0-9]*)*$/.test(op.operationId!)).map(({ name, op }) => `${name}: ${op.operationId}`)
    expect(badlyNamed).toEqual([])
    const ids = operations.map(({ op }) => op.operationId)
    expect(ids.filter((id, i) => ids.indexOf(id) !== i), 'operationIds used twice').toEqual([])
  })

  it('keeps every pinned operationId on its method and path (generated clients name their methods by them)', () => {
    const actual = Object.fromEntries(operations.map(({ name, op }) => [name, op.operationId]))
    const changed = Object.entries(OPERATION_IDS).filter(([name, id]) => actual[name] !== id)
      .map(([name, id]) => `${name}: pinned ${id}, now ${actual[name] ?? '(no such operation)'}`)
    expect(changed).toEqual([])
  })

  it('has a summary and declares its security (an empty list when it is public)', () => {
    expect(operations.filter(({ op }) => !op.summary?.trim()).map(({ name }) => `${name} has no summary`)).toEqual([])
    expect(operations.filter(({ op }) => !Array.isArray(op.security)).map(({ name }) => `${name} declares no security ([] if public)`)).toEqual([])
  })

  it('the public operations declare security: [] (no credential is needed)', () => {
    const publicOps = ['GET /healthz', 'GET /readyz', 'POST /v1/session', 'POST /v1/invites/inspect', 'POST /v1/invites/accept',
      'POST /v1/password-reset/inspect', 'POST /v1/password-reset',
      'POST /v1/subscribe', 'POST /v1/unsubscribe', 'POST /v1/events', 'GET /v1/vapid-public-key',
      'GET /v1/notifications/{broadcast_id}', 'GET /c/{token}', 'GET /icons/{file}']
    const byName = new Map(operations.map(({ name, op }) => [name, op]))
    for (const name of publicOps) expect(byName.get(name)?.security, name).toEqual([])
  })

  it('GET /metrics documents its 200 as the Prometheus text format', () => {
    const metrics = operations.find(({ name }) => name === 'GET /metrics')!.op
    expect(metrics.responses?.['200']).toMatchObject({ content: { 'text/plain': { schema: { type: 'string' } } } })
  })

  it('routes behind an API key or a session document what that check answers: 401, 403, 404 and 429', () => {
    const guarded = operations.filter(({ op }) => op.security?.some((scheme) => 'apiKey' in scheme || 'session' in scheme))
    expect(guarded.length).toBeGreaterThan(40)
    const lacking = guarded.flatMap(({ name, op }) => ['401', '403', '404', '429']
      .filter((status) => !(status in (op.responses ?? {}))).map((status) => `${name} lacks ${status}`))
    // The /v1/session routes authenticate the session alone (no project, so no 404; no rate limit but the
    // sign-in limits, which POST /v1/session/password documents).
    expect(lacking.filter((line) => !/^((GET|PATCH|DELETE) \/v1\/sessions?|POST \/v1\/session\/password) /.test(line))).toEqual([])
  })
})
