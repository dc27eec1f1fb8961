// Subscribers: the list with the filters GET /v1/subscribers offers (status,
// health, a search in external ids, a tag, group), pages by cursor; a
// subscriber's detail with its tags, groups and health; erasure. Export and
// Import: subscribers-transfer.js.
import { del, get, post, query } from '../api.js'
import { append, field, formatTime, h, replace, shortTime } from '../dom.js'
import { confirmButton, errorBox, okBox, onSubmit, pageHeading, show, statusBadge, table } from '../ui.js'
import { transferCards } from './subscribers-transfer.js'

export async function render(view, session, { id, detail, flash }) {
  if (detail) return renderDetail(view, session, id, flash)
  return renderList(view, session, flash)
}

async function renderList(view, session, flash) {
  const { groups } = await get('/v1/groups')
  const groupName = new Map(groups.map((g) => [g.id, g.name]))
  const filter = session.subscriberFilter ?? {}
  const slot = h('div', { class: 'slot' })
  const results = h('div', { id: 'subscriber-results' })

  const status = h('select', { name: 'status' },
    h('option', { value: '' }, 'Any status'),
    ['active', 'unsubscribed', 'expired'].map((s) => h('option', { value: s, selected: filter.status === s }, s)))
  const health = h('select', { name: 'health' },
    h('option', { value: '' }, 'Any health'),
    ['active', 'dormant', 'failing'].map((s) => h('option', { value: s, selected: filter.health === s }, s)))
  const externalId = h('input', { name: 'external_id_contains', value: filter.external_id_contains ?? '', maxlength: '256', pattern: '[A-Za-z0-9_\\-]+', autocomplete: 'off' })
  const tag = h('input', { name: 'tag', value: filter.tag ?? '', maxlength: '321', pattern: '[A-Za-z0-9_\\-]{1,64}(:.*)?', autocomplete: 'off', placeholder: 'plan:pro' })
  const group = h('select', { name: 'group_id' },
    h('option', { value: '' }, 'Any group'),
    groups.map((g) => h('option', { value: g.id, selected: filter.group_id === g.id }, g.name)))
  const form = h('form', { class: 'card filters', id: 'subscriber-filters', role: 'search' },
    field('Status', status),
    field('Health', health, 'Of active subscribers: failing (last push failed), dormant (no click or visit in 30 days), active.'),
    field('External id', externalId, 'Your own user id, as given at subscribe, or a part of it.'),
    field('Tag', tag, 'key:value (the value as text), or a key alone for those that have it.'),
    field('Group', group),
    h('div', { class: 'field' }, h('button', { type: 'submit' }, 'Filter')),
  )

  /** Pages already seen, so "Previous" works without the API paging backwards. */
  const cursors = [null]
  let page = 0

  async function load() {
    const current = { status: status.value, health: health.value, external_id_contains: externalId.value.trim(), tag: tag.value.trim(), group_id: group.value }
    session.subscriberFilter = current
    const data = await get(`/v1/subscribers${query({ ...current, limit: 25, cursor: cursors[page] })}`)
    cursors[page + 1] = data.next_cursor
    replace(results, 
      table('Subscribers', ['Id', 'Status', 'Health', 'External id', 'Groups', 'Subscribed', 'Last seen', 'Last delivered'],
        data.subscribers.map((s) => h('tr', { 'data-subscriber-id': s.id },
          h('td', {}, h('a', { href: `#/subscribers/${s.id}`, class: 'mono' }, s.id)),
          h('td', {}, statusBadge(s.status)),
          h('td', {}, healthText(s)),
          h('td', {}, s.external_id ?? h('span', { class: 'muted' }, '—')),
          h('td', {}, s.group_ids.length ? s.group_ids.map((gid) => groupName.get(gid) ?? gid).join(', ') : h('span', { class: 'muted' }, '—')),
          h('td', { class: 'when' }, shortTime(s.created_at)),
          h('td', { class: 'when' }, shortTime(s.last_seen_at)),
          h('td', { class: 'when' }, s.last_delivered_at === null ? h('span', { class: 'muted' }, 'never') : shortTime(s.last_delivered_at)),
        )),
        { emptyText: 'No subscribers match. Visitors appear here once they opt in through the SDK on your site.' }),
      h('div', { class: 'pager' },
        h('button', { type: 'button', class: 'secondary', disabled: page === 0, onclick: () => { page--; run() } }, 'Previous page'),
        h('button', { type: 'button', class: 'secondary', disabled: !data.next_cursor, onclick: () => { page++; run() } }, 'Next page'),
      ),
    )
  }

  async function run() {
    show(slot, null)
    try {
      await load()
    } catch (error) {
      show(slot, errorBox(error))
    }
  }

  onSubmit(form, slot, async () => {
    cursors.length = 1
    page = 0
    await load()
  })

  await load()
  append(view, pageHeading('Subscribers'), flash ? okBox(flash) : null, form, slot, results, ...transferCards(session, run))
}

