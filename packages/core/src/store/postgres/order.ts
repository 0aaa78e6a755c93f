/**
 * The ordering capability of `PostgresDedupStore`: its mark table (`<table>_order`), its lock
 * table (`<table>_order_lock`: the claim that holds each order key, so that one event of an email
 * runs at a time), its fact table (`<table>_order_fact`: how many events of one email, type and
 * millisecond were handled, for reconcile) and the statements that take the lock and read the mark with a claim, and
 * advance the mark and free the lock with a complete, each ONE statement (data-modifying CTEs),
 * so both move in the same transaction as the dedup row. Event ids compare with `COLLATE "C"`
 * (byte order, as `compareOrderPositions`), whatever the database's locale.
 */
import type { OrderMark } from '../../ordering/position.js'
import type { FactCounts, StoreOrderInput } from '../types.js'
import { anyMissing, lockedDdl } from './locked-ddl.js'

/** The SQL that creates the mark and lock tables of `table` and their expiry indexes. */
export function postgresOrderTableSql(table: string): string {
  return `CREATE TABLE IF NOT EXISTS ${table}_order (
  key text COLLATE "C" PRIMARY KEY,
  created_at_ms bigint NOT NULL,
  event_id text COLLATE "C" NOT NULL,
  type text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_order_exp ON ${table}_order (expires_at);
CREATE TABLE IF NOT EXISTS ${table}_order_lock (
  key text COLLATE "C" PRIMARY KEY,
  token text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_lock_exp ON ${table}_order_lock (expires_at);
CREATE TABLE IF NOT EXISTS ${table}_order_fact (
  key text COLLATE "C" PRIMARY KEY,
  handled integer NOT NULL,
  reconciled integer NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS ${table}_fact_exp ON ${table}_order_fact (expires_at);
`
}

/** The order tables of `table`: marks, locks and facts. */
export function postgresOrderTables(table: string): string[] {
  return [`${table}_order`, `${table}_order_lock`, `${table}_order_fact`]
}

/** The statements of the capability. */
export interface PostgresOrderSql {
  /**
   * Parameters: the claim's three (key, token, lease ms), then the mark key and the fact key (or
   * null). Returns the claim's row; `lock_left_ms` when another claim holds the order key; `locked`
   * = 1 when this statement took the lock; and, when it acquired, the live mark's columns and the
   * live fact's counts (null when none).
   */
  claim: string
  /**
   * Parameters: the complete's three, then key, created_at ms, event id and type of the mark, then
   * the fact key (or null) and the changes of its counts. Returns `n` = 1 when completed.
   */
  complete: string
  /** Parameters: key, token, order key. Gives the lease up and frees the order key; returns `n` = 1 when released. */
  release: string
  /** Parameters: order key, token. Frees a lock taken by a claim statement whose lease insert lost a race. */
  unlock: string
  /** Parameters: key, token, lease ms, order key. Renews a live lease and the order key it holds; returns `n` = 1 when renewed. */
  extend: string
  /** Batch deletes of expired marks, and of locks whose lease lapsed. */
  purge: string[]
}

/** What the store's own statements give the capability's. */
export interface PostgresOrderParts {
  table: string
  /** The `lazy` CTE: this statement's transaction commits without waiting for its WAL flush (a claim). */
  lazy: string
  /** The `cur` CTE: the live row that holds the key ($1). */
  cur: string
  /** The `ins` CTE, taking the lease for $1 with token $2 and lease $3 ms, from the rows of `source`. */
  insert: (source: string) => string
  /** SQL of now + `param` ms on the server's clock. */
  expiresIn: (param: string) => string
  /** SQL of the ms left until a row's expires_at, `AS left_ms`. */
  leftMs: string
  /** The release statement's SET and WHERE, after `UPDATE <table>`. */
  releaseSet: string
  /** The renewal of a live lease ($1 key, $2 token, $3 lease ms), an UPDATE that reads the `lazy` CTE. */
  extendLease: string
  /** The store's batch delete of `table`'s rows expired at now(). */
  purgeBatch: (table: string) => string
}

