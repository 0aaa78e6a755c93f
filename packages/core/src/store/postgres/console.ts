/**
 * The console's reads of a PostgreSQL store (packages/core/src/console): read-only statements
 * through the store's own query path (its pool, prepared statements and error wrapping), on the
 * database's clock. Done records and leases by key, an email's mark and facts (a range of the fact
 * table's primary key, `COLLATE "C"`) and inbox entries by order key, pages of inbox entries newest
 * first by (time, key) keyset (microsecond cursors, exact), counts and sizes for the overview.
 * A missing order or inbox table (ordering never used, `createTable: false`) is said, not thrown.
 */
import {
  BUDGET_SHARE,
  CHUNK_KEYS,
  countedFigure,
  countFigure,
  countInChunks,
  DEFAULT_BUDGET_MS,
  partialCountNote,
  total,
} from '../../console/chunked-count.js'
import { factOf } from '../../console/fact-key.js'
import { bytes } from '../../console/format.js'
import type { ConsoleSource, EntryPage, EntryQuery, EntrySummary, StoreFacts, StoreFigure } from '../../console/source.js'
import type { InboxState } from '../inbox.js'

/** `n` to three significant digits: an estimate shown no more precisely than it is. */
function roughly(n: number): number {
  if (n < 1_000) return Math.round(n)
  const unit = 10 ** (Math.floor(Math.log10(n)) - 2)
  return Math.round(n / unit) * unit
}

/** The pause between two chunks of a count: room for the receivers' statements on the database. */
const CHUNK_PAUSE_MS = 2

type Query = <Row>(text: string, values?: unknown[]) => Promise<{ rows: Row[]; rowCount: number | null }>

/** What the reads need of their store. */
export interface PostgresConsoleHost {
  table: string
  /** The server, without credentials (`host:port/db`). */
  location: string
  /** Runs one statement; rejects with the store's `DedupStoreError`. */
  query: Query
  /** Resolves once the store's tables are there (created if the store may). */
  prepare: () => Promise<void>
}

const ms = (column: string) => `floor(extract(epoch FROM ${column}) * 1000)::float8`
const atMs = (param: string) => `(timestamptz 'epoch' + ${param}::float8 * interval '1 millisecond')`
const LAPSED = `(state = 'running' AND next_attempt_at <= now())`
const SUMMARY = `key, type, CASE WHEN ${LAPSED} THEN 'pending' ELSE state END AS state, attempts, ${ms('enqueued_at')} AS enqueued_at,
  ${ms('next_attempt_at')} AS next_at, ${ms('ended_at')} AS ended_at, last_error, order_key, created_at_ms::float8 AS created_at_ms`
const IN_STATE: Record<InboxState, string> = {
  pending: `(state = 'pending' OR ${LAPSED})`,
  running: `(state = 'running' AND next_attempt_at > now())`,
  done: `(state = 'done' AND expires_at > now())`,
  dead: `state = 'dead'`,
}
const TIME: Record<InboxState, string> = {
  pending: 'enqueued_at',
  running: 'enqueued_at',
  done: `coalesce(ended_at, timestamptz 'epoch')`,
  dead: `coalesce(ended_at, timestamptz 'epoch')`,
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
  cursor_us?: string
}

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

/** The table is missing (its `DedupStoreError` keeps pg's error, SQLSTATE 42P01, as the cause). */
function missingTable(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause
  return cause?.code === '42P01'
}

async function orMissing<T>(read: Promise<T>): Promise<T | undefined> {
  try {
    return await read
  } catch (error) {
    if (missingTable(error)) return undefined
    throw error
  }
}

