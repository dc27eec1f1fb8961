// The sign-in page (an account first; an API key for a single developer) and
// the invite page, where an invited person sets their password or signs in to
// join. Neither needs to be signed in.
import { get, patch, post, setCsrfToken } from './api.js'
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

/**
 * The invite link's page: who is invited where, then one of two ways in.
 * Herald does not say whether the email has an account (issue 22), so the
 * page offers both: a new person chooses a password with the link; someone
 * with an account signs in and accepts as themselves (no password goes with
 * the link then). Already signed in as that email, one button joins.
 * onNewAccount(email, projectName) goes on to sign-in; onSignedIn(view) gets
 * the session, switched to the joined project.
 */
export async function renderInvite(main, token, { onNewAccount, onSignedIn }) {
  let invite
  try {
    invite = await post('/v1/invites/inspect', { token })
  } catch (error) {
    replace(main, h('div', { class: 'sign-in-page' }, pageHeading('Invite'), errorBox(error), h('p', {}, h('a', { href: '#/' }, 'Go to sign-in.'))))
    return
  }
  // The signed-in session, if any (the cookie, never an API key this tab may hold).
  let current = null
  try {
    current = await get('/v1/session', { key: null })
  } catch {
    current = null
  }
  /** Accept as the session in view, then act in the joined project. */
  const joinSignedIn = async (view) => {
    setCsrfToken(view.csrf_token)
    await post('/v1/invites/accept', { token }, { key: null })
    onSignedIn(await patch('/v1/session', { project: invite.project.id }, { key: null }))
  }
  const intro = h('p', {}, `${invite.email} is invited to ${invite.project.name} as ${invite.role}.`)

  if (current && current.user.email === invite.email) {
    const slot = h('div', { id: 'invite-message' })
    const form = h('form', { class: 'card sign-in', id: 'invite-join-form' },
      intro,
      h('p', {}, `You are signed in as ${current.user.email}.`),
      h('button', { type: 'submit' }, 'Join the project'),
    )
    onSubmit(form, slot, () => joinSignedIn(current))
    replace(main, h('div', { class: 'sign-in-page' }, pageHeading(`Join ${invite.project.name}`), slot, form))
    form.querySelector('button').focus()
    return
  }

  const newSlot = h('div', { id: 'invite-message' })
  const password = h('input', { type: 'password', id: 'new-password', name: 'password', autocomplete: 'new-password', required: true, minlength: '10' })
  const repeat = h('input', { type: 'password', id: 'repeat-password', name: 'repeat', autocomplete: 'new-password', required: true })
  const newForm = h('form', { class: 'card sign-in', id: 'invite-form' },
    h('h2', {}, 'New to Herald'),
    h('div', { class: 'field' },
      h('label', { for: 'new-password' }, 'Choose a password'),
      password,
      h('small', { class: 'hint' }, 'At least 10 characters.'),
    ),
    h('div', { class: 'field' }, h('label', { for: 'repeat-password' }, 'Repeat the password'), repeat),
    h('button', { type: 'submit' }, 'Join the project'),
  )
  onSubmit(newForm, newSlot, async () => {
    if (repeat.value !== password.value) throw new Error('The two passwords differ.')
    try {
      await post('/v1/invites/accept', { token, password: password.value }, { key: null })
    } catch (error) {
      if (error.code === 'invite_sign_in_required') {
        error.message = `${invite.email} already has an account: sign in with its password below to join.`
        existingPassword.focus()
      }
      throw error
    } finally {
      password.value = ''
      repeat.value = ''
    }
    onNewAccount(invite.email, invite.project.name)
  })

  const existingSlot = h('div', { id: 'invite-sign-in-message' })
  const email = h('input', { type: 'email', id: 'invite-email', name: 'email', autocomplete: 'username', readonly: true, value: invite.email })
  const existingPassword = h('input', { type: 'password', id: 'existing-password', name: 'current-password', autocomplete: 'current-password', required: true })
  const existingForm = h('form', { class: 'card sign-in', id: 'invite-sign-in-form' },
    h('h2', {}, 'Already have an account'),
    h('div', { class: 'field' }, h('label', { for: 'invite-email' }, 'Email'), email),
    h('div', { class: 'field' }, h('label', { for: 'existing-password' }, 'Your password'), existingPassword),
    h('button', { type: 'submit' }, 'Sign in and join'),
  )
  onSubmit(existingForm, existingSlot, async () => {
    const view = await post('/v1/session', { email: invite.email, password: existingPassword.value }, { key: null })
    existingPassword.value = ''
    await joinSignedIn(view)
  })

  replace(main, h('div', { class: 'sign-in-page' },
    pageHeading(`Join ${invite.project.name}`),
    intro,
    current ? h('p', { id: 'invite-other-account' }, `You are signed in as ${current.user.email}, not ${invite.email}: signing in below replaces that session.`) : null,
    newSlot,
    newForm,
    existingSlot,
    existingForm,
  ))
  password.focus()
}