/** Builds the statements for the store's table. */
export function postgresOrderSql({
  table,
  lazy,
  cur,
  insert,
  expiresIn,
  leftMs,
  releaseSet,
  extendLease,
  purgeBatch,
}: PostgresOrderParts): PostgresOrderSql {
  const newer = 'm.expires_at <= clock_timestamp() OR (excluded.created_at_ms, excluded.event_id) > (m.created_at_ms, m.event_id)'
  const lock = `${table}_order_lock`
  return {
    // The lock is taken first and the lease only from its row: an event whose email is held by
    // another claim takes nothing. A race for the lock is decided by ON CONFLICT, which re-reads
    // the committed row. float8: pg returns bigint as text; created_at ms are safe integers.
    claim: `WITH ${lazy}, ${cur},
held AS (SELECT ${leftMs} FROM ${lock} WHERE key = $4 AND expires_at > clock_timestamp()),
lk AS (
  INSERT INTO ${lock} AS l (key, token, expires_at)
  SELECT $4, $2, ${expiresIn('$3')} WHERE NOT EXISTS (SELECT 1 FROM cur) AND NOT EXISTS (SELECT 1 FROM held)
  ON CONFLICT (key) DO UPDATE SET token = excluded.token, expires_at = excluded.expires_at
  WHERE l.expires_at <= clock_timestamp()
  RETURNING 1),
${insert('lk')}
SELECT ins.attempt, cur.done, cur.left_ms, held.left_ms AS lock_left_ms, (SELECT count(*) FROM lk)::int AS locked,
  m.created_at_ms::float8 AS created_at_ms, m.event_id, m.type, f.handled, f.reconciled
FROM lazy LEFT JOIN ins ON true LEFT JOIN cur ON true LEFT JOIN held ON true
LEFT JOIN ${table}_order m ON ins.attempt IS NOT NULL AND m.key = $4 AND m.expires_at > clock_timestamp()
LEFT JOIN ${table}_order_fact f ON ins.attempt IS NOT NULL AND f.key = $5::text AND f.expires_at > clock_timestamp()`,
    complete: `WITH durable AS (SELECT set_config('synchronous_commit', 'on', true)),
done AS (
  UPDATE ${table} SET done = true, token = NULL, expires_at = ${expiresIn('$3')}
  FROM durable WHERE key = $1 AND token = $2 AND NOT done RETURNING 1),
mark AS (
  INSERT INTO ${table}_order AS m (key, created_at_ms, event_id, type, expires_at)
  SELECT $4, $5, $6, $7, ${expiresIn('$3')} FROM done
  ON CONFLICT (key) DO UPDATE SET
    created_at_ms = CASE WHEN ${newer} THEN excluded.created_at_ms ELSE m.created_at_ms END,
    event_id = CASE WHEN ${newer} THEN excluded.event_id ELSE m.event_id END,
    type = CASE WHEN ${newer} THEN excluded.type ELSE m.type END,
    expires_at = excluded.expires_at),
fact AS (
  INSERT INTO ${table}_order_fact AS f (key, handled, reconciled, expires_at)
  SELECT $8::text, $9::int, greatest(0, $10::int), ${expiresIn('$3')} FROM done WHERE $8::text IS NOT NULL
  ON CONFLICT (key) DO UPDATE SET
    handled = CASE WHEN f.expires_at <= clock_timestamp() THEN 0 ELSE f.handled END + $9::int,
    reconciled = greatest(0, CASE WHEN f.expires_at <= clock_timestamp() THEN 0 ELSE f.reconciled END + $10::int),
    expires_at = excluded.expires_at),
unlock AS (DELETE FROM ${lock} WHERE key = $4 AND token = $2 AND EXISTS (SELECT 1 FROM done))
SELECT count(*)::int AS n FROM done`,
    // The lock goes with the token whether or not the lease still was this claim's: a claim that
    // took the key over took the lock over too, with its own token.
    release: `WITH released AS (UPDATE ${table} SET ${releaseSet} RETURNING 1),
unlock AS (DELETE FROM ${lock} WHERE key = $3 AND token = $2)
SELECT count(*)::int AS n FROM released`,
    unlock: `DELETE FROM ${lock} WHERE key = $1 AND token = $2`,
    extend: `WITH ${lazy}, extended AS (${extendLease} RETURNING 1),
relock AS (UPDATE ${lock} SET expires_at = ${expiresIn('$3')} WHERE key = $4 AND token = $2 AND EXISTS (SELECT 1 FROM extended))
SELECT count(*)::int AS n FROM extended`,
    purge: [purgeBatch(`${table}_order`), purgeBatch(lock), purgeBatch(`${table}_order_fact`)],
  }
}

/** The parameters the complete statement adds for `order` and the fact's `change`. */
export function orderParams(order: StoreOrderInput, change: FactCounts | undefined): unknown[] {
  const fact = order.fact !== undefined && change ? `${order.key}|${order.fact}` : null
  return [order.key, order.mark.createdAtMs, order.mark.eventId, order.mark.type, fact, change?.handled ?? 0, change?.reconciled ?? 0]
}

