/**
 * The inbox of `PostgresDedupStore` (`store.inbox`): entries in `<table>_inbox` (inbox-sql.ts),
 * shared by every instance on the database. An enqueue is one statement committed with
 * `synchronous_commit = on`: flushed to the WAL before it resolves. A take is one statement that
 * locks the due entry `FOR UPDATE SKIP LOCKED` (the ordered rule in the same statement), so
 * concurrent workers in any number of processes never hold one entry; finish, fail, defer and renew are
 * updates fenced by the lease's random token while the lease is live. Those commit without
 * waiting for a WAL flush (as the SQLite inbox's need no sync): one lost in a server crash leaves
 * the entry to be taken again, and the dedup claim finds its event done. Done entries are deleted
 * by the store's purge once their retention ended. The table comes with the store's others
 * (`postgresDedupTableSql()`); when the dedup table predates it, the inbox creates it on first use,
 * unless `createTable: false` or the role may not: then inbox calls reject until it is there.
 */
// By package name, not '../errors.js': this subpath is bundled on its own (see index.ts).
import { DedupStoreError } from '@email-webhooks/core'
import { inBatches } from '../chunked.js'
import { inboxDurationProblem } from '../durations.js'
import type { InboxEntry, InboxItem, InboxLease, InboxQueue, InboxState, InboxStats } from '../inbox.js'
import { PACKAGE } from './errors.js'
import {
  ADDED_INBOX_COLUMNS,
  type PostgresInboxSql,
  postgresInboxDeadIndexSql,
  postgresInboxSql,
  postgresInboxTableSql,
  postgresInboxUpgradeSql,
  RETRY_KEYS,
} from './inbox-sql.js'
import { anyMissing, lockedDdl } from './locked-ddl.js'

type Query = <Row>(text: string, values?: unknown[]) => Promise<{ rows: Row[]; rowCount: number | null }>

/** What the inbox needs of its store. */
export interface PostgresInboxHost {
  table: string
  /** May the inbox create its table when it is missing (the store's `createTable`). */
  createTable: boolean
  /** Runs one statement; rejects with the store's `DedupStoreError`. */
  query: Query
  /**
   * Runs one statement of an operator's read (`stats`, `list`, `get`: the console, the CLI, the
   * OpenTelemetry gauges): one at a time, never on a connection kept for the records of handled
   * events. Without it, `query`.
   */
  read?: Query
  /** Resolves once the store's own tables are there; rejects when the store is closed. */
  prepare: () => Promise<void>
  /** The store's `warn` (default: `console.warn`). */
  warn?: (line: string) => void
}

/**
 * An inbox table made by an earlier version without the dead entries' index gets it when it is
 * under this size (a build of that many bytes blocks enqueues for some 0.1 s); a larger one is the
 * operator's to index, without blocking (the store says how).
 */
const DEAD_INDEX_BUILD_MAX_BYTES = 64 * 1024 * 1024
/** How long the store's own build of that index waits for the table's lock (behind a long transaction) before it gives up. */
const DEAD_INDEX_LOCK_WAIT_MS = 200
/** While that index is missing or invalid, `stats()` looks for it again at most this often. */
const DEAD_INDEX_RECHECK_MS = 60_000

type ItemRow = {
  key: string
  type: string
  payload: string
  timestamp: number
  order_key: string | null
  created_at_ms: number | null
}
type EntryRow = ItemRow & {
  state: InboxState
  attempts: number
  enqueued_at: number
  next_attempt_at: number
  last_error: string | null
  ended_at: number | null
  failed_at: number | null
  retried_at: number | null
  retried_attempts: number
}

function itemOf(row: ItemRow): InboxItem {
  const item: InboxItem = { key: row.key, type: row.type, payload: row.payload, timestamp: row.timestamp }
  if (row.order_key !== null) item.orderKey = row.order_key
  if (row.created_at_ms !== null) item.createdAtMs = row.created_at_ms
  return item
}

function entryOf(row: EntryRow): InboxEntry {
  return {
    ...itemOf(row),
    state: row.state,
    attempts: row.attempts,
    enqueuedAt: row.enqueued_at,
    nextAttemptAt: row.next_attempt_at,
    lastError: row.last_error,
    endedAt: row.ended_at,
    failedAt: row.failed_at,
    retriedAt: row.retried_at,
    attemptsBeforeRetry: row.retried_attempts,
  }
}

/** How long a missing inbox table is taken as missing before the inbox looks again. */
const RECHECK_MS = 1_000

/** `#query`'s flag for an operator's read. */
const READ = true

