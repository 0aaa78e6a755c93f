/**
 * `PostgresDedupStore`: durable dedup shared by every instance of an app, in one PostgreSQL
 * table, through `pg` (an optional peer dependency, loaded only by this module). `claim` is one
 * statement on the database's clock: a read of the key, then, only when no live row holds it,
 * `INSERT … ON CONFLICT … DO UPDATE … WHERE <expired or released> RETURNING`;
 * `complete` and `release` are fenced by token; `complete` commits with `synchronous_commit = on`
 * whatever the session says; expired rows are purged off the hot path, batch after batch until
 * none is left, at least once a second while claims arrive (a lease released or lapsed stays an
 * hour: it carries the attempt count). Ordering capability: marks live in
 * `<table>_order`, read by the claim statement and advanced by the complete statement.
 */
// By package name, not './errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { optionalDriver } from './driver.js'
import { callDurationProblem } from './durations.js'
import { classify } from './postgres-errors.js'
import {
  factOfRow,
  markOfRow,
  orderParams,
  type PostgresOrderSql,
  postgresOrderSql,
  postgresOrderTableSql,
  postgresOrderTables,
} from './postgres-order.js'
import { assertTableName, createTableSql, DEFAULT_POSTGRES_TABLE } from './postgres-schema.js'
import { passwordOf, redactUrl, scrub } from './redact.js'
import type { Claim, ClaimOptions, ClaimOrder, ClaimResult, CompleteOptions, DedupKeyState, DedupStore } from './types.js'

export { DEFAULT_POSTGRES_TABLE, postgresDedupTableSql } from './postgres-schema.js'

const PACKAGE = '[@email-webhooks/core/postgres]'
const DEFAULT_MAX_CONNECTIONS = 10
const CONNECT_TIMEOUT_MS = 5_000
// A background purge starts on a claim once a second has passed or 1,000 claims came since the
// last one, and deletes 1,000 expired rows at a time until a batch comes back short: expired rows
// never pile up, whatever the arrival rate. The cap only bounds one run; the next run goes on.
const PURGE_INTERVAL_MS = 1_000
const PURGE_EVERY_CLAIMS = 1_000
const PURGE_BATCH_ROWS = 1_000
const PURGE_MAX_BATCHES = 100
// A lease released or lapsed carries the attempt count the next claim continues (ctx.attempt),
// so it is kept this long. Release stamps its row with that purge time (a released row has no
// token and is claimable whatever its time says, so a clock step cannot hold it either): the
// leases released during a handler outage, which can be many, stay out of the purge's expiry
// range. A lapsed lease keeps its token, so its slow holder may still complete it, and is purged
// this long after it lapsed by a statement of its own. Each purge statement is one expires_at
// range on its index.
const LEASE_MEMORY = `interval '1 hour'`
const CLAIM_ATTEMPTS = 3
/** How often a store without its order tables looks for them again, while ordered claims come. */
const MARKS_RECHECK_MS = 1_000
/** A row holds its key until expires_at while it is done or a lease with a token (a released lease has none). */
const HOLDS = '(done OR token IS NOT NULL)'
/** The milliseconds left until the row's expires_at, on the server's clock. */
const LEFT_MS = 'ceil(extract(epoch FROM expires_at - clock_timestamp()) * 1000)::float8 AS left_ms'

/**
 * One purge batch of `table`: deletes up to PURGE_BATCH_ROWS rows with `expires_at <= bound`
 * (and `also`), locked in expiry order, skipping rows others hold. `bound` is built on now() (this
 * statement's start), never clock_timestamp(): PostgreSQL cannot use the expiry index for a
 * volatile bound and would scan the whole table each batch. ORDER BY keeps the index when the
 * table's statistics are stale.
 */
function purgeBatch(table: string, bound: string, also?: string): string {
  const where = `expires_at <= ${bound}${also ? ` AND ${also}` : ''}`
  return `DELETE FROM ${table} WHERE key IN (
  SELECT key FROM ${table} WHERE ${where} ORDER BY expires_at LIMIT ${PURGE_BATCH_ROWS} FOR UPDATE SKIP LOCKED
) AND ${where}`
}

/** A claim's row: `attempt` when it acquired, else `done` and `left_ms` of the live row that holds the key (all null after a lost race). */
type ClaimRow = { attempt: number | null; done: boolean | null; left_ms: number | null }
/** An ordered claim's row adds the order key's lock (held by another claim, or taken now) and the mark. */
type MarkRow = ClaimRow & {
  lock_left_ms: number | null
  locked: number
  created_at_ms: number | null
  event_id: string | null
  type: string | null
  handled: number | null
  reconciled: number | null
}

