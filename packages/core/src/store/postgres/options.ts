/**
 * The options of `PostgresDedupStore`: a connection string (the store makes and ends its pool) or
 * a `pg` Pool of the app's (the store never ends it), the table, and whether it may create it;
 * checked once when the store is made.
 */
import { optionalDriver } from '../driver.js'
import { passwordOf, redactUrl } from '../redact.js'
import { type PostgresPoolClient, serverStatementTimeoutMs } from './deadline.js'
import { PACKAGE } from './errors.js'
import { assertTableName, DEFAULT_POSTGRES_TABLE } from './schema.js'

const DEFAULT_MAX_CONNECTIONS = 10
const CONNECT_TIMEOUT_MS = 5_000
/** The longest wait for one statement before its connection is destroyed (twice the receiver's default storeTimeoutMs). */
export const DEFAULT_QUERY_TIMEOUT_MS = 3_000
/** TCP keep-alive probes start after this idle time on the pool's connections: a peer gone silently is found. */
const KEEP_ALIVE_DELAY_MS = 10_000

/** The part of a `pg` Pool the store uses; a `pg.Pool` fits. */
export interface PostgresPool {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[]; rowCount: number | null }>
  /** A `pg.Pool`'s: the store checks a connection out per statement, so that one past its deadline can be destroyed. */
  connect?(): Promise<PostgresPoolClient>
  end(): Promise<void>
}

/** Options of `PostgresDedupStore`: give `connectionString` or `pool`. */
export interface PostgresDedupStoreOptions {
  /**
   * `postgres://user:password@host:5432/db`. The store opens its own pool (up to 10 connections,
   * a connect timeout of `queryTimeoutMs` and at most 5 s, TCP keep-alive after 10 s idle, and a
   * server-side `statement_timeout` a tenth under `queryTimeoutMs`) and ends it on `close()`.
   * Give this or `pool`, not both.
   */
  connectionString?: string
  /**
   * An existing `pg.Pool` instead (exactly one of the two). `close()` leaves it open; add your own
   * `pool.on('error')` listener, and give it `connectionTimeoutMillis` (the store's
   * `queryTimeoutMs` or less: 3000 by default; enough to open a connection) and `keepAlive: true`:
   * the store's `queryTimeoutMs` ends a statement and destroys its connection, and a wait for a
   * connection ends at half of it, but only the pool can end a connect that hangs or take a waiter
   * the store gave up on out of its queue. Give it `statement_timeout` too, a tenth under
   * `queryTimeoutMs` (2700 for the default), if no query of yours on it needs longer: otherwise a
   * claim that waits on a lock past `queryTimeoutMs` still commits on the server after the store
   * gave up on it, and the event's retries meet 409 until its lease ends. The store adds an 'error' listener to each connection
   * the pool opens from then on (pg emits a server's FATAL in the very read that made a new
   * connection ready before anyone can listen, which would end the process): the statement on it
   * fails instead. Claims use at most all but a quarter of its `max` (at most two kept) at once.
   */
  pool?: PostgresPool
  /**
   * Table name (a letter or `_`, then letters, digits, `_`; at most 51 characters, so its index
   * name fits PostgreSQL's 63).
   * @defaultValue `email_webhook_dedup`
   */
  table?: string
  /**
   * On first use, look the table up (`to_regclass`) and create it and its index only if it is
   * missing, so a role with just `SELECT`, `INSERT`, `UPDATE` and `DELETE` on an existing table
   * works. With `false`, run `postgresDedupTableSql(table)` in your migrations; a missing table is
   * a `misconfigured` error.
   * @defaultValue `true`
   */
  createTable?: boolean
  /**
   * Send the store's statements as named prepared statements (`ew_…`), parsed and planned once per
   * connection instead of on every call. `false` behind PgBouncer older than 1.21 in transaction
   * pooling mode; without it, the first time the server answers that one of them does not exist (or
   * exists already), the store sends that statement again unnamed, stays unnamed and says so once
   * through `warn` (`store.preparedStatements` says which). A `pool` that is not a `pg.Pool` gets
   * unnamed statements.
   * @defaultValue `true` for the pool the store makes and for a `pg.Pool`; `false` for any other `pool`
   */
  preparedStatements?: boolean
  /**
   * Where the store's one-time warnings go: prepared statements turned off by the server's answer,
   * and (the pool the store makes) a `statement_timeout` that a pooler refused or drops, with the
   * role-level setting that keeps the limit.
   * @defaultValue `console.warn`
   */
  warn?: (message: string) => void
  /**
   * The longest wait for one statement's answer from when it is sent, whole ms; a free connection
   * must come within half of it before that, or the statement is not sent at all. Past either the
   * call fails with `DedupStoreError` code `timeout`, and a connection it hung on is destroyed,
   * never handed to the next call: a connection that stopped answering (a failover that left
   * pooled sockets open, a dropped NAT entry, a proxy that stalls) costs one call, not every call
   * queued behind it. `pg`'s own `query_timeout` does not do this: it leaves the dead connection in
   * the pool. Works on a `pg.Pool` of yours too (the store checks connections out with
   * `pool.connect()`). The store's own pool gives a new connection `queryTimeoutMs` (at most 5 s)
   * to open: on a link where opening one takes longer (TLS and SCRAM far away), raise it. It also
   * has PostgreSQL end each statement a tenth before (`statement_timeout`), so that a statement
   * stuck behind a lock is rolled back instead of committing after the store gave up on it (a
   * `statement_timeout` in `connectionString` is kept instead). Behind a pooler that refuses that
   * startup parameter (PgBouncer, unless it is in its `ignore_startup_parameters`) the store
   * connects without it; where one drops it (PgBouncer with it in `ignore_startup_parameters`) the
   * limit is not in effect: either way the store says so once through `warn`, with the role-level
   * setting that keeps the limit.
   * @defaultValue `3000`
   */
  queryTimeoutMs?: number
}

