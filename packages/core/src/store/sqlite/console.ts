/**
 * The console's reads of a SQLite store (packages/core/src/console): read-only statements on the
 * store's own connection, prepared on first use, each one snapshot. Done records by key, the lease
 * of a key, an email's mark and facts (a range of the fact table's primary key) and inbox entries
 * (the order-key index), pages of inbox entries newest first by (time, key) keyset, and counts
 * for the overview. Expiry is judged on the store's clock. Never a payload.
 */
import { factOf } from '../../console/fact-key.js'
import { bytes } from '../../console/format.js'
import type { ConsoleSource, EntryPage, EntryQuery, EntrySummary, StoreFacts } from '../../console/source.js'
import type { InboxState } from '../inbox.js'
import { commandError } from './errors.js'
import type { Database, Statement } from './types.js'

/** What the reads need of their store. */
export interface SqliteConsoleHost {
  db: Database
  table: string
  path: string
  now: () => number
  /** Why the store refuses work (closed, a failed sync), or undefined. */
  refused: () => Error | undefined
}

type EntryRow = {
  key: string
  type: string
  state: InboxState
  attempts: number
  enqueued_at: number
  next_at: number
  ended_at: number | null
  last_error: string | null
  order_key: string | null
  created_at_ms: number | null
}

const SHOWN_STATE = `CASE WHEN state = 'running' AND until <= :now THEN 'pending' ELSE state END`
const SUMMARY = `key, type, ${SHOWN_STATE} AS state, attempts, enqueued_at,
  CASE WHEN state = 'running' AND until <= :now THEN until ELSE next_at END AS next_at, ended_at, last_error, order_key, created_at_ms`
/** Which rows are in each state as the inbox shows them (a lapsed lease is pending; a done entry past its retention is gone). */
const IN_STATE: Record<InboxState, string> = {
  pending: `(state = 'pending' OR (state = 'running' AND until <= :now))`,
  running: `(state = 'running' AND until > :now)`,
  done: `(state = 'done' AND until > :now)`,
  dead: `state = 'dead'`,
}
const TIME: Record<InboxState, string> = { pending: 'enqueued_at', running: 'enqueued_at', done: 'ended_at', dead: 'ended_at' }

function summaryOf(row: EntryRow): EntrySummary {
  return {
    key: row.key,
    type: row.type,
    state: row.state,
    attempts: row.attempts,
    enqueuedAt: row.enqueued_at,
    nextAttemptAt: row.next_at,
    endedAt: row.ended_at,
    lastError: row.last_error,
    orderKey: row.order_key,
    createdAtMs: row.created_at_ms,
  }
}

/** `<time>:<key>` of the last row of a page. */
function cursorOf(row: EntryRow, state: InboxState): string {
  return `${state === 'done' || state === 'dead' ? (row.ended_at ?? 0) : row.enqueued_at}:${row.key}`
}

/** A cursor's time and key; undefined when it is not one. */
export function readCursor(cursor: string | undefined): { time: number; key: string } | undefined {
  const match = cursor === undefined ? null : /^(\d{1,15}):([\s\S]+)$/.exec(cursor)
  return match ? { time: Number(match[1]), key: match[2] as string } : undefined
}

