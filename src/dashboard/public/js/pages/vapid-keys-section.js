// The VAPID keys section of the Settings page (issue 23), for owners: each key
// pair with whether it is current, when it was made and how many active
// subscriptions still use it; a button that rotates to a new pair (every
// existing subscriber stays on its own pair), and one that retires a pair no
// subscription uses any more.
import { del, get, post } from '../api.js'
import { h, replace } from '../dom.js'
import { confirmButton, errorBox, okBox, show, table } from '../ui.js'

const when = (ms) => new Date(ms).toLocaleString()

export async function vapidKeysSection(session) {
  const slot = h('div', { class: 'slot', id: 'vapid-message' })
  const list = h('div', { id: 'vapid-keys' })

  async function reload() {
    const { vapid_keys: keys } = await get('/v1/vapid-keys')
    replace(list, table('VAPID keys', ['Public key', 'Made', 'State', { label: 'Active subscribers', num: true }, ''], keys.map((key) => h('tr', { 'data-key': key.id },
      h('td', { class: 'mono break' }, `${key.public_key.slice(0, 16)}…`),
      h('td', {}, when(key.created_at)),
      h('td', {}, key.current ? 'Current' : key.retired_at ? `Retired ${when(key.retired_at)}` : 'Still signing'),
      h('td', { class: 'num' }, String(key.active_subscribers)),
      h('td', {}, !key.current && !key.retired_at && key.active_subscribers === 0
        ? confirmButton('Retire', 'No subscription uses this key. Retire it?', async () => {
          try {
            await del(`/v1/vapid-keys/${key.id}`)
            await reload()
            show(slot, okBox('Key retired.'))
          } catch (error) {
            show(slot, errorBox(error))
          }
        })
        : null),
    ))))
  }

  const rotate = confirmButton('Rotate keys', 'New subscribers will get a new key pair; everyone already subscribed keeps receiving. Rotate?', async () => {
    try {
      await post('/v1/vapid-keys/rotate')
      await session.refreshMe()
      await reload()
      show(slot, okBox('New key pair is current. Existing subscribers stay on their own key and keep receiving.'))
    } catch (error) {
      show(slot, errorBox(error))
    }
  }, { danger: false })

  await reload()
  return h('section', { class: 'card', 'aria-labelledby': 'vapid-title' },
    h('h2', { id: 'vapid-title' }, 'VAPID keys'),
    h('p', {}, 'Browsers tie each subscription to the key pair it was made with. Rotating makes a new pair current for new subscribers; every existing subscription keeps being signed with its own pair, so nobody is lost. Retire an old pair once no subscription uses it.'),
    slot, list, rotate)
}