interface PoolConstructor {
  new (config: {
    connectionString: string
    max: number
    connectionTimeoutMillis: number
    keepAlive: boolean
    keepAliveInitialDelayMillis: number
    statement_timeout?: number
  }): PostgresPool & {
    on(event: 'error', listener: (error: Error) => void): unknown
  }
}

/** Pools whose new connections get the store's 'error' listener already. */
const covered = new WeakSet<object>()

/** A pool's 'connect' event: each new connection, before anyone uses it. */
interface ConnectEvents {
  on(event: 'connect', listener: (client: { on(event: 'error', listener: (error: Error) => void): unknown }) => void): unknown
}

/**
 * A new connection is handed out on its ReadyForQuery, when pg-pool takes its idle 'error' listener
 * off; the store's own listener (deadline.ts) comes a microtask later. An ErrorResponse parsed from
 * the same read (FATAL 57P01 from a backend that had just started when `pg_ctl stop -m fast` came)
 * would be an 'error' with no listener and end the process (node-postgres #2762). This listener stays
 * for the connection's life; the error still fails the statement, and the pool still drops the
 * connection.
 */
function keepNewConnectionErrors(pool: ConnectEvents): void {
  // Once per pool, however many stores share it.
  if (covered.has(pool)) return
  covered.add(pool)
  pool.on('connect', (client) => client.on('error', () => {}))
}

const loadDriver = optionalDriver(
  'pg',
  (module) => (module as { Pool: PoolConstructor }).Pool,
  `${PACKAGE} pg could not be loaded, so the PostgreSQL dedup store is unavailable. Install it with \`npm install pg\` (version 8).`,
)

/** The store's pool and what it says about the server, from the checked options. */
export interface PostgresConnection {
  pool: PostgresPool
  /** The store made the pool: it ends it on close. */
  ownsPool: boolean
  /** The server in messages, with its password replaced. */
  target: string
  /** The password, scrubbed from every message. */
  secret: string | undefined
  table: string
  createTable: boolean
  /** Named prepared statements (see PostgresDedupStoreOptions.preparedStatements). */
  prepared: boolean
  warn: (message: string) => void
  queryTimeoutMs: number
  /** How many connections the pool opens at most, when known (a `pg.Pool` says). */
  maxConnections: number | undefined
  /**
   * Takes the server-side `statement_timeout` out of what the store's own pool sends when it opens
   * a connection, for the connections it opens from then on (pg-pool reads its options at each);
   * undefined when the store sends none (a pool it did not make, or a connection string that sets
   * its own).
   */
  dropStatementTimeout: (() => void) | undefined
  /** Whether a connection string of the own pool (or PGOPTIONS) asks for a limit of its own, not 0: the store checks it is in effect. */
  ownLimitAsked: boolean
}

/**
 * The connections new work (claims, purges) may hold or wait for at once: all but a quarter of the
 * pool's, at most two, kept for the records of handled events (8 of 10; 3 of 4; a pool of fewer
 * than 4 keeps none: undefined, no limit); no limit when the pool's size is unknown.
 */
export function newWorkLimit(maxConnections: number | undefined): number | undefined {
  if (maxConnections === undefined) return undefined
  const kept = Math.min(2, Math.floor(maxConnections / 4))
  return kept === 0 ? undefined : maxConnections - kept
}

/** A `pg.Pool`'s `max` (pg's default 10 when unset); undefined for another pool. */
function maxOf(pool: object): number | undefined {
  if (!isPgPool(pool)) return undefined
  const max = (pool as { options: { max?: unknown } }).options.max
  return typeof max === 'number' && Number.isSafeInteger(max) && max > 0 ? max : DEFAULT_MAX_CONNECTIONS
}

/** Whether `pool` is a `pg.Pool` (its query also takes `{ name, text, values }`). */
function isPgPool(pool: object): boolean {
  const candidate = pool as { connect?: unknown; options?: unknown; totalCount?: unknown }
  return typeof candidate.connect === 'function' && typeof candidate.options === 'object' && typeof candidate.totalCount === 'number'
}

