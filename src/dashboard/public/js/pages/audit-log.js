// Audit log (owners and admins, and a full API key): who changed what, newest
// first, from GET /v1/audit-log, a page at a time ("Load more" follows the
// cursor). Filters: an action or a kind of action, and an actor among those
// shown. Every value is a text node (dom.js), whatever a user agent says.
import { get, query } from '../api.js'
import { field, h, replace, shortTime } from '../dom.js'
import { errorBox, pageHeading, show, table } from '../ui.js'

const PAGE = 50
/** The select's choices: a kind (a prefix ending with a dot) and the actions under it. */
const ACTIONS = {
  'broadcast.': ['broadcast.send', 'broadcast.schedule', 'broadcast.stop', 'broadcast.cancel', 'broadcast.experiment_decide'],
  'subscriber.': ['subscriber.erase', 'subscriber.tags', 'subscriber.import'],
  'group.': ['group.create', 'group.update', 'group.delete', 'group.members.add', 'group.members.remove'],
  'webhook.': ['webhook.create', 'webhook.update', 'webhook.delete', 'webhook.rotate_secret', 'webhook.test'],
  'api_key.': ['api_key.create', 'api_key.revoke'],
  'member.': ['member.invite', 'member.join', 'member.role_change', 'member.remove'],
  'invite.': ['invite.revoke'],
  'project.': ['project.update'],
  'session.': ['session.sign_in', 'session.sign_in_failed', 'session.sign_out', 'session.sign_out_everywhere'],
  'account.': ['account.password_change', 'account.password_reset_link', 'account.password_reset'],
}

/** Who: the user's email, the key's name and prefix, the operator, or the bare id when Herald no longer knows it. */
export function actorText(actor) {
  if (actor.type === 'operator') return 'Operator'
  const label = actor.label ?? actor.id ?? '—'
  return actor.type === 'key' ? `Key ${label}` : label
}

/** The target, and the one detail that says most about the change. */
function targetText(entry) {
  const target = entry.target.id ? `${entry.target.type} ${entry.target.id}` : entry.target.type ?? '—'
  const d = entry.details ?? {}
  const extra = d.email ?? d.name ?? (typeof d.count === 'number' ? `${d.count}` : null)
  return extra === null ? target : `${target} (${extra})`
}

export async function render(view) {
  const slot = h('div', { class: 'slot' })
  const tableSlot = h('div')
  const entries = []
  /** Actors seen so far: the actor filter offers them. */
  const actors = new Map()
  let cursor = null

  const action = h('select', { name: 'action', id: 'audit-action' },
    h('option', { value: '' }, 'Every action'),
    Object.entries(ACTIONS).map(([kind, actions]) => h('optgroup', { label: kind.slice(0, -1) },
      h('option', { value: kind }, `Every ${kind.slice(0, -1)} action`),
      actions.map((a) => h('option', { value: a }, a)),
    )),
  )
  const actor = h('select', { name: 'actor', id: 'audit-actor' }, h('option', { value: '' }, 'Anyone'))
  const filters = h('form', { class: 'card inline-form', id: 'audit-filters' }, field('Action', action), field('Actor', actor))

  function fillActors() {
    const chosen = actor.value
    replace(actor, h('option', { value: '' }, 'Anyone'), [...actors].map(([id, text]) => h('option', { value: id, selected: id === chosen }, text)))
  }

  function row(e) {
    return h('tr', { 'data-audit-id': e.id },
      h('td', { class: 'when' }, shortTime(e.created_at)),
      h('td', { 'data-label': 'Who' }, actorText(e.actor)),
      h('td', { 'data-label': 'Action' }, h('code', {}, e.action)),
      h('td', { 'data-label': 'Target' }, targetText(e)),
      h('td', { 'data-label': 'IP', title: e.user_agent ?? '' }, e.ip ?? '—'),
    )
  }

  function draw() {
    replace(tableSlot,
      table('Audit log', ['Time', 'Who', 'Action', 'Target', 'IP'], entries.map(row), { emptyText: 'No changes recorded yet.' }),
      cursor ? h('div', { class: 'pager' }, h('button', { type: 'button', class: 'secondary', id: 'audit-more', onclick: () => load(false) }, 'Load more')) : null,
    )
    // On a phone each entry is a small card (styles: .card-table), so the action and target stay in view.
    tableSlot.querySelector('table')?.classList.add('card-table')
  }

  async function load(fresh) {
    try {
      const page = await get(`/v1/audit-log${query({ limit: PAGE, cursor: fresh ? undefined : cursor, action: action.value || undefined, actor_id: actor.value || undefined })}`)
      if (fresh) entries.length = 0
      entries.push(...page.entries)
      cursor = page.next_cursor
      for (const e of page.entries) if (e.actor.id && !actors.has(e.actor.id)) actors.set(e.actor.id, actorText(e.actor))
      fillActors()
      show(slot, null)
      draw()
    } catch (error) {
      show(slot, errorBox(error))
    }
  }

  action.addEventListener('change', () => load(true))
  actor.addEventListener('change', () => load(true))
  filters.addEventListener('submit', (event) => event.preventDefault())
  await load(true)
  replace(view, pageHeading('Audit log'), h('p', { class: 'muted' }, 'Every change made in this project through the API or the dashboard: who, what, and from where.'), slot, filters, tableSlot)
}