/** The part of a `pg` Pool the store uses; a `pg.Pool` fits. */
export interface PostgresPool {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
  end(): Promise<void>
}

/** Options of {@link PostgresDedupStore}: give `connectionString` or `pool`. */
export interface PostgresDedupStoreOptions {
  /** `postgres://user:password@host:5432/db`; the store creates (and closes) its own pool of up to 10 connections. */
  connectionString?: string
  /** An existing `pg` Pool; the store never ends it. */
  pool?: PostgresPool
  /** Table name; default `email_webhook_dedup`. */
  table?: string
  /**
   * Create the table and its index when the table is missing (default true). An existing table is
   * used as it is, so a role with only SELECT, INSERT, UPDATE and DELETE on it works. Set false if
   * you run {@link postgresDedupTableSql} yourself.
   */
  createTable?: boolean
}

interface PoolConstructor {
  new (config: {
    connectionString: string
    max: number
    connectionTimeoutMillis: number
  }): PostgresPool & {
    on(event: 'error', listener: (error: Error) => void): unknown
  }
}

const loadDriver = optionalDriver(
  'pg',
  (module) => (module as { Pool: PoolConstructor }).Pool,
  `${PACKAGE} pg could not be loaded, so the PostgreSQL dedup store is unavailable. Install it with \`npm install pg\` (version 8).`,
)

/**
 * Dedup store in a PostgreSQL table, shared by every instance that points at the same database.
 * Its calls reject with a {@link DedupStoreError} (`invalid_options` for a `leaseMs`/`retentionMs`
 * that is not a whole number of milliseconds ≥ 1; the server's failures by their own codes).
 * @throws {TypeError} when neither `connectionString` nor `pool` is given, or `table` is not a plain identifier.
 * @throws {DedupStoreError} `driver_missing` when `connectionString` is given and `pg` is not installed.
 * @example
 * const store = new PostgresDedupStore({ connectionString: process.env.DATABASE_URL })
 */
