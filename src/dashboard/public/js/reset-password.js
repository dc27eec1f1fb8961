// The password reset link's page (#/reset/<token>): the operator made the
// link and handed it over; whoever opens it sets the account's new password.
// Needs no sign-in: the link is the credential, good for one use within an hour.
import { post } from './api.js'
import { field, h, replace } from './dom.js'
import { errorBox, onSubmit, pageHeading } from './ui.js'

/** Renders the reset page into main; onDone(email) goes on to sign-in with the new password. */
export async function renderReset(main, token, onDone) {
  let reset
  try {
    reset = await post('/v1/password-reset/inspect', { token })
  } catch (error) {
    replace(main, h('div', { class: 'sign-in-page' }, pageHeading('Reset your password'), errorBox(error), h('p', {}, h('a', { href: '#/' }, 'Go to sign-in.'))))
    return
  }
  const slot = h('div', { id: 'reset-message' })
  const username = h('input', { type: 'email', name: 'username', autocomplete: 'username', value: reset.email, hidden: true, readonly: true })
  const password = h('input', { type: 'password', id: 'reset-password', name: 'password', autocomplete: 'new-password', required: true, minlength: '10', maxlength: '256' })
  const repeat = h('input', { type: 'password', id: 'reset-repeat', name: 'repeat', autocomplete: 'new-password', required: true })
  const form = h('form', { class: 'card sign-in', id: 'reset-form' },
    h('p', {}, `A new password for ${reset.email}. Setting it signs the account out everywhere.`),
    username,
    field('New password', password, '10 to 256 characters; not your email or a very common password. A few unrelated words make a good one.'),
    field('Repeat the new password', repeat),
    h('button', { type: 'submit' }, 'Set the new password'),
  )
  onSubmit(form, slot, async () => {
    if (repeat.value !== password.value) throw new Error('The two passwords differ.')
    const done = await post('/v1/password-reset', { token, password: password.value })
    password.value = ''
    repeat.value = ''
    onDone(done.email)
  })
  replace(main, h('div', { class: 'sign-in-page' }, pageHeading('Reset your password'), slot, form))
  password.focus()
}
