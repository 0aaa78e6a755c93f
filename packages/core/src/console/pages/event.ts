/**
 * An event by its webhook-id: what the dedup store holds for it (handled and when, in flight, or
 * absent), its inbox entry (state, attempts, last error, the payload behind a button), and a link
 * to its email's story.
 */
import type { InboxEntry } from '../../store/inbox.js'
import type { Page, PageContext } from '../context.js'
import { span } from '../format.js'
import { type Html, html } from '../html.js'
import type { DedupRecord } from '../source.js'
import { csrfField, emailLink, notice, problem, stateLabel, when } from './parts.js'

/** What a dedup record says, in a sentence. */
export function describeRecord(ctx: PageContext, record: DedupRecord): Html {
  const retention = ctx.settings.retentionMs
  switch (record.state) {
    case 'done':
      return record.expiresAt === null
        ? html`<b class="done">handled</b> (recorded as done; this store does not say when)`
        : html`<b class="done">handled</b>, recorded as done at about ${when(record.expiresAt - retention, ctx.now)}, remembered until ${when(record.expiresAt, ctx.now)}`
    case 'in_flight':
      return html`<b class="running">in flight</b>: a handler holds it${record.attempt !== null ? html` (attempt ${record.attempt})` : ''}${record.expiresAt !== null ? html` until ${when(record.expiresAt, ctx.now)}` : ''}`
    case 'released':
      return html`<b class="pending">not held</b>: its last claim${record.attempt !== null ? html` (attempt ${record.attempt})` : ''} was given back (the handler failed or was refused) or its lease lapsed; the next delivery runs it again`
    case 'absent':
      return html`<b>absent</b>: never received here, or forgotten ${span(retention)} after it was handled`
    default:
      return html`<b>unknown</b>: this store has no <code>lookup</code>, so the console cannot ask it`
  }
}

/** The email id in a payload's `data.id`, read on the server and never shown with the payload. */
function emailOfPayload(entry: InboxEntry): string | undefined {
  try {
    const id = (JSON.parse(entry.payload) as { data?: { id?: unknown } }).data?.id
    return typeof id === 'string' && id.length > 0 && id.length <= 512 ? id : undefined
  } catch {
    return undefined
  }
}

function entryPart(ctx: PageContext, entry: InboxEntry): Html {
  const { namespace, actions } = ctx.settings
  const orderKey = entry.orderKey ?? (emailOfPayload(entry) === undefined ? null : `${namespace}:email:${emailOfPayload(entry)}`)
  const retry =
    entry.state === 'dead' && actions
      ? html`<form method="post" action="${ctx.href('/dead/retry')}">${csrfField(ctx)}<input type="hidden" name="one" value="${entry.key}"><button class="primary" type="submit">Retry this dead letter</button></form>`
      : ''
  return html`<dl class="facts"><dt>State</dt><dd>${stateLabel(entry.state)}</dd><dt>Type</dt><dd><code>${entry.type}</code></dd>
<dt>Attempts</dt><dd>${entry.attempts}</dd><dt>Recorded</dt><dd>${when(entry.enqueuedAt, ctx.now)}</dd>
${entry.state === 'pending' ? html`<dt>Next attempt</dt><dd>${when(entry.nextAttemptAt, ctx.now)}</dd>` : ''}
${entry.endedAt !== null ? html`<dt>${entry.state === 'dead' ? 'Died' : 'Ended'}</dt><dd>${when(entry.endedAt, ctx.now)}</dd>` : ''}
<dt>created_at</dt><dd>${entry.createdAtMs === undefined ? html`<span class="note">not recorded (ordering off)</span>` : when(entry.createdAtMs, ctx.now)}</dd>
<dt>Email</dt><dd>${emailLink(ctx, orderKey)}</dd>
<dt>Last error</dt><dd class="error">${entry.lastError ?? '—'}</dd></dl>
<div class="actions"><form method="post" action="${ctx.href('/payload')}">${csrfField(ctx)}<input type="hidden" name="key" value="${entry.key}"><button type="submit">Show payload</button></form>${retry}</div>
<p class="note">The payload (the event as received, with recipient addresses) is shown only when asked, on a page of its own; it is never put in a URL or a log.</p>`
}

/** The event page. */
export async function eventPage(ctx: PageContext, id: string): Promise<Page> {
  const { source, namespace, inbox } = ctx.settings
  const key = `${namespace}:${id}`
  const [record, entry] = await Promise.all([
    ctx.read(() => source.record(key, ctx.now)),
    inbox ? ctx.read(() => inbox.get(key)) : Promise.resolve(undefined),
  ])
  const recordPart = record.ok ? html`<p>${describeRecord(ctx, record.value)}.</p>` : problem('for the dedup record', record.problem)
  let inboxPart: Html
  if (entry === undefined) inboxPart = notice('This store has no inbox.')
  else if (!entry.ok) inboxPart = problem('for the inbox entry', entry.problem)
  else if (entry.value === undefined)
    inboxPart = html`<p class="note">No inbox entry: it arrived in request mode, was handled and forgotten after the retention, or was never received.</p>`
  else inboxPart = entryPart(ctx, entry.value)
  const body = html`<h1>Event <code>${id}</code></h1><p class="note">Dedup key <code>${key}</code></p>
<h2>Dedup record</h2>${recordPart}
<h2>Inbox entry</h2>${inboxPart}`
  return { title: `Event ${id}`, section: 'find', body }
}
