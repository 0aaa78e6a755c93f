/**
 * The console's POSTs (the router has checked the origin and the CSRF token, and that actions are
 * on): retry dead letters (one, the selected, or every one matching a filter, a batch at a time
 * through `InboxQueue.retry`), purge those that died before a date (`InboxQueue.purge`), and show a
 * payload when asked. Each action answers 303 to a page that says what it did, so a reload repeats nothing.
 */
import type { Page, PageContext, PageResult } from '../context.js'
import { within } from '../context.js'
import { type Html, html } from '../html.js'
import { MAX_FIELD } from '../query.js'
import { eventIdOf, problem } from './parts.js'

/** Keys per `retry` call when retrying every match. */
const RETRY_BATCH = 500
/** The most keys one "retry selected" takes. */
const MAX_SELECTED = 1_000
/** The most batches one "retry every match" runs (the page says when more remain). */
const MAX_BATCHES = 200

function failed(title: string, what: string, message: string, status = 503): Page {
  return { title, section: 'dead', status, body: html`<h1>${title}</h1>${problem(what, message)}` }
}

function plannedOf(form: URLSearchParams): string | undefined {
  const planned = form.get('planned')
  return planned !== null && /^\d{1,9}$/.test(planned) ? planned : undefined
}

function keysOf(form: URLSearchParams): string[] | string {
  const one = form.get('one')
  const keys = one !== null ? [one] : form.getAll('key')
  if (keys.length === 0) return 'Pick at least one dead letter (the boxes in the first column), or use a row\u2019s Retry button.'
  if (keys.length > MAX_SELECTED)
    return `At most ${MAX_SELECTED} at a time: use "Retry every dead letter that matches the filter" for more.`
  if (keys.some((key) => key.length === 0 || key.length > MAX_FIELD)) return 'A selected key is empty or too long.'
  return keys
}

/** POST /dead/retry: the selected keys (`key`, repeated) or one (`one`). */
export async function retrySelected(ctx: PageContext, form: URLSearchParams): Promise<PageResult> {
  const inbox = ctx.settings.inbox
  if (!inbox) return failed('Retry', '', 'This store has no inbox.', 409)
  const keys = keysOf(form)
  if (typeof keys === 'string') return failed('Retry', '', keys, 400)
  const done = await ctx.read(() => inbox.retry(keys))
  if (!done.ok) return failed('Retry', 'to the retry', done.problem)
  return { redirect: ctx.href('/dead', { retried: done.value }) }
}

function filterOf(form: URLSearchParams): { type: string | undefined; before: number | undefined } | string {
  const type = form.get('type') || undefined
  const beforeText = form.get('before') || undefined
  if ((type?.length ?? 0) > MAX_FIELD) return 'The type is too long.'
  if (beforeText !== undefined && !/^\d{1,15}$/.test(beforeText)) return 'The date of the plan is not a time.'
  return { type, before: beforeText === undefined ? undefined : Number(beforeText) }
}

/** POST /dead/retry-matching: every dead letter of the plan's filter, a batch at a time. */
export async function retryMatching(ctx: PageContext, form: URLSearchParams): Promise<PageResult> {
  const { inbox, source, storeTimeoutMs } = ctx.settings
  if (!inbox) return failed('Retry', '', 'This store has no inbox.', 409)
  const filter = filterOf(form)
  if (typeof filter === 'string') return failed('Retry', '', filter, 400)
  let retried = 0
  let cursor: string | undefined
  try {
    for (let batch = 0; batch < MAX_BATCHES; batch++) {
      const page = await within(() => source.entries({ state: 'dead', ...filter, cursor, limit: RETRY_BATCH }, Date.now()), storeTimeoutMs)
      const keys = page.entries.map((entry) => entry.key)
      if (keys.length > 0) retried += await within(() => inbox.retry(keys), storeTimeoutMs)
      // A store without paging lists the dead ones again from the top: the retried ones are gone from it.
      cursor = source.paging ? page.next : undefined
      if (keys.length < RETRY_BATCH || (source.paging && cursor === undefined)) break
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    return failed('Retry', 'while retrying', `${retried} were made pending before it stopped. ${message}`)
  }
  return { redirect: ctx.href('/dead', { retried, planned: plannedOf(form) }) }
}

/** POST /dead/purge: dead letters that died at or before the plan's date (any type), through `InboxQueue.purge`. */
export async function purgeDead(ctx: PageContext, form: URLSearchParams): Promise<PageResult> {
  const inbox = ctx.settings.inbox
  if (!inbox) return failed('Purge', '', 'This store has no inbox.', 409)
  const filter = filterOf(form)
  if (typeof filter === 'string') return failed('Purge', '', filter, 400)
  const olderThanMs = filter.before === undefined ? 0 : Math.max(0, Math.floor(Date.now() - filter.before))
  const done = await ctx.read(() => inbox.purge({ olderThanMs }))
  if (!done.ok) return failed('Purge', 'to the purge', done.problem)
  return { redirect: ctx.href('/dead', { purged: done.value, planned: plannedOf(form) }) }
}

/** POST /payload: one entry's payload, on a page of its own that is never cached. */
export async function payloadPage(ctx: PageContext, form: URLSearchParams): Promise<Page> {
  const key = form.get('key') ?? ''
  const inbox = ctx.settings.inbox
  const title = 'Payload'
  if (!inbox) return failed(title, '', 'This store has no inbox.', 409)
  if (key.length === 0 || key.length > MAX_FIELD) return failed(title, '', 'No entry was named.', 400)
  const entry = await ctx.read(() => inbox.get(key))
  if (!entry.ok) return failed(title, 'for the entry', entry.problem)
  const id = eventIdOf(ctx, key)
  const back = html`<p><a href="${ctx.href(`/events/${encodeURIComponent(id)}`)}">← back to the event</a></p>`
  if (entry.value === undefined)
    return { title, section: 'find', status: 404, body: html`<h1>${title}</h1><p>No inbox entry <code>${key}</code> any more.</p>${back}` }
  let shown: string
  try {
    shown = JSON.stringify(JSON.parse(entry.value.payload), null, 2)
  } catch {
    shown = entry.value.payload
  }
  const body: Html = html`<h1>Payload of <code>${id}</code></h1><p class="note">The event exactly as received (recipient addresses are personal data). This page is not cached; leave it when done.</p><pre class="payload">${shown}</pre>${back}`
  return { title, section: 'find', body }
}
