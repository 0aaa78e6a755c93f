/**
 * The inbox of `SqliteDedupStore` (`store.inbox`): entries in `<table>_inbox`, beside the dedup
 * tables in the same file. Enqueues, takes, finishes, failures, defers and renewals are written in
 * the store's group-commit transaction, beside its claims and completes (each its own savepoint:
 * a failed one undoes only itself), so the writes of one turn of the event loop commit once and
 * the pages they share (the indexes' newest leaves) are written once. An enqueue resolves after the
 * next WAL sync (the one the store's completes wait for): durable before the 2xx; a duplicate waits
 * for the same sync, as the entry it found may not be on disk yet. The other writes have no sync
 * of their own: a lost one returns the entry to running-then-lapsed, and the worker's dedup claim
 * then finds the event done (its complete was synced). A failed write's error, and the store's
 * refusal (closed, a failed sync), come from the batch (the store checks it before committing).
 * A lapsed lease holds nothing: reads show its entry pending, and its token no longer finishes,
 * fails or defers it. Indexes: due pending entries by time, entries of an order key by position,
 * done entries by when they are forgotten.
 */
import type { InboxEntry, InboxItem, InboxLease, InboxQueue, InboxState, InboxStats } from '../inbox.js'
import { commandError } from './errors.js'
import type { Database } from './types.js'

/**
 * The SQL that creates the inbox table of `table` and its first indexes (the columns and index
 * added later come with `upgradeInbox`, which also adds them to a table made before them).
 * `ready` marks what an ordered take may have now: a pending entry without an order key, and of
 * each order key only its head (the oldest unfinished entry) while none of its key runs; every
 * change of an order key's entries moves its head, so an ordered take reads one index range
 * instead of walking every entry blocked behind its email's head.
 */
export function inboxTableSql(table: string): string {
  const t = `${table}_inbox`
  return `CREATE TABLE IF NOT EXISTS ${t} (
    key TEXT PRIMARY KEY NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL, timestamp INTEGER NOT NULL,
    order_key TEXT, created_at_ms INTEGER, state TEXT NOT NULL, attempts INTEGER NOT NULL,
    enqueued_at INTEGER NOT NULL, next_at INTEGER NOT NULL, token TEXT, until INTEGER NOT NULL,
    last_error TEXT, ended_at INTEGER
  );
  CREATE INDEX IF NOT EXISTS ${t}_due ON ${t} (state, next_at);
  CREATE INDEX IF NOT EXISTS ${t}_order ON ${t} (order_key, created_at_ms, key) WHERE order_key IS NOT NULL;
  CREATE INDEX IF NOT EXISTS ${t}_done ON ${t} (until) WHERE state = 'done';`
}

/** Columns added to the inbox table after 0.1.0, with their definitions. */
const ADDED_COLUMNS: ReadonlyArray<[string, string]> = [
  ['ready', 'INTEGER NOT NULL DEFAULT 0'],
  ['failed_at', 'INTEGER'],
  ['retried_at', 'INTEGER'],
  ['retried_attempts', 'INTEGER NOT NULL DEFAULT 0'],
]

/**
 * Brings an inbox table up to date, in the transaction that creates the tables: adds the columns
 * it lacks, marks what is ready when `ready` is new (once, over every pending entry), and creates
 * the index of ready entries.
 */
export function upgradeInbox(db: Database, table: string): void {
  const t = `${table}_inbox`
  const columns = new Set(db.prepare(`SELECT name FROM pragma_table_info('${t}')`).pluck().all() as string[])
  const missing = ADDED_COLUMNS.filter(([name]) => !columns.has(name))
  for (const [name, definition] of missing) db.exec(`ALTER TABLE ${t} ADD COLUMN ${name} ${definition}`)
  if (missing.some(([name]) => name === 'ready')) {
    db.exec(`UPDATE ${t} SET ready = 1 WHERE state = 'pending' AND (order_key IS NULL OR (
      key = (SELECT o.key FROM ${t} o WHERE o.order_key = ${t}.order_key AND o.state IN ('pending', 'running') ORDER BY o.created_at_ms, o.key LIMIT 1)
      AND NOT EXISTS (SELECT 1 FROM ${t} r WHERE r.order_key = ${t}.order_key AND r.state = 'running')))`)
  }
  db.exec(`CREATE INDEX IF NOT EXISTS ${t}_ready ON ${t} (next_at) WHERE state = 'pending' AND ready = 1`)
}

