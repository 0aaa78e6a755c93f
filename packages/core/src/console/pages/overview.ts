/**
 * Overview: deliveries per minute from the receiver's counters (when mounted in its process), the
 * inbox's depth, lag and dead letters, and what the store holds, with events recorded per hour
 * where the store can tell.
 */
import { barChart, legend } from '../chart.js'
import type { Page, PageContext } from '../context.js'
import { count, span, utc } from '../format.js'
import { type Html, html } from '../html.js'
import { card, notice, problem } from './parts.js'

const OUTCOMES = ['handled', 'queued', 'duplicate', 'skipped', 'ignored', 'in_flight', 'failed', 'rejected'] as const
const CHART_MINUTES = 60
const CHART_HOURS = 48

function deliveries(ctx: PageContext): Html {
  const { receiver, sampler } = ctx.settings
  if (!receiver || !sampler) {
    return notice(
      html`Mounted without <code>receiver</code>: the deliveries by outcome live in the receiver's process (its <code>stats()</code>). Pass <code>receiver</code> (the handler <code>emailWebhook()</code> returned) where the console is mounted beside it.`,
    )
  }
  sampler.sample(ctx.now)
  const stats = receiver.stats()
  const minutes = sampler.minutes(ctx.now, CHART_MINUTES)
  const bars = minutes.map((minute) => ({
    label: `${utc(minute.start).slice(11, 16)} UTC`,
    parts: OUTCOMES.map((name) => ({ name, value: minute.counts[name] ?? 0 })),
  }))
  const totals = OUTCOMES.map((name) => ({ name, value: stats.deliveries[name] ?? 0 }))
  const sum = (record: Record<string, number>) => Object.values(record).reduce((a, b) => a + b, 0)
  const since = sampler.since()
  return html`<div class="cards">${card('handled', count(stats.handled))}${card('acknowledged (no handler)', count(stats.acknowledged))}${card('queued (inbox)', count(stats.queued))}${card('duplicates', count(stats.duplicates))}${card('skipped as stale', count(stats.skipped))}${card('refused (401, 413)', count(sum(stats.rejected)))}${card('failed (409, 5xx)', count(sum(stats.failed)))}</div>
${barChart(bars, `Deliveries per minute by outcome, last ${CHART_MINUTES} minutes`, [`${CHART_MINUTES} min ago`, 'now'])}
${legend(totals)}
<p class="note">Counters of this process since it started (the legend); the chart shows what arrived while the console was mounted${since !== undefined ? html` (sampled since ${utc(since)})` : ''}.</p>`
}

async function inbox(ctx: PageContext): Promise<Html> {
  const queue = ctx.settings.inbox
  if (!queue)
    return notice(
      'This store has no inbox: inbox mode (answer once recorded, handle after) cannot run on it, so there is no depth, lag or dead letter to show.',
    )
  const read = await ctx.read(() => queue.stats())
  if (!read.ok) return problem('for the inbox counts', read.problem)
  const { pending, running, dead, oldestPendingAt } = read.value
  const lag = oldestPendingAt === null ? '—' : span(Math.max(0, ctx.now - oldestPendingAt))
  const worker = ctx.settings.receiver?.inbox
    ? 'a worker runs in this process'
    : 'workers run wherever the receiver or `email-webhooks inbox work` runs'
  return html`<div class="cards">${card('waiting', count(pending), ctx.href('/find', { state: 'pending' }))}${card('running', count(running), ctx.href('/find', { state: 'running' }))}${card('dead letters', count(dead), ctx.href('/dead'))}${card('lag (oldest waiting)', lag)}</div>
<p class="note">Depth and lag from the store's inbox; ${worker}.</p>`
}

/** The part of storeTimeoutMs a store may spend counting for the overview (the rest: its other reads). */
const OVERVIEW_BUDGET_SHARE = 0.6

async function store(ctx: PageContext): Promise<Html> {
  const { source, retentionMs } = ctx.settings
  // Counting may take most of the store's time, not all of it: the page must answer within it.
  const read = await ctx.read(() => source.overview(ctx.now, retentionMs, ctx.settings.storeTimeoutMs * OVERVIEW_BUDGET_SHARE))
  const head = html`<dl class="facts"><dt>Store</dt><dd>${source.kind}</dd><dt>Where</dt><dd><code>${source.location}</code></dd><dt>Retention</dt><dd>${span(retentionMs)} (done records are remembered this long; as given to the console, pass the receiver's <code>retentionMs</code> if it differs)</dd></dl>`
  if (!read.ok) return html`${head}${problem('for its figures', read.problem)}`
  const { figures, recordedByHour, notes } = read.value
  const rows = figures.map(
    (f) =>
      html`<tr><th scope="row">${f.label}</th><td>${typeof f.value === 'number' ? count(f.value) : (f.value ?? '—')}</td><td class="note">${f.note ?? ''}</td></tr>`,
  )
  let chart: Html | string = ''
  if (recordedByHour) {
    const first = Math.floor(ctx.now / 3_600_000) - CHART_HOURS + 1
    const byHour = new Map(recordedByHour.map((row) => [row.hour, row.count]))
    const bars = Array.from({ length: CHART_HOURS }, (_, i) => ({
      label: `${utc((first + i) * 3_600_000).slice(0, 13)}h UTC`,
      parts: [{ name: 'recorded', value: byHour.get(first + i) ?? 0 }],
    }))
    chart = barChart(bars, `Events recorded as done per hour, last ${CHART_HOURS} hours (from each record's expiry minus the retention)`, [
      `${CHART_HOURS} h ago`,
      'now',
    ])
  }
  return html`${head}${rows.length ? html`<table class="figures"><tbody>${rows}</tbody></table>` : ''}${chart}${notes.map((n) => html`<p class="note">${n}</p>`)}`
}

/** The overview page. */
export async function overviewPage(ctx: PageContext): Promise<Page> {
  const [inboxPart, storePart] = await Promise.all([inbox(ctx), store(ctx)])
  const body = html`<h1>Overview</h1>
<h2>Deliveries</h2>${deliveries(ctx)}
<h2>Inbox</h2>${inboxPart}
<h2>Store</h2>${storePart}`
  return { title: 'Overview', section: 'overview', body }
}
