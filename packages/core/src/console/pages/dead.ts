/**
 * Dead letters: the inbox entries a worker gave up on, newest first, with their last error and
 * attempts; retry one, the selected ones, or every one that matches the filter (after a plan step
 * that counts them), and purge those that died before a date (the same plan step). Actions appear
 * only with `actions: true`.
 */
import type { Page, PageContext } from '../context.js'
import { count, fieldTime, plural, utc } from '../format.js'
import { type Html, html } from '../html.js'
import { entryFilter } from '../query.js'
import { entriesTable, filterForm, nextLink } from './entries.js'
import { PAGE_SIZE } from './find.js'
import { csrfField, notice, problem } from './parts.js'

function outcome(ctx: PageContext): Html {
  const params = ctx.url.searchParams
  const number = (name: string) => {
    const value = params.get(name)
    return value !== null && /^\d{1,9}$/.test(value) ? Number(value) : undefined
  }
  const planned = number('planned')
  const plan = planned === undefined ? '' : ` (the plan counted ${count(planned)})`
  const retried = number('retried')
  if (retried !== undefined)
    return html`<div class="notice" role="status">${plural(retried, 'dead letter', 'dead letters')} made pending again${plan}: a worker takes them now.</div>`
  const purged = number('purged')
  if (purged !== undefined)
    return html`<div class="notice" role="status">${plural(purged, 'dead letter', 'dead letters')} purged${plan}.</div>`
  return html``
}

function selection(ctx: PageContext, table: Html): Html {
  if (!ctx.settings.actions) return table
  return html`<form method="post" action="${ctx.href('/dead/retry')}">${csrfField(ctx)}${table}<div class="actions"><button class="primary" type="submit">Retry selected</button></div></form>`
}

/** The dead letters page. */
export async function deadPage(ctx: PageContext): Promise<Page> {
  const { inbox, source, actions } = ctx.settings
  const head = html`<h1>Dead letters</h1>${outcome(ctx)}`
  if (!inbox)
    return {
      title: 'Dead letters',
      section: 'dead',
      body: html`${head}${notice('This store has no inbox, so nothing can be dead: dead letters exist only in inbox mode.')}`,
    }
  const filter = entryFilter(ctx.url.searchParams, 'dead')
  if (!filter.ok) return { title: 'Dead letters', section: 'dead', status: 400, body: html`${head}${problem('', filter.problem)}` }
  const f = { ...filter.value, state: 'dead' as const }
  const page = await ctx.read(() => source.entries({ ...f, limit: PAGE_SIZE }, ctx.now))
  const query = { type: f.type, before: fieldTime(f.before) }
  const plans = html`<div class="actions"><a href="${ctx.href('/dead/plan', { ...query, do: 'retry' })}">Retry every dead letter that matches the filter…</a> · <a href="${ctx.href('/dead/plan', { ...query, do: 'purge' })}">Purge…</a></div>`
  const mode = actions
    ? ''
    : html`<p class="note">Read-only: mount the console with <code>actions: true</code> to retry and purge from here.</p>`
  const list = page.ok
    ? html`${page.value.note ? html`<p class="note">${page.value.note}</p>` : ''}${selection(ctx, entriesTable(ctx, page.value.entries, actions))}${nextLink(ctx, '/dead', f, page.value.next)}`
    : problem('for the dead letters', page.problem)
  return { title: 'Dead letters', section: 'dead', body: html`${head}${filterForm(ctx, '/dead', f, true)}${mode}${plans}${list}` }
}

/** The plan step: how many dead letters a retry or a purge would touch, and the button that does it. */
export async function planPage(ctx: PageContext): Promise<Page> {
  const { inbox, source, actions } = ctx.settings
  const params = ctx.url.searchParams
  const what = params.get('do') === 'purge' ? 'purge' : 'retry'
  const title = what === 'retry' ? 'Plan: retry dead letters' : 'Plan: purge dead letters'
  if (!inbox) return { title, section: 'dead', body: html`<h1>${title}</h1>${notice('This store has no inbox.')}` }
  const filter = entryFilter(params, 'dead')
  if (!filter.ok) return { title, section: 'dead', status: 400, body: html`<h1>${title}</h1>${problem('', filter.problem)}` }
  const type = what === 'retry' ? filter.value.type : undefined
  const before = filter.value.before
  const counted = await ctx.read(() => source.countDead({ type, before }, ctx.now))
  if (!counted.ok) return { title, section: 'dead', body: html`<h1>${title}</h1>${problem('for the count', counted.problem)}` }
  const { count: n, exact } = counted.value
  const scope = html`${type ? html` of type <code>${type}</code>` : ''}${before !== undefined ? html` that died at or before ${utc(before)}` : ''}`
  const summary = html`<p><b>${exact ? '' : 'at least '}${plural(n, 'dead letter', 'dead letters')}</b>${scope} ${what === 'retry' ? 'would be made pending again (attempts from zero); the worker then takes them.' : 'would be deleted for good, whatever their type (the inbox purges by age only).'}</p>`
  const fields = html`${csrfField(ctx)}<input type="hidden" name="before" value="${before === undefined ? '' : String(before)}"><input type="hidden" name="planned" value="${n}">${type ? html`<input type="hidden" name="type" value="${type}">` : ''}`
  const confirm = !actions
    ? html`<p class="note">Read-only: mount the console with <code>actions: true</code> to ${what} from here.</p>`
    : n === 0
      ? html`<p>Nothing to do.</p>`
      : html`<form class="confirm" method="post" action="${ctx.href(what === 'retry' ? '/dead/retry-matching' : '/dead/purge')}">${fields}<button class="${what === 'retry' ? 'primary' : 'danger'}" type="submit">${what === 'retry' ? 'Retry' : 'Purge'} ${count(n)}</button> <a href="${ctx.href('/dead', { type: filter.value.type, before: fieldTime(before) })}">Cancel</a></form>`
  return { title, section: 'dead', body: html`<h1>${title}</h1>${summary}${confirm}` }
}
