/** The inbox entries table and its filters, shared by Find and Dead letters: newest first, a page at a time, never a payload. */

import type { PageContext } from '../context.js'
import { fieldTime } from '../format.js'
import { type Html, html } from '../html.js'
import type { EntryFilter } from '../query.js'
import { INBOX_STATES } from '../query.js'
import { ENTRY_TIME, type EntrySummary } from '../source.js'
import { emailLink, eventLink, stateLabel, when } from './parts.js'

/** The longest last error shown in a table (the event's page shows it whole). */
const ERROR_CHARS = 240

/** The filter form; `fixedState` hides the state choice (dead letters). */
export function filterForm(ctx: PageContext, path: string, filter: EntryFilter, fixedState?: boolean): Html {
  const states = INBOX_STATES.map(
    (state) => html`<option value="${state}"${filter.state === state ? html` selected` : ''}>${state}</option>`,
  )
  const timeLabel = ENTRY_TIME[filter.state] === 'endedAt' ? 'Ended at or before (UTC)' : 'Recorded at or before (UTC)'
  return html`<form class="filters" method="get" action="${ctx.href(path)}">
${fixedState ? '' : html`<label>State<select name="state">${states}</select></label>`}
<label>Event type<input name="type" value="${filter.type ?? ''}" placeholder="email.bounced" maxlength="200"></label>
<label>${timeLabel}<input type="datetime-local" name="before" value="${fieldTime(filter.before)}"></label>
<button type="submit">Filter</button></form>`
}

/** One row; `select` adds a checkbox named `key` (dead letters). */
function row(ctx: PageContext, entry: EntrySummary, select: boolean): Html {
  const time = entry[ENTRY_TIME[entry.state]]
  const error =
    entry.lastError === null ? '' : entry.lastError.length > ERROR_CHARS ? `${entry.lastError.slice(0, ERROR_CHARS)}…` : entry.lastError
  const box = select ? html`<td><input type="checkbox" name="key" value="${entry.key}" aria-label="select ${entry.key}"></td>` : ''
  const retry = select ? html`<td><button type="submit" name="one" value="${entry.key}">Retry</button></td>` : ''
  return html`<tr>${box}<td>${eventLink(ctx, entry.key)}</td><td><code>${entry.type}</code></td><td>${stateLabel(entry.state)}</td><td>${entry.attempts}</td><td>${when(time, ctx.now)}</td><td>${emailLink(ctx, entry.orderKey)}</td><td class="error">${error}</td>${retry}</tr>`
}

/** The table of a page of entries. */
export function entriesTable(ctx: PageContext, entries: readonly EntrySummary[], select = false): Html {
  if (entries.length === 0) return html`<p class="note">No entry matches.</p>`
  return html`<table><thead><tr>${select ? html`<th><span class="note">pick</span></th>` : ''}<th>Event</th><th>Type</th><th>State</th><th>Attempts</th><th>Time</th><th>Email</th><th>Last error</th>${select ? html`<th></th>` : ''}</tr></thead>
<tbody>${entries.map((entry) => row(ctx, entry, select))}</tbody></table>`
}

/** The link to the next page, keeping the filter. */
export function nextLink(ctx: PageContext, path: string, filter: EntryFilter, next: string | undefined): Html {
  if (next === undefined) return html``
  const query = { state: filter.state, type: filter.type, before: fieldTime(filter.before), after: next }
  return html`<p><a href="${ctx.href(path, query)}" rel="next">Next page →</a></p>`
}