type Row = {
  key: string
  type: string
  payload: string
  timestamp: number
  order_key: string | null
  created_at_ms: number | null
  state: InboxState
  attempts: number
  enqueued_at: number
  next_at: number
  last_error: string | null
  ended_at: number | null
  failed_at: number | null
  retried_at: number | null
  retried_attempts: number
}

const COLUMNS =
  'key, type, payload, timestamp, order_key, created_at_ms, state, attempts, enqueued_at, next_at, last_error, ended_at, failed_at, retried_at, retried_attempts'
/** A running entry whose lease lapsed (at :now) reads as pending, due since its lease ended; a take makes it so. */
const LAPSED = `(state = 'running' AND until <= :now)`
const SHOWN_STATE = `CASE WHEN ${LAPSED} THEN 'pending' ELSE state END`
const VIEW = `key, type, payload, timestamp, order_key, created_at_ms, ${SHOWN_STATE} AS state, attempts, enqueued_at,
  CASE WHEN ${LAPSED} THEN until ELSE next_at END AS next_at, last_error, ended_at, failed_at, retried_at, retried_attempts`
/** A pending entry without an order key is ready at once; one with an order key when `refresh` makes it its key's head. */
const READY_ALONE = '(order_key IS NULL)'
/** The lease's token holds the entry: running with it, the lease not lapsed. */
const HELD = `key = :key AND token = :token AND state = 'running' AND until > :now`

function itemOf(row: Row): InboxItem {
  const item: InboxItem = { key: row.key, type: row.type, payload: row.payload, timestamp: row.timestamp }
  if (row.order_key !== null) item.orderKey = row.order_key
  if (row.created_at_ms !== null) item.createdAtMs = row.created_at_ms
  return item
}

function entryOf(row: Row): InboxEntry {
  return {
    ...itemOf(row),
    state: row.state,
    attempts: row.attempts,
    enqueuedAt: row.enqueued_at,
    nextAttemptAt: row.next_at,
    lastError: row.last_error,
    endedAt: row.ended_at,
    failedAt: row.failed_at,
    retriedAt: row.retried_at,
    attemptsBeforeRetry: row.retried_attempts,
  }
}

