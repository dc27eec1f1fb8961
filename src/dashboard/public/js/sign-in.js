// The sign-in page (an account first; an API key for a single developer) and
// the invite page, where an invited person sets their password. Neither needs
// to be signed in.
import { get, post } from './api.js'
import { h, replace } from './dom.js'
import { errorBox, okBox, onSubmit, pageHeading } from './ui.js'

/**
 * Renders the sign-in page into main. onAccount(view) gets the session that
 * POST /v1/session opened; onKey(key, project) a key that GET /v1/me accepted.
 */
export function renderSignIn(main, { reason, notice, email = '', onAccount, onKey }) {
  const accountSlot = h('div', { id: 'account-message' })
  const emailInput = h('input', { type: 'email', id: 'email', name: 'email', autocomplete: 'username', required: true, value: email })
  const password = h('input', { type: 'password', id: 'password', name: 'password', autocomplete: 'current-password', required: true })
  const accountForm = h('form', { class: 'card sign-in', id: 'account-form' },
    h('div', { class: 'field' }, h('label', { for: 'email' }, 'Email'), emailInput),
    h('div', { class: 'field' }, h('label', { for: 'password' }, 'Password'), password),
    h('button', { type: 'submit' }, 'Continue'),
  )
  onSubmit(accountForm, accountSlot, async () => {
    const view = await post('/v1/session', { email: emailInput.value, password: password.value })
    password.value = ''
    onAccount(view)
  })

  const keySlot = h('div', { id: 'sign-in-message' })
  const input = h('input', { type: 'password', id: 'api-key', name: 'api_key', autocomplete: 'off', spellcheck: 'false', required: true, placeholder: 'hk_live_…', 'aria-describedby': 'api-key-hint' })
  const keyForm = h('form', { class: 'card sign-in', id: 'sign-in-form' },
    h('div', { class: 'field' },
      h('label', { for: 'api-key' }, 'API key'),
      input,
      h('small', { class: 'hint', id: 'api-key-hint' },
        'The key that “herald projects create” printed (or the operator API). It stays in this tab only, in session storage, and goes to this server alone. A key can do everything in its project and names no person: a team should use accounts.'),
    ),
    h('button', { type: 'submit', class: 'secondary' }, 'Sign in'),
  )
  onSubmit(keyForm, keySlot, async () => {
    const key = input.value.trim()
    let project
    try {
      project = (await get('/v1/me', { key })).project
    } catch (error) {
      if (error.status === 401) {
        error.message = 'This API key was not accepted. Check that you copied the whole key (it starts with hk_live_) and that it has not been revoked.'
      }
      throw error
    }
    input.value = ''
    onKey(key, project)
  })

  replace(main, h('div', { class: 'sign-in-page' },
    pageHeading('Sign in to Herald'),
    h('p', {}, 'Run your project: send broadcasts, manage groups and subscribers, see what was delivered and clicked.'),
    reason ? errorBox(reason) : null,
    notice ? okBox(notice) : null,
    accountSlot,
    accountForm,
    h('h2', { class: 'sign-in-alt' }, 'Use an API key instead'),
    keySlot,
    keyForm,
  ))
  ;(email ? password : emailInput).focus()
}

/** The invite link's page: who is invited where, and the password to set (or give). onDone(email) goes on to sign-in. */
export async function renderInvite(main, token, onDone) {
  let invite
  try {
    invite = await post('/v1/invites/inspect', { token })
  } catch (error) {
    replace(main, h('div', { class: 'sign-in-page' }, pageHeading('Invite'), errorBox(error), h('p', {}, h('a', { href: '#/' }, 'Go to sign-in.'))))
    return
  }
  const slot = h('div', { id: 'invite-message' })
  const password = h('input', { type: 'password', id: 'new-password', name: 'password', autocomplete: invite.password_set ? 'current-password' : 'new-password', required: true, minlength: invite.password_set ? null : '10' })
  const repeat = invite.password_set ? null : h('input', { type: 'password', id: 'repeat-password', name: 'repeat', autocomplete: 'new-password', required: true })
  const form = h('form', { class: 'card sign-in', id: 'invite-form' },
    h('p', {}, `${invite.email} is invited to ${invite.project.name} as ${invite.role}.`),
    h('div', { class: 'field' },
      h('label', { for: 'new-password' }, invite.password_set ? 'Your password' : 'Choose a password'),
      password,
      h('small', { class: 'hint' }, invite.password_set ? 'This email has an account already: give its password to join.' : 'At least 10 characters.'),
    ),
    repeat ? h('div', { class: 'field' }, h('label', { for: 'repeat-password' }, 'Repeat the password'), repeat) : null,
    h('button', { type: 'submit' }, 'Join the project'),
  )
  onSubmit(form, slot, async () => {
    if (repeat && repeat.value !== password.value) throw new Error('The two passwords differ.')
    await post('/v1/invites/accept', { token, password: password.value })
    password.value = ''
    onDone(invite.email, invite.project.name)
  })
  replace(main, h('div', { class: 'sign-in-page' }, pageHeading(`Join ${invite.project.name}`), slot, form))
  password.focus()
}
