// Members (owners only): who is in the project with which role, the invites
// still open, an invite form that answers a link to hand over (Herald sends
// no e-mail), role changes and removals. The last owner stays: Herald refuses
// (409 last_owner) and the page says why.
import { del, get, patch, post } from '../api.js'
import { field, formatTime, h, replace } from '../dom.js'
import { confirmButton, errorBox, okBox, onSubmit, pageHeading, show, table } from '../ui.js'

const ROLES = ['owner', 'admin', 'editor', 'viewer']
const ROLE_HINT = 'owner: everything, members included; admin: everything but members; editor: compose, send, groups, tags; viewer: read only.'

function roleSelect(attrs, current) {
  return h('select', attrs, ROLES.map((role) => h('option', { value: role, selected: role === current }, role)))
}

export async function render(view, session) {
  const slot = h('div', { class: 'slot', id: 'members-message' })
  const linkSlot = h('div', { id: 'invite-link' })
  const listSlot = h('div')

  const email = h('input', { type: 'email', name: 'email', required: true, autocomplete: 'off' })
  const role = roleSelect({ name: 'role' }, 'editor')
  const form = h('form', { class: 'card inline-form', id: 'invite-member' },
    h('h2', {}, 'Invite someone'),
    field('Email', email),
    field('Role', role, ROLE_HINT),
    h('button', { type: 'submit' }, 'Create invite link'),
  )
  onSubmit(form, slot, async () => {
    const invite = await post('/v1/members/invites', { email: email.value, role: role.value })
    email.value = ''
    const link = h('input', { type: 'text', readonly: true, value: invite.invite_url, id: 'invite-url', 'aria-label': 'Invite link' })
    replace(linkSlot, h('div', { class: 'card' },
      okBox(`Invite for ${invite.email} (${invite.role}) created. Send them this link: it works once, for 72 hours, and is not shown again. It replaces any earlier link for this email.`),
      link,
    ))
    link.select()
    await load()
  })

  async function load() {
    const { members, invites } = await get('/v1/members')
    const memberRows = members.map((m) => {
      const select = roleSelect({ 'aria-label': `Role of ${m.email}` }, m.role)
      select.addEventListener('change', async () => {
        try {
          await patch(`/v1/members/${m.user_id}`, { role: select.value })
          show(slot, okBox(`${m.email} is now ${select.value}.`))
        } catch (error) {
          select.value = m.role
          show(slot, errorBox(error))
        }
        await load()
      })
      const remove = confirmButton('Remove', `Remove ${m.email}?`, async () => {
        try {
          const { active_api_keys: keys = [] } = await del(`/v1/members/${m.user_id}`)
          // Their keys keep working (they belong to the project's integrations): name them, so an owner can revoke those no longer needed.
          const made = keys.map((k) => `${k.name ?? 'unnamed'} (${k.prefix}…)`).join(', ')
          show(slot, okBox(keys.length ? `${m.email} removed. API keys they made still work: ${made}. Revoke any the project no longer needs on the API keys page.` : `${m.email} removed.`))
        } catch (error) {
          show(slot, errorBox(error))
        }
        await load()
      })
      const self = m.user_id === session.user?.user.id ? ' (you)' : ''
      return h('tr', { 'data-user-id': m.user_id }, h('td', {}, m.email, self), h('td', {}, select), h('td', {}, formatTime(m.created_at)), h('td', {}, remove))
    })
    const inviteRows = invites.map((i) => h('tr', { 'data-invite-id': i.id },
      h('td', {}, i.email), h('td', {}, i.role), h('td', {}, formatTime(i.expires_at)),
      h('td', {}, confirmButton('Revoke', `Revoke the invite for ${i.email}?`, async () => {
        await del(`/v1/members/invites/${i.id}`)
        await load()
      })),
    ))
    replace(listSlot,
      h('h2', {}, 'Members'),
      table('Members', ['Email', 'Role', 'Joined', ''], memberRows),
      h('h2', {}, 'Open invites'),
      table('Open invites', ['Email', 'Role', 'Expires', ''], inviteRows, { emptyText: 'No open invites.' }),
    )
  }

  await load()
  replace(view, pageHeading('Members'), slot, form, linkSlot, listSlot)
}
