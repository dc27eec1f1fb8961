import { describe, expect, it } from 'vitest'
import { DEFAULT_PUSH_HOSTS } from '../config.ts'
import { checkPushEndpoint, checkWebhookUrl, isPublicAddress } from './url-policy.ts'

const strict = { allowPrivateEndpoints: false, pushHosts: DEFAULT_PUSH_HOSTS }
const lax = { allowPrivateEndpoints: true, pushHosts: DEFAULT_PUSH_HOSTS }

describe('isPublicAddress', () => {
  it.each(['10.1.2.3', '127.0.0.1', '::1', '::ffff:192.168.0.1', '100.64.0.1', 'fd12::1', '169.254.169.254', '0.0.0.0', '224.0.0.1', 'fe80::1', 'nonsense'])(
    'refuses %s',
    (address) => expect(isPublicAddress(address)).toBe(false),
  )
  it.each(['8.8.8.8', '142.250.1.1', '2001:4860:4860::8888'])('allows %s', (address) => expect(isPublicAddress(address)).toBe(true))
})

describe('checkPushEndpoint', () => {
  it.each([
    'https://fcm.googleapis.com/fcm/send/abc',
    'https://updates.push.services.mozilla.com/wpush/v2/abc',
    'https://web.push.apple.com/QGx',
    'https://wns2-by3p.notify.windows.com/w/?token=abc',
    'https://fcm.googleapis.com:443/fcm/send/abc',
  ])('allows the push service URL %s', (url) => expect(checkPushEndpoint(url, strict)).toBeNull())

  it.each([
    ['http://fcm.googleapis.com/fcm/send/abc', /HTTPS/],
    ['https://evil.example.com/push', /known push service/],
    ['https://fcm.googleapis.com.evil.com/x', /known push service/],
    ['https://push.apple.com/x', /known push service/],
    ['https://127.0.0.1/push', /IP address/],
    ['https://user:pw@fcm.googleapis.com/x', /credentials/],
    ['ftp://fcm.googleapis.com/x', /http/],
    ['not a url', /http/],
    // A known push host, but not the port its push service listens on (issue 15).
    ['https://fcm.googleapis.com:8443/fcm/send/abc', /default HTTPS port/],
    ['https://fcm.googleapis.com:22/fcm/send/abc', /default HTTPS port/],
    ['https://updates.push.services.mozilla.com:80/wpush/v2/abc', /default HTTPS port/],
    ['https://web.push.apple.com:1/QGx', /default HTTPS port/],
  ])('refuses %s', (url, why) => expect(checkPushEndpoint(url, strict)).toMatch(why))

  it('allows a localhost push service when private endpoints are allowed', () => {
    expect(checkPushEndpoint('http://127.0.0.1:8080/push/abc', lax)).toBeNull()
  })
})

describe('checkWebhookUrl', () => {
  const resolveTo = (addresses: string[]) => async () => addresses
  it('allows an HTTPS host that resolves to public addresses', async () => {
    expect(await checkWebhookUrl('https://hooks.example.com/x', strict, resolveTo(['93.184.216.34']))).toBeNull()
  })
  it.each([
    ['http://hooks.example.com/x', ['93.184.216.34'], /HTTPS/],
    ['https://10.0.0.5/x', [], /private/],
    ['https://[::1]/x', [], /private/],
    ['https://localhost/x', [], /this machine/],
    ['https://internal.example.com/x', ['93.184.216.34', '10.0.0.1'], /private/],
    ['https://nowhere.example.com/x', [], /does not resolve/],
  ])('refuses %s', async (url, addresses, why) => {
    expect(await checkWebhookUrl(url, strict, resolveTo(addresses))).toMatch(why)
  })
  it('refuses a host whose lookup fails', async () => {
    const failing = async () => {
      throw new Error('ENOTFOUND')
    }
    expect(await checkWebhookUrl('https://nx.example.com/x', strict, failing)).toMatch(/does not resolve/)
  })
})