/** The fact's counts in a claim row (zeros when the join found none). */
export function factOfRow(row: { handled: number | null; reconciled: number | null }): FactCounts {
  return { handled: row.handled ?? 0, reconciled: row.reconciled ?? 0 }
}

/** The mark in a claim row, or null when the join found none. */
export function markOfRow(row: { created_at_ms: number | null; event_id: string | null; type: string | null }): OrderMark | null {
  if (row.created_at_ms === null || row.event_id === null || row.type === null) return null
  return { createdAtMs: Number(row.created_at_ms), eventId: row.event_id, type: row.type }
}

/** What the store's order tables give it now. */
type Query = <Row>(text: string, values?: unknown[]) => Promise<{ rows: Row[]; rowCount: number | null }>

/** How often a store without its order tables looks for them again, while ordered claims come. */
const RECHECK_MS = 1_000

/**
 * Whether the order tables of a store are there and usable: created when missing (and allowed),
 * looked for again at most once a second while they are not, with the reason when not.
 */
export class OrderTables {
  /** Undefined until `ensure` ran. */
  usable: boolean | undefined
  /** Why they are not usable, with the fix. */
  issue: string | undefined
  #checkedAt = 0
  readonly #table: string
  readonly #query: Query
  readonly #package: string

  constructor(table: string, query: Query, packageName: string) {
    this.#table = table
    this.#query = query
    this.#package = packageName
  }

  /**
   * Creates the tables only when missing (CREATE … IF NOT EXISTS needs CREATE on the schema even
   * when they exist). Ordering needs order tables this role may read and write: a dedup table from
   * before them, with a role that may not create them (or `createTable: false`), or tables the role
   * has no rights on, keeps working without ordering (`issue` says why). `createTableSql` creates
   * every table when the dedup table itself is missing.
   */
  async ensure(createTable: boolean, createTableSql: string): Promise<void> {
    const { present, marks } = await this.#find()
    // The order tables exist (usable or not), or creating them is not ours to do.
    if (!createTable || marks !== null) {
      return this.#set(
        marks === true,
        marks === false ? 'are not writable by this role (it needs SELECT, INSERT, UPDATE and DELETE on each)' : 'are missing',
      )
    }
    if (!present) {
      await this.#query(createTableSql)
      return this.#set(true)
    }
    // No BEGIN: a multi-statement query is one implicit transaction, rolled back whole on a failure
    // (an explicit block would leave the pooled connection in an aborted transaction).
    // Made only when still missing under the lock: another store may have made them meanwhile and be claiming.
    const ddl = lockedDdl(this.#table, anyMissing(postgresOrderTables(this.#table)), postgresOrderTableSql(this.#table))
    await this.#query(ddl).then(
      () => this.#set(true),
      (error: unknown) => this.#set(false, `could not be created (${error instanceof Error ? error.message : String(error)})`),
    )
  }

  /** With the order tables missing, looks for them again, at most once a second. */
  async recheck(): Promise<void> {
    if (performance.now() - this.#checkedAt < RECHECK_MS) return
    const { marks } = await this.#find()
    if (marks === true) this.#set(true)
  }

  /** Whether the dedup table exists, and whether every order table does with every right (null: one is missing). */
  async #find(): Promise<{ present: boolean; marks: boolean | null }> {
    const rights = (param: string) => ['SELECT', 'INSERT', 'UPDATE', 'DELETE'].map((right) => `has_table_privilege(${param}, '${right}')`)
    const tables = postgresOrderTables(this.#table)
    const params = tables.map((_, i) => `$${i + 2}`)
    const found = await this.#query<{ present: boolean; marks: boolean | null }>(
      `SELECT to_regclass($1) IS NOT NULL AS present, CASE WHEN ${params.map((p) => `to_regclass(${p}) IS NULL`).join(' OR ')} THEN NULL
       ELSE ${params.flatMap(rights).join(' AND ')} END AS marks`,
      [this.#table, ...tables],
    )
    this.#checkedAt = performance.now()
    const row = found.rows[0]
    return { present: row?.present === true, marks: row?.marks ?? null }
  }

  #set(usable: boolean, why?: string): void {
    this.usable = usable
    this.issue = usable
      ? undefined
      : `${this.#package} the order tables ${postgresOrderTables(this.#table).join(', ')} ${why}: create them as the table's owner (their SQL is in postgresDedupTableSql()) or grant this role CREATE on the schema; the store finds them within a second, without a restart.`
  }
}
