/**
 * `D1DedupStore`: durable dedup for Workers in a Cloudflare D1 database. Each operation is one
 * `batch()`, D1's only transaction, so a claim is atomic: it takes the key when it is new,
 * released or expired, and reads who holds it otherwise, in one round trip. Always on the D1
 * binding itself, whose queries go to the primary database: never a Sessions API session
 * (`withSession()`), which may read from a replica that has not seen a claim yet. Ordering
 * capability: marks, order-key locks and facts in the same database, changed in the same batch as
 * the dedup row. Expired rows are purged by every 16th claim's batch (64 rows per table at most).
 */
import type {
  Claim,
  ClaimOptions,
  ClaimResult,
  CompleteOptions,
  DedupKeyState,
  DedupStore,
  DedupStoreError,
  ExtendOptions,
} from '@email-webhooks/core'
import { checkDurations, classifyD1, PACKAGE } from './errors.js'
import {
  claimOperation,
  completeOperation,
  extendOperation,
  lookupOperation,
  type Operation,
  type Rows,
  releaseOperation,
} from './operations.js'
import { readStampSql, refuseNewerSchema, stampStatements } from './schema.js'
import { assertTableName, createTableStatements, type DedupSql, dedupSql } from './sql.js'

/** Table used when `table` is not given. */
export const DEFAULT_D1_TABLE: string = 'email_webhook_dedup'
/** A claim purges expired rows once every this many claims. */
const PURGE_EVERY_CLAIMS = 16

/** A prepared D1 statement: the part of `D1PreparedStatement` the store uses. */
export interface D1PreparedStatementLike {
  bind(...values: unknown[]): D1PreparedStatementLike
}

/** The part of a D1 binding (`env.DB`, a `D1Database`) the store uses. */
export interface D1DatabaseLike {
  prepare(query: string): D1PreparedStatementLike
  batch(statements: D1PreparedStatementLike[]): Promise<{ results?: unknown[] }[]>
}

/** Options of {@link D1DedupStore}. */
export interface D1DedupStoreOptions {
  /**
   * Table name (its order tables get `_order`, `_order_lock`, `_order_fact`).
   * @defaultValue `email_webhook_dedup`
   */
  table?: string
  /**
   * Create the tables when missing; `false` when a D1 migration does (`cloudflareDedupTableSql()`).
   * @defaultValue `true`
   */
  createTable?: boolean
  /**
   * Clock in milliseconds since the epoch, for leases and retention.
   * @defaultValue `Date.now`
   */
  now?: () => number
}

/**
 * Dedup store in a D1 database, shared by every Worker bound to it. Its calls reject with a
 * {@link DedupStoreError}: `invalid_options` for a `leaseMs`/`retentionMs` that is not a whole
 * number of milliseconds ≥ 1, `misconfigured` when the database refuses the store's tables,
 * `command_failed` or `connection_failed` when D1 fails a batch.
 * @param db The D1 binding (`env.DB`), not a session.
 * @throws {TypeError} when `db` is not a D1 binding, is a Sessions API session, or an option is invalid.
 * @example
 * const store = new D1DedupStore(env.DB)
 */
export class D1DedupStore implements DedupStore {
  /** Ordering capability: marks, locks and facts are kept in the same batch as the dedup row. */
  readonly ordering = true as const
  readonly #db: D1DatabaseLike
  readonly #table: string
  readonly #sql: DedupSql
  readonly #createTable: boolean
  readonly #now: () => number
  #ready: Promise<void> | undefined
  #claims = 0

  constructor(db: D1DatabaseLike, options: D1DedupStoreOptions = {}) {
    if (db === null || typeof db !== 'object' || typeof db.prepare !== 'function' || typeof db.batch !== 'function') {
      throw new TypeError(`${PACKAGE} D1DedupStore needs the D1 binding (env.DB): an object with prepare() and batch().`)
    }
    if (typeof (db as { getBookmark?: unknown }).getBookmark === 'function') {
      throw new TypeError(
        `${PACKAGE} D1DedupStore was given a D1 session (withSession()): a session may read from a replica that has not seen a claim yet. Pass the D1 binding itself (env.DB), whose queries go to the primary.`,
      )
    }
    const table = options.table ?? DEFAULT_D1_TABLE
    assertTableName(table, PACKAGE)
    if (options.now !== undefined && typeof options.now !== 'function')
      throw new TypeError(`${PACKAGE} now must be a function returning ms.`)
    this.#db = db
    this.#table = table
    this.#sql = dedupSql(table)
    this.#createTable = options.createTable ?? true
    this.#now = options.now ?? Date.now
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    checkDurations(opts, true, 'D1DedupStore')
    const purge = ++this.#claims % PURGE_EVERY_CLAIMS === 0
    const order = opts.order === undefined ? undefined : { key: opts.order.key, fact: opts.order.fact }
    const now = this.#now()
    return this.#run(claimOperation(this.#sql, { key, token: crypto.randomUUID(), now, leaseMs: opts.leaseMs, order, purge }))
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    checkDurations(opts, false, 'D1DedupStore')
    return this.#run(completeOperation(this.#sql, claim, opts, this.#now()))
  }

  async release(claim: Claim): Promise<boolean> {
    return this.#run(releaseOperation(this.#sql, claim, this.#now()))
  }

  /** Renews the claim's lease (and the order key it holds) from now, while its token holds it live. */
  async extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    checkDurations({ leaseMs: opts?.leaseMs, retentionMs: 1 }, true, 'D1DedupStore')
    return this.#run(extendOperation(this.#sql, claim, opts.leaseMs, this.#now()))
  }

  /** What the table holds for `key` now (one read). */
  async lookup(key: string): Promise<DedupKeyState> {
    return this.#run(lookupOperation(this.#sql, key, this.#now()))
  }

  async #run<T>(operation: Operation<T>): Promise<T> {
    await this.#prepare()
    const db = this.#db
    try {
      const results = await db.batch(operation.statements.map(({ sql, params }) => db.prepare(sql).bind(...params)))
      return operation.read(results.map((result) => (result.results ?? []) as Rows[number]))
    } catch (error) {
      throw classifyD1(error, this.#table)
    }
  }

  #prepare(): Promise<void> {
    this.#ready ??= this.#open().catch((error: unknown) => {
      // Try again on the next call: a D1 outage may end.
      this.#ready = undefined
      throw error
    })
    return this.#ready
  }

  /** Reads the schema stamp (a newer one is refused before anything is written), then creates the tables when allowed. */
  async #open(): Promise<void> {
    const db = this.#db
    let stamp: { version?: unknown; written_by?: unknown } | undefined
    try {
      const [read] = await db.batch([db.prepare(readStampSql(this.#table))])
      stamp = (read?.results as { version?: unknown; written_by?: unknown }[] | undefined)?.[0]
    } catch (error) {
      // No stamp table yet: new tables (or made by hand without it).
      if (!/no such table/i.test(error instanceof Error ? error.message : String(error))) throw classifyD1(error, this.#table)
    }
    refuseNewerSchema(stamp, `the D1 table ${this.#table}`)
    if (!this.#createTable) return
    try {
      await db.batch([...createTableStatements(this.#table), ...stampStatements(this.#table)].map((sql) => db.prepare(sql)))
    } catch (error) {
      throw classifyD1(error, this.#table, true)
    }
  }
}