async function renderDetail(view, session, id, flash) {
  const [subscriber, { groups }] = await Promise.all([get(`/v1/subscribers/${id}`), get('/v1/groups')])
  const slot = h('div', { class: 'slot' })
  const groupName = new Map(groups.map((g) => [g.id, g.name]))
  const member = new Set(subscriber.group_ids)

  const memberships = h('ul', { class: 'memberships', id: 'subscriber-groups' },
    subscriber.group_ids.length
      ? subscriber.group_ids.map((gid) => h('li', {}, groupName.get(gid) ?? gid, ' ',
          h('button', { type: 'button', class: 'secondary small', onclick: async () => {
            try {
              await del(`/v1/groups/${gid}/subscribers/${id}`)
              session.go(`#/subscribers/${id}`, `Removed from “${groupName.get(gid) ?? gid}”.`)
            } catch (error) {
              show(slot, errorBox(error))
            }
          } }, 'Remove')))
      : h('li', { class: 'muted' }, 'In no group.'))

  const others = groups.filter((g) => !member.has(g.id))
  const addSelect = h('select', { name: 'group_id' }, others.map((g) => h('option', { value: g.id }, g.name)))
  const addForm = others.length
    ? onSubmit(h('form', { class: 'row-form' }, field('Add to group', addSelect), h('button', { type: 'submit' }, 'Add')), slot, async () => {
        await post(`/v1/groups/${addSelect.value}/subscribers`, { subscriber_ids: [id] })
        session.go(`#/subscribers/${id}`, `Added to “${groupName.get(addSelect.value)}”.`)
      })
    : null

  const row = (label, value) => [h('dt', {}, label), h('dd', {}, value)]
  append(view, 
    pageHeading('Subscriber', h('a', { href: '#/subscribers' }, '← All subscribers')),
    flash ? okBox(flash) : null,
    slot,
    h('section', { class: 'card' },
      h('dl', { class: 'details' },
        row('Id', h('span', { class: 'mono' }, subscriber.id)),
        row('Status', statusBadge(subscriber.status)),
        row('External id', subscriber.external_id ?? '—'),
        row('Tags', tagList(subscriber.tags)),
        // The API masks the endpoint (it can unsubscribe the browser) for those who may not erase subscribers.
        row('Push endpoint', subscriber.endpoint.includes('…')
          ? [h('span', { class: 'mono break' }, subscriber.endpoint), h('p', { class: 'hint' }, 'Shown in part: only owners and admins see a push endpoint whole.')]
          : h('span', { class: 'mono break' }, subscriber.endpoint)),
        row('Subscribed', formatTime(subscriber.created_at)),
        row('Last seen', formatTime(subscriber.last_seen_at)),
        row('Health', healthText(subscriber)),
        row('Last delivered', subscriber.last_delivered_at === null ? 'Never' : formatTime(subscriber.last_delivered_at)),
        row('Last clicked', subscriber.last_clicked_at === null ? 'Never' : formatTime(subscriber.last_clicked_at)),
        row('Failed pushes in a row', String(subscriber.consecutive_failures)),
        row('Time zone', subscriber.timezone ?? `— (the project's, ${session.me.default_timezone})`),
      ),
    ),
    h('section', { class: 'card', 'aria-labelledby': 'groups-title' }, h('h2', { id: 'groups-title' }, 'Groups'), memberships, addForm),
    h('section', { class: 'card danger-zone', 'aria-labelledby': 'erase-title' },
      h('h2', { id: 'erase-title' }, 'Erase'),
      h('p', {}, 'Deletes this subscriber, its group memberships and its event history for good (for a data-erasure request). Counts already on broadcasts stay. The browser is not told; if it subscribes again it gets a new id.'),
      confirmButton('Erase subscriber', `Erase ${subscriber.id} for good?`, async () => {
        try {
          await del(`/v1/subscribers/${id}`)
          session.go('#/subscribers', `Subscriber ${id} erased.`)
        } catch (error) {
          show(slot, errorBox(error))
        }
      }),
    ),
  )
}

/** A subscriber's health as text: only active subscribers have one. */
function healthText(subscriber) {
  if (subscriber.health === null) return h('span', { class: 'muted' }, '—')
  return subscriber.health === 'failing' ? `failing (${subscriber.consecutive_failures} in a row)` : subscriber.health
}

/** Each tag as key: value, the value in JSON so that 10 and "10", true and "true" read apart. */
function tagList(tags) {
  const entries = Object.entries(tags ?? {}).sort(([a], [b]) => a.localeCompare(b))
  if (entries.length === 0) return h('span', { class: 'muted' }, 'None')
  return h('ul', { class: 'tags', id: 'subscriber-tags' },
    entries.map(([key, value]) => h('li', {}, h('span', { class: 'mono' }, key), ': ', h('span', { class: 'mono' }, JSON.stringify(value)))))
}