/** The console reads of a SQLite store. */
export function sqliteConsoleSource(host: SqliteConsoleHost): ConsoleSource {
  const { db, table } = host
  const t = table
  const inbox = `${t}_inbox`
  const prepared = new Map<string, Statement>()
  const sql = (text: string): Statement => {
    let statement = prepared.get(text)
    if (statement === undefined) {
      statement = db.prepare(text)
      prepared.set(text, statement)
    }
    return statement
  }
  const run = <T>(step: (now: number) => T): Promise<T> => {
    const refused = host.refused()
    if (refused) return Promise.reject(refused)
    try {
      return Promise.resolve(step(host.now()))
    } catch (error) {
      return Promise.reject(commandError(host.path, error))
    }
  }
  const listSql = (state: InboxState, withType: boolean, withBefore: boolean, withCursor: boolean) => {
    const time = `coalesce(${TIME[state]}, 0)`
    return `SELECT ${SUMMARY} FROM ${inbox} WHERE ${IN_STATE[state]}${withType ? ' AND type = :type' : ''}${withBefore ? ` AND ${time} <= :before` : ''}${withCursor ? ` AND (${time} < :ct OR (${time} = :ct AND key < :ck))` : ''}
      ORDER BY ${time} DESC, key DESC LIMIT :limit`
  }
  return {
    kind: 'SQLite',
    location: host.path,
    paging: true,
    overview: (_now, retentionMs) =>
      run((now): StoreFacts => {
        const hours = sql(
          `SELECT CAST((expires_at - :ret) / 3600000 AS INTEGER) AS hour, count(*) AS n FROM ${t} WHERE expires_at > :now GROUP BY hour`,
        ).all({
          ret: retentionMs,
          now,
        }) as { hour: number; n: number }[]
        const count = (text: string) => (sql(text).pluck().all({ now }) as number[])[0] ?? 0
        const pageSize = db.pragma('page_size', { simple: true }) as number
        const pages = db.pragma('page_count', { simple: true }) as number
        return {
          figures: [
            {
              label: 'Events remembered as done',
              value: hours.reduce((sum, h) => sum + h.n, 0),
              note: 'records not yet past their retention',
            },
            {
              label: 'Claims in flight',
              value: count(`SELECT count(*) FROM ${t}_lease WHERE token IS NOT NULL AND expires_at > :now`),
              note: 'leases held now',
            },
            {
              label: 'Emails with an order mark',
              value: count(`SELECT count(*) FROM ${t}_order WHERE expires_at > :now`),
              note: 'ordering: true',
            },
            { label: 'Facts (email, type, created_at)', value: count(`SELECT count(*) FROM ${t}_order_fact WHERE expires_at > :now`) },
            {
              label: 'Inbox entries handled and remembered',
              value: count(`SELECT count(*) FROM ${inbox} WHERE state = 'done' AND until > :now`),
            },
            { label: 'File size', value: bytes(pageSize * pages), note: 'without the WAL' },
          ],
          recordedByHour: hours.map((h) => ({ hour: h.hour, count: h.n })),
          notes: [],
        }
      }),
    record: (key) =>
      run((now) => {
        const done = (sql(`SELECT expires_at FROM ${t} WHERE key = ?`).pluck().all(key) as number[])[0]
        if (done !== undefined && done > now) return { state: 'done', expiresAt: done, attempt: null }
        const lease = sql(`SELECT token IS NOT NULL AS held, attempt, expires_at FROM ${t}_lease WHERE key = ?`).all(key)[0] as
          | { held: number; attempt: number; expires_at: number }
          | undefined
        if (lease === undefined) return { state: 'absent', expiresAt: null, attempt: null }
        const live = lease.held === 1 && lease.expires_at > now
        return { state: live ? 'in_flight' : 'released', expiresAt: live ? lease.expires_at : null, attempt: lease.attempt }
      }),
    email: (orderKey, _now, limit) =>
      run((now) => {
        const mark = sql(`SELECT created_at_ms, event_id, type, expires_at FROM ${t}_order WHERE key = ? AND expires_at > ?`).all(
          orderKey,
          now,
        )[0] as { created_at_ms: number; event_id: string; type: string; expires_at: number } | undefined
        const factRows = sql(
          `SELECT key, handled, reconciled, expires_at FROM ${t}_order_fact WHERE key > ? AND key < ? AND expires_at > ?`,
        ).all(`${orderKey}|`, `${orderKey}}`, now) as { key: string; handled: number; reconciled: number; expires_at: number }[]
        const entries = sql(
          `SELECT ${SUMMARY} FROM ${inbox} WHERE order_key = :key AND NOT (state = 'done' AND until <= :now) ORDER BY created_at_ms, key LIMIT :limit`,
        ).all({ key: orderKey, now, limit }) as EntryRow[]
        const notes = entries.length === limit ? [`Only the first ${limit} inbox entries of this email are shown.`] : []
        return {
          mark: mark ? { eventId: mark.event_id, type: mark.type, createdAtMs: mark.created_at_ms, expiresAt: mark.expires_at } : null,
          facts: factRows.flatMap((row) => factOf({ ...row, expiresAt: row.expires_at }, orderKey)),
          entries: entries.map(summaryOf),
          notes,
        }
      }),
    entries: (query: EntryQuery) =>
      run((now): EntryPage => {
        const cursor = readCursor(query.cursor)
        const text = listSql(query.state, query.type !== undefined, query.before !== undefined, cursor !== undefined)
        const params: Record<string, unknown> = { now, limit: query.limit + 1 }
        if (query.type !== undefined) params.type = query.type
        if (query.before !== undefined) params.before = query.before
        if (cursor) Object.assign(params, { ct: cursor.time, ck: cursor.key })
        const rows = sql(text).all(params) as EntryRow[]
        const more = rows.length > query.limit
        const page = more ? rows.slice(0, query.limit) : rows
        const last = page[page.length - 1]
        return { entries: page.map(summaryOf), next: more && last ? cursorOf(last, query.state) : undefined }
      }),
    countDead: (filter) =>
      run((now) => {
        const params: Record<string, unknown> = { now }
        if (filter.type !== undefined) params.type = filter.type
        if (filter.before !== undefined) params.before = filter.before
        const text = `SELECT count(*) FROM ${inbox} WHERE state = 'dead'${filter.type !== undefined ? ' AND type = :type' : ''}${filter.before !== undefined ? ' AND coalesce(ended_at, 0) <= :before' : ''}`
        return { count: (sql(text).pluck().all(params) as number[])[0] ?? 0, exact: true }
      }),
  }
}
