// A broadcast's A/B test on its page (issue 25, docs/experiments.md): the
// variants side by side (a bar of each one's rate, and a table of their
// counts), the decision and its reason, and while the test runs a way to end
// it and send a chosen variant to the rest of the audience.
import { post } from '../api.js'
import { barTable } from '../bars.js'
import { formatNumber, formatTime, h, replace } from '../dom.js'
import { confirmButton, errorBox, okBox, show, table } from '../ui.js'

const PHASES = {
  waiting: 'Not started yet.',
  testing: 'Testing.',
  sending_winner: 'Decided: the winner goes to the rest of the audience.',
  stopped: 'Decided: no variant was sent to the rest of the audience.',
  complete: 'Every subscriber got a variant (test share 100%): no winner phase.',
}

const percent = (rate) => (rate === null ? '—' : `${(rate * 100).toFixed(2)}%`)
const pValue = (p) => (p === null ? '—' : p < 0.0001 ? '< 0.0001' : p.toFixed(4))

/** The decision and why, in words. */
function decisionText(e) {
  const lines = [h('strong', {}, PHASES[e.phase] ?? e.phase)]
  if (e.phase === 'testing') {
    lines.push(` Decided at ${formatTime(e.decide_at)} unless ended earlier. `,
      e.leader ? `${e.leader} leads; its lead is ${e.significant ? '' : 'not yet '}significant at ${e.confidence * 100}% confidence.` : 'No push delivered yet.')
  }
  if (e.reason) lines.push(' ', e.reason)
  return h('p', { id: 'experiment-decision' }, ...lines)
}

/**
 * The experiment section's content. `decide(winner)` ends the test (the page
 * refreshes after it); `canDecide` is whether the test is running with a
 * winner phase and the broadcast still sending.
 */
export function variantsSection(b, slot, refresh) {
  const e = b.experiment
  const metricRate = (v) => (e.metric === 'shown' ? v.shown_rate : v.click_rate)
  const bars = barTable({
    id: 'experiment-bars',
    caption: `${e.metric === 'shown' ? 'Shown' : 'Click'} rate by variant (over delivered)`,
    valueLabel: 'Rate',
    rows: e.variants.map((v) => ({
      label: `${v.key}${v.key === e.winner ? ' (winner)' : v.key === e.leader && !e.winner ? ' (leader)' : ''}`,
      value: metricRate(v) ?? 0,
      note: `${formatNumber(e.metric === 'shown' ? v.shown : v.clicked)} of ${formatNumber(v.delivered)}`,
      kind: v.key === (e.winner ?? e.leader) ? 'strong' : 'default',
    })),
    max: Math.max(0.0001, ...e.variants.map((v) => metricRate(v) ?? 0)),
    format: percent,
  })
  const counts = table('Variants and their counts', [
    'Variant', 'Title', { label: 'Audience', num: true }, { label: 'Delivered', num: true }, { label: 'Shown', num: true },
    { label: 'Clicked', num: true }, { label: 'Dismissed', num: true }, { label: 'Click rate', num: true }, { label: 'p-value', num: true },
  ], e.variants.map((v) => h('tr', { 'data-variant': v.key },
    h('td', { 'data-label': 'Variant' }, h('span', { class: 'mono' }, v.key)),
    h('td', { 'data-label': 'Title' }, v.notification.title),
    ...[v.audience, v.delivered, v.shown, v.clicked, v.dismissed].map((n, i) => h('td', { class: 'num', 'data-label': ['Audience', 'Delivered', 'Shown', 'Clicked', 'Dismissed'][i] }, formatNumber(n))),
    h('td', { class: 'num', 'data-label': 'Click rate' }, percent(v.click_rate)),
    h('td', { class: 'num', 'data-label': 'p-value' }, pValue(v.p_value)),
  )))
  const settings = h('p', { class: 'hint', id: 'experiment-settings' },
    `Test share ${Math.round(e.test_share * 1000) / 10}% (rest: ${formatNumber(e.rest.audience)}), judged on ${e.metric}, decided after ${e.decide_after}, `,
    `at least ${formatNumber(e.min_per_variant)} delivered per variant, if inconclusive: ${e.on_inconclusive}. Test: ${e.test}.`)
  const canDecide = e.phase === 'testing' && e.test_share < 1 && b.status === 'sending'
  return h('div', { id: 'experiment' }, decisionText(e), bars, counts, settings, canDecide ? decideForm(b, slot, refresh) : null)
}

/** End the test now: a variant to send (the leader preselected), behind a confirmation. */
function decideForm(b, slot, refresh) {
  const e = b.experiment
  const select = h('select', { id: 'experiment-winner' }, e.variants.map((v) => h('option', { value: v.key, selected: v.key === e.leader }, `${v.key}: ${v.notification.title}`)))
  const label = h('label', { for: 'experiment-winner' }, 'Winner to send to the rest ')
  const button = confirmButton('End test', 'End the test now and send this variant to the rest of the audience?', async () => {
    try {
      await post(`/v1/broadcasts/${b.id}/experiment/decide`, { winner: select.value })
      show(slot, okBox(`Test ended: ${select.value} goes to the rest of the audience.`))
    } catch (error) {
      show(slot, errorBox(error))
    }
    form.remove() // the question is answered: the redraw puts the form back only if the test still runs
    await refresh()
  }, { danger: false })
  const form = h('div', { class: 'form-actions', id: 'experiment-decide' }, label, select, ' ', button)
  return form
}

/** Redraws the section unless the person is in the middle of ending the test. */
export function drawVariants(container, b, slot, refresh) {
  if (!b.experiment) return replace(container)
  // Not while the person is choosing a winner or answering the question: the poll would undo their choice.
  if (container.querySelector('#experiment-decide .question') || document.activeElement?.id === 'experiment-winner') return undefined
  // A winner chosen before this poll stays chosen.
  const chosen = container.querySelector('#experiment-winner')?.value
  replace(container, h('h2', { id: 'experiment-title' }, 'A/B test'), variantsSection(b, slot, refresh))
  const select = container.querySelector('#experiment-winner')
  if (select && chosen && [...select.options].some((o) => o.value === chosen)) select.value = chosen
  return undefined
}