function prepare(db: Database, table: string) {
  const t = `${table}_inbox`
  return {
    // A done entry past its retention is forgotten: its key may be queued again.
    enqueue: db.prepare(
      `INSERT INTO ${t} (key, type, payload, timestamp, order_key, created_at_ms, state, attempts, enqueued_at, next_at, until, ready)
       VALUES (:key, :type, :payload, :timestamp, :orderKey, :createdAtMs, 'pending', 0, :now, :now, :until, :orderKey IS NULL)
       ON CONFLICT (key) DO UPDATE SET type = excluded.type, payload = excluded.payload, timestamp = excluded.timestamp,
         order_key = excluded.order_key, created_at_ms = excluded.created_at_ms, state = 'pending', attempts = 0,
         enqueued_at = excluded.enqueued_at, next_at = excluded.next_at, token = NULL, until = excluded.until,
         last_error = NULL, ended_at = NULL, failed_at = NULL, retried_at = NULL, retried_attempts = 0, ready = excluded.ready
       WHERE ${t}.state = 'done' AND ${t}.until <= :now`,
    ),
    lapsedOrderKeys: db
      .prepare(`SELECT DISTINCT order_key FROM ${t} WHERE state = 'running' AND until <= ? AND order_key IS NOT NULL`)
      .pluck(),
    lapse: db.prepare(
      `UPDATE ${t} SET state = 'pending', token = NULL, next_at = ?, ready = ${READY_ALONE} WHERE state = 'running' AND until <= ?`,
    ),
    due: db.prepare(`SELECT key FROM ${t} WHERE state = 'pending' AND next_at <= ? ORDER BY next_at LIMIT 1`).pluck(),
    // INDEXED BY: without statistics SQLite picks the (state, next_at) index, and walks every due entry blocked behind its email's head.
    dueReady: db
      .prepare(`SELECT key FROM ${t} INDEXED BY ${t}_ready WHERE state = 'pending' AND ready = 1 AND next_at <= ? ORDER BY next_at LIMIT 1`)
      .pluck(),
    take: db.prepare(
      `UPDATE ${t} SET state = 'running', attempts = attempts + 1, token = ?, until = ?, ready = 0 WHERE key = ? RETURNING ${COLUMNS}`,
    ),
    orderKeyOf: db.prepare(`SELECT order_key FROM ${t} WHERE key = ?`).pluck(),
    // An order key's head: its oldest unfinished entry, ready while it is pending and none of the key runs.
    unready: db.prepare(`UPDATE ${t} SET ready = 0 WHERE order_key = ? AND ready = 1`),
    readyHead: db.prepare(
      `UPDATE ${t} SET ready = 1 WHERE state = 'pending' AND key = (
         SELECT o.key FROM ${t} o WHERE o.order_key = :ok AND o.state IN ('pending', 'running') ORDER BY o.created_at_ms, o.key LIMIT 1)
       AND NOT EXISTS (SELECT 1 FROM ${t} r WHERE r.order_key = :ok AND r.state = 'running')`,
    ),
    finish: db.prepare(`UPDATE ${t} SET state = 'done', token = NULL, ended_at = :now, until = :until, ready = 0 WHERE ${HELD}`),
    fail: db.prepare(
      `UPDATE ${t} SET state = :state, token = NULL, last_error = :error, failed_at = :now, next_at = :next, ended_at = :ended,
       ready = :state = 'pending' AND ${READY_ALONE} WHERE ${HELD}`,
    ),
    defer: db.prepare(
      `UPDATE ${t} SET state = 'pending', token = NULL, attempts = attempts - 1, next_at = :next, ready = ${READY_ALONE} WHERE ${HELD}`,
    ),
    renew: db.prepare(`UPDATE ${t} SET until = :until WHERE ${HELD}`),
    list: db.prepare(
      `SELECT ${VIEW} FROM ${t} WHERE (:state IS NULL OR ${SHOWN_STATE} = :state) AND NOT (state = 'done' AND until <= :now)
       ORDER BY enqueued_at LIMIT :limit`,
    ),
    get: db.prepare(`SELECT ${VIEW} FROM ${t} WHERE key = :key AND NOT (state = 'done' AND until <= :now)`),
    deadOrderKeys: db.prepare(`SELECT DISTINCT order_key FROM ${t} WHERE state = 'dead' AND order_key IS NOT NULL`).pluck(),
    // A retried entry keeps what it went through: the attempts it had, and when it was retried.
    retryAll: db.prepare(
      `UPDATE ${t} SET state = 'pending', retried_attempts = retried_attempts + attempts, attempts = 0, retried_at = :now,
       next_at = :now, ended_at = NULL, ready = ${READY_ALONE} WHERE state = 'dead'`,
    ),
    retryOne: db.prepare(
      `UPDATE ${t} SET state = 'pending', retried_attempts = retried_attempts + attempts, attempts = 0, retried_at = :now,
       next_at = :now, ended_at = NULL, ready = ${READY_ALONE} WHERE state = 'dead' AND key = :key`,
    ),
    purge: db.prepare(`DELETE FROM ${t} WHERE state = 'dead' AND ended_at <= ?`),
    // INDEXED BY: without statistics SQLite picks the (state, next_at) index and reads every done
    // entry (all of the retention's) to find the expired ones, at every purge step.
    forget: db.prepare(
      `DELETE FROM ${t} WHERE key IN (SELECT key FROM ${t} INDEXED BY ${t}_done WHERE state = 'done' AND until <= ? LIMIT 1000)`,
    ),
    stats: db.prepare(statsSql(t)),
  }
}

/** Counts by state as reads show them (a lapsed lease is pending), and the oldest waiting entry. */
function statsSql(t: string): string {
  return `SELECT ${SHOWN_STATE} AS state, count(*) AS n, min(enqueued_at) AS oldest FROM ${t}
       WHERE state IN ('pending', 'running', 'dead') GROUP BY 1`
}

