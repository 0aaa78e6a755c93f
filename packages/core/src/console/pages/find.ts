/**
 * Find: an event or an email by id (the event's record and inbox entry, the email's known events),
 * and inbox entries by state, type and date, newest first, one page at a time (keyset paging in
 * the store: never every row).
 */
import type { Page, PageContext } from '../context.js'
import { plural } from '../format.js'
import { type Html, html } from '../html.js'
import { entryFilter, MAX_FIELD } from '../query.js'
import { entriesTable, filterForm, nextLink } from './entries.js'
import { describeRecord } from './event.js'
import { emailLink, notice, problem, stateLabel } from './parts.js'

/** Entries per page. */
export const PAGE_SIZE = 50

async function lookFor(ctx: PageContext, id: string): Promise<Html> {
  const { source, namespace, inbox } = ctx.settings
  const eventId = id.startsWith(`${namespace}:`) ? id.slice(namespace.length + 1) : id
  const key = `${namespace}:${eventId}`
  const orderKey = `${namespace}:email:${id}`
  const [record, entry, email] = await Promise.all([
    ctx.read(() => source.record(key, ctx.now)),
    inbox ? ctx.read(() => inbox.get(key)) : Promise.resolve(undefined),
    ctx.read(() => source.email(orderKey, ctx.now, 1)),
  ])
  const eventHref = ctx.href(`/events/${encodeURIComponent(eventId)}`)
  const found = entry?.ok ? entry.value : undefined
  const eventKnown = (record.ok && record.value.state !== 'absent' && record.value.state !== 'unknown') || found !== undefined
  const itsEmail = found?.orderKey ? html`; its email ${emailLink(ctx, found.orderKey)}` : ''
  const eventPart = !record.ok
    ? problem('for the event', record.problem)
    : html`<p>Event <a class="mono" href="${eventHref}">${eventId}</a>: ${describeRecord(ctx, record.value)}${found ? html`; inbox entry ${stateLabel(found.state)}` : ''}${itsEmail}.</p>`
  let emailPart: Html | string = ''
  if (!email.ok) emailPart = problem('for the email', email.problem)
  else {
    const { mark, facts, entries } = email.value
    const known = (facts?.length ?? 0) + (entries?.length ?? 0) + (mark ? 1 : 0)
    const href = ctx.href(`/emails/${encodeURIComponent(id)}`)
    if (known > 0)
      emailPart = html`<p>Email <a class="mono" href="${href}">${id}</a>: the store knows events of it. <a href="${href}">Its story →</a></p>`
    else if (!eventKnown)
      emailPart = html`<p>Email <span class="mono">${id}</span>: the store keeps nothing under this email id (<a href="${href}">what it can and cannot know</a>).</p>`
  }
  return html`<h2>Results for <code>${id}</code></h2>${eventPart}${emailPart}`
}

/** The Find page. */
export async function findPage(ctx: PageContext): Promise<Page> {
  const params = ctx.url.searchParams
  const q = params.get('q')?.trim() ?? ''
  const search = html`<form class="filters" method="get" action="${ctx.href('/find')}" role="search"><label>Event id (webhook-id) or email id<input name="q" value="${q}" size="44" maxlength="${MAX_FIELD}" autofocus></label><button type="submit" class="primary">Find</button></form>`
  const found = q === '' ? '' : q.length > MAX_FIELD ? problem('', 'That id is too long.') : await lookFor(ctx, q)
  const filter = entryFilter(params, 'pending')
  let list: Html
  const inbox = ctx.settings.inbox
  if (!inbox) list = notice('This store has no inbox, so there are no inbox entries to list; events can still be found by id above.')
  else if (!filter.ok) list = problem('', filter.problem)
  else {
    const { source } = ctx.settings
    const page = await ctx.read(() => source.entries({ ...filter.value, limit: PAGE_SIZE }, ctx.now))
    list = page.ok
      ? html`${filterForm(ctx, '/find', filter.value)}${page.value.note ? html`<p class="note">${page.value.note}</p>` : ''}${page.value.entries.length > 0 ? html`<p class="note">${plural(page.value.entries.length, 'entry', 'entries')} on this page.</p>` : ''}${entriesTable(ctx, page.value.entries)}${nextLink(ctx, '/find', filter.value, page.value.next)}`
      : html`${filterForm(ctx, '/find', filter.value)}${problem('for the inbox entries', page.problem)}`
  }
  return { title: 'Find', section: 'find', body: html`<h1>Find</h1>${search}${found}<h2>Inbox entries</h2>${list}` }
}
