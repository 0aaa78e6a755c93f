/**
 * `PostgresDedupStore`: durable dedup shared by every instance of an app, in one PostgreSQL
 * table, through `pg` (an optional peer dependency, loaded only by this module). `claim` is one
 * statement on the database's clock: a read of the key, then, only when no live row holds it,
 * `INSERT … ON CONFLICT … DO UPDATE … WHERE <expired or released> RETURNING`;
 * `complete` and `release` are fenced by token; `claim` commits with `synchronous_commit = off`
 * (a lease is not an acknowledgement: a crash of the database can lose it, and the retry runs the
 * handler again) and `complete` with `synchronous_commit = on`, whatever the session says, so an
 * event costs one WAL flush, and no 2xx leaves before its record is flushed; expired rows are purged off the hot path (purge.ts). Ordering
 * capability: marks, order-key locks and facts live in the order tables (order.ts), read and
 * taken by the claim statement and advanced and freed by the complete statement. Inbox: entries
 * in `<table>_inbox` (inbox.ts), forgotten by the same purge once done and past their retention.
 */
// By package name, not '../errors.js': this subpath is bundled on its own, and a bundled copy of the
// class would fail `error instanceof DedupStoreError` for users, who import it from the main entry.
import { DedupStoreError } from '@email-webhooks/core'
import { registerConsoleSource } from '../../console/registry.js'
import { callDurationProblem, durationProblem } from '../durations.js'
import { scrub } from '../redact.js'
import type { Claim, ClaimOptions, ClaimOrder, ClaimResult, CompleteOptions, DedupKeyState, DedupStore, ExtendOptions } from '../types.js'
import { answerLost, gaveBackLine, UnansweredClaims } from '../unanswered.js'
import { locationOf, postgresConsoleSource } from './console.js'
import {
  connectWaitMs,
  Lane,
  onConnection,
  type PostgresPoolClient,
  type StatementDeadlines,
  serverStatementTimeoutMs,
} from './deadline.js'
import { classify, PACKAGE } from './errors.js'
import { PostgresInbox } from './inbox.js'
import { connect, newWorkLimit, type PostgresDedupStoreOptions, type PostgresPool } from './options.js'
import { factOfRow, markOfRow, OrderTables, orderParams, type PostgresOrderSql } from './order.js'
import { PurgeSchedule, purgeAll } from './purge.js'
import { type DedupSql, POSTGRES_SCHEMA_VERSION, postgresStatements, upgradeTablesSql } from './schema.js'
import { readPostgresStamp, refuseNewerPostgresSchema } from './schema-stamp.js'
import { StatementLimit } from './statement-limit.js'

export type { PostgresDedupStoreOptions, PostgresPool } from './options.js'
export { DEFAULT_POSTGRES_TABLE, postgresDedupTableSql } from './schema.js'

const CLAIM_ATTEMPTS = 3

/**
 * The server's answers that a named prepared statement cannot be used on this connection: it does
 * not exist (PgBouncer before 1.21 in transaction mode sends each statement to any server
 * connection), exists already, or its cached plan no longer fits the table (a migration).
 * The statement did not run: it is sent again, unnamed.
 */
function preparedUnusable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return code === '26000' || code === '42P05' || (code === '0A000' && /cached plan must not change result type/.test(String(message)))
}

/** A statement's name: `ew_` and two 32-bit FNV-1a hashes of its text (the same text, the same name, on every store of a pool). */
function statementName(text: string): string {
  let a = 0x811c9dc5
  let b = 0x2166136b
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x01000197)
  }
  return `ew_${(a >>> 0).toString(16).padStart(8, '0')}${(b >>> 0).toString(16).padStart(8, '0')}`
}

/** A claim's row: `attempt` when it acquired, else `done` and `left_ms` of the live row that holds the key (all null after a lost race). */
type ClaimRow = { attempt: number | null; done: boolean | null; left_ms: number | null }
/** An ordered claim's row adds the order key's lock (held by another claim, or taken now), the mark and the fact's counts. */
type MarkRow = ClaimRow & {
  lock_left_ms: number | null
  locked: number
  created_at_ms: number | null
  event_id: string | null
  type: string | null
  handled: number | null
  reconciled: number | null
}