/** What the inbox needs of its store. */
export interface SqliteInboxHost {
  db: Database
  table: string
  path: string
  now: () => number
  /** Why the store refuses work now (closed, a failed sync), or undefined. */
  refused: () => Error | undefined
  /** Runs `then` once what is committed now is on disk. */
  afterDurable: (then: (error?: Error) => void) => void
  /**
   * Runs a read-only statement (`all` with `args`) off the event loop: on the store's reading thread
   * (reader.ts), for `stats`. Without it the counts read on `db`.
   */
  readOffLoop?: ((sql: string, args: unknown[]) => Promise<unknown[]>) | undefined
  /**
   * Runs `write` in the store's next group-commit transaction (with the claims, completes and other
   * inbox writes of the same turn: one commit, pages written once), as a savepoint of its own;
   * resolves with its result once committed, and with `durable` once that commit is on disk (after
   * the next WAL sync); rejects with the store's error.
   */
  batch: (write: () => unknown, durable?: boolean) => Promise<unknown>
}

/** The inbox of a SQLite store. */
export class SqliteInbox implements InboxQueue {
  readonly #host: SqliteInboxHost
  readonly #sql: ReturnType<typeof prepare>
  readonly #statsSql: string
  readonly #take: (token: string, leaseMs: number, ordered: boolean, now: number) => Row | undefined
  /** Runs `change` (a write to `key`'s entry) and, in the same transaction, moves its order key's head; `change`'s result. */
  readonly #changing: <T>(key: string, change: () => T) => T