/** The inbox of a PostgreSQL store. */
export class PostgresInbox implements InboxQueue {
  readonly #host: PostgresInboxHost
  readonly #sql: PostgresInboxSql
  #ready: Promise<void> | undefined
  /** The table was found (or made): the store's purge forgets done entries. */
  #present = false
  /** Whether `<table>_inbox_dead` was found valid (or built), and when that was known. */
  #deadIndex: { valid: boolean; at: number } | undefined
  /** Why the table could not be found or made, and when that was seen. */
  #missing: { error: DedupStoreError; at: number } | undefined

  constructor(host: PostgresInboxHost) {
    this.#host = host
    this.#sql = postgresInboxSql(host.table)
  }

  async enqueue(item: InboxItem, opts: { retentionMs: number }): Promise<'queued' | 'duplicate'> {
    this.#check(opts)
    const params = [item.key, item.type, item.payload, item.timestamp, item.orderKey ?? null, item.createdAtMs ?? null]
    return (await this.#query(this.#sql.enqueue, params)).rowCount === 1 ? 'queued' : 'duplicate'
  }

  async take(opts: { leaseMs: number; ordered: boolean }): Promise<InboxLease | undefined> {
    this.#check({ leaseMs: opts.leaseMs })
    const token = crypto.randomUUID()
    const taken = await this.#query<ItemRow & { attempts: number }>(opts.ordered ? this.#sql.takeOrdered : this.#sql.take, [
      token,
      opts.leaseMs,
    ])
    const row = taken.rows[0]
    return row ? { key: row.key, token, attempt: row.attempts, item: itemOf(row) } : undefined
  }

  async finish(lease: InboxLease, opts: { retentionMs: number }): Promise<boolean> {
    this.#check(opts)
    return (await this.#query(this.#sql.finish, [lease.key, lease.token, opts.retentionMs])).rowCount === 1
  }

  async fail(lease: InboxLease, opts: { error: string; retryInMs: number | null }): Promise<boolean> {
    this.#check({ retryInMs: opts.retryInMs })
    const params = [lease.key, lease.token, String(opts.error)]
    if (opts.retryInMs === null) return (await this.#query(this.#sql.failDead, params)).rowCount === 1
    return (await this.#query<{ n: number }>(this.#sql.failRetry, [...params, opts.retryInMs])).rows[0]?.n === 1
  }

  async defer(lease: InboxLease, opts: { retryInMs: number }): Promise<boolean> {
    this.#check(opts)
    return (await this.#query<{ n: number }>(this.#sql.defer, [lease.key, lease.token, opts.retryInMs])).rows[0]?.n === 1
  }

  async renew(lease: InboxLease, opts: { leaseMs: number }): Promise<boolean> {
    this.#check(opts)
    return (await this.#query(this.#sql.renew, [lease.key, lease.token, opts.leaseMs])).rowCount === 1
  }

  async list(opts: { state?: InboxState; limit?: number } = {}): Promise<InboxEntry[]> {
    const limit = opts.limit ?? 100
    if (!Number.isSafeInteger(limit) || limit < 1) throw this.#invalid(`limit must be a whole number ≥ 1, got ${String(limit)}.`)
    return (await this.#query<EntryRow>(this.#sql.list, [opts.state ?? null, limit], READ)).rows.map(entryOf)
  }

  async get(key: string): Promise<InboxEntry | undefined> {
    const row = (await this.#query<EntryRow>(this.#sql.get, [key], READ)).rows[0]
    return row ? entryOf(row) : undefined
  }

  async retry(keys: string[] | 'dead'): Promise<number> {
    if (keys === 'dead') return this.#inChunks(this.#sql.retryAll, [], 'retried')
    let retried = 0
    for (let at = 0; at < keys.length; at += RETRY_KEYS) {
      retried += (await this.#query(this.#sql.retry, [keys.slice(at, at + RETRY_KEYS)])).rowCount ?? 0
    }
    return retried
  }

  async purge(opts: { olderThanMs: number }): Promise<number> {
    this.#check(opts)
    return this.#inChunks(this.#sql.purge, [opts.olderThanMs], 'purged')
  }

  /**
   * Runs a chunked statement (the first chunk's, then the next ones') over the whole table INBOX_CHUNK keys at a time, in key order (each statement well
   * inside the server's statement_timeout, each chunk committed on its own); returns the rows changed.
   */
  async #inChunks([first, next]: [string, string], values: unknown[], what: 'retried' | 'purged'): Promise<number> {
    let last: string | null = null
    return inBatches(what, async () => {
      const row: { last: string | null; n: number } | undefined = (
        await this.#query<{ last: string | null; n: number }>(last === null ? first : next, [last, ...values])
      ).rows[0]
      last = row?.last ?? null
      return { changed: row?.n ?? 0, more: last !== null }
    })
  }

  async stats(): Promise<InboxStats> {
    await this.#tableReady()
    const text = (await this.#countsThroughIndexes()) ? this.#sql.stats : this.#sql.statsOnePass
    const row = (await this.#query<InboxStats & { oldest: number | null }>(text, undefined, READ)).rows[0]
    return { pending: row?.pending ?? 0, running: row?.running ?? 0, dead: row?.dead ?? 0, oldestPendingAt: row?.oldest ?? null }
  }

  /** The store's purge statements for the inbox: done entries past their retention, once the table is known to be there. */
  purgeSteps(): string[] {
    return this.#present ? [this.#sql.forget] : []
  }

  #check(opts: Parameters<typeof inboxDurationProblem>[0]): void {
    const problem = inboxDurationProblem(opts)
    if (problem) throw this.#invalid(problem)
  }

  #invalid(problem: string): DedupStoreError {
    return new DedupStoreError('invalid_options', `${PACKAGE} PostgresDedupStore inbox: ${problem}`)
  }

  /** Resolves once the store's tables and the inbox table are there (found or made). */
  async #tableReady(): Promise<void> {
    await this.#host.prepare()
    this.#ready ??= this.#ensure().catch((error: unknown) => {
      this.#ready = undefined
      throw error
    })
    await this.#ready
  }

  /** Runs `text` once the table is there; `read`: an operator's read (PostgresInboxHost.read). */
  async #query<Row>(text: string, values?: unknown[], read = false): Promise<{ rows: Row[]; rowCount: number | null }> {
    await this.#tableReady()
    return ((read && this.#host.read) || this.#host.query)<Row>(text, values)
  }

  /**
   * Finds the inbox table, or creates it (and its indexes) when it is missing and that is allowed,
   * under the store's advisory lock. Missing and not made: rejects with `misconfigured`, and gives
   * the same answer for a second before it looks again (each call would otherwise try).
   */
  async #ensure(): Promise<void> {
    const missing = this.#missing
    if (missing && performance.now() - missing.at < RECHECK_MS) throw missing.error
    const { table, createTable, query } = this.#host
    const found = await query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [`${table}_inbox`])
    if (found.rows[0]?.present === true) await this.#upgrade()
    else {
      const why = createTable ? await this.#create() : 'is missing and createTable is false'
      if (why !== undefined) {
        const error = new DedupStoreError(
          'misconfigured',
          `${PACKAGE} the inbox table ${table}_inbox ${why}: create it as the table's owner (its SQL is in postgresDedupTableSql()) or grant this role CREATE on the schema; the store finds it within a second, without a restart.`,
        )
        this.#missing = { error, at: performance.now() }
        throw error
      }
    }
    this.#missing = undefined
    this.#present = true
  }

  /** Brings a table made by an earlier version up to this one: its columns, then its indexes. */
  async #upgrade(): Promise<void> {
    await this.#addColumns()
    await this.#addDeadIndex()
  }

  /**
   * Adds to a table made by an earlier version the columns it lacks (under the store's advisory
   * lock); when the role may not, rejects with `misconfigured` and the SQL to run.
   */
  async #addColumns(): Promise<void> {
    const { table, query } = this.#host
    const found = await query<{ name: string }>(
      'SELECT column_name AS name FROM information_schema.columns WHERE table_name = $1 AND table_schema = ANY(current_schemas(false))',
      [`${table}_inbox`],
    )
    const have = new Set(found.rows.map((row) => row.name))
    const missing = ADDED_INBOX_COLUMNS.filter(([name]) => !have.has(name))
    if (missing.length === 0) return
    const upgrade = postgresInboxUpgradeSql(table, missing)
    try {
      // Only the columns still missing under the lock (an ADD COLUMN IF NOT EXISTS locks the table even when the column is there).
      const names = missing.map(([name]) => `'${name}'`).join(', ')
      const have = `(SELECT count(*) FROM pg_attribute WHERE attrelid = to_regclass('${table}_inbox') AND attname IN (${names}) AND NOT attisdropped)`
      await query(lockedDdl(table, `${have} < ${missing.length}`, upgrade))
    } catch (error) {
      if (
        error instanceof DedupStoreError &&
        (error.code === 'connection_failed' || error.code === 'auth_failed' || error.code === 'timeout')
      )
        throw error
      throw new DedupStoreError(
        'misconfigured',
        `${PACKAGE} the inbox table ${table}_inbox was made by an earlier version and lacks ${missing.map(([name]) => name).join(', ')}, and this role could not add them (${error instanceof Error ? error.message : String(error)}): run as the table's owner: ${upgrade}`,
      )
    }
  }

  /**
   * Gives the inbox table the index of its dead entries (`stats()` reads the whole table without
   * it; tables made before it have none): built here, under the store's advisory lock and a short
   * wait for the table's lock, when the table is small and the store may create its tables;
   * otherwise the store warns once with the SQL that builds it without blocking writes. An invalid
   * index (a CONCURRENTLY build that failed) is said, not dropped: it may be a build still running.
   * Never fails the inbox: without the index `stats()` reads the table in one pass, as before.
   */
  async #addDeadIndex(): Promise<void> {
    const { table, query, createTable } = this.#host
    const warn = this.#host.warn ?? console.warn
    const t = `${table}_inbox`
    const found = await query<{ valid: boolean | null; bytes: number }>(
      `SELECT (${this.#sql.deadIndex}) AS valid, pg_relation_size($1::regclass)::float8 AS bytes`,
      [t],
    )
    const row = found.rows[0]
    if (!row) return
    this.#deadIndex = { valid: row.valid === true, at: performance.now() }
    if (row.valid === true) return
    const said = `${PACKAGE} PostgresDedupStore inbox:`
    const build = postgresInboxDeadIndexSql(table, true)
    const byHand = `run, as the table's owner, in a session without a statement limit (SET statement_timeout = 0 first: the build reads the whole table; it does not block writes): ${build}`
    const slow = 'so stats() (the console, the CLI, the OpenTelemetry gauges) reads every row of it'
    if (row.valid === false) {
      return warn(
        `${said} the index of the inbox's dead entries, ${t}_dead, is not valid (a CONCURRENTLY build that failed or was cancelled, or one still running), ${slow}. Once no build runs, drop it with DROP INDEX CONCURRENTLY IF EXISTS ${t}_dead, then ${byHand}`,
      )
    }
    const why = `the inbox table ${t} has no index of its dead entries (${t}_dead; tables made before it have none), ${slow}`
    if (!createTable) return warn(`${said} ${why}; createTable is false, so ${byHand}`)
    if (row.bytes > DEAD_INDEX_BUILD_MAX_BYTES) {
      const mib = Math.round(row.bytes / 1024 / 1024)
      return warn(
        `${said} ${why}. At ${mib} MiB the store does not build it itself (a build blocks enqueues while it reads the table); ${byHand}`,
      )
    }
    try {
      // The table's lock is waited for briefly: a build queued behind a long transaction would hold every enqueue behind it.
      await query(
        lockedDdl(
          table,
          anyMissing([`${t}_dead`]),
          `${postgresInboxDeadIndexSql(table)};`,
          `PERFORM set_config('lock_timeout', '${DEAD_INDEX_LOCK_WAIT_MS}ms', true);`,
        ),
      )
      this.#deadIndex = { valid: true, at: performance.now() }
    } catch (error) {
      if (error instanceof DedupStoreError && (error.code === 'connection_failed' || error.code === 'auth_failed')) throw error
      const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause
      const detail = typeof cause?.message === 'string' ? cause.message : error instanceof Error ? error.message : String(error)
      const busy = (error instanceof DedupStoreError && error.code === 'timeout') || cause?.code === '55P03' || cause?.code === '57014'
      warn(
        busy
          ? `${said} ${why}. Building it now did not finish in time (the table was busy: ${detail}); the store tries again when it next starts, or ${byHand}`
          : `${said} ${why}, and this role could not build it (${detail}); ${byHand}`,
      )
    }
  }

  /** Whether `stats()` may count through the dead entries' index: known at the table's check, looked up again at most once a minute while it is not valid (an operator may build it meanwhile). */
  async #countsThroughIndexes(): Promise<boolean> {
    const known = this.#deadIndex
    if (known?.valid) return true
    if (known && performance.now() - known.at < DEAD_INDEX_RECHECK_MS) return false
    const row = (await (this.#host.read ?? this.#host.query)<{ valid: boolean }>(this.#sql.deadIndex)).rows[0]
    this.#deadIndex = { valid: row?.valid === true, at: performance.now() }
    return this.#deadIndex.valid
  }

  /** Creates the table; why it could not, or undefined. */
  async #create(): Promise<string | undefined> {
    const { table, query } = this.#host
    // No BEGIN: a multi-statement query is one implicit transaction (see OrderTables.ensure).
    const ddl = lockedDdl(table, anyMissing([`${table}_inbox`]), postgresInboxTableSql(table))
    return query(ddl).then(
      () => undefined,
      (error: unknown) => {
        // The server or the network failed, not the creation: that error says what to do.
        if (error instanceof DedupStoreError && (error.code === 'connection_failed' || error.code === 'auth_failed')) throw error
        return `is missing and could not be created (${error instanceof Error ? error.message : String(error)})`
      },
    )
  }
}
