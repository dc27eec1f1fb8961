// HERALD_TRUST_PROXY (issue 22): off unless set, a list of proxies when set,
// and a value that would believe anyone's X-Forwarded-For stops the start with
// a message naming the variable. HERALD_PUSH_HTTP1 (issue 26): herald or undici.
import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from './config.ts'

const load = (value?: string) => loadConfig({ NODE_ENV: 'test', ...(value === undefined ? {} : { HERALD_TRUST_PROXY: value }) }, false)

describe('HERALD_TRUST_PROXY', () => {
  it('is off by default (and when empty)', () => {
    expect(load().trustProxy).toEqual([])
    expect(load(' ').trustProxy).toEqual([])
  })

  it('takes addresses, CIDRs and proxy-addr\'s named ranges, comma-separated', () => {
    expect(load('127.0.0.1, 10.0.0.0/8,::1, fd00::/8 ,loopback,uniquelocal,linklocal').trustProxy)
      .toEqual(['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', 'loopback', 'uniquelocal', 'linklocal'])
  })

  it.each(['true', '*', '1', '2', 'all', '10.0.0.0/33', '::/129', '10.0.0.0/', '10.0.0.300', 'proxy.example.com', '10.0.0.1,,10.0.0.2', '10.0.0.0/255.0.0.0'])(
    'refuses %j, naming the variable',
    (value) => {
      expect(() => load(value)).toThrow(ConfigError)
      expect(() => load(value)).toThrow(/^HERALD_TRUST_PROXY /)
    },
  )
})

describe('HERALD_PUSH_HTTP1', () => {
  it('is Herald\'s own HTTP/1.1 by default, undici when asked, and anything else stops the start', () => {
    expect(loadConfig({ NODE_ENV: 'test' }, false).pushHttp1).toBe('herald')
    expect(loadConfig({ NODE_ENV: 'test', HERALD_PUSH_HTTP1: 'undici' }, false).pushHttp1).toBe('undici')
    expect(() => loadConfig({ NODE_ENV: 'test', HERALD_PUSH_HTTP1: 'curl' }, false)).toThrow(/^HERALD_PUSH_HTTP1 must be herald or undici/)
  })
})