/** The console reads of a PostgreSQL store. */
export function postgresConsoleSource(host: PostgresConsoleHost): ConsoleSource {
  const { table: t, query } = host
  const inbox = `${t}_inbox`
  const rows = async <Row>(text: string, values?: unknown[]): Promise<Row[]> => {
    await host.prepare()
    return (await query<Row>(text, values)).rows
  }
  /**
   * The statements that read `table` a chunk of keys at a time in key order (the first from its first
   * key on, the next ones after `$1`, the chunk before's last key), `columns` of each row in the CTE
   * `chunk`, then `select` over it. Keys are compared as the column's collation orders them, as
   * ORDER BY and max() do.
   */
  const chunkSql = (table: string, columns: string, select: string) => {
    const text = (first: boolean) => `WITH chunk AS MATERIALIZED (
  SELECT key, ${columns} FROM ${table} WHERE key ${first ? '>=' : '>'} $1 ORDER BY key LIMIT ${CHUNK_KEYS})
${select}`
    return { first: text(true), next: text(false) }
  }
  /** The key the next chunk starts after: none once a chunk came back short. */
  const nextAfter = (row: { n: number; next: string | null } | undefined) =>
    row?.n === CHUNK_KEYS && row.next !== null ? row.next : undefined
  // The dedup table's done records by the hour they were recorded ($2 the retention), and one more
  // row with the chunk's leases in flight, its size and its last key.
  const doneSql = chunkSql(
    t,
    'done, token, expires_at',
    `SELECT floor(extract(epoch FROM expires_at - $2::float8 * interval '1 millisecond') / 3600)::float8 AS hour, count(*)::int AS n,
  NULL::int AS in_flight, NULL::text AS next FROM chunk WHERE done AND expires_at > now() GROUP BY 1
UNION ALL
SELECT NULL, count(*)::int, (count(*) FILTER (WHERE NOT done AND token IS NOT NULL AND expires_at > now()))::int, max(key) FROM chunk`,
  )
  /**
   * The live rows of `table` (`live`, over `columns`: not past `expires_at`), a chunk of keys at a
   * time within `budgetMs`.
   */
  const countLive = (table: string, budgetMs: number, live = 'expires_at > now()', columns = 'expires_at') => {
    const sql = chunkSql(
      table,
      columns,
      `SELECT (count(*) FILTER (WHERE ${live}))::int AS live, count(*)::int AS n, max(key) AS next FROM chunk`,
    )
    return countInChunks(
      async (after, first) => {
        const row = (await query<{ live: number; n: number; next: string | null }>(first ? sql.first : sql.next, [after])).rows[0]
        return { counts: [[0, row?.live ?? 0]], next: nextAfter(row) }
      },
      budgetMs,
      CHUNK_PAUSE_MS,
    )
  }
  return {
    kind: 'PostgreSQL',
    location: host.location,
    paging: true,
    async overview(_now, retentionMs, budgetMs = DEFAULT_BUDGET_MS): Promise<StoreFacts> {
      await host.prepare()
      let inFlight = 0
      let rowsRead = 0
      // One statement at a time, each a chunk of keys: the console holds at most one of the pool's
      // connections, for a few milliseconds at a time (the store's host runs them in turn).
      const done = await countInChunks(
        async (after, first) => {
          const found = await query<{ hour: number | null; n: number; in_flight: number | null; next: string | null }>(
            first ? doneSql.first : doneSql.next,
            [after, retentionMs],
          )
          let next: string | undefined
          const counts: [number, number][] = []
          for (const row of found.rows) {
            if (row.in_flight === null) counts.push([row.hour as number, row.n])
            else {
              inFlight += row.in_flight
              rowsRead += row.n
              next = nextAfter(row)
            }
          }
          return { counts, next }
        },
        budgetMs * BUDGET_SHARE.done,
        CHUNK_PAUSE_MS,
      )
      const marks = await orMissing(countLive(`${t}_order`, budgetMs * BUDGET_SHARE.marks))
      const facts = await orMissing(countLive(`${t}_order_fact`, budgetMs * BUDGET_SHARE.facts))
      // A week of done entries in inbox mode is millions of rows too (one statement over them: 0.8 s at 3 million).
      const inboxDone = await orMissing(countLive(inbox, budgetMs * BUDGET_SHARE.inbox, IN_STATE.done, 'state, expires_at'))
      const sizes = await rows<{ bytes: number }>(
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::float8 AS bytes FROM pg_class c WHERE c.relkind = 'r' AND c.relname = ANY($1::text[])`,
        [[t, `${t}_order`, `${t}_order_lock`, `${t}_order_fact`, inbox]],
      )
      // Out of time on a table larger than what was read: the share of live done records among the
      // rows read, times PostgreSQL's own estimate of the table's rows (as of its last ANALYZE or VACUUM).
      const estimate = done.whole
        ? undefined
        : (await rows<{ n: number | null }>(`SELECT reltuples::float8 AS n FROM pg_class WHERE oid = to_regclass($1)`, [t]))[0]?.n
      const rough = estimate && rowsRead > 0 && estimate > rowsRead ? roughly((total(done) * estimate) / rowsRead) : undefined
      // Rounded, an estimate may fall below what was counted: then it says nothing more.
      const scaled = rough !== undefined && rough > total(done) ? rough : undefined
      const missing = 'its table is missing'
      const figures: StoreFigure[] = [
        {
          label: 'Events remembered as done',
          value: scaled === undefined ? countedFigure(done) : `${countedFigure(done)} (about ${scaled.toLocaleString('en-US')})`,
          note: 'records not yet past their retention',
        },
        {
          label: 'Claims in flight',
          value: countFigure(inFlight, done.whole),
          note: 'leases held now',
        },
        {
          label: 'Emails with an order mark',
          value: marks ? countedFigure(marks) : null,
          note: marks === undefined ? missing : 'ordering: true',
        },
        {
          label: 'Facts (email, type, created_at)',
          value: facts ? countedFigure(facts) : null,
          note: facts === undefined ? missing : undefined,
        },
        {
          label: 'Inbox entries handled and remembered',
          value: inboxDone ? countedFigure(inboxDone) : null,
          note: inboxDone === undefined ? missing : undefined,
        },
        { label: 'Tables and indexes', value: bytes(sizes[0]?.bytes ?? 0), note: `${t} and its tables` },
      ]
      const partly = [done, marks, facts, inboxDone].some((c) => c !== undefined && !c.whole)
      const notes = partly ? [partialCountNote(budgetMs)] : []
      if (scaled !== undefined && estimate !== undefined && estimate !== null) {
        notes.push(
          `"About": the share of records remembered as done among the ${rowsRead.toLocaleString('en-US')} rows read, times PostgreSQL's estimate of ${t} (${Math.round(estimate).toLocaleString('en-US')} rows in pg_class.reltuples, as of its last ANALYZE or VACUUM).`,
        )
      }
      return {
        figures,
        recordedByHour: [...done.counts].sort(([a], [b]) => a - b).map(([hour, n]) => ({ hour, count: n })),
        notes,
      }
    },
    async record(key) {
      const row = (
        await rows<{ done: boolean; held: boolean; live: boolean; attempt: number; expires_ms: number }>(
          `SELECT done, token IS NOT NULL AS held, expires_at > clock_timestamp() AS live, attempt, ${ms('expires_at')} AS expires_ms FROM ${t} WHERE key = $1`,
          [key],
        )
      )[0]
      if (row === undefined || (row.done && !row.live)) return { state: 'absent', expiresAt: null, attempt: null }
      if (row.done) return { state: 'done', expiresAt: row.expires_ms, attempt: null }
      const live = row.held && row.live
      return { state: live ? 'in_flight' : 'released', expiresAt: live ? row.expires_ms : null, attempt: row.attempt }
    },
    async email(orderKey, _now, limit) {
      const [mark, facts, entries] = await Promise.all([
        orMissing(
          rows<{ created_at_ms: number; event_id: string; type: string; expires_ms: number }>(
            `SELECT created_at_ms::float8 AS created_at_ms, event_id, type, ${ms('expires_at')} AS expires_ms FROM ${t}_order WHERE key = $1 AND expires_at > now()`,
            [orderKey],
          ),
        ),
        orMissing(
          rows<{ key: string; handled: number; reconciled: number; expires_ms: number }>(
            `SELECT key, handled, reconciled, ${ms('expires_at')} AS expires_ms FROM ${t}_order_fact WHERE key > $1 AND key < $2 AND expires_at > now()`,
            [`${orderKey}|`, `${orderKey}}`],
          ),
        ),
        orMissing(
          rows<EntryRow>(
            `SELECT ${SUMMARY} FROM ${inbox} WHERE order_key = $1 AND NOT (state = 'done' AND expires_at <= now()) ORDER BY created_at_ms, key LIMIT $2`,
            [orderKey, limit],
          ),
        ),
      ])
      const notes: string[] = []
      if (mark === undefined)
        notes.push(
          `The order tables (${t}_order, ${t}_order_fact) are missing: the receiver never ran with ordering: true here, so nothing is kept per email.`,
        )
      if (entries === undefined) notes.push(`The inbox table ${inbox} is missing.`)
      else if (entries.length === limit) notes.push(`Only the first ${limit} inbox entries of this email are shown.`)
      const m = mark?.[0]
      return {
        mark:
          mark === undefined
            ? undefined
            : m
              ? { eventId: m.event_id, type: m.type, createdAtMs: m.created_at_ms, expiresAt: m.expires_ms }
              : null,
        facts: facts?.flatMap((row) => factOf({ ...row, expiresAt: row.expires_ms }, orderKey)),
        entries: entries?.map(summaryOf),
        notes,
      }
    },
    async entries(query: EntryQuery): Promise<EntryPage> {
      const time = TIME[query.state]
      const cursor = query.cursor === undefined ? null : /^(\d{1,18}):([\s\S]+)$/.exec(query.cursor)
      const text = `SELECT ${SUMMARY}, (extract(epoch FROM ${time}) * 1000000)::bigint::text AS cursor_us FROM ${inbox}
        WHERE ${IN_STATE[query.state]} AND ($1::text IS NULL OR type = $1) AND ($2::float8 IS NULL OR ${time} <= ${atMs('$2')})
          AND ($3::bigint IS NULL OR (${time}, key) < (timestamptz 'epoch' + $3::bigint * interval '1 microsecond', $4::text))
        ORDER BY ${time} DESC, key DESC LIMIT $5`
      const found = await rows<EntryRow>(text, [
        query.type ?? null,
        query.before ?? null,
        cursor?.[1] ?? null,
        cursor?.[2] ?? null,
        query.limit + 1,
      ])
      const more = found.length > query.limit
      const page = more ? found.slice(0, query.limit) : found
      const last = page[page.length - 1]
      return { entries: page.map(summaryOf), next: more && last ? `${last.cursor_us}:${last.key}` : undefined }
    },
    async countDead(filter) {
      const found = await rows<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${inbox} WHERE state = 'dead' AND ($1::text IS NULL OR type = $1) AND ($2::float8 IS NULL OR ended_at <= ${atMs('$2')})`,
        [filter.type ?? null, filter.before ?? null],
      )
      return { count: found[0]?.n ?? 0, exact: true }
    },
  }
}

/** `host:port/db` of the store's redacted target, for the console (no user name, no password). */
export function locationOf(target: string): string {
  try {
    const url = new URL(target.replace(/^PostgreSQL at /, ''))
    return `${url.host}${url.pathname}`
  } catch {
    return target
  }
}
