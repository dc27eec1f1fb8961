// The signed-in person's own account: who they are, and changing their
// password (POST /v1/session/password). The change signs out every other
// session of the account and renews this one, whose new CSRF token the page
// takes at once (session.renew).
import { post } from '../api.js'
import { append, field, h } from '../dom.js'
import { okBox, onSubmit, pageHeading, show } from '../ui.js'

export async function render(view, session) {
  if (!session.user) {
    append(view, pageHeading('Account'), h('p', {}, 'This tab is signed in with an API key, which belongs to the project and has no password. Sign in with your email to manage your account.'))
    return
  }
  append(view, pageHeading('Account'), h('p', { id: 'account-email' }, 'Signed in as ', h('strong', {}, session.user.user.email), '.'), passwordSection(session))
}

function passwordSection(session) {
  const slot = h('div', { class: 'slot', id: 'password-message' })
  const current = h('input', { type: 'password', id: 'current-password', name: 'current_password', autocomplete: 'current-password', required: true })
  const next = h('input', { type: 'password', id: 'new-password', name: 'new_password', autocomplete: 'new-password', required: true, minlength: '10', maxlength: '256' })
  const repeat = h('input', { type: 'password', id: 'repeat-password', name: 'repeat', autocomplete: 'new-password', required: true })
  // A hidden username field lets password managers file the new password under the right account.
  const username = h('input', { type: 'email', name: 'username', autocomplete: 'username', value: session.user.user.email, hidden: true, readonly: true })
  const form = h('form', { class: 'card sign-in', id: 'password-form' },
    username,
    field('Current password', current),
    field('New password', next, '10 to 256 characters; not your email or a very common password. A few unrelated words make a good one.'),
    field('Repeat the new password', repeat),
    h('button', { type: 'submit' }, 'Change password'),
  )
  onSubmit(form, slot, async () => {
    if (repeat.value !== next.value) throw new Error('The two new passwords differ.')
    const renewed = await post('/v1/session/password', { current_password: current.value, new_password: next.value })
    session.renew(renewed)
    form.reset()
    username.value = session.user.user.email
    show(slot, okBox('Password changed. Every other session of your account is signed out; this one goes on.'))
  })
  return h('section', { 'aria-labelledby': 'password-heading' }, h('h2', { id: 'password-heading' }, 'Change your password'), slot, form)
}
