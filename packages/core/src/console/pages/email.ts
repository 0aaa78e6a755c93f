/**
 * An email's story: its events in `created_at` order, what the receiver did with each, the order
 * mark, and the state `foldEmailEvents` derives from the events recorded as done; and, plainly,
 * what the store cannot know.
 */
import { foldEmailEvents } from '../../ordering/fold.js'
import type { Page, PageContext } from '../context.js'
import { utc } from '../format.js'
import { type Html, html } from '../html.js'
import { eventLink, notice, problem, when } from './parts.js'
import { foldInput, type StoryRow, storyRows } from './story.js'

/** The most inbox entries of one email a story reads. */
const STORY_LIMIT = 500

const DID: Record<StoryRow['did'], string> = {
  pending: 'queued, waiting for the worker',
  running: 'queued, a worker runs it now',
  done: 'handled by the worker (recorded as done)',
  dead: 'dead letter: the worker gave up',
  recorded: 'recorded as done (handled, or skipped as stale)',
}

function row(ctx: PageContext, r: StoryRow): Html {
  const event = r.key === undefined ? html`<span class="note">id not kept</span>` : eventLink(ctx, r.key)
  const did = html`<span class="${r.did === 'recorded' ? 'done' : r.did}">${DID[r.did]}</span>${r.reconciled > 0 ? html` <span class="note">(${r.reconciled} brought by reconcile, not yet delivered by the sender)</span>` : ''}`
  return html`<tr><td>${r.createdAtMs === null ? '—' : utc(r.createdAtMs)}</td><td><code>${r.type}</code></td><td>${event}${r.isMark ? html` <b title="the newest event recorded for this email">order mark</b>` : ''}</td><td>${did}</td><td>${r.attempts ?? ''}</td><td class="error">${r.lastError ?? ''}</td></tr>`
}

function statePart(rows: readonly StoryRow[], emailId: string, namespace: string, ctx: PageContext): Html {
  const input = foldInput(rows, emailId, namespace)
  if (input.length === 0) return html`<p class="note">No event of it is recorded as done yet, so there is no state to derive.</p>`
  const { state } = foldEmailEvents(input, { emailId })
  const since = state.since ? html` since <code>${state.since.type}</code> of ${when(state.since.createdAtMs, ctx.now)}` : ''
  return html`<dl class="facts"><dt>Message status</dt><dd><b>${state.status ?? 'none set'}</b>${since}</dd><dt>Complaint</dt><dd>${state.complained ? 'yes' : 'no'}</dd><dt>Folded</dt><dd>${input.length} events recorded as done</dd></dl>
<p class="note">From <code>foldEmailEvents</code> over the events recorded as done. Recipient states need each event's recipient address, which is in the payload: the console does not read payloads for this.</p>`
}

/** The email page. */
export async function emailPage(ctx: PageContext, emailId: string): Promise<Page> {
  const { source, namespace } = ctx.settings
  const orderKey = `${namespace}:email:${emailId}`
  const read = await ctx.read(() => source.email(orderKey, ctx.now, STORY_LIMIT))
  const head = html`<h1>Email <code>${emailId}</code></h1><p class="note">Order key <code>${orderKey}</code></p>`
  if (!read.ok) return { title: `Email ${emailId}`, section: 'find', body: html`${head}${problem('for this email', read.problem)}` }
  const records = read.value
  const rows = storyRows(records, namespace)
  const mark = records.mark
  const markPart =
    mark === undefined
      ? html`<p class="note">This store keeps no order marks.</p>`
      : mark === null
        ? html`<p>No order mark: no event of this email was recorded with <code>ordering: true</code> within the retention.</p>`
        : html`<p>Newest event recorded: <code>${mark.type}</code> of ${when(mark.createdAtMs, ctx.now)} (${eventLink(ctx, `${namespace}:${mark.eventId}`)}); an older message-state event arriving now is <i>stale</i>.</p>`
  const table = rows.length
    ? html`<table><thead><tr><th>created_at (UTC)</th><th>Type</th><th>Event</th><th>What the receiver did</th><th>Attempts</th><th>Last error</th></tr></thead><tbody>${rows.map((r) => row(ctx, r))}</tbody></table>`
    : notice(
        'The store keeps nothing under this email id: it was never received here, its records were forgotten after the retention, or the receiver runs without ',
        html`<code>ordering: true</code>`,
        ' (without it the store keeps no per-email trace at all; events are still found by id).',
      )
  const cannot = [
    'Copies: a copy of an event already handled is answered without writing anything, so the store cannot say how many copies came (the receiver counts them: duplicates on the overview).',
    'Handled or skipped as stale: both are recorded as done the same way.',
    'In request mode the store keeps, per email, only how many events of each type and created_at were recorded (the facts), not their ids; the newest one\u2019s id is the order mark\u2019s.',
    ...records.notes,
  ]
  const body = html`${head}<h2>Events</h2>${table}
<h2>Order mark</h2>${markPart}
<h2>State</h2>${statePart(rows, emailId, namespace, ctx)}
<h2>What the store cannot know</h2><ul>${cannot.map((c) => html`<li class="note">${c}</li>`)}</ul>`
  return { title: `Email ${emailId}`, section: 'find', body }
}
