// Groups: list with member counts; create, rename, describe, delete.
import { del, get, patch, post } from '../api.js'
import { append, field, formatNumber, h, replace, shortTime } from '../dom.js'
import { confirmButton, errorBox, okBox, onSubmit, pageHeading, show, table } from '../ui.js'

export async function render(view, session) {
  const { groups } = await get('/v1/groups')
  const slot = h('div', { class: 'slot' })
  const listSlot = h('div')

  const name = h('input', { name: 'name', required: true, maxlength: '64', autocomplete: 'off' })
  const description = h('input', { name: 'description', maxlength: '512', autocomplete: 'off' })
  const createForm = h('form', { class: 'card inline-form', id: 'create-group' },
    h('h2', {}, 'New group'),
    field('Name', name, '1-64 characters, unique in the project.'),
    field('Description (optional)', description),
    h('button', { type: 'submit' }, 'Create group'),
  )
  onSubmit(createForm, slot, async () => {
    const body = { name: name.value }
    if (description.value.trim()) body.description = description.value
    await post('/v1/groups', body)
    await reload(`Group “${name.value}” created.`)
    name.value = ''
    description.value = ''
  })

  async function reload(message) {
    const fresh = await get('/v1/groups')
    drawList(fresh.groups)
    show(slot, message ? okBox(message) : null)
  }

  function row(group) {
    const tr = h('tr', { 'data-group-id': group.id })
    const actions = h('td', { class: 'actions' },
      h('button', { type: 'button', class: 'secondary', onclick: () => edit() }, 'Edit'), ' ',
      confirmButton('Delete', `Delete “${group.name}”? Its members stay subscribed.`, async () => {
        try {
          await del(`/v1/groups/${group.id}`)
          await reload(`Group “${group.name}” deleted.`)
        } catch (error) {
          show(slot, errorBox(error))
        }
      }),
    )
    tr.append(
      h('td', {}, h('a', { href: `#/subscribers`, onclick: () => { session.subscriberFilter = { group_id: group.id } } }, group.name)),
      h('td', {}, group.description ?? h('span', { class: 'muted' }, '—')),
      h('td', { class: 'num' }, formatNumber(group.member_count)),
      h('td', { class: 'when' }, shortTime(group.created_at)),
      actions,
    )
    function edit() {
      const newName = h('input', { name: 'name', value: group.name, required: true, maxlength: '64', 'aria-label': `New name for ${group.name}` })
      const newDescription = h('input', { name: 'description', value: group.description ?? '', maxlength: '512', 'aria-label': `Description of ${group.name}` })
      const form = h('form', { class: 'row-form' },
        newName, newDescription,
        h('button', { type: 'submit' }, 'Save'), ' ',
        h('button', { type: 'button', class: 'secondary', onclick: () => tr.replaceWith(row(group)) }, 'Cancel'),
      )
      onSubmit(form, slot, async () => {
        // An emptied description clears it (null), as PATCH /v1/groups/:id defines.
        const body = {}
        if (newName.value !== group.name) body.name = newName.value
        const text = newDescription.value.trim() ? newDescription.value : null
        if (text !== group.description) body.description = text
        await patch(`/v1/groups/${group.id}`, body)
        await reload(`Group “${newName.value}” saved.`)
      })
      replace(tr, h('td', { colspan: '5' }, form))
      newName.focus()
    }
    return tr
  }

  function drawList(list) {
    replace(listSlot, 
      table('Groups', ['Name', 'Description', { label: 'Members', num: true }, 'Created', { label: 'Actions' }], list.map(row),
        { emptyText: 'No groups yet. A group is a named segment of subscribers you can send to.' }),
    )
  }

  drawList(groups)
  append(view, 
    pageHeading('Groups'),
    h('p', { class: 'hint' }, `Your ${session.me.plan} plan allows ${formatNumber(session.me.limits.groups)} groups. Subscribers join groups through the SDK (groupIds) or the API.`),
    slot,
    listSlot,
    // Left out where the role cannot create groups (Herald would refuse with 403 insufficient_role).
    session.can('groups:write') ? createForm : null,
  )
}
