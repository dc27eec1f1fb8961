import { describe, expect, it } from 'vitest'
import { encryptPayload, MAX_PLAINTEXT_BYTES } from '../delivery/encryption.ts'
import { pushBodySize, pushPlaintext } from './push-payload.ts'
import { pushKeys } from '../subscribers/subscribers.fixtures.ts'

const base = { project_id: 'prj_a', broadcast_id: 'bdc_b', title: 'Hi', body: 'There', icon: null, image: null, url: '/', actions: [] }

describe('pushPlaintext', () => {
  it('carries the notification, without icon and image when there are none', () => {
    expect(JSON.parse(pushPlaintext(base).toString())).toEqual({ v: 1, project_id: 'prj_a', broadcast_id: 'bdc_b', title: 'Hi', body: 'There', url: '/' })
  })

  it('carries icon and image URLs when given', () => {
    const json = JSON.parse(pushPlaintext({ ...base, icon: 'https://cdn/i.png', image: 'https://cdn/b.png' }).toString())
    expect(json.icon).toBe('https://cdn/i.png')
    expect(json.image).toBe('https://cdn/b.png')
  })

  it('falls back to the fetch stub when the JSON would not fit one record', () => {
    // 2048 four-byte characters: 8 KB of UTF-8 in the body alone.
    const big = { ...base, body: '😀'.repeat(2048) }
    const bytes = pushPlaintext(big)
    expect(JSON.parse(bytes.toString())).toEqual({ v: 1, project_id: 'prj_a', broadcast_id: 'bdc_b', fetch: true })
  })

  it('keeps the full JSON at exactly the record limit', () => {
    const overhead = pushPlaintext({ ...base, body: '' }).length
    const fits = pushPlaintext({ ...base, body: 'x'.repeat(MAX_PLAINTEXT_BYTES - overhead) })
    expect(fits.length).toBe(MAX_PLAINTEXT_BYTES)
    expect(JSON.parse(fits.toString()).fetch).toBeUndefined()
    const over = pushPlaintext({ ...base, body: 'x'.repeat(MAX_PLAINTEXT_BYTES - overhead + 1) })
    expect(JSON.parse(over.toString()).fetch).toBe(true)
  })
})

describe('pushBodySize', () => {
  it('is the length of what encryptPayload returns for pushPlaintext, and says when the stub is pushed', () => {
    const keys = pushKeys()
    for (const body of ['There', 'x'.repeat(2048), '😀'.repeat(2048), 'é'.repeat(1000)]) {
      const content = { ...base, body, icon: 'https://cdn/i.png' }
      const size = pushBodySize(content)
      expect(size.bytes).toBe(encryptPayload(pushPlaintext(content), keys).length)
      expect(size.fetch).toBe(JSON.parse(pushPlaintext(content).toString()).fetch === true)
    }
    expect(pushBodySize({ ...base, body: '😀'.repeat(2048) }).fetch).toBe(true)
    expect(pushBodySize(base).fetch).toBe(false)
  })
})