/**
 * Checks the options and makes the pool (from a connection string) or takes the given one.
 * @throws {TypeError} when neither or both of `connectionString` and `pool` are given, or `table` is not a plain identifier.
 * @throws {DedupStoreError} `driver_missing` when `connectionString` is given and `pg` is not installed.
 */
export function connect(options: PostgresDedupStoreOptions): PostgresConnection {
  if (options === null || typeof options !== 'object') {
    throw new TypeError(`${PACKAGE} PostgresDedupStore needs { connectionString } or { pool }.`)
  }
  const { connectionString, pool } = options
  if ((connectionString === undefined) === (pool === undefined)) {
    throw new TypeError(`${PACKAGE} PostgresDedupStore needs exactly one of { connectionString } or { pool }.`)
  }
  const table = options.table ?? DEFAULT_POSTGRES_TABLE
  assertTableName(table)
  const createTable = options.createTable ?? true
  const prepared = options.preparedStatements
  if (prepared !== undefined && typeof prepared !== 'boolean') {
    throw new TypeError(`${PACKAGE} preparedStatements must be true or false.`)
  }
  if (options.warn !== undefined && typeof options.warn !== 'function') throw new TypeError(`${PACKAGE} warn must be a function.`)
  const warn = options.warn ?? ((message: string) => console.warn(message))
  const queryTimeoutMs = options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS
  if (!Number.isSafeInteger(queryTimeoutMs) || queryTimeoutMs < 1) {
    throw new TypeError(`${PACKAGE} queryTimeoutMs must be a whole number of milliseconds ≥ 1, got ${String(options.queryTimeoutMs)}.`)
  }
  if (pool !== undefined) {
    if (pool === null || typeof pool !== 'object' || typeof pool.query !== 'function') {
      throw new TypeError(`${PACKAGE} pool must be a pg Pool (an object with query()).`)
    }
    // The connections a pg.Pool of yours opens from now on are covered as the store's own are.
    if (isPgPool(pool) && typeof (pool as Partial<ConnectEvents>).on === 'function')
      keepNewConnectionErrors(pool as unknown as ConnectEvents)
    return {
      pool,
      ownsPool: false,
      target: 'PostgreSQL (the given pool)',
      secret: undefined,
      table,
      createTable,
      prepared: prepared ?? isPgPool(pool),
      warn,
      queryTimeoutMs,
      maxConnections: maxOf(pool),
      dropStatementTimeout: undefined,
      ownLimitAsked: false,
    }
  }
  if (typeof connectionString !== 'string' || connectionString.length === 0) {
    throw new TypeError(`${PACKAGE} connectionString must be a non-empty string such as postgres://user:password@host:5432/db.`)
  }
  const Pool = loadDriver()
  // A connection string that sets its own (?statement_timeout=, or in ?options=), or PGOPTIONS, keeps
  // it: pg would take it over this one anyway.
  const own = `${connectionString} ${globalThis.process?.env?.PGOPTIONS ?? ''}`
  const statementTimeout = /statement_timeout/i.test(own) ? undefined : serverStatementTimeoutMs(queryTimeoutMs)
  // Only a limit the string itself asks for (not 0) is checked at open; none is sent when queryTimeoutMs leaves under 1 ms.
  const ownLimitAsked = /statement_timeout/i.test(own) && !/statement_timeout(=|%3D)\s*0(\D|$)/i.test(own)
  const created = new Pool({
    connectionString,
    max: DEFAULT_MAX_CONNECTIONS,
    // pg-pool has one timeout for a wait in its queue and for opening a connection. A connect that
    // hangs (a silent line) ends after a statement's deadline, not pg's 5 s, so it does not hold a
    // slot of the pool long after the line is back; a slow one (TLS and SCRAM across an ocean, a
    // database waking up) still has the whole deadline to open, and warms the pool for the next
    // call even when its own caller, past the connect wait, was answered already.
    connectionTimeoutMillis: Math.min(CONNECT_TIMEOUT_MS, queryTimeoutMs),
    keepAlive: true,
    keepAliveInitialDelayMillis: KEEP_ALIVE_DELAY_MS,
    // Sent when each connection opens (no statement of its own): PostgreSQL ends a statement just
    // before the store would give up on it, so nothing it gave up on commits later (deadline.ts).
    ...(statementTimeout === undefined ? {} : { statement_timeout: statementTimeout }),
  })
  // An idle connection that the server drops emits 'error' on the pool; without a listener
  // that would end the process. The next query reports the failure instead.
  created.on('error', () => {})
  keepNewConnectionErrors(created as unknown as ConnectEvents)
  return {
    pool: created,
    ownsPool: true,
    target: `PostgreSQL at ${redactUrl(connectionString)}`,
    secret: passwordOf(connectionString),
    table,
    createTable,
    prepared: prepared ?? true,
    warn,
    queryTimeoutMs,
    maxConnections: DEFAULT_MAX_CONNECTIONS,
    ownLimitAsked,
    dropStatementTimeout:
      statementTimeout === undefined
        ? undefined
        : () => {
            const settings = (created as { options?: { statement_timeout?: number } }).options
            if (settings !== undefined) delete settings.statement_timeout
          },
  }
}
