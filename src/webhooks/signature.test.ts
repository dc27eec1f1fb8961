// Standard Webhooks signing, checked against the specification's published
// vector (svix/svix-webhooks go/webhook_test.go) and against a verifier
// written the way docs/webhooks.md tells customers to.
import { createHmac, timingSafeEqual } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { newWebhookSecret } from './webhooks.service.ts'
import { signWebhook, webhookHeaders } from './signature.ts'

describe('webhook signatures', () => {
  it('reproduces the Standard Webhooks test vector', () => {
    const signature = signWebhook('whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'msg_p5jXN8AQM9LWM0D4loKWxJek', 1614265330, '{"test": 2432232314}')
    expect(signature).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=')
  })

  it('sets the four headers, with the timestamp in seconds and the id given', () => {
    const secret = newWebhookSecret()
    const body = '{"id":"evt_1"}'
    const headers = webhookHeaders(secret, 'evt_1', body, 1_700_000_000_999)
    expect(headers).toEqual({
      'content-type': 'application/json',
      'webhook-id': 'evt_1',
      'webhook-timestamp': '1700000000',
      'webhook-signature': signWebhook(secret, 'evt_1', 1_700_000_000, body),
    })
    // The verifier from docs/webhooks.md.
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64')
    const expected = createHmac('sha256', key).update(`evt_1.1700000000.${body}`).digest()
    const given = Buffer.from(headers['webhook-signature'].split(',')[1], 'base64')
    expect(timingSafeEqual(expected, given)).toBe(true)
    expect(signWebhook(secret, 'evt_1', 1_700_000_000, body + ' ')).not.toBe(headers['webhook-signature'])
  })

  it('carries one signature per secret during a rotation, the new one first, each verifiable alone', () => {
    const current = newWebhookSecret()
    const previous = newWebhookSecret()
    const body = '{"id":"evt_2"}'
    const headers = webhookHeaders(current, 'evt_2', body, 1_700_000_000_000, previous)
    expect(headers['webhook-signature']).toBe(
      `${signWebhook(current, 'evt_2', 1_700_000_000, body)} ${signWebhook(previous, 'evt_2', 1_700_000_000, body)}`,
    )
    expect(webhookHeaders(current, 'evt_2', body, 1_700_000_000_000, null)['webhook-signature']).toBe(signWebhook(current, 'evt_2', 1_700_000_000, body))
  })
})