/** `#query`'s flag for new work (claims, purges), which leaves some of the pool's connections to the records of handled events. */
const NEW_WORK = true

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
  /** The server-side statement limit of the own pool (statement-limit.ts). */
  readonly #limit: StatementLimit
  readonly #target: string
  readonly #secret: string | undefined
  readonly #createTable: boolean
  readonly #table: string
  readonly #sql: DedupSql
  readonly #orderSql: PostgresOrderSql
  readonly #tables: OrderTables
  readonly #purges = new PurgeSchedule()
  /** The console's last read, which the next one waits for (#consoleRead). */
  #consoleReads: Promise<unknown> = Promise.resolve()
  /** Named prepared statements in use (off when asked, or once the server refused one). */
  #prepared: boolean
  /** Statement names by text, made once each. */
  readonly #names = new Map<string, string>()
  readonly #warn: (message: string) => void
  /** Claims that got no answer, given back once the server answers (unanswered.ts). */
  readonly #unanswered: UnansweredClaims
  /** The wait for a free connection (half queryTimeoutMs), and for a statement's answer from when it is sent (queryTimeoutMs). */
  readonly #deadlines: StatementDeadlines
  /** New work's share of the pool (claims, purges): the rest is kept for the records of handled events. */
  readonly #newWork: Lane | undefined
  /** The store's inbox (entries in `<table>_inbox`, shared by every instance on the database). */
  readonly inbox: PostgresInbox
  #ready: Promise<void> | undefined
  #closed = false

  constructor(options: PostgresDedupStoreOptions) {
    const {
      pool,
      ownsPool,
      target,
      secret,
      table,
      createTable,
      prepared,
      warn,
      queryTimeoutMs,
      maxConnections,
      dropStatementTimeout,
      ownLimitAsked,
    } = connect(options)
    this.#pool = pool
    this.#limit = new StatementLimit({
      drop: dropStatementTimeout,
      ms: serverStatementTimeoutMs(queryTimeoutMs),
      ownAsked: ownLimitAsked,
      target,
      warn,
      query: (text) => this.#query(text),
    })
    this.#deadlines = { connectMs: connectWaitMs(queryTimeoutMs), queryMs: queryTimeoutMs }
    const limit = newWorkLimit(maxConnections)
    this.#newWork = limit === undefined ? undefined : new Lane(limit)
    this.#prepared = prepared
    this.#warn = warn
    this.#unanswered = new UnansweredClaims(
      (claim) => this.release(claim),
      (claim) => this.#warn(gaveBackLine(PACKAGE, 'PostgresDedupStore', claim.key)),
    )
    this.#ownsPool = ownsPool
    this.#target = target
    this.#secret = secret
    this.#createTable = createTable
    this.#table = table
    const { sql, order } = postgresStatements(table)
    this.#sql = sql
    this.#orderSql = order
    this.#tables = new OrderTables(table, (text, values) => this.#query(text, values), PACKAGE)
    this.inbox = new PostgresInbox({
      table,
      createTable,
      query: (text, values) => this.#query(text, values),
      read: (text, values) => this.#consoleRead(text, values),
      prepare: () => this.#prepare(),
      warn: (line) => this.#warn(line),
    })
    // The operator's console reads the tables through its own statements (console.ts).
    registerConsoleSource(this, () =>
      postgresConsoleSource({
        table,
        location: locationOf(target),
        query: (text, values) => this.#consoleRead(text, values),
        prepare: () => this.#prepare(),
      }),
    )
  }

  /**
   * The operator's reads (the console's, and the inbox's stats, list and get) go one statement at a
   * time, as new work: they hold at most one of the pool's connections, never one of those kept for
   * the records of handled events (a console page's statements used to go out together, six
   * connections of ten for as long as the overview counted).
   */
  #consoleRead<Row>(text: string, values?: unknown[]): Promise<{ rows: Row[]; rowCount: number | null }> {
    const read = this.#consoleReads.then(() => this.#query<Row>(text, values, NEW_WORK))
    this.#consoleReads = read.catch(() => {})
    return read
  }

  /**
   * Ordering capability: true until the store finds its mark tables missing or unusable (then
   * false, with `orderingIssue` saying why), and true again once they are there: the store looks
   * again at most once a second while ordered claims come.
   */
  get ordering(): boolean {
    return this.#tables.usable !== false
  }

  /** Why the store keeps no order marks right now, or undefined. */
  get orderingIssue(): string | undefined {
    return this.#tables.usable === false ? this.#tables.issue : undefined
  }

  async claim(key: string, opts: ClaimOptions): Promise<ClaimResult> {
    this.#checkDurations(opts, true)
    await this.#prepare()
    this.#purges.claimed(() => this.#purge(true))
    if (opts.order && this.#tables.usable === false) await this.#tables.recheck()
    const order = this.#tables.usable === true ? opts.order : undefined
    // A claim of this store's that got no answer may hold the event (or its email): given back, then claimed again.
    return this.#unanswered.claim(key, order?.key, () => this.#claimRounds(key, opts, order))
  }

  /** The claim's statements (`claim` checked the options and opened the tables). */
  async #claimRounds(key: string, opts: ClaimOptions, order: ClaimOptions['order']): Promise<ClaimResult> {
    for (let round = 0; round < CLAIM_ATTEMPTS; round++) {
      const token = crypto.randomUUID()
      // Sent and not answered: the server may have taken it (unanswered.ts).
      const decided = await this.#unanswered.send(
        { key, token, orderKey: order?.key },
        opts.leaseMs,
        () => this.#claimRound(key, token, opts, order),
        mayHaveRun,
      )
      if (decided !== undefined) return decided
    }
    return { status: 'in_flight', retryAfterMs: 1 }
  }

  /** One round of a claim with `token`: its answer, or undefined to go another round. */
  async #claimRound(key: string, token: string, opts: ClaimOptions, order: ClaimOptions['order']): Promise<ClaimResult | undefined> {
    const won = order
      ? await this.#query<MarkRow>(
          this.#orderSql.claim,
          [key, token, opts.leaseMs, order.key, order.fact === undefined ? null : `${order.key}|${order.fact}`],
          NEW_WORK,
        )
      : await this.#query<MarkRow>(this.#sql.claim, [key, token, opts.leaseMs], NEW_WORK)
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
      await this.#query(this.#orderSql.unlock, [order.key, token], NEW_WORK)
      return undefined
    }
    // Free when read, taken by another claim before the insert: see who holds it now.
    const held = (await this.#query<{ done: boolean; left_ms: number }>(this.#sql.inspect, [key], NEW_WORK)).rows[0]
    // Released or purged between the two statements, or the lease ended just now: claim again.
    if (!held || held.left_ms <= 0) return undefined
    if (held.done) return { status: 'duplicate' }
    return { status: 'in_flight', retryAfterMs: held.left_ms }
  }

  async complete(claim: Claim, opts: CompleteOptions): Promise<boolean> {
    this.#checkDurations(opts, false)
    await this.#prepare()
    const params = [claim.key, claim.token, opts.retentionMs]
    if (this.#tables.usable !== true || !opts.order) return (await this.#query(this.#sql.complete, params)).rowCount === 1
    const completed = await this.#query<{ n: number }>(this.#orderSql.complete, [...params, ...orderParams(opts.order, opts.factChange)])
    return completed.rows[0]?.n === 1
  }

  /**
   * Whether `claim` itself recorded its key (the done row keeps the claim's attempt number), so
   * that a complete whose answer was lost is told apart from a lease another claim took over, long
   * after the lease (while the record lasts: a key claimed afresh after it starts at attempt 1).
   */
  async completedBy(claim: Claim): Promise<boolean> {
    await this.#prepare()
    return (await this.#query(this.#sql.completedBy, [claim.key, claim.attempt])).rowCount === 1
  }

  async release(claim: Claim): Promise<boolean> {
    await this.#prepare()
    if (claim.orderKey === undefined) return (await this.#query(this.#sql.release, [claim.key, claim.token])).rowCount === 1
    const released = await this.#query<{ n: number }>(this.#orderSql.release, [claim.key, claim.token, claim.orderKey])
    return released.rows[0]?.n === 1
  }

  /** Renews the claim's lease (and the order key it holds) from now on the database's clock, while its token holds it live. */
  async extend(claim: Claim, opts: ExtendOptions): Promise<boolean> {
    const problem = durationProblem('leaseMs', opts?.leaseMs)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} PostgresDedupStore: ${problem}`)
    await this.#prepare()
    if (claim.orderKey === undefined || this.#tables.usable !== true) {
      return (await this.#query(this.#sql.extend, [claim.key, claim.token, opts.leaseMs])).rowCount === 1
    }
    const extended = await this.#query<{ n: number }>(this.#orderSql.extend, [claim.key, claim.token, opts.leaseMs, claim.orderKey])
    return extended.rows[0]?.n === 1
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
   * ago, done inbox entries past their retention), 1,000 at a time, until a batch comes back short (at most 100 batches a call);
   * returns how many went. The store runs it by itself in the background while claims arrive.
   */
  async purgeExpired(): Promise<number> {
    return this.#purge(false)
  }

  /** The purge; `paced` in the background (purge.ts: a pause after each full batch). */
  async #purge(paced: boolean): Promise<number> {
    await this.#prepare()
    const steps = [
      this.#sql.purge,
      this.#sql.purgeLapsed,
      ...(this.#tables.usable === true ? this.#orderSql.purge : []),
      ...this.inbox.purgeSteps(),
    ]
    return purgeAll(
      steps,
      async (step) => (await this.#query(step, undefined, NEW_WORK)).rowCount ?? 0,
      () => this.#closed,
      paced,
    )
  }

  /** Waits for a running purge, then ends the pool if the store created it (a given pool stays open). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    this.#unanswered.close()
    await this.#purges.idle()
    if (this.#ownsPool) await this.#pool.end()
  }

  #checkDurations(opts: Partial<ClaimOptions>, withLease: boolean): void {
    const problem = callDurationProblem(opts, withLease)
    if (problem) throw new DedupStoreError('invalid_options', `${PACKAGE} PostgresDedupStore: ${problem}`)
  }

  #prepare(): Promise<void> {
    if (this.#closed) return Promise.reject(new DedupStoreError('closed', `${PACKAGE} this PostgresDedupStore was closed.`))
    this.#ready ??= this.#open().catch((error: unknown) => {
      // Try again on the next call: the server may come up later.
      this.#ready = undefined
      throw error
    })
    return this.#ready
  }

  /**
   * Opens the tables: refuses a schema stamped newer than this build's (before any other
   * statement), upgrades and stamps older or unstamped ones when the store may create its tables
   * (one idempotent transaction; a role that may not is warned once and goes on with the layout it
   * found), then finds the order tables.
   */
  async #open(): Promise<void> {
    const found = await readPostgresStamp((text, values) => this.#query(text, values), this.#table)
    refuseNewerPostgresSchema(found, this.#table, this.#target)
    if (found === 'unreadable') {
      // Someone else owns the tables and granted this role less: it cannot tell their version, nor upgrade them.
      this.#warn(
        `${PACKAGE} PostgresDedupStore: this role may not read ${this.#table}_schema, so the store cannot check that the tables' schema version is one it knows (a newer release's tables would be used as they are). Grant it SELECT on ${this.#table}_schema.`,
      )
    } else if (this.#createTable && found?.version !== POSTGRES_SCHEMA_VERSION) {
      try {
        // An inbox table not there yet is made with the index of its dead entries (it is empty);
        // one that is there gets it by size, from the inbox (inbox.ts).
        const absent = await this.#query<{ absent: boolean }>('SELECT to_regclass($1) IS NULL AS absent', [`${this.#table}_inbox`])
        await this.#query(upgradeTablesSql(this.#table, absent.rows[0]?.absent === true))
      } catch (error) {
        const code = error instanceof DedupStoreError ? error.code : undefined
        if (code === 'connection_failed' || code === 'auth_failed' || code === 'timeout') throw error
        this.#warn(
          `${PACKAGE} PostgresDedupStore: the tables of ${this.#table} could not be brought to schema version ${POSTGRES_SCHEMA_VERSION} (${error instanceof Error ? error.message : String(error)}); the store goes on with the layout it found. Run postgresDedupTableSql() as the tables' owner to upgrade and stamp them.`,
        )
      }
      // A newer release may have upgraded them meanwhile (it held the same lock).
      refuseNewerPostgresSchema(
        await readPostgresStamp((text, values) => this.#query(text, values), this.#table),
        this.#table,
        this.#target,
      )
    }
    await this.#tables.ensure(this.#createTable, this.#sql.createTable)
    await this.#limit.checkAtOpen()
  }

  /**
   * Runs one statement on a connection of the pool's (deadline.ts): the connection must come within
   * half `queryTimeoutMs`, the answer within `queryTimeoutMs` of sending, or the call fails and a
   * connection it hung on is destroyed. `newWork` (claims, purges) goes through the lane that
   * leaves connections to the records of handled events. A statement with parameters (the store's own, fixed texts)
   * goes as a named prepared statement while those are on: parsed and planned once per connection.
   */
  async #query<Row>(text: string, values?: unknown[], newWork = false): Promise<{ rows: Row[]; rowCount: number | null }> {
    try {
      const pool = this.#pool
      const connect = pool.connect
      // A pool without connect() (not a pg.Pool) cannot be cut off here: the receiver's own deadline still races it.
      const result =
        typeof connect === 'function'
          ? await onConnection(
              this.#limit.sending ? () => this.#limit.open(() => connect.call(pool)) : () => connect.call(pool),
              this.#deadlines,
              (client) => this.#send(client, text, values),
              newWork ? this.#newWork : undefined,
            )
          : await this.#send(pool, text, values)
      return result as { rows: Row[]; rowCount: number | null }
    } catch (error) {
      throw this.#wrap(error)
    }
  }

  /** Sends one statement on `target` (a connection, or a pool without connect()), named while prepared statements are on. */
  async #send(target: Pick<PostgresPoolClient, 'query'>, text: string, values: unknown[] | undefined): Promise<unknown> {
    if (this.#prepared && values !== undefined) {
      try {
        return await target.query({ name: this.#nameOf(text), text, values })
      } catch (error) {
        if (!preparedUnusable(error)) throw error
        if (this.#prepared) {
          this.#prepared = false
          this.#warn(
            `${PACKAGE} PostgresDedupStore: the server refused a prepared statement it was given (${(error as { code?: unknown }).code}), as PgBouncer before 1.21 in transaction pooling mode does; this store sends its statements unnamed from now on (each parsed and planned per call). Pass preparedStatements: false to skip the first try, or upgrade PgBouncer to 1.21 with max_prepared_statements set.`,
          )
        }
      }
    }
    return await target.query(text, values)
  }

  #nameOf(text: string): string {
    let name = this.#names.get(text)
    if (name === undefined) {
      name = statementName(text)
      this.#names.set(text, name)
    }
    return name
  }

  /** Whether statements go as named prepared statements now (false when asked, or since the server refused one). */
  get preparedStatements(): boolean {
    return this.#prepared
  }

  #wrap(error: unknown): DedupStoreError {
    const { code, message } = classify(error)
    const text = scrub(`${PACKAGE} ${message.replace('{target}', this.#target)}`, this.#secret)
    return new DedupStoreError(code, text, { cause: error })
  }
}

/**
 * Whether a failed statement may have run on the server all the same: its answer was lost (past
 * its deadline, a connection dropped with it on it). Not when it was never sent (no connection in
 * time, a refused connection) or the server canceled it (57014: rolled back).
 */
function mayHaveRun(error: unknown): boolean {
  if (!answerLost(error)) return false
  const cause = (error as { cause?: unknown }).cause as { name?: unknown; step?: unknown; code?: unknown } | undefined
  if (cause?.name === 'QueryTimeoutError') return cause.step === 'query'
  return cause?.code !== '57014' && cause?.code !== 'ECONNREFUSED'
}
