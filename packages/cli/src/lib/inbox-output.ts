/**
 * What the `inbox` commands print: entries as table rows, one entry in full, the counts and the
 * lag, ages such as `4m 12s`. Payloads are printed only by `inbox show --payload` (they can hold
 * recipient addresses); errors are cut to one line in tables.
 */
import type { InboxEntry, InboxStats } from '@email-webhooks/core'
import type { Output } from './output.js'
import { table } from './output.js'

/** Longest last error in a table row. */
const ERROR_WIDTH = 60

/**
 * A duration in at most two units: `850ms`, `12s`, `4m 12s`, `3h 20m`, `2d 4h`.
 * @example
 * formatDuration(252_000) // '4m 12s'
 */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`
  const s = Math.floor(ms / 1000)
  const units: Array<[string, number]> = [
    ['d', 86_400],
    ['h', 3_600],
    ['m', 60],
    ['s', 1],
  ]
  const i = units.findIndex(([, size]) => s >= size)
  const [unit, size] = units[i] as [string, number]
  const next = units[i + 1]
  const rest = next ? Math.floor((s % size) / next[1]) : 0
  return next && rest > 0 ? `${Math.floor(s / size)}${unit} ${rest}${next[0]}` : `${Math.floor(s / size)}${unit}`
}

/** The webhook-id of a key: without the namespace when it is this one, else the whole key (another namespace shows). */
export function idOf(key: string, namespace: string): string {
  return key.startsWith(`${namespace}:`) ? key.slice(namespace.length + 1) : key
}

function nextAttempt(entry: InboxEntry, now: number): string {
  if (entry.state !== 'pending') return '—'
  return entry.nextAttemptAt <= now ? 'now' : `in ${formatDuration(entry.nextAttemptAt - now)}`
}

function oneLine(text: string | null, width: number): string {
  if (text === null) return ''
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > width ? `${line.slice(0, width - 1)}…` : line
}

/**
 * An entry for `--json`: every field but the payload (unless asked), times as ISO strings.
 * @param entry The entry.
 * @param namespace The receiver's namespace, to give the webhook-id.
 * @param withPayload Whether to include the payload (`inbox show --payload`).
 * @example
 * out.data(entries.map((e) => entryJson(e, 'default', false)))
 */
export function entryJson(entry: InboxEntry, namespace: string, withPayload: boolean): Record<string, unknown> {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())
  return {
    id: idOf(entry.key, namespace),
    key: entry.key,
    type: entry.type,
    state: entry.state,
    attempts: entry.attempts,
    enqueuedAt: iso(entry.enqueuedAt),
    nextAttemptAt: entry.state === 'pending' ? iso(entry.nextAttemptAt) : null,
    endedAt: iso(entry.endedAt),
    lastError: entry.lastError,
    failedAt: iso(entry.failedAt),
    retriedAt: iso(entry.retriedAt),
    attemptsBeforeRetry: entry.attemptsBeforeRetry,
    lastErrorBeforeRetry: errorBeforeRetry(entry),
    timestamp: entry.timestamp,
    orderKey: entry.orderKey ?? null,
    createdAt: iso(entry.createdAtMs ?? null),
    ...(withPayload ? { payload: entry.payload } : {}),
  }
}

/** Whether the entry's last error is a failure of before its last retry (it has not failed since). */
function errorBeforeRetry(entry: InboxEntry): boolean {
  return entry.lastError !== null && entry.retriedAt !== null && (entry.failedAt === null || entry.failedAt <= entry.retriedAt)
}

/** The attempts column: since the last retry, and those before it when there were. */
function attemptsText(entry: InboxEntry): string {
  return entry.attemptsBeforeRetry > 0 ? `${entry.attempts} (+${entry.attemptsBeforeRetry} before the retry)` : String(entry.attempts)
}

/**
 * Prints entries as a table: id, type, state, attempts, age, next attempt, last error (cut).
 * @example
 * printEntries(out, await inbox.list({ limit: 100 }), 'default', Date.now())
 */
export function printEntries(out: Output, entries: InboxEntry[], namespace: string, now: number): void {
  const rows = entries.map((e) => [
    idOf(e.key, namespace),
    e.type,
    e.state === 'dead' ? out.colors.red(e.state) : e.state,
    attemptsText(e),
    formatDuration(now - e.enqueuedAt),
    nextAttempt(e, now),
    errorBeforeRetry(e) ? `(before the retry) ${oneLine(e.lastError, ERROR_WIDTH)}` : oneLine(e.lastError, ERROR_WIDTH),
  ])
  table(out, ['id', 'type', 'state', 'attempts', 'age', 'next attempt', 'last error'], rows)
}

/**
 * Prints one entry in full; the payload only when asked, else a line saying how to see it.
 * @example
 * printEntry(out, entry, 'default', Date.now(), false)
 */
export function printEntry(out: Output, entry: InboxEntry, namespace: string, now: number, withPayload: boolean): void {
  const when = (ms: number | null) =>
    ms === null ? '—' : `${new Date(ms).toISOString()} (${formatDuration(Math.abs(now - ms))} ${ms <= now ? 'ago' : 'from now'})`
  const rows: Array<[string, string]> = [
    ['id', idOf(entry.key, namespace)],
    ['key', entry.key],
    ['type', entry.type],
    ['state', entry.state],
    ['attempts', attemptsText(entry)],
    ['enqueued', when(entry.enqueuedAt)],
    ['next attempt', entry.state === 'pending' ? when(entry.nextAttemptAt) : '—'],
    ['ended', when(entry.endedAt)],
    ['webhook-timestamp', `${entry.timestamp} (${new Date(entry.timestamp * 1000).toISOString()})`],
  ]
  if (entry.orderKey !== undefined) rows.push(['order key', entry.orderKey])
  if (entry.createdAtMs !== undefined) rows.push(['created_at', new Date(entry.createdAtMs).toISOString()])
  if (entry.retriedAt !== null) rows.push(['retried', when(entry.retriedAt)])
  rows.push([
    errorBeforeRetry(entry) ? 'last error (before the retry)' : 'last error',
    entry.lastError === null ? '—' : `${entry.lastError}${entry.failedAt === null ? '' : `, ${when(entry.failedAt)}`}`,
  ])
  const width = Math.max(...rows.map(([name]) => name.length))
  for (const [name, value] of rows) out.line(`${out.colors.bold(name.padEnd(width))}  ${value}`)
  if (withPayload) out.line(`${out.colors.bold('payload'.padEnd(width))}\n${entry.payload}`)
  else
    out.line(`${out.colors.bold('payload'.padEnd(width))}  ${out.colors.dim('not shown (it can hold recipient addresses): add --payload')}`)
}

/**
 * Prints the counts and the lag as a one-row table.
 * @example
 * printStats(out, await inbox.stats(), Date.now())
 */
export function printStats(out: Output, stats: InboxStats, now: number): void {
  const lag = stats.oldestPendingAt === null ? '—' : formatDuration(now - stats.oldestPendingAt)
  table(
    out,
    ['pending (depth)', 'running', 'dead', 'lag (oldest pending)'],
    [[String(stats.pending), String(stats.running), String(stats.dead), lag]],
  )
}

/**
 * Counts and lag for `--json`.
 * @example
 * out.data(statsJson(await inbox.stats(), Date.now()))
 */
export function statsJson(stats: InboxStats, now: number): Record<string, unknown> {
  const lagMs = stats.oldestPendingAt === null ? null : Math.max(0, now - stats.oldestPendingAt)
  const oldestPendingAt = stats.oldestPendingAt === null ? null : new Date(stats.oldestPendingAt).toISOString()
  return { pending: stats.pending, running: stats.running, dead: stats.dead, lagMs, oldestPendingAt }
}