export class PostgresDedupStore implements DedupStore {
  readonly #pool: PostgresPool
  readonly #ownsPool: boolean
  readonly #target: string
  readonly #secret: string | undefined
  readonly #createTable: boolean
  readonly #table: string
  readonly #sql: {
    claim: string
    inspect: string
    lookup: string
    complete: string
    release: string
    purge: string
    purgeLapsed: string
    createTable: string
  }
  readonly #orderSql: PostgresOrderSql
  /** Whether the mark and lock tables are usable: undefined until the first call's preparation. */
  #marks: boolean | undefined
  /** Why they are not (with `#marks` false). */
  #marksIssue: string | undefined
  /** When (performance.now()) the tables were last looked for. */
  #marksCheckedAt = 0
  #ready: Promise<void> | undefined
  #purging: Promise<unknown> | undefined
  #claimsSincePurge = 0
  // The first background purge comes a second (or 1,000 claims) after the store is made, not on its first claim.
  #lastPurgeAt = performance.now()
  #closed = false

  constructor(options: PostgresDedupStoreOptions) {
    if (options === null || typeof options !== 'object') {
      throw new TypeError(`${PACKAGE} PostgresDedupStore needs { connectionString } or { pool }.`)
    }
    const { connectionString, pool } = options
    if ((connectionString === undefined) === (pool === undefined)) {
      throw new TypeError(`${PACKAGE} PostgresDedupStore needs exactly one of { connectionString } or { pool }.`)
    }
    const table = options.table ?? DEFAULT_POSTGRES_TABLE
    assertTableName(table)
    this.#table = table
    this.#createTable = options.createTable ?? true
    if (pool !== undefined) {
      if (pool === null || typeof pool !== 'object' || typeof pool.query !== 'function') {
        throw new TypeError(`${PACKAGE} pool must be a pg Pool (an object with query()).`)
      }
      this.#pool = pool
      this.#ownsPool = false
      this.#target = 'PostgreSQL (the given pool)'
    } else {
      if (typeof connectionString !== 'string' || connectionString.length === 0) {
        throw new TypeError(`${PACKAGE} connectionString must be a non-empty string such as postgres://user:password@host:5432/db.`)
      }
      const Pool = loadDriver()
      const created = new Pool({ connectionString, max: DEFAULT_MAX_CONNECTIONS, connectionTimeoutMillis: CONNECT_TIMEOUT_MS })
      // An idle connection that the server drops emits 'error' on the pool; without a listener
      // that would end the process. The next query reports the failure instead.
      created.on('error', () => {})
      this.#pool = created
      this.#ownsPool = true
      this.#target = `PostgreSQL at ${redactUrl(connectionString)}`
      this.#secret = passwordOf(connectionString)
    }
    const expiresIn = (param: string) => `clock_timestamp() + ${param}::float8 * interval '1 millisecond'`
    // The claim reads the key first and writes only when no live row holds it: a duplicate or an
    // in-flight claim is then a plain read (no row lock, no transaction id, no WAL, no commit to
    // wait for) answered in the same round trip. ON CONFLICT still decides a race for the key.
    const cur = `cur AS (
  SELECT done, ${LEFT_MS} FROM ${table} WHERE key = $1 AND expires_at > clock_timestamp() AND ${HOLDS})`
    // From `source`'s rows (the ordered claim's lock), or when no live row holds the key.
    const insert = (source?: string) => `ins AS (
  INSERT INTO ${table} AS d (key, done, token, attempt, expires_at)
  SELECT $1, false, $2, 1, ${expiresIn('$3')} ${source ? `FROM ${source}` : 'WHERE NOT EXISTS (SELECT 1 FROM cur)'}
  ON CONFLICT (key) DO UPDATE SET
    attempt = CASE WHEN d.done THEN 1 ELSE d.attempt + 1 END,
    done = false, token = excluded.token, expires_at = excluded.expires_at
  WHERE d.expires_at <= clock_timestamp() OR (NOT d.done AND d.token IS NULL)
  RETURNING attempt)`
    const releaseSet = `token = NULL, expires_at = clock_timestamp() + ${LEASE_MEMORY} WHERE key = $1 AND token = $2 AND NOT done`
    this.#sql = {
      claim: `WITH ${cur},
${insert()}
SELECT ins.attempt, cur.done, cur.left_ms FROM (SELECT 1) AS one LEFT JOIN ins ON true LEFT JOIN cur ON true`,
      // A released row (no token) holds nothing, whatever its time says: no row, so the claim runs again.
      inspect: `SELECT done, ${LEFT_MS} FROM ${table} WHERE key = $1 AND ${HOLDS}`,
      lookup: `SELECT done FROM ${table} WHERE key = $1 AND expires_at > clock_timestamp() AND ${HOLDS}`,
      // set_config(…, true) lasts for this statement's transaction and is read at its commit:
      // the completion is flushed to the WAL before the answer, even if the role or session
      // has synchronous_commit = off.
      complete: `WITH durable AS (SELECT set_config('synchronous_commit', 'on', true))
UPDATE ${table} SET done = true, token = NULL, expires_at = ${expiresIn('$3')}
FROM durable WHERE key = $1 AND token = $2 AND NOT done`,
      release: `UPDATE ${table} SET ${releaseSet}`,
      purge: purgeBatch(table, 'now()', '(done OR token IS NULL)'),
      purgeLapsed: purgeBatch(table, `now() - ${LEASE_MEMORY}`, 'NOT done AND token IS NOT NULL'),
      createTable: createTableSql(table),
    }
    this.#orderSql = postgresOrderSql({
      table,
      cur,
      insert,
      expiresIn,
      leftMs: LEFT_MS,
      releaseSet,
      purgeBatch: (name) => purgeBatch(name, 'now()'),
    })
  }

  /**
   * Ordering capability: true until the store finds its mark tables missing or unusable (then
   * false, with `orderingIssue` saying why), and true again once they are there: the store looks
   * again at most once a second while ordered claims come.
   */
  get ordering(): boolean {
    return this.#marks !== false
  }

  /** Why the store keeps no order marks right now, or undefined. */
  get orderingIssue(): string | undefined {
    return this.#marks === false ? this.#marksIssue : undefined
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    this.#checkDurations(opts, true)
    await this.#prepare()
    this.#schedulePurge()
    if (opts.order && this.#marks === false) await this.#recheckMarks()
    const order = this.#marks === true ? opts.order : undefined
    for (let round = 0; round < CLAIM_ATTEMPTS; round++) {
      const token = crypto.randomUUID()
      const won = order
        ? await this.#query<MarkRow>(this.#orderSql.claim, [
            key,
            token,
            opts.leaseMs,
            order.key,
            order.fact === undefined ? null : `${order.key}|${order.fact}`,
          ])
        : await this.#query<MarkRow>(this.#sql.claim, [key, token, opts.leaseMs])
      const row = won.rows[0] as MarkRow
      if (row.attempt !== null) {
        if (!order) return { status: 'acquired', claim: { key, token, attempt: row.attempt } }
        const found: ClaimOrder = { mark: markOfRow(row) }
        if (order.fact !== undefined) found.fact = factOfRow(row)
        return { status: 'acquired', claim: { key, token, attempt: row.attempt, orderKey: order.key }, order: found }
      }
      if (row.done !== null) return row.done ? { status: 'duplicate' } : { status: 'in_flight', retryAfterMs: row.left_ms ?? 1 }
      if (order) {
        if (row.lock_left_ms !== null) return { status: 'in_flight', retryAfterMs: Math.max(1, row.lock_left_ms), reason: 'order' }
        // The lock looked free but another claim took it first (committed after this statement's
        // snapshot): the email is held. Its time left is unknown here; the receiver asks again soon.
        if (row.locked === 0) return { status: 'in_flight', retryAfterMs: 1, reason: 'order' }
        // The lock was taken, the lease insert lost a race for the key: give the lock back, look again.
        await this.#query(this.#orderSql.unlock, [order.key, token])
        continue
      }
      // Free when read, taken by another claim before the insert: see who holds it now.
      const held = (await this.#query<{ done: boolean; left_ms: number }>(this.#sql.inspect, [key])).rows[0]
      // Released or purged between the two statements, or the lease ended just now: claim again.
      if (!held || held.left_ms <= 0) continue
      if (held.done) return { status: 'duplicate' }
      return { status: 'in_flight', retryAfterMs: held.left_ms }
    }
    return { status: 'in_flight', retryAfterMs: 1 }
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    this.#checkDurations(opts, false)
    await this.#prepare()
    const params = [claim.key, claim.token, opts.retentionMs]
    if (this.#marks !== true || !opts.order) return (await this.#query(this.#sql.complete, params)).rowCount === 1
    const completed = await this.#query<{ n: number }>(this.#orderSql.complete, [...params, ...orderParams(opts.order, opts.factChange)])
    return completed.rows[0]?.n === 1
  }

  async release(claim: Claim): Promise<boolean> {
    await this.#prepare()
    if (claim.orderKey === undefined) return (await this.#query(this.#sql.release, [claim.key, claim.token])).rowCount === 1
    const released = await this.#query<{ n: number }>(this.#orderSql.release, [claim.key, claim.token, claim.orderKey])
    return released.rows[0]?.n === 1
  }

  /** What the table holds for `key` now, on the database's clock: one read, no writes. Expired rows are `'absent'`. */
  async lookup(key: string): Promise<DedupKeyState> {
    await this.#prepare()
    const row = (await this.#query<{ done: boolean }>(this.#sql.lookup, [key])).rows[0]
    if (!row) return 'absent'
    return row.done ? 'done' : 'in_flight'
  }

  /**
   * Deletes expired rows (done records past their retention, leases released or lapsed an hour
   * ago), 1,000 at a time, until a batch comes back short (at most 100 batches a call);
   * returns how many went. The store runs it by itself in the background while claims arrive.
   */
  async purgeExpired(): Promise<number> {
    await this.#prepare()
    let total = 0
    const steps = [this.#sql.purge, this.#sql.purgeLapsed, ...(this.#marks === true ? this.#orderSql.purge : [])]
    for (const step of steps) {
      for (let batch = 0; batch < PURGE_MAX_BATCHES; batch++) {
        const deleted = (await this.#query(step)).rowCount ?? 0
        total += deleted
        if (deleted < PURGE_BATCH_ROWS || this.#closed) break
      }
    }
    return total
  }

  /** Waits for a running purge, then ends the pool if the store created it (a given pool stays open). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    await this.#purging
    if (this.#ownsPool) await this.#pool.end()
  }

  /** Starts a background purge when none runs and a second or 1,000 claims passed since the last one; never awaited by a claim. */
  #schedulePurge(): void {
    this.#claimsSincePurge++
    if (this.#purging || (this.#claimsSincePurge < PURGE_EVERY_CLAIMS && performance.now() - this.#lastPurgeAt < PURGE_INTERVAL_MS)) return
    this.#claimsSincePurge = 0
    this.#lastPurgeAt = performance.now()
    // A failed purge is tried again by a later claim.
    this.#purging = this.purgeExpired()
      .catch(() => {})
      .finally(() => {
        this.#purging = undefined
      })
  }

  #checkDurations(opts: Partial<ClaimOptions>, withLease: boolean): void {
    const problem = callDurationProblem(opts, withLease)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} PostgresDedupStore: ${problem}`)
  }

  #prepare(): Promise<void> {
    if (this.#closed) return Promise.reject(new DedupStoreError('closed', `${PACKAGE} this PostgresDedupStore was closed.`))
    this.#ready ??= this.#ensureTable().catch((error: unknown) => {
      // Try again on the next call: the server may come up later.
      this.#ready = undefined
      throw error
    })
    return this.#ready
  }

  /**
   * Creates the tables only when missing (CREATE … IF NOT EXISTS needs CREATE on the schema even
   * when they exist). Ordering needs a mark table and a lock table this role may read and write: a
   * dedup table from before them, with a role that may not create them (or `createTable: false`),
   * or tables the role has no rights on, keeps working without ordering (`orderingIssue` says why).
   */
  async #ensureTable(): Promise<void> {
    const { present, marks } = await this.#findTables()
    // The order tables exist (usable or not), or creating them is not ours to do.
    if (!this.#createTable || marks !== null) {
      return this.#setMarks(
        marks === true,
        marks === false ? 'are not writable by this role (it needs SELECT, INSERT, UPDATE and DELETE on each)' : 'are missing',
      )
    }
    if (!present) {
      await this.#query(this.#sql.createTable)
      return this.#setMarks(true)
    }
    // No BEGIN: a multi-statement query is one implicit transaction, rolled back whole on a failure
    // (an explicit block would leave the pooled connection in an aborted transaction).
    const ddl = `SELECT pg_advisory_xact_lock(hashtext('email-webhooks:${this.#table}'));\n${postgresOrderTableSql(this.#table)}`
    await this.#query(ddl).then(
      () => this.#setMarks(true),
      (error: unknown) => this.#setMarks(false, `could not be created (${error instanceof Error ? error.message : String(error)})`),
    )
  }

  /** Whether the dedup table exists, and whether both order tables do with every right (null: one is missing). */
  async #findTables(): Promise<{ present: boolean; marks: boolean | null }> {
    const rights = (param: string) => ['SELECT', 'INSERT', 'UPDATE', 'DELETE'].map((right) => `has_table_privilege(${param}, '${right}')`)
    const tables = postgresOrderTables(this.#table)
    const params = tables.map((_, i) => `$${i + 2}`)
    const found = await this.#query<{ present: boolean; marks: boolean | null }>(
      `SELECT to_regclass($1) IS NOT NULL AS present, CASE WHEN ${params.map((p) => `to_regclass(${p}) IS NULL`).join(' OR ')} THEN NULL
       ELSE ${params.flatMap(rights).join(' AND ')} END AS marks`,
      [this.#table, ...tables],
    )
    this.#marksCheckedAt = performance.now()
    const row = found.rows[0]
    return { present: row?.present === true, marks: row?.marks ?? null }
  }

  #setMarks(usable: boolean, why?: string): void {
    this.#marks = usable
    this.#marksIssue = usable
      ? undefined
      : `${PACKAGE} the order tables ${postgresOrderTables(this.#table).join(', ')} ${why}: create them as the table's owner (their SQL is in postgresDedupTableSql()) or grant this role CREATE on the schema; the store finds them within a second, without a restart.`
  }

  /** With the order tables missing, looks for them again, at most once a second. */
  async #recheckMarks(): Promise<void> {
    if (performance.now() - this.#marksCheckedAt < MARKS_RECHECK_MS) return
    const { marks } = await this.#findTables()
    if (marks === true) this.#setMarks(true)
  }

  async #query<Row>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }> {
    try {
      return (await this.#pool.query(text, values)) as { rows: Row[]; rowCount: number | null }
    } catch (error) {
      throw this.#wrap(error)
    }
  }

  #wrap(error: unknown): DedupStoreError {
    const { code, message } = classify(error)
    const text = scrub(`${PACKAGE} ${message.replace('{target}', this.#target)}`, this.#secret)
    return new DedupStoreError(code, text, { cause: error })
  }
}
