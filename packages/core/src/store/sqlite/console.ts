/**
 * The console's reads of a SQLite store (packages/core/src/console): read-only statements, run on
 * the store's reading thread (reader.ts: off the receiver's event loop) or, without one, on the
 * store's own connection; each page's statements in one read transaction, one snapshot (the
 * overview's counts: one a chunk). Done records by key (across generations, through the view
 * `<table>_done`; the overview counts each generation's table in turn), the lease of a key, an email's mark and
 * facts (a range of the fact table's primary key) and inbox entries (the order-key index), pages
 * of inbox entries newest first by (time, key) keyset, and counts for the overview. Expiry is
 * judged on the store's clock. Never a payload.
 */
import { BUDGET_SHARE, CHUNK_KEYS, countedFigure, countInChunks, DEFAULT_BUDGET_MS, partialCountNote } from '../../console/chunked-count.js'
import { factOf } from '../../console/fact-key.js'
import { bytes } from '../../console/format.js'
import type { ConsoleSource, EntryPage, EntryQuery, EntrySummary, StoreFacts } from '../../console/source.js'
import type { InboxState } from '../inbox.js'
import { commandError } from './errors.js'
import type { ReadStep } from './reader.js'

/** What the reads need of their store. */
export interface SqliteConsoleHost {
  table: string
  path: string
  now: () => number
  /** Why the store refuses work (closed, a failed sync), or undefined. */
  refused: () => Error | undefined
  /**
   * The rows of each step, in one read transaction: on the store's reading thread (reader.ts), or
   * without one (`:memory:`), or once it is gone, on its connection (`readOffLoop`).
   */
  read: (steps: ReadStep[]) => Promise<unknown[][]>
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
/**
 * The pause after each chunk (countByChunks): room for the writing connection's checkpoint to copy
 * the whole WAL and start it over (one core, no checkpointer thread: the WAL stayed at 4.2 MiB with
 * overviews back to back, bench/profile/console-wal.mjs, where reads back to back took it to 13 MiB).
 */
const CHUNK_PAUSE_MS = 2
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
  const t = host.table
  const inbox = `${t}_inbox`
  /** The rows of each step, read in one transaction (on the reading thread when there is one). */
  const readRows = async (steps: ReadStep[]): Promise<unknown[][]> => {
    const refused = host.refused()
    if (refused) throw refused
    try {
      return await host.read(steps)
    } catch (error) {
      throw commandError(host.path, error)
    }
  }
  /** Reads a page's statements at the store's clock, and shapes their rows. */
  const read = async <T>(plan: (now: number) => { steps: ReadStep[]; shape: (rows: unknown[][]) => T }): Promise<T> => {
    const { steps, shape } = plan(host.now())
    return shape(await readRows(steps))
  }
  const step = (sql: string, ...args: unknown[]): ReadStep => ({ sql, args })
  const count = (sql: string, ...args: unknown[]): ReadStep => ({ sql, args, pluck: true })
  const first = (rows: unknown[] | undefined): number => (rows?.[0] as number | undefined) ?? 0
  /**
   * Counts the rows of `table` (keyed by `key`) that match `where`, by the value of `group` (or all
   * under 0), CHUNK_KEYS keys a read, each read its own short snapshot, with a pause of
   * CHUNK_PAUSE_MS after each: a snapshot keeps the WAL from starting over while it lasts, and reads
   * back to back (a second at a week's retention) kept it from ever starting over, so the writer's
   * checkpoint came at the backstop, on the event loop (the checkpointer's thread also takes turns
   * with the reads: READ_GATE in reader.ts; the pause is for the writer's own checkpoint).
   */
  const countByChunks = (table: string, where: string, params: Record<string, unknown>, budgetMs: number, group = '0') =>
    countTablesByChunks([table], where, params, budgetMs, group)
  /**
   * `countByChunks` over several tables one after another (the done records' generations), as one
   * count. A generation dropped meanwhile (all its records expired) counts what was read of it.
   */
  const countTablesByChunks = (tables: string[], where: string, params: Record<string, unknown>, budgetMs: number, group = '0') => {
    const chunk = (table: string, first: boolean) => {
      // The chunk's last key, or X'FF' (above every text) for the last chunk: a range the primary key
      // reads. Found twice (in the count, and for the next chunk): still faster than one walk that
      // returns its last key too (275 against 337 ms for 1,000,000 records).
      const chunkEnd = `SELECT key FROM ${table} WHERE key ${first ? '>=' : '>'} :after ORDER BY key LIMIT 1 OFFSET ${CHUNK_KEYS - 1}`
      const counted = `SELECT ${group} AS g, count(*) AS n FROM ${table}
        WHERE key ${first ? '>=' : '>'} :after AND key <= coalesce((${chunkEnd}), X'FF') AND ${where} GROUP BY g`
      return { chunkEnd, counted }
    }
    let index = 0
    let fresh = true
    return countInChunks(
      async (after) => {
        for (; index < tables.length; index++, fresh = true) {
          const table = tables[index] as string
          const { counted, chunkEnd } = chunk(table, fresh)
          let rows: unknown[]
          let end: unknown[] | undefined
          try {
            ;[rows = [], end] = await readRows([
              step(counted, { ...params, after: fresh ? '' : after }),
              count(chunkEnd, { after: fresh ? '' : after }),
            ])
          } catch (error) {
            if (tables.length > 1 && /no such table/.test(String((error as { cause?: Error }).cause?.message))) continue
            throw error
          }
          fresh = false
          const counts = (rows as { g: number; n: number }[]).map((row) => [row.g, row.n] as const)
          const next = end?.[0] as string | undefined
          if (next !== undefined) return { counts, next }
          // This table is read to its end: the next one starts from its first key.
          if (index + 1 < tables.length) {
            index++
            fresh = true
            return { counts, next: '' }
          }
          return { counts, next: undefined }
        }
        return { counts: [], next: undefined }
      },
      budgetMs,
      CHUNK_PAUSE_MS,
    )
  }
  /** The tables of done records: the current one and every sealed generation (generations.ts). */
  const doneTables = async (): Promise<string[]> => {
    const [ids] = await readRows([count(`SELECT id FROM ${t}_gen ORDER BY id`)])
    return [`${t}_now`, ...((ids ?? []) as number[]).map((id) => `${t}_g${id}`)]
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
    overview: async (_now, retentionMs, budgetMs = DEFAULT_BUDGET_MS): Promise<StoreFacts> => {
      const now = host.now()
      const done = await countTablesByChunks(
        await doneTables(),
        'expires_at > :now',
        { now, ret: retentionMs },
        budgetMs * BUDGET_SHARE.done,
        'CAST((expires_at - :ret) / 3600000 AS INTEGER)',
      )
      const marks = await countByChunks(`${t}_order`, 'expires_at > :now', { now }, budgetMs * BUDGET_SHARE.marks)
      const facts = await countByChunks(`${t}_order_fact`, 'expires_at > :now', { now }, budgetMs * BUDGET_SHARE.facts)
      const handled = await countByChunks(inbox, "state = 'done' AND until > :now", { now }, budgetMs * BUDGET_SHARE.inbox)
      const [leases, fileBytes] = await readRows([
        count(`SELECT count(*) FROM ${t}_lease WHERE token IS NOT NULL AND expires_at > ?`, now),
        count('SELECT page_size * page_count FROM pragma_page_size(), pragma_page_count()'),
      ])
      const partly = [done, marks, facts, handled].some((c) => !c.whole)
      return {
        figures: [
          { label: 'Events remembered as done', value: countedFigure(done), note: 'records not yet past their retention' },
          { label: 'Claims in flight', value: first(leases), note: 'leases held now' },
          { label: 'Emails with an order mark', value: countedFigure(marks), note: 'ordering: true' },
          { label: 'Facts (email, type, created_at)', value: countedFigure(facts) },
          { label: 'Inbox entries handled and remembered', value: countedFigure(handled) },
          { label: 'File size', value: bytes(first(fileBytes)), note: 'without the WAL' },
        ],
        recordedByHour: [...done.counts].sort(([a], [b]) => a - b).map(([hour, n]) => ({ hour, count: n })),
        notes: partly ? [partialCountNote(budgetMs)] : [],
      }
    },
    record: (key) =>
      read((now) => ({
        steps: [
          count(`SELECT max(expires_at) FROM ${t}_done WHERE key = ?`, key),
          step(`SELECT token IS NOT NULL AS held, attempt, expires_at FROM ${t}_lease WHERE key = ?`, key),
        ],
        shape: ([doneRows, leaseRows]) => {
          const done = doneRows?.[0] as number | undefined
          if (done !== undefined && done > now) return { state: 'done', expiresAt: done, attempt: null }
          const lease = leaseRows?.[0] as { held: number; attempt: number; expires_at: number } | undefined
          if (lease === undefined) return { state: 'absent', expiresAt: null, attempt: null }
          const live = lease.held === 1 && lease.expires_at > now
          return { state: live ? 'in_flight' : 'released', expiresAt: live ? lease.expires_at : null, attempt: lease.attempt }
        },
      })),
    email: (orderKey, _now, limit) =>
      read((now) => ({
        steps: [
          step(`SELECT created_at_ms, event_id, type, expires_at FROM ${t}_order WHERE key = ? AND expires_at > ?`, orderKey, now),
          step(
            `SELECT key, handled, reconciled, expires_at FROM ${t}_order_fact WHERE key > ? AND key < ? AND expires_at > ?`,
            `${orderKey}|`,
            `${orderKey}}`,
            now,
          ),
          step(
            `SELECT ${SUMMARY} FROM ${inbox} WHERE order_key = :key AND NOT (state = 'done' AND until <= :now) ORDER BY created_at_ms, key LIMIT :limit`,
            { key: orderKey, now, limit },
          ),
        ],
        shape: ([markRows, factRows, entryRows]) => {
          const mark = markRows?.[0] as { created_at_ms: number; event_id: string; type: string; expires_at: number } | undefined
          const facts = (factRows ?? []) as { key: string; handled: number; reconciled: number; expires_at: number }[]
          const entries = (entryRows ?? []) as EntryRow[]
          const notes = entries.length === limit ? [`Only the first ${limit} inbox entries of this email are shown.`] : []
          return {
            mark: mark ? { eventId: mark.event_id, type: mark.type, createdAtMs: mark.created_at_ms, expiresAt: mark.expires_at } : null,
            facts: facts.flatMap((row) => factOf({ ...row, expiresAt: row.expires_at }, orderKey)),
            entries: entries.map(summaryOf),
            notes,
          }
        },
      })),
    entries: (query: EntryQuery) =>
      read((now) => {
        const cursor = readCursor(query.cursor)
        const text = listSql(query.state, query.type !== undefined, query.before !== undefined, cursor !== undefined)
        const params: Record<string, unknown> = { now, limit: query.limit + 1 }
        if (query.type !== undefined) params.type = query.type
        if (query.before !== undefined) params.before = query.before
        if (cursor) Object.assign(params, { ct: cursor.time, ck: cursor.key })
        return {
          steps: [step(text, params)],
          shape: ([found]): EntryPage => {
            const rows = (found ?? []) as EntryRow[]
            const more = rows.length > query.limit
            const page = more ? rows.slice(0, query.limit) : rows
            const last = page[page.length - 1]
            return { entries: page.map(summaryOf), next: more && last ? cursorOf(last, query.state) : undefined }
          },
        }
      }),
    countDead: (filter) =>
      read(() => {
        const params: Record<string, unknown> = {}
        if (filter.type !== undefined) params.type = filter.type
        if (filter.before !== undefined) params.before = filter.before
        const text = `SELECT count(*) FROM ${inbox} WHERE state = 'dead'${filter.type !== undefined ? ' AND type = :type' : ''}${filter.before !== undefined ? ' AND coalesce(ended_at, 0) <= :before' : ''}`
        return { steps: [count(text, params)], shape: ([found]) => ({ count: first(found), exact: true }) }
      }),
  }
}