  constructor(host: SqliteInboxHost) {
    this.#host = host
    this.#sql = prepare(host.db, host.table)
    this.#statsSql = statsSql(`${host.table}_inbox`)
    const sql = this.#sql
    const refresh = (orderKey: string): void => {
      sql.unready.run(orderKey)
      sql.readyHead.run({ ok: orderKey })
    }
    this.#take = host.db.transaction((token: string, leaseMs: number, ordered: boolean, now: number): Row | undefined => {
      // A running entry whose lease ended is pending again (its attempt stays counted), and may be its email's head.
      const lapsed = sql.lapsedOrderKeys.all(now) as string[]
      sql.lapse.run(now, now)
      for (const orderKey of lapsed) refresh(orderKey)
      const key = (ordered ? sql.dueReady : sql.due).get(now) as string | undefined
      if (key === undefined) return undefined
      const row = sql.take.all(token, now + leaseMs, key)[0] as Row | undefined
      // One of its email's entries runs now: none of them is ready until it ends.
      if (row?.order_key) refresh(row.order_key)
      return row
    }).immediate
    const changing = host.db.transaction(<T>(key: string, change: () => T): T => {
      const orderKey = sql.orderKeyOf.get(key) as string | null | undefined
      const result = change()
      if (orderKey) refresh(orderKey)
      return result
    })
    this.#changing = <T>(key: string, change: () => T): T => changing.immediate(key, change) as T
    this.#retry = host.db.transaction((keys: string[] | 'dead', now: number): number => {
      if (keys === 'dead') {
        const orderKeys = sql.deadOrderKeys.all() as string[]
        const count = sql.retryAll.run({ now }).changes
        for (const orderKey of orderKeys) refresh(orderKey)
        return count
      }
      let count = 0
      for (const key of keys) {
        const orderKey = sql.orderKeyOf.get(key) as string | null | undefined
        const changed = sql.retryOne.run({ now, key }).changes
        count += changed
        if (changed > 0 && orderKey) refresh(orderKey)
      }
      return count
    }).immediate
    this.#enqueue = host.db.transaction((params: Record<string, unknown>): boolean => {
      const queued = sql.enqueue.run(params).changes === 1
      if (queued && typeof params.orderKey === 'string') refresh(params.orderKey)
      return queued
    }).immediate
  }

  readonly #retry: (keys: string[] | 'dead', now: number) => number
  readonly #enqueue: (params: Record<string, unknown>) => boolean

  async enqueue(item: InboxItem, opts: { retentionMs: number }): Promise<'queued' | 'duplicate'> {
    // Durable: answered after the WAL sync that follows the commit. A duplicate too waits for it:
    // the entry it found may have been committed by a concurrent enqueue whose sync has not run
    // yet, and its 2xx must not leave before that entry is on disk.
    const queued = await this.#batched(() => {
      const now = this.#host.now()
      const { key, type, payload, timestamp } = item
      return this.#enqueue({
        key,
        type,
        payload,
        timestamp,
        orderKey: item.orderKey ?? null,
        createdAtMs: item.createdAtMs ?? null,
        now,
        until: now + opts.retentionMs,
      })
    }, true)
    return queued ? 'queued' : 'duplicate'
  }

  take(opts: { leaseMs: number; ordered: boolean }): Promise<InboxLease | undefined> {
    return this.#batched(() => {
      const token = crypto.randomUUID()
      const row = this.#take(token, opts.leaseMs, opts.ordered, this.#host.now())
      return row ? { key: row.key, token, attempt: row.attempts, item: itemOf(row) } : undefined
    })
  }

  finish(lease: InboxLease, opts: { retentionMs: number }): Promise<boolean> {
    return this.#batched(() => {
      const now = this.#host.now()
      const params = { now, until: now + opts.retentionMs, key: lease.key, token: lease.token }
      return this.#changing(lease.key, () => this.#sql.finish.run(params).changes === 1)
    })
  }

  fail(lease: InboxLease, opts: { error: string; retryInMs: number | null }): Promise<boolean> {
    return this.#batched(() => {
      const now = this.#host.now()
      const dead = opts.retryInMs === null
      const params = {
        state: dead ? 'dead' : 'pending',
        error: opts.error,
        next: now + (opts.retryInMs ?? 0),
        ended: dead ? now : null,
        now,
        key: lease.key,
        token: lease.token,
      }
      return this.#changing(lease.key, () => this.#sql.fail.run(params).changes === 1)
    })
  }

  defer(lease: InboxLease, opts: { retryInMs: number }): Promise<boolean> {
    return this.#batched(() => {
      const now = this.#host.now()
      const params = { next: now + opts.retryInMs, now, key: lease.key, token: lease.token }
      return this.#changing(lease.key, () => this.#sql.defer.run(params).changes === 1)
    })
  }

  renew(lease: InboxLease, opts: { leaseMs: number }): Promise<boolean> {
    return this.#batched(() => {
      const now = this.#host.now()
      return this.#sql.renew.run({ until: now + opts.leaseMs, now, key: lease.key, token: lease.token }).changes === 1
    })
  }

  list(opts: { state?: InboxState; limit?: number } = {}): Promise<InboxEntry[]> {
    return this.#run(() => {
      const state = opts.state ?? null
      return (this.#sql.list.all({ state, now: this.#host.now(), limit: opts.limit ?? 100 }) as Row[]).map(entryOf)
    })
  }

  get(key: string): Promise<InboxEntry | undefined> {
    return this.#run(() => {
      const row = this.#sql.get.get({ key, now: this.#host.now() }) as Row | undefined
      return row ? entryOf(row) : undefined
    })
  }

  retry(keys: string[] | 'dead'): Promise<number> {
    return this.#run(() => this.#retry(keys, this.#host.now()))
  }

  purge(opts: { olderThanMs: number }): Promise<number> {
    return this.#run(() => this.#sql.purge.run(this.#host.now() - opts.olderThanMs).changes)
  }

  /**
   * Counts by state, on the store's reading thread when it has one (reader.ts): with a backlog the
   * counts read every waiting entry, and metrics ask for them while the receiver answers.
   */
  async stats(): Promise<InboxStats> {
    let rows: unknown[]
    try {
      this.#check()
      const args = [{ now: this.#host.now() }]
      rows = this.#host.readOffLoop ? await this.#host.readOffLoop(this.#statsSql, args) : this.#sql.stats.all(...args)
    } catch (error) {
      throw commandError(this.#host.path, error)
    }
    const stats: InboxStats = { pending: 0, running: 0, dead: 0, oldestPendingAt: null }
    for (const row of rows as { state: 'pending' | 'running' | 'dead'; n: number; oldest: number }[]) {
      stats[row.state] = row.n
      if (row.state === 'pending') stats.oldestPendingAt = row.oldest
    }
    return stats
  }

  /** Deletes done entries past their retention, a batch at a time (the store calls it as it purges). */
  forgetDone(now: number): number {
    return this.#sql.forget.run(now).changes
  }

  /** The store's clock, or the error that stops all work. */
  #check(): number {
    const refused = this.#host.refused()
    if (refused) throw refused
    return this.#host.now()
  }

  /** Runs `write` in the store's next batch (see SqliteInboxHost.batch), which refuses it when the store does. */
  #batched<T>(write: () => T, durable = false): Promise<T> {
    return this.#host.batch(write, durable) as Promise<T>
  }

  #run<T>(step: () => T): Promise<T> {
    try {
      this.#check()
      return Promise.resolve(step())
    } catch (error) {
      return Promise.reject(commandError(this.#host.path, error))
    }
  }
}
