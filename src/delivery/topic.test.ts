import { describe, expect, it } from 'vitest'
import { pushTopicFor } from './topic.ts'

const MOZILLA = 'https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk'
const FCM = 'https://fcm.googleapis.com/fcm/send/abc'

describe('pushTopicFor', () => {
  it('sends no Topic when there is none', () => {
    expect(pushTopicFor(FCM, null)).toBeNull()
    expect(pushTopicFor(MOZILLA, null)).toBeNull()
    expect(pushTopicFor(MOZILLA, '')).toBeNull()
  })

  it('passes topics unchanged to push services that follow RFC 8030', () => {
    expect(pushTopicFor(FCM, 'order_42-status')).toBe('order_42-status')
    expect(pushTopicFor(new URL('https://web.push.apple.com/QGx'), 'a-b_c')).toBe('a-b_c')
    expect(pushTopicFor('https://wns2-par02p.notify.windows.com/w/?token=x', '_')).toBe('_')
  })

  it('passes alphanumeric topics unchanged to Mozilla', () => {
    expect(pushTopicFor(MOZILLA, 'Order42')).toBe('Order42')
    expect(pushTopicFor(MOZILLA, 'a'.repeat(32))).toBe('a'.repeat(32))
  })

  it('maps other topics to a stable alphanumeric form of at most 32 chars for Mozilla', () => {
    const mapped = pushTopicFor(MOZILLA, 'order_42-status')
    expect(mapped).toMatch(/^[A-Za-z0-9]{1,32}$/)
    expect(pushTopicFor(new URL(MOZILLA), 'order_42-status')).toBe(mapped) // same input, same output
    expect(pushTopicFor(MOZILLA, 'order-42_status')).not.toBe(mapped) // distinct topics stay distinct
    expect(pushTopicFor(MOZILLA, 'order_42_status')).not.toBe(mapped)
    expect(pushTopicFor(MOZILLA, '-'.repeat(32))).toMatch(/^[A-Za-z0-9]{32}$/)
  })

  it('treats every *.services.mozilla.com host as Mozilla, and only those', () => {
    expect(pushTopicFor('https://push.services.mozilla.com/x', 'a_b')).toMatch(/^[a-f0-9]{32}$/)
    expect(pushTopicFor('https://UPDATES.push.services.mozilla.com/x', 'a_b')).toMatch(/^[a-f0-9]{32}$/)
    expect(pushTopicFor('https://services.mozilla.com.evil.example/x', 'a_b')).toBe('a_b')
    expect(pushTopicFor('https://notmozilla.com/x', 'a_b')).toBe('a_b')
    expect(pushTopicFor('not a url', 'a_b')).toBe('a_b')
  })
})
